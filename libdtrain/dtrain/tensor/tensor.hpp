#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tensor/device.hpp"

namespace dtrain {

using shape_t = std::vector<int64_t>;

/// "[256, 784]".
std::string shape_string(const shape_t& shape);
/// The element count of `shape`; a negative dimension or an int64 overflow
/// is a broken invariant here (aborts): use checked_numel on sizes that come
/// from outside.
int64_t shape_numel(const shape_t& shape);
/// The element count of `shape`, or invalid_argument naming the shape when
/// a dimension is negative or the product does not fit in int64.
result<int64_t> checked_numel(const shape_t& shape);
/// The bytes of a float32 tensor of `shape`, checked as checked_numel and
/// for numel * sizeof(float) overflowing size_t.
result<size_t> checked_bytes(const shape_t& shape);

/// The largest single host allocation storage::allocate attempts: the
/// machine's physical memory (sysconf). Asking for more fails at once with
/// resource_exhausted, rather than being granted lazily by the kernel and
/// ended later by the OOM killer, taking the whole process with it.
size_t host_allocation_limit();

/// A block of memory on one device: 64-byte aligned host memory, or a CUDA
/// allocation. Owned through shared_ptr by every tensor that views it; freed
/// with the last one. allocate() returns an error instead of the block when
/// it cannot be had (see there); nothing here aborts or throws.
class storage {
public:
  /// `bytes` on `where`, uninitialized. resource_exhausted, naming the size
  /// and device, when host memory is refused (over host_allocation_limit(),
  /// or the allocator fails) or the device allocation fails; unavailable on
  /// a build or machine without that CUDA device.
  static result<std::shared_ptr<storage>> allocate(size_t bytes, device where);
  /// Memory on `where` that `owner` keeps alive (a shared memory mapping,
  /// another library's tensor): the storage frees nothing itself, it only
  /// holds the owner.
  static std::shared_ptr<storage> adopt(void* data, size_t bytes, std::shared_ptr<void> owner,
                                        device where = device::cpu());
  ~storage();
  storage(const storage&) = delete;
  storage& operator=(const storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  device where() const { return where_; }

private:
  storage(void* data, size_t bytes, device where) : data_(data), bytes_(bytes), where_(where) {}

  std::shared_ptr<void> owner_;  // set: the memory is the owner's
  void* data_ = nullptr;
  size_t bytes_ = 0;
  device where_;
};

/// A dense, row-major float32 tensor: a shape, an offset into a shared
/// storage, and the device the storage is on. Copying a tensor copies the
/// handle, not the data (like torch.Tensor); views made with view() or
/// reshape() alias their parent. data() is a device pointer for CUDA tensors.
///
/// Not thread-safe: two threads may read one tensor, but not write it.
class tensor {
public:
  tensor() = default;

  /// Uninitialized memory of the given shape (host memory is not touched),
  /// or the error that says why not: invalid_argument for a negative or
  /// overflowing shape, resource_exhausted (shape, bytes, device) when the
  /// memory cannot be had. Use these where sizes come from users.
  static result<tensor> try_empty(const shape_t& shape, device where = device::cpu());
  static result<tensor> try_zeros(const shape_t& shape, device where = device::cpu());
  /// As try_empty/try_zeros, for sizes that are known to fit (the model's
  /// own buffers, batches of checked sizes): a failure aborts with the
  /// error's message.
  static tensor empty(const shape_t& shape, device where = device::cpu());
  static tensor zeros(const shape_t& shape, device where = device::cpu());
  static tensor full(const shape_t& shape, float value, device where = device::cpu());
  /// A copy of host values; values.size() must equal the shape's numel.
  static tensor from_vector(const std::vector<float>& values, const shape_t& shape,
                            device where = device::cpu());
  /// A tensor over memory on `where` that `owner` keeps alive (storage::adopt).
  static tensor over(float* data, const shape_t& shape, std::shared_ptr<void> owner,
                     device where = device::cpu());

  bool defined() const { return storage_ != nullptr; }
  const shape_t& shape() const { return shape_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t axis) const;
  int64_t numel() const { return numel_; }
  size_t bytes() const { return static_cast<size_t>(numel_) * sizeof(float); }
  device where() const { return defined() ? storage_->where() : device::cpu(); }
  bool is_cuda() const { return where().is_cuda(); }

  float* data() { return base() + offset_; }
  const float* data() const { return base() + offset_; }

  /// A view of `count` elements starting `offset` elements in, with `shape`
  /// (numel must equal count). Aliases this tensor's storage.
  tensor view(int64_t offset, const shape_t& shape) const;
  /// The same elements under another shape of the same numel.
  tensor reshape(const shape_t& shape) const;
  /// Rows [begin, end) of a tensor of dim >= 1, as a view.
  tensor rows(int64_t begin, int64_t end) const;

  /// A deep copy on `where` (a copy even when the device is the same).
  tensor to(device where) const;
  tensor clone() const { return to(where()); }
  /// Copies `src` into this tensor; numel must match; devices may differ.
  void copy_from(const tensor& src);
  /// The values, copied to the host.
  std::vector<float> to_vector() const;

  /// True when both have the same shape and the same bits (on any devices).
  bool bitwise_equal(const tensor& other) const;

private:
  float* base() const {
    return storage_ ? static_cast<float*>(storage_->data()) : nullptr;
  }

  std::shared_ptr<storage> storage_;
  shape_t shape_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
};

} // namespace dtrain
