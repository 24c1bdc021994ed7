#include "dtrain/tensor/tensor.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dtrain/core/check.hpp"
#include "dtrain/cuda/runtime.hpp"

namespace dtrain {

std::string shape_string(const shape_t& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

int64_t shape_numel(const shape_t& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    DTRAIN_CHECK(d >= 0, "negative dimension in a shape");
    n *= d;
  }
  return n;
}

storage::storage(size_t bytes, device where) : bytes_(bytes), where_(where) {
  if (where.is_cuda()) {
    data_ = cuda::device_malloc(bytes == 0 ? 1 : bytes, where.index);
    return;
  }
  // Round up: aligned_alloc wants a multiple of the alignment.
  size_t rounded = ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64;
  data_ = std::aligned_alloc(64, rounded);
  if (data_ == nullptr) {
    std::fprintf(stderr, "dtrain: out of host memory allocating %zu bytes\n", bytes);
    std::abort();
  }
}

storage::~storage() {
  if (where_.is_cuda())
    cuda::device_free(data_);
  else
    std::free(data_);
}

tensor tensor::empty(const shape_t& shape, device where) {
  tensor t;
  t.shape_ = shape;
  t.numel_ = shape_numel(shape);
  t.storage_ = std::make_shared<storage>(t.bytes(), where);
  return t;
}

tensor tensor::zeros(const shape_t& shape, device where) {
  tensor t = empty(shape, where);
  if (where.is_cuda())
    cuda::memset_zero(t.data(), t.bytes());
  else
    std::memset(t.data(), 0, t.bytes());
  return t;
}

tensor tensor::full(const shape_t& shape, float value, device where) {
  std::vector<float> values(static_cast<size_t>(shape_numel(shape)), value);
  return from_vector(values, shape, where);
}

tensor tensor::from_vector(const std::vector<float>& values, const shape_t& shape,
                           device where) {
  DTRAIN_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
               "from_vector: value count differs from the shape's numel");
  tensor t = empty(shape, where);
  if (where.is_cuda())
    cuda::copy(t.data(), values.data(), t.bytes(), cuda::copy_kind::host_to_device);
  else if (!values.empty())
    std::memcpy(t.data(), values.data(), t.bytes());
  return t;
}

int64_t tensor::size(int64_t axis) const {
  if (axis < 0)
    axis += dim();
  DTRAIN_CHECK(axis >= 0 && axis < dim(), "tensor::size: axis out of range");
  return shape_[static_cast<size_t>(axis)];
}

tensor tensor::view(int64_t offset, const shape_t& shape) const {
  int64_t count = shape_numel(shape);
  DTRAIN_CHECK(offset >= 0 && offset + count <= numel_, "tensor::view past the end");
  tensor t = *this;
  t.offset_ = offset_ + offset;
  t.shape_ = shape;
  t.numel_ = count;
  return t;
}

tensor tensor::reshape(const shape_t& shape) const {
  DTRAIN_CHECK(shape_numel(shape) == numel_, "tensor::reshape changes numel");
  return view(0, shape);
}

tensor tensor::rows(int64_t begin, int64_t end) const {
  DTRAIN_CHECK(dim() >= 1 && 0 <= begin && begin <= end && end <= shape_[0],
               "tensor::rows out of range");
  int64_t row = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  shape_t s = shape_;
  s[0] = end - begin;
  return view(begin * row, s);
}

tensor tensor::to(device where) const {
  tensor t = empty(shape_, where);
  t.copy_from(*this);
  return t;
}

void tensor::copy_from(const tensor& src) {
  DTRAIN_CHECK(src.numel() == numel_, "tensor::copy_from: numel differs");
  if (numel_ == 0)
    return;
  bool to_gpu = is_cuda(), from_gpu = src.is_cuda();
  if (!to_gpu && !from_gpu) {
    std::memmove(data(), src.data(), bytes());
    return;
  }
  auto kind = to_gpu && from_gpu ? cuda::copy_kind::device_to_device
              : to_gpu           ? cuda::copy_kind::host_to_device
                                 : cuda::copy_kind::device_to_host;
  cuda::copy(data(), src.data(), bytes(), kind);
}

std::vector<float> tensor::to_vector() const {
  std::vector<float> out(static_cast<size_t>(numel_));
  if (numel_ == 0)
    return out;
  if (is_cuda())
    cuda::copy(out.data(), data(), bytes(), cuda::copy_kind::device_to_host);
  else
    std::memcpy(out.data(), data(), bytes());
  return out;
}

bool tensor::bitwise_equal(const tensor& other) const {
  if (shape_ != other.shape_)
    return false;
  auto a = to_vector(), b = other.to_vector();
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace dtrain
