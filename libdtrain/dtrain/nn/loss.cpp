#include "dtrain/nn/loss.hpp"

#include "dtrain/core/check.hpp"
#include "dtrain/nn/module.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

namespace {

status check_pair(const char* loss, const tensor& output, const tensor& target,
                  int64_t target_per_row) {
  if (!output.defined() || !target.defined() || output.dim() != 2)
    return shape_mismatch(std::string(loss) + ": output must be a 2-D tensor");
  if (output.where() != target.where())
    return invalid_argument(std::string(loss) + ": output on " + output.where().to_string() +
                            ", target on " + target.where().to_string());
  if (target.numel() != output.size(0) * target_per_row)
    return shape_mismatch(std::string(loss) + ": target " + shape_string(target.shape()) +
                          " does not match output " + shape_string(output.shape()));
  return status::ok();
}

} // namespace

result<float> cross_entropy_loss::compute(const tensor& output, const tensor& target,
                                          bool want_grad) {
  DTRAIN_RETURN_IF_ERROR(check_pair("cross_entropy", output, target, 1));
  ensure(scratch_, {output.size(0)}, output.where());
  if (want_grad)
    ensure(grad_, output.shape(), output.where());
  return ops::softmax_cross_entropy(output, target, want_grad ? &grad_ : nullptr, scratch_,
                                    grad_multiplier_);
}

result<float> mse_loss::compute(const tensor& output, const tensor& target, bool want_grad) {
  DTRAIN_RETURN_IF_ERROR(check_pair("mse", output, target, output.dim() == 2 ? output.size(1) : 0));
  ensure(scratch_, {output.size(0)}, output.where());
  if (want_grad)
    ensure(grad_, output.shape(), output.where());
  return ops::mse(output, target.reshape(output.shape()), want_grad ? &grad_ : nullptr,
                  scratch_, grad_multiplier_);
}

result<std::unique_ptr<loss_function>> make_loss(const std::string& name) {
  if (name == "cross_entropy")
    return std::unique_ptr<loss_function>(new cross_entropy_loss());
  if (name == "mse")
    return std::unique_ptr<loss_function>(new mse_loss());
  return invalid_argument("unknown loss '" + name + "' (choose cross_entropy or mse)");
}

result<int64_t> accuracy_counter::count(const tensor& logits, const tensor& labels) {
  DTRAIN_RETURN_IF_ERROR(check_pair("accuracy", logits, labels, 1));
  ensure(scratch_, {logits.size(0)}, logits.where());
  return ops::count_correct(logits, labels, scratch_);
}

} // namespace dtrain::nn
