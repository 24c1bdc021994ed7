#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dtrain/tune/numpy_compat.hpp"
#include "dtrain/tune/space.hpp"

/// The parts of the TPE searcher (tpe.hpp) below the searcher: how one
/// hyperparameter maps into the space the estimators work in, and the
/// Parzen estimator over one or several hyperparameters, as Optuna 3.1
/// defines them (samplers/_tpe/parzen_estimator.py: consider_prior with
/// prior_weight 1, consider_magic_clip, not consider_endpoints; univariate
/// or multivariate). Internal
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

/// A draw of one dimension as Optuna 3.1's RandomSampler makes it: a
/// fixed dimension draws nothing; a numeric one is uniform between its
/// internal bounds (a log range's logarithms, half a step beyond a stepped
/// range's ends), then rounded as the domain rounds; a categorical one
/// draws one uniform per category and takes the largest (its one-hot
/// transform).
value random_sampler_draw(const dimension& dim, numpy_random& r);
/// A whole configuration so drawn, dimension by dimension in `dims`' order.
config random_sampler_config(const std::vector<dimension>& dims, numpy_random& r);

/// Optuna's default_weights: equal for fewer than 25 observations; above,
/// the older ones (all but the newest 25) ramp up linearly from 1/n.
std::vector<double> observation_weights(size_t n);

/// How the numeric components' bandwidths are chosen.
enum class bandwidth {
  /// Optuna's univariate rule: each mean's sigma is the larger gap to its
  /// sorted neighbours (parzen_estimator.cpp says how the ends are treated).
  neighbours,
  /// Optuna's multivariate rule (Scott's rule as BOHB uses it): every
  /// observation's sigma is 0.2 * n^(-1 / (d + 4)) times the dimension's
  /// range, n observations over d dimensions.
  scott,
};

/// A mixture over one or several dimensions: one component per
/// observation (a row of internal-space points, one per dimension, in
/// chronological order) and the prior last. A component is a product over
/// the dimensions: for numbers a truncated normal with the chosen
/// bandwidth, clipped to [range / min(100, n + 1), range] (Optuna's
/// consider_magic_clip); for categories, each observation's row puts
/// prior_weight / (n + 1) on every category and 1 more on its own. The
/// prior is centred with sigma = range, uniform over categories. Over one
/// dimension with the neighbours rule this is Optuna 3.1's independent
/// estimator; over several with Scott's rule, its multivariate one.
/// Keeps pointers to the dimensions, which must outlive it.
class parzen_estimator {
public:
  /// Over `dims` (at least one), `rows` observations of dims.size() values
  /// each, with observation_weights(rows.size()) unless `weights` (one per
  /// row, not normalized) is given.
  parzen_estimator(std::vector<const dimension*> dims, const std::vector<std::vector<double>>& rows,
                   bandwidth rule, const std::vector<double>& weights = {});
  /// One dimension, the univariate rule: Optuna's independent estimator.
  parzen_estimator(const dimension& dim, const std::vector<double>& xs);

  /// `n` points of the internal space drawn from the mixture, in Optuna
  /// 3.1's order of draws: n components (choice with the weights), then
  /// for each dimension n uniforms (a truncated normal's quantile, or a
  /// category by the cumulative probabilities).
  std::vector<std::vector<double>> sample(numpy_random& r, size_t n) const;
  /// The log density (a log mass along stepped and categorical dimensions)
  /// at `x`, a point of the internal space as the domains round it.
  double log_pdf(const std::vector<double>& x) const;

  /// One-dimensional shorthands.
  double log_pdf(double x) const { return log_pdf(std::vector<double>{x}); }

private:
  struct axis {
    const dimension* dim = nullptr;
    std::vector<double> mus, sigmas;             // numeric: one per component
    std::vector<double> log_accept;              // numeric: log mass of [low, high]
    std::vector<std::vector<double>> categories; // categorical: a row per component
  };
  void fit_categories(axis& a, const std::vector<double>& xs) const;
  void fit_numbers(axis& a, const std::vector<double>& xs, bandwidth rule, size_t n_dims) const;
  double component_log_pdf(const axis& a, size_t j, double x) const;
  double sample_axis(const axis& a, size_t j, double u) const;

  std::vector<double> weights_;
  std::vector<axis> axes_;
};

} // namespace dtrain::tune::detail
