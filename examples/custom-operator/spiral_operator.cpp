// A plugin of training operators, built out of tree against an installed
// dtrain (see README.md). It registers one operator, "spiral_mlp": a small
// MLP learning to tell apart the arms of a K-armed spiral in the plane, a
// data set it makes itself, so the example needs no downloads.
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/loss.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/plugin/plugin.hpp"

namespace {

using dtrain::result;
using dtrain::status;

// `points` samples per arm, arm k at angles offset by 2*pi*k/arms, with
// Gaussian noise: features [N, 2], targets [N] (the arm's index). The same
// seed gives the same set on every replica, which then shard it.
result<std::shared_ptr<dtrain::data::tensor_dataset>> make_spiral(int64_t arms, int64_t points,
                                                                   double noise,
                                                                   uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> jitter(0.0f, static_cast<float>(noise));
  std::vector<float> xy, labels;
  xy.reserve(static_cast<size_t>(2 * arms * points));
  labels.reserve(static_cast<size_t>(arms * points));
  for (int64_t k = 0; k < arms; ++k)
    for (int64_t i = 0; i < points; ++i) {
      float r = static_cast<float>(i) / static_cast<float>(points);  // 0 .. 1
      float angle = 4.0f * r + 2.0f * static_cast<float>(M_PI) * static_cast<float>(k) /
                                   static_cast<float>(arms);
      xy.push_back(r * std::sin(angle) + jitter(gen));
      xy.push_back(r * std::cos(angle) + jitter(gen));
      labels.push_back(static_cast<float>(k));
    }
  int64_t n = arms * points;
  return dtrain::data::tensor_dataset::create(dtrain::tensor::from_vector(xy, {n, 2}),
                                              dtrain::tensor::from_vector(labels, {n}),
                                              "spiral (" + std::to_string(arms) + " arms)");
}

/// The operator: every replica builds the same model and data from the
/// hyperparameters and the trainer's seed; dtrain shards the data, runs the
/// epochs and averages the gradients.
class spiral_mlp final : public dtrain::train::training_operator {
public:
  status setup(const dtrain::train::hyperparameters& hp, dtrain::train::replica_context& ctx,
               dtrain::train::operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(
        hp.check_known({"arms", "points", "noise", "hidden", "lr"}, "operator 'spiral_mlp'"));
    DTRAIN_ASSIGN_OR_RETURN(int64_t arms, hp.get_int("arms", 3));
    DTRAIN_ASSIGN_OR_RETURN(int64_t points, hp.get_int("points", 2000));
    DTRAIN_ASSIGN_OR_RETURN(double noise, hp.get_double("noise", 0.02));
    DTRAIN_ASSIGN_OR_RETURN(int64_t hidden, hp.get_int("hidden", 64));
    DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", 0.01));
    if (arms < 2 || points < 1 || hidden < 1 || !(lr > 0))
      return dtrain::invalid_argument(
          "operator 'spiral_mlp': arms >= 2, points >= 1, hidden >= 1 and lr > 0 are needed");

    DTRAIN_ASSIGN_OR_RETURN(parts.train_data, make_spiral(arms, points, noise, ctx.seed()));
    DTRAIN_ASSIGN_OR_RETURN(parts.validation_data,
                            make_spiral(arms, points / 4 + 1, noise, ctx.seed() + 1));

    dtrain::nn::mlp_spec spec;
    spec.inputs = 2;
    spec.hidden = {hidden, hidden};
    spec.outputs = arms;
    spec.act = dtrain::ops::activation::tanh;
    DTRAIN_ASSIGN_OR_RETURN(parts.model,
                            dtrain::nn::model::create(dtrain::nn::make_mlp(spec),
                                                      {spec.inputs, ctx.where(), ctx.seed()}));
    dtrain::optim::optimizer_spec adam;
    adam.name = "adam";
    adam.lr = static_cast<float>(lr);
    DTRAIN_ASSIGN_OR_RETURN(parts.optimizer, dtrain::optim::make_optimizer(adam));
    // The rate comes from the schedule: without one, the replica would
    // train at dtrain's default rather than this operator's.
    parts.schedule = dtrain::optim::constant_lr(static_cast<float>(lr));
    parts.loss = std::make_unique<dtrain::nn::cross_entropy_loss>();
    parts.classification = true;
    return status::ok();
  }
};

} // namespace

DTRAIN_PLUGIN(registrar) {
  registrar.add_operator("spiral_mlp", [] { return std::make_unique<spiral_mlp>(); });
}
