#include "dtrain/tensor/tensor.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

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

result<int64_t> checked_numel(const shape_t& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return invalid_argument("shape " + shape_string(shape) + " has a negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return invalid_argument("shape " + shape_string(shape) +
                              ": the element count does not fit in 64 bits");
    n *= d;
  }
  return n;
}

result<size_t> checked_bytes(const shape_t& shape) {
  DTRAIN_ASSIGN_OR_RETURN(int64_t n, checked_numel(shape));
  if (static_cast<uint64_t>(n) > std::numeric_limits<size_t>::max() / sizeof(float))
    return invalid_argument("shape " + shape_string(shape) + ": " + std::to_string(n) +
                            " floats do not fit in the address space");
  return static_cast<size_t>(n) * sizeof(float);
}

int64_t shape_numel(const shape_t& shape) {
  auto n = checked_numel(shape);
  DTRAIN_CHECK(n.is_ok(), n.error().message().c_str());
  return *n;
}

size_t host_allocation_limit() {
  // Physical memory does not change while we run: ask once, not on every
  // allocation (this sits on the training step's path).
  static const size_t limit = [] {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
      return std::numeric_limits<size_t>::max();  // unknown: leave it to the allocator
    return static_cast<size_t>(pages) * static_cast<size_t>(page);
  }();
  return limit;
}

namespace {

std::string gib(size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  return text;
}

} // namespace

result<std::shared_ptr<storage>> storage::allocate(size_t bytes, device where) {
  if (where.is_cuda()) {
    DTRAIN_ASSIGN_OR_RETURN(void* data, cuda::device_malloc(bytes == 0 ? 1 : bytes, where.index));
    return std::shared_ptr<storage>(new storage(data, bytes, where));
  }
  const size_t limit = host_allocation_limit();
  if (bytes > limit)
    return resource_exhausted("cannot allocate " + std::to_string(bytes) + " bytes (" +
                              gib(bytes) + ") of host memory: more than this machine has (" +
                              gib(limit) + ")");
  // Round up: aligned_alloc wants a multiple of the alignment.
  size_t rounded = ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, rounded);
  if (data == nullptr)
    return resource_exhausted("out of host memory allocating " + std::to_string(bytes) +
                              " bytes (" + gib(bytes) + ")");
  try {
    return std::shared_ptr<storage>(new storage(data, bytes, where));
  } catch (const std::bad_alloc&) {  // the control block
    std::free(data);
    return resource_exhausted("out of host memory allocating a tensor's bookkeeping");
  }
}

std::shared_ptr<storage> storage::adopt(void* data, size_t bytes, std::shared_ptr<void> owner,
                                        device where) {
  DTRAIN_CHECK(owner != nullptr, "storage::adopt needs the memory's owner");
  std::shared_ptr<storage> s(new storage(data, bytes, where));
  s->owner_ = std::move(owner);
  return s;
}

storage::~storage() {
  if (owner_)
    return;  // the owner's memory
  if (where_.is_cuda())
    cuda::device_free(data_);
  else
    std::free(data_);
}

result<tensor> tensor::try_empty(const shape_t& shape, device where) {
  DTRAIN_ASSIGN_OR_RETURN(size_t bytes, checked_bytes(shape));
  auto block = storage::allocate(bytes, where);
  if (!block)
    return block.error().with_context("tensor " + shape_string(shape) + " on " +
                                      where.to_string());
  tensor t;
  t.shape_ = shape;
  t.numel_ = static_cast<int64_t>(bytes / sizeof(float));
  t.storage_ = std::move(*block);
  return t;
}

tensor tensor::over(float* data, const shape_t& shape, std::shared_ptr<void> owner,
                    device where) {
  tensor t;
  t.shape_ = shape;
  t.numel_ = shape_numel(shape);
  t.storage_ = storage::adopt(data, static_cast<size_t>(t.numel_) * sizeof(float),
                              std::move(owner), where);
  return t;
}

result<tensor> tensor::try_zeros(const shape_t& shape, device where) {
  DTRAIN_ASSIGN_OR_RETURN(size_t bytes, checked_bytes(shape));
  if (!where.is_cuda() && bytes >= (size_t{4} << 20) && bytes <= host_allocation_limit()) {
    // Fresh anonymous pages read as zeros and cost nothing until written:
    // no memset making all of a large buffer resident at once (a model's
    // gradients before its first backward, a sharded state's foreign parts).
    void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data != MAP_FAILED) {
      std::shared_ptr<void> owner(data, [bytes](void* p) { munmap(p, bytes); });
      return over(static_cast<float*>(data), shape, std::move(owner), where);
    }
  }
  DTRAIN_ASSIGN_OR_RETURN(tensor t, try_empty(shape, where));
  if (where.is_cuda())
    cuda::memset_zero(t.data(), t.bytes());
  else
    std::memset(t.data(), 0, t.bytes());
  return t;
}

tensor tensor::empty(const shape_t& shape, device where) {
  auto t = try_empty(shape, where);
  DTRAIN_CHECK(t.is_ok(), t.error().to_string().c_str());
  return std::move(*t);
}

tensor tensor::zeros(const shape_t& shape, device where) {
  auto t = try_zeros(shape, where);
  DTRAIN_CHECK(t.is_ok(), t.error().to_string().c_str());
  return std::move(*t);
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
