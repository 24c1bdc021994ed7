// conv2d's CUDA path: the whole batch at once. im2col turns x into columns
// [C * kh * kw, batch * OH * OW], so that group g's output for every sample
// is one GEMM, W_g [group_out, group_k] x col_g [group_k, batch * OH * OW],
// into a channel-major [out, batch * OH * OW] buffer that one more kernel
// lays out as NCHW (adding the bias). One large GEMM per group keeps cuBLAS
// busier than a strided-batched GEMM of per-sample slices would, and needs
// no handle of its own: it goes through ops::matmul like every other GEMM.
#include "dtrain/cuda/layer_kernels.hpp"
#include "dtrain/nn/cuda_window.hpp"
#include "dtrain/nn/conv.hpp"
#include "dtrain/tensor/ops.hpp"

namespace dtrain::nn {

namespace {

// Rows [group * rows, (group + 1) * rows) of a [.., cols] matrix, as a view.
tensor group_rows(const tensor& t, int64_t group, int64_t rows, int64_t cols) {
  return t.view(group * rows * cols, {rows, cols});
}

} // namespace

const tensor& conv2d::forward_cuda(const tensor& x, precision compute) {
  input_tensor_ = &x;
  const int64_t batch = x.size(0), groups = options_.groups;
  const int64_t columns = batch * window_.out_h() * window_.out_w();
  const int64_t group_out = out_channels_ / groups;
  const int64_t group_k = input_.channels / groups * options_.kernel_h * options_.kernel_w;
  ensure(output_, {batch, output_shape().features()}, x.where());
  ensure(col_, {group_k * groups, columns}, x.where());
  ensure(channel_major_, {out_channels_, columns}, x.where());
  // Even a 1x1 conv needs the im2col here: it moves the batch axis inwards.
  cuda::im2col(batch_window(window_, batch), x.data(), col_.data());
  for (int64_t g = 0; g < groups; ++g) {
    tensor y_g = group_rows(channel_major_, g, group_out, columns);
    ops::matmul(group_rows(weight_, g, group_out, group_k), false,
                group_rows(col_, g, group_k, columns), false, y_g, 1.0f, 0.0f, compute);
  }
  cuda::channels_to_batch(channel_major_.data(), options_.bias ? bias_.data() : nullptr,
                          output_.data(), batch, out_channels_,
                          window_.out_h() * window_.out_w());
  return output_;
}

const tensor& conv2d::backward_cuda(const tensor& dy, const backward_context& ctx) {
  const int64_t batch = dy.size(0), groups = options_.groups;
  const int64_t positions = window_.out_h() * window_.out_w();
  const int64_t columns = batch * positions;
  const int64_t group_out = out_channels_ / groups;
  const int64_t group_k = input_.channels / groups * options_.kernel_h * options_.kernel_w;
  // beta 0 overwrites the gradients (ctx.accumulate false) without a fill.
  const float beta = ctx.accumulate ? 1.0f : 0.0f;
  ensure(channel_major_grad_, {out_channels_, columns}, dy.where());
  cuda::batch_to_channels(dy.data(), channel_major_grad_.data(), batch, out_channels_,
                          positions);
  // col_ still holds forward's columns of x: no forward came in between.
  for (int64_t g = 0; g < groups; ++g) {
    tensor dw_g = group_rows(weight_grad_, g, group_out, group_k);
    ops::matmul(group_rows(channel_major_grad_, g, group_out, columns), false,
                group_rows(col_, g, group_k, columns), true, dw_g, 1.0f, beta, ctx.compute);
  }
  if (options_.bias)
    cuda::channel_sums(dy.data(), bias_grad_.data(), batch, out_channels_, positions, beta);
  if (!ctx.need_input_grad) {
    input_grad_ = tensor();
    return input_grad_;
  }
  ensure(input_grad_, {batch, input_.features()}, dy.where());
  ensure(col_grad_, {group_k * groups, columns}, dy.where());
  for (int64_t g = 0; g < groups; ++g) {
    tensor dcol_g = group_rows(col_grad_, g, group_k, columns);
    ops::matmul(group_rows(weight_, g, group_out, group_k), true,
                group_rows(channel_major_grad_, g, group_out, columns), false, dcol_g, 1.0f,
                0.0f, ctx.compute);
  }
  cuda::col2im(batch_window(window_, batch), col_grad_.data(), input_grad_.data());
  return input_grad_;
}

} // namespace dtrain::nn
