// The CPU-only build's layer kernels: a build without CUDA never hands out a
// device pointer, so reaching any of these is a broken invariant (abort with
// a message), as in runtime_stub.cpp.
#include "dtrain/cuda/layer_kernels.hpp"

#include <cstdio>
#include <cstdlib>

namespace dtrain::cuda {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  std::fprintf(stderr, "dtrain: %s: this build of dtrain has no CUDA support\n", what);
  std::abort();
}
} // namespace

void im2col(const window2d&, const float*, float*) { no_cuda("im2col"); }
void col2im(const window2d&, const float*, float*) { no_cuda("col2im"); }
void channels_to_batch(const float*, const float*, float*, int64_t, int64_t, int64_t) {
  no_cuda("channels_to_batch");
}
void batch_to_channels(const float*, float*, int64_t, int64_t, int64_t) {
  no_cuda("batch_to_channels");
}
void channel_sums(const float*, float*, int64_t, int64_t, int64_t, float) {
  no_cuda("channel_sums");
}
void max_pool(const window2d&, const float*, float*, int64_t*) { no_cuda("max_pool"); }
void max_pool_backward(const window2d&, const float*, const int64_t*, float*) {
  no_cuda("max_pool_backward");
}
void avg_pool(const window2d&, const float*, float*) { no_cuda("avg_pool"); }
void avg_pool_backward(const window2d&, const float*, float*) { no_cuda("avg_pool_backward"); }
void batch_norm_channel_sums(const float*, const double*, int, double*, int64_t, int64_t,
                             int64_t) {
  no_cuda("batch_norm_channel_sums");
}
void batch_norm_normalize(const float*, const double*, const double*, const float*,
                          const float*, float*, float*, int64_t, int64_t, int64_t) {
  no_cuda("batch_norm_normalize");
}
void batch_norm_grad_sums(const float*, const float*, double*, int64_t, int64_t, int64_t) {
  no_cuda("batch_norm_grad_sums");
}
void batch_norm_param_grads(const double*, float*, float*, int64_t) {
  no_cuda("batch_norm_param_grads");
}
void batch_norm_input_grad(const float*, const float*, const float*, const double*,
                           const double*, double, bool, float*, int64_t, int64_t, int64_t) {
  no_cuda("batch_norm_input_grad");
}
void layer_norm_forward(const float*, const float*, const float*, float, float*, float*,
                        float*, int64_t, int64_t) {
  no_cuda("layer_norm_forward");
}
void layer_norm_backward(const float*, const float*, const float*, const float*, float*,
                         float*, float*, int64_t, int64_t) {
  no_cuda("layer_norm_backward");
}
void embedding_forward(const float*, const float*, float*, int64_t, int64_t, int64_t) {
  no_cuda("embedding_forward");
}
void embedding_backward(const float*, const float*, float*, int64_t, int64_t, int64_t) {
  no_cuda("embedding_backward");
}

} // namespace dtrain::cuda
