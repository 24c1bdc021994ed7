#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/train/hyperparameters.hpp"
#include "dtrain/train/operator.hpp"

/// The "objective" operator: standard test functions of the hyperparameters
/// run through the real trainer, for benchmarking searchers and schedulers
/// (the functions Optuna and hyperopt are measured on) and for tests that
/// need a known metric without learning anything.
///
/// Keys: function (branin | hartmann6 | quadratic | curve | rosenbrock |
/// sphere; default quadratic), x1 .. x10 (doubles, default 0), noise (the
/// standard deviation of Gaussian noise added to the value, default 0).
///
///  - branin(x1, x2), usually on [-5, 10] x [0, 15]: minimum 0.397887 at
///    (-pi, 12.275), (pi, 2.275) and (9.42478, 2.475).
///  - hartmann6(x1 .. x6) on [0, 1]^6: minimum -3.32237 at (0.20169,
///    0.150011, 0.476874, 0.275332, 0.311652, 0.6573).
///  - quadratic: the sum over the keys x1 .. x10 that are set of
///    (xi - 0.5)^2; minimum 0.
///  - rosenbrock: over the keys that are set, in order, the sum of
///    100 (x(i+1) - xi^2)^2 + (1 - xi)^2, usually on [-5, 10]^d; minimum 0
///    at (1, ..., 1). sphere: the sum over the keys that are set of xi^2;
///    minimum 0 at the origin. The benchmarks use d = 10.
///  - curve: a learning curve, (x1 - 0.5)^2 + (1 + |x2|) / epoch: it
///    approaches (x1 - 0.5)^2 as epochs grow, more slowly for a larger
///    |x2|, so curves cross (a trial that starts worse can end better).
///
/// The metrics contract: after epoch e (counting from 1), validation_loss
/// and loss both equal value(e) = f(x) (+ the curve's term at e) + noise *
/// N(0, 1), the normal drawn from dtrain::rng seeded by the trainer's seed,
/// every hyperparameter's key and text, and e; accuracy and
/// validation_accuracy are 0 (not a classification). The value is computed
/// in double and reported through the loss as a float (about 7 significant
/// digits). It does not depend on the number of replicas, the batch size or
/// the device: the dataset is one sample (every replica's shard pads to it,
/// so each epoch is one batch everywhere), and the model is one parameter
/// that training never moves. An epoch takes well under a millisecond of
/// arithmetic. The epoch count travels in the operator's checkpoint state,
/// so a restored trial goes on with the right epoch.
namespace dtrain::train {

/// The objective's settings, read from hyperparameters.
struct objective_spec {
  std::string function = "quadratic";
  std::array<double, 10> x{};
  std::array<bool, 10> is_set{};
  double noise = 0;
  uint64_t noise_seed = 0;  // from the trainer's seed and the hyperparameters
};

double branin(double x1, double x2);
double hartmann6(const std::array<double, 6>& x);
/// Over the first `n` values of x.
double rosenbrock(const double* x, size_t n);

/// The keys above, checked (an unknown key, function or a negative noise
/// is an invalid_argument naming it); `trainer_seed` and every key's text
/// fix the noise.
result<objective_spec> read_objective(const hyperparameters& hp, uint64_t trainer_seed);

/// The value the operator reports after `epoch` (>= 1): the function, the
/// curve's term, and the noise of that epoch.
double objective_value(const objective_spec& spec, int64_t epoch);

/// The operator (registered as "objective" with the built-in ones).
std::unique_ptr<training_operator> make_objective_operator();

} // namespace dtrain::train
