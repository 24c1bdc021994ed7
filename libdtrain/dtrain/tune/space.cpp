#include "dtrain/tune/space.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "dtrain/core/check.hpp"

namespace dtrain::tune {

std::string to_string(const value& v) {
  if (const auto* i = std::get_if<int64_t>(&v))
    return std::to_string(*i);
  if (const auto* b = std::get_if<bool>(&v))
    return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&v))
    return *s;
  // The shortest of %.15g..%.17g that reads back to the same double; 17
  // digits always do (NaN never compares equal and keeps the last).
  const double d = std::get<double>(v);
  char text[40];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, d);
    if (std::strtod(text, nullptr) == d)
      break;
  }
  return text;
}

std::map<std::string, std::string> to_strings(const config& c) {
  std::map<std::string, std::string> out;
  for (const auto& [name, v] : c)
    out.emplace(name, to_string(v));
  return out;
}

// ---------------------------------------------------------------------------
// Constructors.

domain constant(value v) {
  domain d;
  d.constant_value = std::move(v);
  return d;
}

domain randint(int64_t low, int64_t high) { return qrandint(low, high, 0); }

domain qrandint(int64_t low, int64_t high, int64_t q) {
  domain d;
  d.type = domain::kind::integer;
  d.low = static_cast<double>(low);
  d.high = static_cast<double>(high);
  d.q = static_cast<double>(q);
  return d;
}

domain uniform(double low, double high) { return quniform(low, high, 0); }

domain quniform(double low, double high, double q) {
  domain d;
  d.type = domain::kind::uniform;
  d.low = low;
  d.high = high;
  d.q = q;
  return d;
}

domain loguniform(double low, double high, double base) {
  return qloguniform(low, high, 0, base);
}

domain qloguniform(double low, double high, double q, double base) {
  domain d;
  d.type = domain::kind::log_uniform;
  d.low = low;
  d.high = high;
  d.q = q;
  d.base = base;
  return d;
}

domain choice(std::vector<value> choices) {
  domain d;
  d.type = domain::kind::choice;
  d.choices = std::move(choices);
  return d;
}

domain grid_search(std::vector<value> values) {
  domain d = choice(std::move(values));
  d.grid = true;
  return d;
}

domain grid(domain range, int count) {
  range.grid = true;
  range.count = count;
  return range;
}

// ---------------------------------------------------------------------------
// Checking one domain.

namespace {

std::string number(double x) { return to_string(value{x}); }

// The multiples of q inside [low, high], as k in k * q: Ray's bounds rounded
// inward. The slack absorbs 0.3 / 0.1 = 2.9999999999999996.
std::pair<double, double> multiples(const domain& d) {
  const double slack = 1e-9;
  return {std::ceil(d.low / d.q - slack), std::floor(d.high / d.q + slack)};
}

status check_range(const std::string& name, const domain& d) {
  if (!std::isfinite(d.low) || !std::isfinite(d.high))
    return invalid_argument(name + ": bounds must be finite (got low " + number(d.low) +
                            ", high " + number(d.high) + ")");
  if (d.low > d.high)
    return invalid_argument(name + ": low " + number(d.low) + " is more than high " +
                            number(d.high));
  if (d.type == domain::kind::log_uniform) {
    if (!(d.low > 0))
      return invalid_argument(name + ": log range needs 0 < low (got low " + number(d.low) + ")");
    if (!(d.base > 0) || d.base == 1 || !std::isfinite(d.base))
      return invalid_argument(name + ": log base must be positive and not 1 (got " +
                              number(d.base) + ")");
  }
  if (d.type == domain::kind::integer &&
      (std::trunc(d.low) != d.low || std::trunc(d.high) != d.high))
    return invalid_argument(name + ": an integer range needs whole bounds");
  if (std::isnan(d.q) || d.q < 0 || !std::isfinite(d.q))
    return invalid_argument(name + ": q must be positive (got " + number(d.q) + ")");
  if (d.q > 0) {
    if (d.type == domain::kind::integer && std::trunc(d.q) != d.q)
      return invalid_argument(name + ": q must be a whole number for an integer range (got " +
                              number(d.q) + ")");
    auto [lo, hi] = multiples(d);
    if (lo > hi)
      return invalid_argument(name + ": no multiple of q " + number(d.q) + " lies in [" +
                              number(d.low) + ", " + number(d.high) + "]");
  }
  if (d.grid && d.count < 1)
    return invalid_argument(name + ": a grid over a range needs a count of at least 1 (got " +
                            std::to_string(d.count) + ")");
  if (d.grid && d.count > max_grid_dimension_points)
    return invalid_argument(name + ": a grid of " + std::to_string(d.count) +
                            " points is more than the " +
                            std::to_string(max_grid_dimension_points) +
                            " one grid dimension may have");
  return status::ok();
}

status check(const std::string& name, const domain& d) {
  if (name.empty())
    return invalid_argument("a hyperparameter needs a name");
  if (d.type == domain::kind::constant)
    return status::ok();
  if (d.type == domain::kind::choice) {
    if (d.choices.empty())
      return invalid_argument(name + (d.grid ? ": empty grid list" : ": empty choice list"));
    return status::ok();
  }
  return check_range(name, d);
}

// x rounded to the nearest multiple of q, kept inside [low, high].
double quantize(const domain& d, double x) {
  if (!(d.q > 0))
    return x;
  auto [lo, hi] = multiples(d);
  const double k = std::clamp(std::round(x / d.q), lo, hi);
  return std::clamp(k * d.q, d.low, d.high);
}

value typed(const domain& d, double x) {
  if (d.type == domain::kind::integer)
    return static_cast<int64_t>(std::llround(x));
  return x;
}

// The exponent of x in `base`, exact for powers of 10 and 2 (log10(1e-4)
// is -4, log(1e-4) / log(10) need not be), so that grid points print short.
double log_base(double x, double base) {
  if (base == 10)
    return std::log10(x);
  if (base == 2)
    return std::log2(x);
  return std::log(x) / std::log(base);
}

// A grid dimension's values, in order, without repeats (an integer range
// asked for more points than it holds gives each integer once).
std::vector<value> grid_values(const domain& d) {
  if (d.type == domain::kind::choice)
    return d.choices;
  if (d.type == domain::kind::constant)
    return {d.constant_value};
  const bool log = d.type == domain::kind::log_uniform;
  const double from = log ? log_base(d.low, d.base) : d.low;
  const double to = log ? log_base(d.high, d.base) : d.high;
  std::vector<value> out;
  for (int i = 0; i < d.count; ++i) {
    double x = d.low;  // count == 1: the low end
    if (d.count > 1) {
      const double t = from + (to - from) * i / (d.count - 1);
      x = i == d.count - 1 ? d.high : i == 0 ? d.low : log ? std::pow(d.base, t) : t;
    }
    value v = typed(d, quantize(d, x));
    if (out.empty() || out.back() != v)
      out.push_back(std::move(v));
  }
  return out;
}

value draw(const domain& d, rng& r) {
  switch (d.type) {
  case domain::kind::constant:
    return d.constant_value;
  case domain::kind::choice:
    return d.choices[r.below(d.choices.size())];
  case domain::kind::integer: {
    // Every integer (or every multiple of q) in the range equally likely;
    // both ends inclusive, as Determined's int and Ray's qrandint.
    auto [lo, hi] = d.q > 0 ? multiples(d) : std::make_pair(d.low, d.high);
    const auto k = static_cast<int64_t>(lo) +
                   static_cast<int64_t>(r.below(static_cast<uint64_t>(hi - lo) + 1));
    return d.q > 0 ? k * static_cast<int64_t>(d.q) : k;
  }
  case domain::kind::uniform:
    return quantize(d, d.low + (d.high - d.low) * r.uniform_double());
  case domain::kind::log_uniform: {
    const double from = std::log(d.low);
    const double to = std::log(d.high);
    const double x = std::clamp(std::exp(from + (to - from) * r.uniform_double()), d.low, d.high);
    return quantize(d, x);
  }
  }
  DTRAIN_CHECK(false, "unknown domain kind");
  return {};
}

} // namespace

// ---------------------------------------------------------------------------
// The space.

space& space::add(const std::string& name, domain d) {
  domains_[name] = std::move(d);
  return *this;
}

status space::validate() const {
  int64_t points = 1;
  for (const auto& [name, d] : domains_) {
    DTRAIN_RETURN_IF_ERROR(check(name, d));
    if (!d.grid)
      continue;
    // The product is checked as it grows: the searcher counts trials in
    // an int64_t, and a wrapped count would be a wrong (or negative) total.
    const auto size = static_cast<int64_t>(grid_values(d).size());
    int64_t product = 0;
    if (__builtin_mul_overflow(points, size, &product))
      return invalid_argument(name + ": its " + std::to_string(size) + " grid points times the " +
                              std::to_string(points) + " of the grid dimensions before it are " +
                              "more grid points than can be counted (over 2^63 - 1)");
    points = product;
  }
  return status::ok();
}

std::vector<std::string> space::varying() const {
  std::vector<std::string> out;
  for (const auto& [name, d] : domains_)
    if (d.type != domain::kind::constant)
      out.push_back(name);
  return out;
}

int64_t space::grid_size() const { return grid_enumerator(*this).size(); }

std::vector<config> space::grid_points() const {
  const grid_enumerator grid(*this);
  std::vector<config> out;
  out.reserve(static_cast<size_t>(grid.size()));
  for (int64_t i = 0; i < grid.size(); ++i)
    out.push_back(grid.point(i));
  return out;
}

grid_enumerator::grid_enumerator(const space& s) {
  for (const auto& [name, d] : s.domains())  // a std::map: sorted by name
    if (d.grid) {
      dims_.emplace_back(name, grid_values(d));
      // Saturated, never wrapped, should the precondition not hold.
      if (__builtin_mul_overflow(size_, static_cast<int64_t>(dims_.back().second.size()), &size_))
        size_ = INT64_MAX;
    }
}

config grid_enumerator::point(int64_t index) const {
  // Mixed radix, the first dimension the fastest digit (Ray's order).
  config out;
  if (size_ <= 0)  // an empty dimension (a space that failed validate())
    return out;
  auto rest = static_cast<uint64_t>(index) % static_cast<uint64_t>(size_);
  for (const auto& [name, values] : dims_) {
    out[name] = values[rest % values.size()];
    rest /= values.size();
  }
  return out;
}

value space::sample_one(const domain& d, rng& r) { return draw(d, r); }

config space::sample(rng& r) const {
  config out;
  for (const auto& [name, d] : domains_)
    if (!d.grid)
      out[name] = draw(d, r);
  return out;
}

} // namespace dtrain::tune
