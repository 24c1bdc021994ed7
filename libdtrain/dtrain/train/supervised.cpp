#include "dtrain/train/supervised.hpp"

#include <chrono>
#include <cmath>

#include "dtrain/core/check.hpp"

namespace dtrain::train {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

status count_batch(nn::model& model, nn::loss_function& loss, const data::batch& batch,
                   float value, const loop_options& options, const tensor& output,
                   epoch_totals& totals) {
  if (!std::isfinite(value))
    return status(error_code::internal,
                  "the " + loss.name() + " loss is not finite (" + std::to_string(value) +
                      ") after " + std::to_string(totals.samples) +
                      " samples of the epoch: the run diverged; lower the learning rate");
  totals.loss_sum += static_cast<double>(value) * static_cast<double>(batch.size());
  totals.samples += batch.size();
  if (options.classification) {
    nn::accuracy_counter counter;
    DTRAIN_ASSIGN_OR_RETURN(int64_t correct, counter.count(output, batch.targets));
    totals.correct += correct;
  }
  return status::ok();
}

} // namespace

status train_step(nn::model& model, nn::loss_function& loss, optim::optimizer& opt,
                  const data::batch& batch, float lr, const loop_options& options,
                  epoch_totals& totals) {
  DTRAIN_ASSIGN_OR_RETURN(const tensor* output, model.forward(batch.features, true));
  loss.set_grad_multiplier(options.scaler != nullptr ? options.scaler->scale() : 1.0f);
  DTRAIN_ASSIGN_OR_RETURN(float value, loss.compute(*output, batch.targets, true));
  DTRAIN_RETURN_IF_ERROR(count_batch(model, loss, batch, value, options, *output, totals));
  DTRAIN_RETURN_IF_ERROR(model.backward(loss.grad(), /*accumulate=*/false));
  if (options.scaler != nullptr && !options.scaler->unscale_or_skip(model.gradients()))
    return status::ok();
  return opt.step(model.parameters(), model.gradients(), lr);
}

result<epoch_totals> train_epoch(nn::model& model, nn::loss_function& loss,
                                 optim::optimizer& opt, data::loader& loader, float lr,
                                 const loop_options& options) {
  epoch_totals totals;
  auto start = clock_type::now();
  while (const data::batch* batch = loader.next())
    DTRAIN_RETURN_IF_ERROR(train_step(model, loss, opt, *batch, lr, options, totals));
  DTRAIN_RETURN_IF_ERROR(loader.error());
  totals.seconds = seconds_since(start);
  return totals;
}

result<epoch_totals> evaluate(nn::model& model, nn::loss_function& loss,
                              data::loader& loader, const loop_options& options) {
  epoch_totals totals;
  auto start = clock_type::now();
  while (const data::batch* batch = loader.next()) {
    DTRAIN_ASSIGN_OR_RETURN(const tensor* output, model.forward(batch->features, false));
    DTRAIN_ASSIGN_OR_RETURN(float value, loss.compute(*output, batch->targets, false));
    DTRAIN_RETURN_IF_ERROR(count_batch(model, loss, *batch, value, options, *output, totals));
  }
  DTRAIN_RETURN_IF_ERROR(loader.error());
  totals.seconds = seconds_since(start);
  return totals;
}

} // namespace dtrain::train
