#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dtrain/core/random.hpp"
#include "dtrain/tune/space.hpp"

/// The parts of the TPE searcher (tpe.hpp) below the searcher: how one
/// hyperparameter maps into the space the estimators work in, and the
/// Parzen estimator over one hyperparameter, as Optuna 3.1 defines them
/// (samplers/_tpe/parzen_estimator.py, univariate: consider_prior with
/// prior_weight 1, consider_magic_clip, not consider_endpoints). Internal
/// to dtrain::tune (tests check them against Optuna's numbers). Plain
/// values; not thread-safe.
namespace dtrain::tune::detail {

/// One hyperparameter as the estimators see it. A numeric domain lives in
/// an internal space: the logarithm of the value for a log range, the value
/// otherwise; a stepped domain (integers, q) widens its bounds by half a
/// step so that each end value has a full cell. A categorical one (a
/// choice, or any grid dimension) is the index of its value.
struct dimension {
  enum class kind { fixed, numeric, categorical };
  std::string name;
  domain d;
  kind type = kind::fixed;
  value fixed_value;         // fixed: a constant, or a range that holds one value
  double low = 0, high = 0;  // numeric: the Parzen bounds, internal space
  double first = 0;          // numeric: the smallest value
  double last = 0;           //   and the largest
  double step = 0;           // > 0: values are first + k * step (not for logs)
  std::vector<value> categories;

  bool log() const { return d.type == domain::kind::log_uniform; }
  /// An observed value in the internal space (numeric) or as its category
  /// index; NaN when it cannot be read (a value from another space).
  double to_internal(const value& v) const;
  /// A point of the internal space as a value of the domain (rounded,
  /// clamped, typed).
  value to_value(double x) const;
};

/// The dimension of domain `d`. Precondition: the space validated.
dimension make_dimension(const std::string& name, const domain& d);

/// Optuna's default_weights: equal for fewer than 25 observations; above,
/// the older ones (all but the newest 25) ramp up linearly from 1/n.
std::vector<double> observation_weights(size_t n);

/// A mixture over one numeric or categorical dimension: one component per
/// observation (internal-space points, in chronological order) and the
/// prior last. Numbers: truncated normals with Optuna's bandwidths;
/// categories: each observation's row puts prior_weight / (n + 1) on every
/// category and 1 more on its own. Keeps a reference to `dim`, which must
/// outlive it.
class parzen_estimator {
public:
  parzen_estimator(const dimension& dim, const std::vector<double>& xs);

  /// A point of the internal space drawn from the mixture.
  double sample(rng& r) const;
  /// The log density (a log mass for stepped domains and categories) at x,
  /// a point of the internal space as the domain rounds it.
  double log_pdf(double x) const;

private:
  void fit_categories(const std::vector<double>& xs);
  void fit_numbers(const std::vector<double>& xs);
  double component_log_pdf(size_t j, double x) const;

  const dimension& dim_;
  std::vector<double> weights_;
  std::vector<double> mus_, sigmas_;             // numeric
  std::vector<std::vector<double>> categories_;  // categorical: a row per component
};

} // namespace dtrain::tune::detail
