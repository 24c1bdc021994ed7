// The "objective" operator (objective.hpp): test functions reported as the
// trainer's losses.
#include "dtrain/train/objective.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/core/random.hpp"
#include "dtrain/data/dataset.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/optim/factory.hpp"

namespace dtrain::train {

double branin(double x1, double x2) {
  const double pi = M_PI;
  const double b = 5.1 / (4 * pi * pi), c = 5 / pi, t = 1 / (8 * pi);
  const double inner = x2 - b * x1 * x1 + c * x1 - 6;
  return inner * inner + 10 * (1 - t) * std::cos(x1) + 10;
}

double hartmann6(const std::array<double, 6>& x) {
  static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
  static const double a[4][6] = {{10, 3, 17, 3.5, 1.7, 8},
                                 {0.05, 10, 17, 0.1, 8, 14},
                                 {3, 3.5, 1.7, 10, 17, 8},
                                 {17, 8, 0.05, 10, 0.1, 14}};
  static const double p[4][6] = {{0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886},
                                 {0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991},
                                 {0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650},
                                 {0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381}};
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    double exponent = 0;
    for (int j = 0; j < 6; ++j)
      exponent += a[i][j] * (x[j] - p[i][j]) * (x[j] - p[i][j]);
    sum += alpha[i] * std::exp(-exponent);
  }
  return -sum;
}

double rosenbrock(const double* x, size_t n) {
  double sum = 0;
  for (size_t i = 0; i + 1 < n; ++i)
    sum += 100 * (x[i + 1] - x[i] * x[i]) * (x[i + 1] - x[i] * x[i]) + (1 - x[i]) * (1 - x[i]);
  return sum;
}

result<objective_spec> read_objective(const hyperparameters& hp, uint64_t trainer_seed) {
  std::vector<std::string> known = {"function", "noise"};
  for (size_t i = 0; i < objective_spec{}.x.size(); ++i)
    known.push_back("x" + std::to_string(i + 1));
  DTRAIN_RETURN_IF_ERROR(hp.check_known(known, "operator 'objective'"));
  objective_spec spec;
  DTRAIN_ASSIGN_OR_RETURN(spec.function, hp.get_string("function", "quadratic"));
  const std::vector<std::string> functions = {"branin", "hartmann6", "quadratic",
                                              "curve",  "rosenbrock", "sphere"};
  if (std::find(functions.begin(), functions.end(), spec.function) == functions.end())
    return invalid_argument("hyperparameter 'function': '" + spec.function +
                            "' is not one of branin, hartmann6, quadratic, curve, rosenbrock, "
                            "sphere");
  for (size_t i = 0; i < spec.x.size(); ++i) {
    const std::string key = "x" + std::to_string(i + 1);
    DTRAIN_ASSIGN_OR_RETURN(spec.x[i], hp.get_double(key, 0.0));
    spec.is_set[i] = hp.contains(key);
  }
  DTRAIN_ASSIGN_OR_RETURN(spec.noise, hp.get_double("noise", 0.0));
  if (!(spec.noise >= 0) || !std::isfinite(spec.noise))
    return invalid_argument("hyperparameter 'noise': " + hp.values().at("noise") +
                            " is not a standard deviation >= 0");
  // The noise's seed: the trainer's, then every key and value (a std::map:
  // in key order), each byte mixed in, with a separator between texts.
  uint64_t h = hash64(trainer_seed, 0x6f626a);
  for (const auto& [key, text] : hp.values()) {
    for (const std::string* s : {&key, &text}) {
      for (unsigned char c : *s)
        h = hash64(h, c);
      h = hash64(h, 0x100);
    }
  }
  spec.noise_seed = h;
  return spec;
}

double objective_value(const objective_spec& spec, int64_t epoch) {
  const auto& x = spec.x;
  double value = 0;
  if (spec.function == "branin") {
    value = branin(x[0], x[1]);
  } else if (spec.function == "hartmann6") {
    value = hartmann6({x[0], x[1], x[2], x[3], x[4], x[5]});
  } else if (spec.function == "quadratic" || spec.function == "sphere") {
    const double centre = spec.function == "quadratic" ? 0.5 : 0.0;
    for (size_t i = 0; i < x.size(); ++i)
      if (spec.is_set[i])
        value += (x[i] - centre) * (x[i] - centre);
  } else if (spec.function == "rosenbrock") {
    std::vector<double> set;
    for (size_t i = 0; i < x.size(); ++i)
      if (spec.is_set[i])
        set.push_back(x[i]);
    value = rosenbrock(set.data(), set.size());
  } else {  // curve
    value = (x[0] - 0.5) * (x[0] - 0.5) +
            (1 + std::fabs(x[1])) / static_cast<double>(std::max<int64_t>(epoch, 1));
  }
  if (spec.noise > 0) {
    rng r(hash64(spec.noise_seed, static_cast<uint64_t>(epoch)));
    // Box-Muller in double (rng::normal is a float draw).
    const double u1 = 1.0 - r.uniform_double();  // in (0, 1]
    const double u2 = r.uniform_double();
    value += spec.noise * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }
  return value;
}

namespace {

// Reports the objective as the loss of every batch, with a zero gradient:
// training moves nothing. It counts the training batches it has seen,
// which (one per epoch, see below) is the epoch count.
class objective_loss final : public nn::loss_function {
public:
  explicit objective_loss(objective_spec spec) : spec_(std::move(spec)) {}

  std::string name() const override { return "objective"; }

  result<float> compute(const tensor& output, const tensor& target, bool want_grad) override {
    (void)target;
    if (want_grad) {
      ++epochs_;
      if (grad_.shape() != output.shape() || grad_.where() != output.where())
        grad_ = tensor::zeros(output.shape(), output.where());
    }
    return static_cast<float>(objective_value(spec_, epochs_));
  }

  int64_t epochs() const { return epochs_; }
  void set_epochs(int64_t e) { epochs_ = e; }

private:
  objective_spec spec_;
  int64_t epochs_ = 0;
};

class objective_operator final : public training_operator {
public:
  status setup(const hyperparameters& hp, replica_context& ctx, operator_parts& parts) override {
    DTRAIN_ASSIGN_OR_RETURN(auto spec, read_objective(hp, ctx.seed()));
    // One sample: every replica's shard pads to it, so an epoch is one
    // batch on every replica whatever the batch size.
    DTRAIN_ASSIGN_OR_RETURN(auto set, data::tensor_dataset::create(
                                          tensor::zeros({1, 1}), tensor::zeros({1}),
                                          "objective (" + spec.function + ")"));
    auto net = std::make_unique<nn::sequential>();
    net->add(std::make_unique<nn::linear>(1, 1, /*bias=*/false));
    DTRAIN_ASSIGN_OR_RETURN(parts.model,
                            nn::model::create(std::move(net), {1, ctx.where(), ctx.seed()}));
    DTRAIN_ASSIGN_OR_RETURN(parts.optimizer, optim::make_optimizer({"sgd"}));
    parts.schedule = optim::constant_lr(0.0f);
    auto loss = std::make_unique<objective_loss>(std::move(spec));
    loss_ = loss.get();
    parts.loss = std::move(loss);
    parts.train_data = set;
    parts.validation_data = set;
    parts.classification = false;
    return status::ok();
  }

  // The epoch count, so that a restored trial's noise and curve go on
  // from where its checkpoint was taken.
  bytes save_state() const override {
    bytes out(sizeof(int64_t));
    const int64_t e = loss_ ? loss_->epochs() : 0;
    std::memcpy(out.data(), &e, sizeof e);
    return out;
  }

  status load_state(const bytes& state) override {
    if (state.empty())
      return status::ok();
    if (state.size() != sizeof(int64_t) || !loss_)
      return invalid_argument("operator 'objective': checkpoint state of " +
                              std::to_string(state.size()) + " bytes, expected 8");
    int64_t e = 0;
    std::memcpy(&e, state.data(), sizeof e);
    loss_->set_epochs(e);
    return status::ok();
  }

private:
  objective_loss* loss_ = nullptr;  // owned by the replica's parts
};

} // namespace

std::unique_ptr<training_operator> make_objective_operator() {
  return std::make_unique<objective_operator>();
}

} // namespace dtrain::train
