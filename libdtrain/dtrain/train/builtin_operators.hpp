#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dtrain/train/operator.hpp"

/// The training operators dtrain ships, by name:
///
///  - "linear_regression": the Catalyst distributed tutorial. One linear
///    layer features -> 1, MSE, a synthetic dataset (data::
///    make_linear_regression, seeded from ctx.seed()) used for training and
///    validation, a multistep schedule. Keys: samples (10000), features
///    (10), planted (false), noise (0.01), lr (1e-3), optimizer (adam),
///    milestones ("3,6"), gamma (0.1).
///  - "mlp_classifier": an MLP 784-hidden-10 on Fashion-MNIST (train split
///    for training, test split for validation), cross-entropy. Keys: hidden
///    ("256,128,100"), activation (relu), dropout (0), optimizer (adam), lr
///    (1e-3), momentum (0), weight_decay (0), nesterov (false), schedule
///    (cosine), epochs (15, the cosine length), milestones (""), gamma
///    (0.1), warmup (0), data_dir (data::default_fashion_mnist_dir()). The
///    data is loaded once per process and directory and shared by every
///    replica of the process (read-only, so safe across threads).
///  - "cnn_classifier": a CNN on Fashion-MNIST (nn::make_cnn: per entry of
///    conv, a conv2d with padding kernel / 2, the activation and a max pool;
///    then the dense head), the data, loss and optimization keys as
///    mlp_classifier. Keys: conv ("32,64", output channels per conv layer),
///    kernel (5), pool (2; 1 for none), hidden ("128"), activation (relu),
///    dropout (0), and mlp_classifier's optimizer, lr, momentum,
///    weight_decay, nesterov, schedule, epochs, milestones, gamma, warmup,
///    data_dir. Runs on CPU and CUDA.
///  - "noop": the framework's per-step overhead. A linear 1 -> 1 model
///    without bias (one parameter) on `samples` (100000) rows of one zero
///    feature, plain SGD with lr (0): the normal loop, sync and metrics,
///    with almost no arithmetic. Keys: samples, lr.
///  - "objective": a test function of the hyperparameters (Branin,
///    Hartmann-6, a quadratic, a learning curve) reported as loss and
///    validation_loss, for benchmarking searchers (objective.hpp). Keys:
///    function, x1 .. x6, noise.
///
/// Every operator rejects a hyperparameter key it does not know, naming it.
namespace dtrain::train {

/// The built-in operators' names and factories. The registry in
/// operator.cpp starts out holding them, so they exist even when the linker
/// drops the static-registration objects of this static library.
std::vector<std::pair<std::string, operator_factory>> builtin_operator_factories();

/// Registers (again) every built-in operator, replacing any registration
/// of the same name. Idempotent and thread-safe; never needed for lookups,
/// only to restore a built-in that user code replaced.
void register_builtin_operators();

} // namespace dtrain::train
