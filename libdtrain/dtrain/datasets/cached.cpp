#include "dtrain/datasets/cached.hpp"

#include <atomic>
#include <cstring>
#include <vector>

#include "dtrain/core/check.hpp"

namespace dtrain::data {

namespace {

class cached_dataset final : public dataset {
public:
  explicit cached_dataset(std::shared_ptr<const dataset> base)
    : base_(std::move(base)),
      width_(base_->feature_count() + base_->target_count()),
      rows_(static_cast<size_t>(base_->size() * width_)),
      state_(static_cast<size_t>(base_->size())) {}

  int64_t size() const override { return base_->size(); }
  int64_t feature_count() const override { return base_->feature_count(); }
  int64_t target_count() const override { return base_->target_count(); }
  std::string name() const override { return base_->name(); }
  std::vector<int64_t> sample_shape() const override { return base_->sample_shape(); }
  int64_t class_count() const override { return base_->class_count(); }

  status gather(const int64_t* indices, int64_t n, float* features,
                float* targets) const override {
    const int64_t f = feature_count(), t = target_count();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = indices[i];
      if (row < 0 || row >= size())
        return status(error_code::out_of_range, name() + ": sample " + std::to_string(row) +
                                                    " is not in [0, " + std::to_string(size()) +
                                                    ")");
      DTRAIN_RETURN_IF_ERROR(copy_row(row, features + i * f, targets + i * t));
    }
    return status::ok();
  }

private:
  enum : int { empty = 0, filling = 1, ready = 2 };

  // One sample into x and y: from the cache when it is there, else from
  // the base (and into the cache when this thread claims the slot).
  status copy_row(int64_t row, float* x, float* y) const {
    const int64_t f = feature_count(), t = target_count();
    float* slot = rows_.data() + row * width_;
    std::atomic<int>& state = state_[static_cast<size_t>(row)];
    if (state.load(std::memory_order_acquire) == ready) {
      std::memcpy(x, slot, static_cast<size_t>(f) * sizeof(float));
      std::memcpy(y, slot + f, static_cast<size_t>(t) * sizeof(float));
      return status::ok();
    }
    DTRAIN_RETURN_IF_ERROR(base_->gather(&row, 1, x, y));
    int expected = empty;
    if (state.compare_exchange_strong(expected, filling, std::memory_order_acq_rel)) {
      std::memcpy(slot, x, static_cast<size_t>(f) * sizeof(float));
      std::memcpy(slot + f, y, static_cast<size_t>(t) * sizeof(float));
      state.store(ready, std::memory_order_release);
    }
    return status::ok();
  }

  std::shared_ptr<const dataset> base_;
  int64_t width_;
  mutable std::vector<float> rows_;
  mutable std::vector<std::atomic<int>> state_;
};

} // namespace

result<std::shared_ptr<const dataset>> cache_in_memory(std::shared_ptr<const dataset> base,
                                                       int64_t limit_bytes) {
  if (base == nullptr)
    return invalid_argument("cache_in_memory: the dataset is null");
  const double bytes = static_cast<double>(base->size()) *
                       static_cast<double>(base->feature_count() + base->target_count()) * 4.0;
  if (bytes > static_cast<double>(limit_bytes))
    return resource_exhausted(base->name() + ": caching it takes " +
                              std::to_string(static_cast<int64_t>(bytes / (1 << 20))) +
                              " MiB, over the " + std::to_string(limit_bytes >> 20) +
                              " MiB allowed (cache_mb)");
  try {
    return std::shared_ptr<const dataset>(std::make_shared<cached_dataset>(std::move(base)));
  } catch (const std::bad_alloc&) {
    return resource_exhausted("cache_in_memory: cannot allocate " +
                              std::to_string(static_cast<int64_t>(bytes / (1 << 20))) + " MiB");
  }
}

} // namespace dtrain::data
