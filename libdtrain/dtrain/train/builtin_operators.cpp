#include "dtrain/train/builtin_operators.hpp"

#include <cmath>
#include <map>
#include <mutex>

#include "dtrain/core/check.hpp"
#include "dtrain/data/idx.hpp"
#include "dtrain/data/synthetic.hpp"
#include "dtrain/nn/cnn.hpp"
#include "dtrain/nn/layers.hpp"
#include "dtrain/nn/linear.hpp"
#include "dtrain/optim/factory.hpp"
#include "dtrain/train/file_data.hpp"
#include "dtrain/train/objective.hpp"

namespace dtrain::train {

namespace {

// ---- shared pieces ------------------------------------------------------------

// The optimizer keys (optimizer, lr, momentum, weight_decay, nesterov).
// Operators reject the keys they do not accept before calling this, so a
// key an operator does not know simply keeps its default here.
result<optim::optimizer_spec> read_optimizer(const hyperparameters& hp,
                                             const std::string& fallback_name) {
  optim::optimizer_spec spec;
  DTRAIN_ASSIGN_OR_RETURN(spec.name, hp.get_string("optimizer", fallback_name));
  DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", optim::default_learning_rate));
  DTRAIN_ASSIGN_OR_RETURN(double momentum, hp.get_double("momentum", 0.0));
  DTRAIN_ASSIGN_OR_RETURN(double weight_decay, hp.get_double("weight_decay", 0.0));
  DTRAIN_ASSIGN_OR_RETURN(spec.nesterov, hp.get_bool("nesterov", false));
  // A sweep can draw these from a range that strays past what makes sense;
  // say so at setup rather than train into NaNs.
  if (!(lr > 0.0) || !std::isfinite(lr))
    return invalid_argument("hyperparameter 'lr': " + hp.values().at("lr") + " is not > 0");
  if (!(momentum >= 0.0 && momentum < 1.0))
    return invalid_argument("hyperparameter 'momentum': " + std::to_string(momentum) +
                            " is not in [0, 1)");
  if (!(weight_decay >= 0.0) || !std::isfinite(weight_decay))
    return invalid_argument("hyperparameter 'weight_decay': " + std::to_string(weight_decay) +
                            " is not >= 0");
  spec.lr = static_cast<float>(lr);
  spec.momentum = static_cast<float>(momentum);
  spec.weight_decay = static_cast<float>(weight_decay);
  return spec;
}

// The schedule keys (schedule, milestones, gamma, warmup), as above.
result<optim::schedule_spec> read_schedule(const hyperparameters& hp,
                                           const std::string& fallback_name,
                                           std::vector<int64_t> fallback_milestones) {
  optim::schedule_spec spec;
  DTRAIN_ASSIGN_OR_RETURN(spec.name, hp.get_string("schedule", fallback_name));
  DTRAIN_ASSIGN_OR_RETURN(spec.milestones,
                          hp.get_int_list("milestones", std::move(fallback_milestones)));
  DTRAIN_ASSIGN_OR_RETURN(double gamma, hp.get_double("gamma", 0.1));
  DTRAIN_ASSIGN_OR_RETURN(spec.warmup, hp.get_int("warmup", 0));
  spec.gamma = static_cast<float>(gamma);
  return spec;
}

// Optimizer and schedule into `parts`; `length` is the run's length in
// epochs (the cosine schedule's period).
status build_optimization(const hyperparameters& hp, const std::string& optimizer_name,
                          const optim::schedule_spec& schedule, int64_t length,
                          operator_parts& parts) {
  DTRAIN_ASSIGN_OR_RETURN(auto spec, read_optimizer(hp, optimizer_name));
  DTRAIN_ASSIGN_OR_RETURN(parts.optimizer, optim::make_optimizer(spec));
  DTRAIN_ASSIGN_OR_RETURN(parts.schedule, optim::make_schedule(schedule, spec.lr, length));
  return status::ok();
}

// ---- linear_regression ----------------------------------------------------------

/// The Catalyst tutorial's regression (see the header).
class linear_regression_operator final : public training_operator {
public:
  status setup(const hyperparameters& hp, replica_context& ctx, operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"samples", "features", "planted", "noise", "lr",
                                           "optimizer", "milestones", "gamma", file_data_keys()},
                                          "operator 'linear_regression'"));
    if (has_file_data(hp))
      return setup_from_files(hp, ctx, parts);
    data::linear_regression_options lo;
    DTRAIN_ASSIGN_OR_RETURN(lo.samples, hp.get_int("samples", 10000));
    DTRAIN_ASSIGN_OR_RETURN(lo.features, hp.get_int("features", 10));
    DTRAIN_ASSIGN_OR_RETURN(lo.planted, hp.get_bool("planted", false));
    DTRAIN_ASSIGN_OR_RETURN(double noise, hp.get_double("noise", 0.01));
    lo.noise = static_cast<float>(noise);
    lo.seed = ctx.seed();
    DTRAIN_ASSIGN_OR_RETURN(auto set, data::make_linear_regression(lo));

    auto net = std::make_unique<nn::sequential>();
    net->add(std::make_unique<nn::linear>(lo.features, 1));
    DTRAIN_ASSIGN_OR_RETURN(parts.model, nn::model::create(std::move(net), {lo.features,
                                                                           ctx.where(),
                                                                           ctx.seed()}));
    DTRAIN_ASSIGN_OR_RETURN(auto schedule, read_schedule(hp, "multistep", {3, 6}));
    DTRAIN_RETURN_IF_ERROR(build_optimization(hp, "adam", schedule, 0, parts));
    parts.loss = std::make_unique<nn::mse_loss>();
    parts.train_data = set;
    parts.validation_data = set;  // as the tutorial: "valid" is the same loader
    parts.classification = false;
    return status::ok();
  }

private:
  // A linear model of the data: section's rows onto its targets.
  status setup_from_files(const hyperparameters& hp, replica_context& ctx,
                          operator_parts& parts) {
    for (const char* key : {"samples", "features", "planted", "noise"})
      if (hp.contains(key))
        return invalid_argument(std::string("operator 'linear_regression': hyperparameter '") +
                                key + "' makes synthetic data, but a data: section is given");
    DTRAIN_RETURN_IF_ERROR(use_file_data(hp, false, "operator 'linear_regression'", parts));
    const int64_t inputs = parts.train_data->feature_count();
    auto net = std::make_unique<nn::sequential>();
    net->add(std::make_unique<nn::linear>(inputs, parts.train_data->target_count()));
    DTRAIN_ASSIGN_OR_RETURN(parts.model, nn::model::create(std::move(net), {inputs, ctx.where(),
                                                                           ctx.seed()}));
    DTRAIN_ASSIGN_OR_RETURN(auto schedule, read_schedule(hp, "multistep", {3, 6}));
    DTRAIN_RETURN_IF_ERROR(build_optimization(hp, "adam", schedule, 0, parts));
    parts.loss = std::make_unique<nn::mse_loss>();
    parts.classification = false;
    return status::ok();
  }
};

// ---- mlp_classifier -------------------------------------------------------------

struct fashion_mnist_splits {
  std::shared_ptr<const data::dataset> train, test;
};

// Fashion-MNIST of `dir`, loaded on the first call for that directory and
// kept for the life of the process: replicas living as threads of one
// process share one copy (about 220 MB) instead of each loading its own.
// The lock is held while loading, so that concurrent first calls wait for
// one load rather than all loading; a failed load is not cached.
result<fashion_mnist_splits> shared_fashion_mnist(const std::string& dir) {
  static std::mutex mutex;
  static std::map<std::string, fashion_mnist_splits> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(dir);
  if (it != cache.end())
    return it->second;
  DTRAIN_ASSIGN_OR_RETURN(auto train, data::load_fashion_mnist(dir, data::split::train));
  DTRAIN_ASSIGN_OR_RETURN(auto test, data::load_fashion_mnist(dir, data::split::test));
  fashion_mnist_splits splits{std::move(train), std::move(test)};
  cache.emplace(dir, splits);
  return splits;
}

// hidden, activation and dropout into the MLP's shape, checked.
result<nn::mlp_spec> read_mlp(const hyperparameters& hp) {
  nn::mlp_spec spec;  // 784 inputs, 10 outputs
  DTRAIN_ASSIGN_OR_RETURN(spec.hidden, hp.get_int_list("hidden", {256, 128, 100}));
  for (int64_t width : spec.hidden)
    if (width < 1)
      return invalid_argument("hyperparameter 'hidden': layer width " + std::to_string(width) +
                              " is not >= 1");
  DTRAIN_ASSIGN_OR_RETURN(std::string act, hp.get_string("activation", "relu"));
  DTRAIN_ASSIGN_OR_RETURN(spec.act, nn::parse_activation(act));
  DTRAIN_ASSIGN_OR_RETURN(double dropout, hp.get_double("dropout", 0.0));
  if (!(dropout >= 0.0 && dropout < 1.0))
    return invalid_argument("hyperparameter 'dropout': " + std::to_string(dropout) +
                            " is not in [0, 1)");
  spec.dropout = static_cast<float>(dropout);
  return spec;
}

// A classifier's data: the data: section's sets when there is one (opened
// before the model, whose shape they give), else Fashion-MNIST of data_dir.
status classifier_data(const hyperparameters& hp, const std::string& owner,
                       operator_parts& parts) {
  if (has_file_data(hp)) {
    if (hp.contains("data_dir"))
      return invalid_argument(owner + ": hyperparameter 'data_dir' names Fashion-MNIST, but a "
                              "data: section is given");
    return use_file_data(hp, true, owner, parts);
  }
  DTRAIN_ASSIGN_OR_RETURN(std::string dir,
                          hp.get_string("data_dir", data::default_fashion_mnist_dir()));
  DTRAIN_ASSIGN_OR_RETURN(auto splits, shared_fashion_mnist(dir));
  parts.train_data = splits.train;
  parts.validation_data = splits.test;
  return status::ok();
}

// The rest of a classifier once its model is built: epochs, the optimizer
// and schedule (adam, cosine over the epochs), cross-entropy.
status finish_classifier(const hyperparameters& hp, operator_parts& parts) {
  DTRAIN_ASSIGN_OR_RETURN(int64_t epochs, hp.get_int("epochs", 15));
  if (epochs < 1)
    return invalid_argument("hyperparameter 'epochs': " + std::to_string(epochs) +
                            " is not >= 1");
  DTRAIN_ASSIGN_OR_RETURN(auto schedule, read_schedule(hp, "cosine", {}));
  DTRAIN_RETURN_IF_ERROR(build_optimization(hp, "adam", schedule, epochs, parts));
  parts.loss = std::make_unique<nn::cross_entropy_loss>();
  parts.classification = true;
  return status::ok();
}

/// An MLP classifier on Fashion-MNIST (see the header).
class mlp_classifier_operator final : public training_operator {
public:
  status setup(const hyperparameters& hp, replica_context& ctx, operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"hidden", "activation", "dropout", "optimizer", "lr",
                                           "momentum", "weight_decay", "nesterov", "schedule",
                                           "epochs", "milestones", "gamma", "warmup",
                                           "data_dir", file_data_keys()},
                                          "operator 'mlp_classifier'"));
    DTRAIN_ASSIGN_OR_RETURN(auto spec, read_mlp(hp));
    DTRAIN_RETURN_IF_ERROR(classifier_data(hp, "operator 'mlp_classifier'", parts));
    spec.inputs = parts.train_data->feature_count();
    if (parts.train_data->class_count() > 0)
      spec.outputs = parts.train_data->class_count();
    DTRAIN_ASSIGN_OR_RETURN(parts.model, nn::model::create(nn::make_mlp(spec),
                                                           {spec.inputs, ctx.where(),
                                                            ctx.seed()}));
    return finish_classifier(hp, parts);
  }
};

// ---- cnn_classifier -------------------------------------------------------------

// conv, kernel, pool, and the MLP head's keys into the CNN's shape, checked
// (an image pooled away to nothing is make_cnn's error, naming the layer).
result<nn::cnn_spec> read_cnn(const hyperparameters& hp) {
  nn::cnn_spec spec;  // 1x28x28 inputs, 10 outputs
  DTRAIN_ASSIGN_OR_RETURN(spec.conv, hp.get_int_list("conv", {32, 64}));
  for (int64_t channels : spec.conv)
    if (channels < 1)
      return invalid_argument("hyperparameter 'conv': channel count " +
                              std::to_string(channels) + " is not >= 1");
  DTRAIN_ASSIGN_OR_RETURN(spec.kernel, hp.get_int("kernel", 5));
  if (spec.kernel < 1 || spec.kernel > 28)
    return invalid_argument("hyperparameter 'kernel': " + std::to_string(spec.kernel) +
                            " is not in [1, 28]");
  DTRAIN_ASSIGN_OR_RETURN(spec.pool, hp.get_int("pool", 2));
  if (spec.pool < 1 || spec.pool > 28)
    return invalid_argument("hyperparameter 'pool': " + std::to_string(spec.pool) +
                            " is not in [1, 28]");
  DTRAIN_ASSIGN_OR_RETURN(spec.hidden, hp.get_int_list("hidden", {128}));
  DTRAIN_ASSIGN_OR_RETURN(auto head, read_mlp(hp));  // checks hidden, activation, dropout
  spec.act = head.act;
  spec.dropout = head.dropout;
  return spec;
}

/// A CNN classifier on Fashion-MNIST (see the header).
class cnn_classifier_operator final : public training_operator {
public:
  status setup(const hyperparameters& hp, replica_context& ctx, operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"conv", "kernel", "pool", "hidden", "activation",
                                           "dropout", "optimizer", "lr", "momentum",
                                           "weight_decay", "nesterov", "schedule", "epochs",
                                           "milestones", "gamma", "warmup", "data_dir",
                                           file_data_keys()},
                                          "operator 'cnn_classifier'"));
    DTRAIN_ASSIGN_OR_RETURN(auto spec, read_cnn(hp));
    DTRAIN_RETURN_IF_ERROR(classifier_data(hp, "operator 'cnn_classifier'", parts));
    // Fashion-MNIST's rows are flat: read_cnn's 1x28x28 is their shape.
    if (has_file_data(hp))
      DTRAIN_RETURN_IF_ERROR(image_input(*parts.train_data, spec));
    DTRAIN_ASSIGN_OR_RETURN(auto net, nn::make_cnn(spec));
    DTRAIN_ASSIGN_OR_RETURN(parts.model,
                            nn::model::create(std::move(net), {spec.input.features(),
                                                               ctx.where(), ctx.seed()}));
    return finish_classifier(hp, parts);
  }

private:
  // The network's input and outputs from the data: images {C, H, W}.
  static status image_input(const data::dataset& set, nn::cnn_spec& spec) {
    const std::vector<int64_t> shape = set.sample_shape();
    if (shape.size() != 3)
      return shape_mismatch("operator 'cnn_classifier' needs images (channels, height, width); "
                            "data.train (" + set.name() + ") has samples of " +
                            std::to_string(shape.size()) + " axes (" +
                            std::to_string(set.feature_count()) +
                            " values); a table's rows are viewed as images with "
                            "data.train.shape: [C, H, W]");
    spec.input = {shape[0], shape[1], shape[2]};
    if (set.class_count() > 0)
      spec.outputs = set.class_count();
    return status::ok();
  }
};

// ---- noop -----------------------------------------------------------------------

/// The smallest model the loop accepts (see the header): what an epoch
/// costs beyond the arithmetic is the framework's own overhead.
class noop_operator final : public training_operator {
public:
  status setup(const hyperparameters& hp, replica_context& ctx, operator_parts& parts) override {
    DTRAIN_RETURN_IF_ERROR(hp.check_known({"samples", "lr"}, "operator 'noop'"));
    DTRAIN_ASSIGN_OR_RETURN(int64_t samples, hp.get_int("samples", 100000));
    if (samples < 1)
      return invalid_argument("hyperparameter 'samples': " + std::to_string(samples) +
                              " is not >= 1");
    DTRAIN_ASSIGN_OR_RETURN(double lr, hp.get_double("lr", 0.0));
    DTRAIN_ASSIGN_OR_RETURN(auto set, data::tensor_dataset::create(
                                          tensor::zeros({samples, 1}), tensor::zeros({samples}),
                                          "noop (" + std::to_string(samples) + ")"));
    auto net = std::make_unique<nn::sequential>();
    net->add(std::make_unique<nn::linear>(1, 1, /*bias=*/false));  // one parameter
    DTRAIN_ASSIGN_OR_RETURN(parts.model,
                            nn::model::create(std::move(net), {1, ctx.where(), ctx.seed()}));
    DTRAIN_ASSIGN_OR_RETURN(parts.optimizer, optim::make_optimizer({"sgd"}));
    parts.schedule = optim::constant_lr(static_cast<float>(lr));
    parts.loss = std::make_unique<nn::mse_loss>();
    parts.train_data = set;
    parts.validation_data = set;
    parts.classification = false;
    return status::ok();
  }
};

template <class Operator>
operator_factory factory_of() {
  return [] { return std::unique_ptr<training_operator>(new Operator()); };
}

} // namespace

std::vector<std::pair<std::string, operator_factory>> builtin_operator_factories() {
  return {{"linear_regression", factory_of<linear_regression_operator>()},
          {"mlp_classifier", factory_of<mlp_classifier_operator>()},
          {"cnn_classifier", factory_of<cnn_classifier_operator>()},
          {"noop", factory_of<noop_operator>()},
          {"objective", [] { return make_objective_operator(); }}};
}

void register_builtin_operators() {
  for (auto& [name, factory] : builtin_operator_factories())
    register_operator(name, std::move(factory));
}

} // namespace dtrain::train
