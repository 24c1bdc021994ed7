#pragma once

#include <vector>

#include "dtrain/comm/communicator.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/optim/optimizer.hpp"
#include "dtrain/tensor/tensor.hpp"
#include "dtrain/zero/shard_layout.hpp"

/// The optimizer step's parts that change when the state is sharded: the
/// gradient check (fp16 overflow) and the norm for clipping, which need the
/// whole gradient, and the all-gather that gives every rank the parameters
/// the others updated.
namespace dtrain::zero {

struct gradient_check_options {
  /// Unscale (multiply by inv_scale) and check every element is finite:
  /// the loss scaler's pass (train/loss_scaler.hpp).
  bool unscale = false;
  float inv_scale = 1.0f;
  /// Also compute the L2 norm (for clipping), after unscaling.
  bool norm = false;
};

struct gradient_state {
  bool finite = true;
  double norm = 0;  // when asked for; over the whole gradient
};

/// One pass over `ranges` of grads: unscales and checks them and sums
/// their squares, as asked. With `group` (ZeRO stage 2: each rank holds
/// the averaged gradient of its own ranges only) the flags and the sums of
/// squares are added across the group in one all-reduce of two floats, so
/// that every rank sees the same decision and the whole gradient's norm;
/// without, `ranges` must be the whole gradient. A failed all-reduce is the
/// error. Synchronizes a CUDA device.
result<gradient_state> inspect_gradients(tensor& grads, const std::vector<optim::span>& ranges,
                                         const gradient_check_options& options,
                                         comm::communicator* group);

/// torch.nn.utils.clip_grad_norm_'s rule: when norm > max_norm, multiplies
/// `ranges` of grads by max_norm / (norm + 1e-6). Returns the factor (1
/// when nothing was clipped).
float clip_ranges(tensor& grads, const std::vector<optim::span>& ranges, double norm,
                  float max_norm);

/// One bucket of gather_parameters, issued: in place, or (a padded bucket)
/// through `scratch`, which then stays untouched until finish_gather().
comm::work_ptr launch_gather(comm::communicator& group, tensor& params, const bucket_shard& b,
                             tensor& scratch);
/// Once launch_gather's work has succeeded: copies a padded bucket out of
/// `scratch` (nothing to do for the others).
void finish_gather(tensor& params, const bucket_shard& b, int ranks, const tensor& scratch);

/// After every rank has updated its own parts of `params`: all-gathers
/// each bucket in place, so that every rank holds all of them again.
/// All buckets are issued at once and then awaited; a padded bucket goes
/// through `scratch` (kept between calls). Errors name the bucket.
status gather_parameters(comm::communicator& group, tensor& params, const shard_layout& layout,
                         tensor& scratch);

} // namespace dtrain::zero
