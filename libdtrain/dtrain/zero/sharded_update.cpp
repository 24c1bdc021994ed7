#include "dtrain/zero/sharded_update.hpp"

#include <cmath>
#include <string>

#include "dtrain/core/check.hpp"
#include "dtrain/nn/module.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::zero {

namespace {

// Sum of squares of a range, in double, on the host.
double sum_of_squares(const tensor& part) {
  const tensor host = part.where().is_cpu() ? part : part.to(device::cpu());
  const float* x = host.data();
  double sum = 0;
  for (int64_t i = 0; i < host.numel(); ++i)
    sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return sum;
}

} // namespace

result<gradient_state> inspect_gradients(tensor& grads, const std::vector<optim::span>& ranges,
                                         const gradient_check_options& options,
                                         comm::communicator* group) {
  gradient_state out;
  double squares = 0;
  tensor found;
  for (const optim::span& r : ranges) {
    if (r.count == 0)
      continue;
    tensor part = grads.view(r.begin, {r.count});
    if (options.unscale) {
      if (!found.defined())
        found = tensor::zeros({1}, grads.where());
      out.finite = ops::unscale_and_check_finite(part, options.inv_scale, found) && out.finite;
    }
    if (options.norm)
      squares += sum_of_squares(part);
  }
  if (group != nullptr && group->size() > 1) {
    tensor both = tensor::zeros({2});
    both.data()[0] = out.finite ? 0.0f : 1.0f;
    both.data()[1] = static_cast<float>(squares);
    DTRAIN_RETURN_IF_ERROR(group->all_reduce(both, comm::reduce_op::sum)
                               ->wait()
                               .with_context("checking the sharded gradient"));
    out.finite = both.data()[0] == 0.0f;
    squares = static_cast<double>(both.data()[1]);
  }
  out.norm = std::sqrt(squares);
  return out;
}

float clip_ranges(tensor& grads, const std::vector<optim::span>& ranges, double norm,
                  float max_norm) {
  const double factor = static_cast<double>(max_norm) / (norm + 1e-6);
  if (!(factor < 1.0))
    return 1.0f;
  for (const optim::span& r : ranges) {
    if (r.count == 0)
      continue;
    tensor part = grads.view(r.begin, {r.count});
    ops::scale(part, static_cast<float>(factor));
  }
  return static_cast<float>(factor);
}

comm::work_ptr launch_gather(comm::communicator& group, tensor& params, const bucket_shard& b,
                             tensor& scratch) {
  const int n = group.size();
  const int64_t mine = b.chunk * group.rank();
  if (!b.padded(n))  // in place: this rank's chunk lies in the bucket
    return group.all_gather(params.view(b.begin + mine, {b.chunk}),
                            params.view(b.begin, {b.end - b.begin}));
  nn::ensure(scratch, {b.chunk * n}, params.where());
  tensor own = scratch.view(mine, {b.chunk});
  ops::fill(own, 0.0f);
  if (b.own_end > b.own_begin)
    scratch.view(mine, {b.own_end - b.own_begin})
        .copy_from(params.view(b.own_begin, {b.own_end - b.own_begin}));
  return group.all_gather(own, scratch);
}

void finish_gather(tensor& params, const bucket_shard& b, int ranks, const tensor& scratch) {
  if (b.padded(ranks))
    params.view(b.begin, {b.end - b.begin}).copy_from(scratch.view(0, {b.end - b.begin}));
}

status gather_parameters(comm::communicator& group, tensor& params, const shard_layout& layout,
                         tensor& scratch) {
  if (group.size() == 1)
    return status::ok();
  std::vector<comm::work_ptr> pending;
  for (const bucket_shard& b : layout.buckets())
    pending.push_back(launch_gather(group, params, b, scratch));
  status first;
  for (auto& w : pending)
    if (status s = w->wait(); !s && first.is_ok())
      first = s.with_context("gathering the sharded parameters");
  if (!first)
    return first;
  for (const bucket_shard& b : layout.buckets())
    finish_gather(params, b, group.size(), scratch);
  return status::ok();
}

} // namespace dtrain::zero
