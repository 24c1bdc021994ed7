#include "support/step_operators.hpp"

#include <cmath>
#include <mutex>
#include <stdexcept>

#include "dtrain/core/check.hpp"
#include "dtrain/data/synthetic.hpp"
#include "dtrain/nn/build.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/train/operator.hpp"

namespace dtrain::testing {

namespace {

using train::step_context;
using train::step_result;

// A linear model on planted regression data, plain SGD at `lr` (with
// `scheduled` false: no schedule, the replica's default one).
status regression_parts(const train::hyperparameters& hp, train::replica_context& ctx,
                        train::operator_parts& parts, int64_t default_samples,
                        bool scheduled = true) {
  data::linear_regression_options lo;
  DTRAIN_ASSIGN_OR_RETURN(lo.samples, hp.get_int("samples", default_samples));
  DTRAIN_ASSIGN_OR_RETURN(lo.features, hp.get_int("features", 10));
  lo.planted = true;
  lo.seed = ctx.seed();
  DTRAIN_ASSIGN_OR_RETURN(auto set, data::make_linear_regression(lo));
  auto net = std::make_unique<nn::sequential>();
  net->add(std::make_unique<nn::linear>(lo.features, 1));
  DTRAIN_ASSIGN_OR_RETURN(parts.model, nn::model::create(std::move(net),
                                                         {lo.features, ctx.where(), ctx.seed()}));
  DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", 0.05));
  DTRAIN_ASSIGN_OR_RETURN(parts.optimizer, optim::make_optimizer({"sgd"}));
  if (scheduled)
    parts.schedule = optim::constant_lr(static_cast<float>(lr));
  parts.loss = std::make_unique<nn::mse_loss>();
  parts.train_data = set;
  parts.validation_data = set;
  parts.classification = false;
  return status::ok();
}

// Mean absolute error of `output` against the batch's targets.
train::step_metric mae_of(const tensor& output, const data::batch& batch) {
  double sum = 0;
  const int64_t n = batch.size();
  for (int64_t i = 0; i < n; ++i)
    sum += std::abs(static_cast<double>(output.data()[i]) - batch.targets.data()[i]);
  return {"mae", sum / static_cast<double>(n), static_cast<double>(n)};
}

class weighted_l2_regression final : public train::training_operator {
public:
  status setup(const train::hyperparameters& hp, train::replica_context& ctx,
               train::operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"samples", "features", "lr", "l2", "direct"},
                                          "operator 'weighted_l2_regression'"));
    DTRAIN_ASSIGN_OR_RETURN(double l2, hp.get_double("l2", 0.01));
    DTRAIN_ASSIGN_OR_RETURN(direct_, hp.get_bool("direct", false));
    l2_ = static_cast<float>(l2);
    return regression_parts(hp, ctx, parts, 2000);
  }

  result<step_result> train_step(step_context& ctx) override {
    const int64_t n = ctx.batch.size();
    DTRAIN_ASSIGN_OR_RETURN(const tensor* out, ctx.model.forward(ctx.batch.features, true));
    // The weighted MSE and its gradient with respect to the output.
    if (grad_.numel() != n)
      grad_ = tensor::zeros({n, 1});
    const float* y = out->data();
    const float* t = ctx.batch.targets.data();
    double loss = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float w = t[i] > 0 ? 1.5f : 1.0f, d = y[i] - t[i];
      loss += static_cast<double>(w) * d * d;
      // Times the loss scale: under fp16 the framework divides it out again.
      grad_.data()[i] = 2.0f * w * d / static_cast<float>(n) * ctx.loss_scale;
    }
    loss /= static_cast<double>(n);
    step_result r;
    r.metrics.push_back(mae_of(*out, ctx.batch));
    tensor& g = ctx.model.gradients();
    const tensor& theta = ctx.model.parameters();
    if (direct_) {
      write_gradient(ctx, g);
    } else {
      // The L2 term is added after backward: hold the sync first.
      DTRAIN_RETURN_IF_ERROR(ctx.hold_gradient_sync());
      DTRAIN_RETURN_IF_ERROR(ctx.model.backward(grad_, ctx.accumulate));
    }
    double norm = 0;
    for (int64_t j = 0; j < theta.numel(); ++j) {
      g.data()[j] += l2_ * theta.data()[j] * ctx.loss_scale;
      norm += static_cast<double>(theta.data()[j]) * theta.data()[j];
    }
    r.loss = loss + 0.5 * l2_ * norm;
    return r;
  }

  result<step_result> validation_step(step_context& ctx) override {
    DTRAIN_ASSIGN_OR_RETURN(step_result r, train::standard_validation_step(ctx));
    r.metrics.push_back(mae_of(*ctx.output, ctx.batch));
    return r;
  }

private:
  // d(weighted MSE)/d(weight, bias) of the linear layer, by hand, into
  // `g` (layer 0's weight [1, features], then its bias), honouring
  // ctx.accumulate; backward() is never called.
  void write_gradient(step_context& ctx, tensor& g) {
    const auto& slots = ctx.model.slots();
    float* w = g.data() + slots[0].offset;
    float* b = g.data() + slots[1].offset;
    const int64_t features = slots[0].count, n = ctx.batch.size();
    if (!ctx.accumulate) {
      std::fill(w, w + features, 0.0f);
      *b = 0.0f;
    }
    for (int64_t i = 0; i < n; ++i) {
      const float d = grad_.data()[i];
      const float* x = ctx.batch.features.data() + i * features;
      for (int64_t j = 0; j < features; ++j)
        w[j] += d * x[j];
      *b += d;
    }
  }

  float l2_ = 0;
  bool direct_ = false;
  tensor grad_;
};

class failing_step final : public train::training_operator {
public:
  status setup(const train::hyperparameters& hp, train::replica_context& ctx,
               train::operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"fail", "samples"}, "operator 'failing_step'"));
    DTRAIN_ASSIGN_OR_RETURN(fail_, hp.get_string("fail", "train"));
    return regression_parts(hp, ctx, parts, 200);
  }

  result<step_result> train_step(step_context& ctx) override {
    ++batches_;
    if (fail_ == "train" && batches_ == 3)
      return invalid_argument("batch 3 holds nothing to learn");
    if (fail_ == "throw" && batches_ == 3)
      throw std::runtime_error("out of patience at batch 3");
    if (fail_ == "late_hold") {
      DTRAIN_ASSIGN_OR_RETURN(step_result r, train::standard_train_step(ctx));
      DTRAIN_RETURN_IF_ERROR(ctx.hold_gradient_sync());
      return r;
    }
    DTRAIN_ASSIGN_OR_RETURN(step_result r, train::standard_train_step(ctx));
    if (fail_ == "reserved")
      r.metrics.push_back({"loss", r.loss, static_cast<double>(ctx.batch.size())});
    return r;
  }

  result<step_result> validation_step(step_context& ctx) override {
    if (fail_ == "validation")
      return invalid_argument("no validation today");
    return train::standard_validation_step(ctx);
  }

private:
  std::string fail_;
  int64_t batches_ = 0;
};

// Regression through a BatchNorm layer (running statistics to keep),
// with the standard steps.
class batch_norm_regression final : public train::training_operator {
public:
  status setup(const train::hyperparameters& hp, train::replica_context& ctx,
               train::operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"samples", "features", "lr", "sync_batch_norm"},
                                          "operator 'batch_norm_regression'"));
    DTRAIN_ASSIGN_OR_RETURN(parts.sync_batch_norm, hp.get_bool("sync_batch_norm", false));
    DTRAIN_RETURN_IF_ERROR(regression_parts(hp, ctx, parts, 400));
    using namespace nn::build;
    const int64_t features = parts.model->input_features();
    DTRAIN_ASSIGN_OR_RETURN(
        parts.model,
        nn::model::create(seq(linear(features, 8), batch_norm1d(8), relu(), linear(8, 1)),
                          {features, ctx.where(), ctx.seed()}));
    return status::ok();
  }
};

class unscheduled_regression final : public train::training_operator {
public:
  status setup(const train::hyperparameters& hp, train::replica_context& ctx,
               train::operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"samples", "features", "lr"},
                                          "operator 'unscheduled_regression'"));
    return regression_parts(hp, ctx, parts, 256, /*scheduled=*/false);
  }
};

} // namespace

void register_step_operators() {
  static std::once_flag once;
  std::call_once(once, [] {
    train::register_operator("weighted_l2_regression", [] {
      return std::unique_ptr<train::training_operator>(new weighted_l2_regression());
    });
    train::register_operator("failing_step", [] {
      return std::unique_ptr<train::training_operator>(new failing_step());
    });
    train::register_operator("batch_norm_regression", [] {
      return std::unique_ptr<train::training_operator>(new batch_norm_regression());
    });
    train::register_operator("unscheduled_regression", [] {
      return std::unique_ptr<train::training_operator>(new unscheduled_regression());
    });
  });
}

} // namespace dtrain::testing
