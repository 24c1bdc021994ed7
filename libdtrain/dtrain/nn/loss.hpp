#pragma once

#include <memory>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::nn {

/// A loss over a batch: the mean over the batch, and its gradient with
/// respect to the model output. Owns its scratch and gradient buffers,
/// reused while the batch shape stays the same. Not thread-safe.
class loss_function {
public:
  virtual ~loss_function() = default;
  virtual std::string name() const = 0;

  /// The mean loss of `output` against `target`; with want_grad, also
  /// d(loss)/d(output), readable through grad() until the next call. Shapes
  /// or devices that do not match are an error naming both.
  virtual result<float> compute(const tensor& output, const tensor& target,
                                bool want_grad) = 0;
  const tensor& grad() const { return grad_; }

  /// A factor the gradient of later compute() calls is multiplied by (the
  /// loss is not): the loss scale of fp16 training (train::loss_scaler),
  /// set by the training step before each compute(). 1 by default. A loss
  /// written outside dtrain must honour it for fp16 training to work.
  void set_grad_multiplier(float m) { grad_multiplier_ = m; }
  float grad_multiplier() const { return grad_multiplier_; }

protected:
  tensor grad_, scratch_;
  float grad_multiplier_ = 1.0f;
};

/// Softmax cross-entropy against class indices (one float per row), as
/// torch.nn.CrossEntropyLoss(); numerically stable for large logits.
class cross_entropy_loss final : public loss_function {
public:
  std::string name() const override { return "cross_entropy"; }
  result<float> compute(const tensor& output, const tensor& target, bool want_grad) override;
};

/// Mean squared error over every element, as torch.nn.MSELoss(). A target
/// of shape [n] is taken as [n, 1].
class mse_loss final : public loss_function {
public:
  std::string name() const override { return "mse"; }
  result<float> compute(const tensor& output, const tensor& target, bool want_grad) override;
};

/// "cross_entropy" or "mse"; anything else is an invalid_argument naming it.
result<std::unique_ptr<loss_function>> make_loss(const std::string& name);

/// Counts the rows whose first maximum logit is at the label, reusing its
/// scratch buffer.
class accuracy_counter {
public:
  result<int64_t> count(const tensor& logits, const tensor& labels);

private:
  tensor scratch_;
};

} // namespace dtrain::nn
