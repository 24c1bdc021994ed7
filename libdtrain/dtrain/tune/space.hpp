#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "dtrain/core/random.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::tune {

/// One hyperparameter's value in a trial's configuration.
using value = std::variant<int64_t, double, std::string, bool>;

/// The text a training operator receives for `v` ("64", "0.001", "adam",
/// "true"); doubles in their shortest form that reads back to the same bits.
std::string to_string(const value& v);

/// A trial's configuration: hyperparameter name -> value.
using config = std::map<std::string, value>;

/// The configuration as the operator's text map (train::hyperparameters).
std::map<std::string, std::string> to_strings(const config& c);

/// "lr=0.0031, hidden=256,128, optimizer=adam": a configuration for one
/// line (defined in table.cpp).
std::string describe(const config& c);

/// A configuration as a JSON object that keeps each value's type (the
/// experiment store's hyperparameters): integers as JSON integers, doubles
/// always with a '.' or an exponent (1.0, not 1) and non-finite ones as
/// NaN / Infinity / -Infinity (as Python's json module writes them),
/// strings escaped, booleans as true/false. Keys in name order.
std::string to_json(const config& c);
/// The inverse of to_json: config_from_json(to_json(c)) == c, doubles to
/// the bit. Errors (corrupt_data) name the offset and what was expected.
result<config> config_from_json(const std::string& text);

/// How one hyperparameter is drawn: Ray's Domain, Determined's typed
/// hyperparameter. Build one with the functions below; `space::validate`
/// checks it. A plain value.
struct domain {
  enum class kind { constant, integer, uniform, log_uniform, choice };
  kind type = kind::constant;
  value constant_value = int64_t{0};  // constant
  double low = 0;                     // integer, uniform, log_uniform: inclusive bounds,
  double high = 0;                    //   as values (not exponents)
  double base = 10;                   // log_uniform: the base grid points are spaced in
  double q = 0;                       // > 0: values are rounded to multiples of q
  std::vector<value> choices;         // choice
  bool grid = false;                  // a grid dimension: enumerated, not sampled
  int count = 0;                      // grid of a range: this many evenly spaced points
};

domain constant(value v);
/// Integers in [low, high], both inclusive (Determined's `int`; note that
/// Ray's randint excludes `high`).
domain randint(int64_t low, int64_t high);
domain qrandint(int64_t low, int64_t high, int64_t q);
domain uniform(double low, double high);
domain quniform(double low, double high, double q);
/// Log-uniform over values in [low, high], 0 < low <= high.
domain loguniform(double low, double high, double base = 10);
domain qloguniform(double low, double high, double q, double base = 10);
domain choice(std::vector<value> choices);
/// A grid dimension over these values (Ray's grid_search).
domain grid_search(std::vector<value> values);
/// A grid dimension over a range: `count` evenly spaced points (log-spaced
/// for a log range, distinct integers for an integer one), Determined's
/// `count` under the grid searcher.
domain grid(domain range, int count);

/// The most points one grid dimension may have (a range's `count`): its
/// values are held in memory while the grid is enumerated. A grid of many
/// dimensions may have far more points; they are never held all at once
/// (grid_enumerator).
constexpr int64_t max_grid_dimension_points = 1000000;

/// A search space: named domains (Ray's param_space). A plain value; names
/// are the operator's hyperparameter keys.
class space {
public:
  space& add(const std::string& name, domain d);
  const std::map<std::string, domain>& domains() const { return domains_; }
  bool empty() const { return domains_.empty(); }

  /// invalid_argument naming the hyperparameter: "lr: log range needs
  /// 0 < low (got low 0)", min > max, an empty choice, a grid over a
  /// continuous range without a count, q <= 0, a grid count < 1 or over
  /// max_grid_dimension_points, a grid of more points than an int64_t
  /// counts (naming the dimension that overflows it and the product so far).
  status validate() const;
  /// The hyperparameters that differ between trials (not constants), in
  /// name order: the trial table's columns.
  std::vector<std::string> varying() const;
  /// Points in the grid: the product of the grid dimensions' sizes (1 when
  /// there is none).
  int64_t grid_size() const;
  /// The grid's points in enumeration order: the grid dimensions sorted by
  /// name, the first varying fastest (Ray's order). Only grid dimensions
  /// are set. Precondition: validate() passed. Holds every point: for a
  /// grid of unknown size, grid_enumerator decodes them one at a time.
  std::vector<config> grid_points() const;
  /// A fresh draw of every non-grid dimension (constants included), from
  /// `r`. Precondition: validate() passed.
  config sample(rng& r) const;
  /// A fresh draw of one domain, as sample() draws it (a grid dimension as
  /// the range or list it enumerates, uniformly). Precondition: `d` passed
  /// validate().
  static value sample_one(const domain& d, rng& r);

private:
  std::map<std::string, domain> domains_;
};

/// The points of a space's grid one at a time, in grid_points()' order:
/// point i is i written in mixed radix over the grid dimensions (the first
/// by name the fastest digit), so a grid of 10^12 points costs the memory
/// of its dimensions' values, not of its points. A plain value, built in
/// O(sum of the dimensions' sizes). Precondition: the space passed
/// validate() (so the size fits in an int64_t).
class grid_enumerator {
public:
  explicit grid_enumerator(const space& s);
  /// Points in the grid (1 when there is no grid dimension: the empty point).
  int64_t size() const { return size_; }
  /// Point `index` modulo size(); only the grid dimensions are set.
  config point(int64_t index) const;

private:
  std::vector<std::pair<std::string, std::vector<value>>> dims_;  // by name
  int64_t size_ = 1;
};

} // namespace dtrain::tune
