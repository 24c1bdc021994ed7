#include "dtrain/data/loader.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/cuda/runtime.hpp"

namespace dtrain::data {

namespace {

status check_where(device where) {
  if (where.is_cpu())
    return status::ok();
  if (!cuda::available())
    return unavailable("loader_options.where is " + where.to_string() +
                       " but there is no CUDA device: " + cuda::unavailable_reason());
  if (where.index < 0 || where.index >= cuda::device_count())
    return invalid_argument("loader_options.where is " + where.to_string() + " but only " +
                            std::to_string(cuda::device_count()) + " CUDA devices exist");
  return status::ok();
}

} // namespace

result<std::unique_ptr<loader>> loader::create(std::shared_ptr<const dataset> data,
                                               shard_sampler sampler,
                                               const loader_options& options) {
  if (data == nullptr)
    return invalid_argument("loader: the dataset is null");
  if (options.batch_size < 1)
    return invalid_argument("loader_options.batch_size must be >= 1, got " +
                            std::to_string(options.batch_size));
  if (options.prefetch < 0)
    return invalid_argument("loader_options.prefetch must be >= 0, got " +
                            std::to_string(options.prefetch));
  if (sampler.options().size != data->size())
    return invalid_argument("loader: the sampler covers " +
                            std::to_string(sampler.options().size) + " samples but " +
                            data->name() + " has " + std::to_string(data->size()));
  DTRAIN_RETURN_IF_ERROR(check_where(options.where));
  return std::unique_ptr<loader>(new loader(std::move(data), std::move(sampler), options));
}

loader::loader(std::shared_ptr<const dataset> data, shard_sampler sampler,
               const loader_options& options)
  : data_(std::move(data)), sampler_(std::move(sampler)), options_(options) {
  const int64_t shard = sampler_.shard_size();
  const int64_t size = options_.batch_size;
  batches_per_epoch_ = options_.drop_last ? shard / size : (shard + size - 1) / size;
}

loader::~loader() { stop_worker(); }

void loader::begin_epoch(int64_t epoch) {
  stop_worker();
  order_ = sampler_.indices(epoch);
  next_batch_ = 0;
  error_ = status::ok();
  in_epoch_ = true;
  if (options_.prefetch > 0 && batches_per_epoch_ > 0)
    worker_ = std::thread([this] { worker_loop(); });
}

const batch* loader::next() {
  if (!in_epoch_ || next_batch_ >= batches_per_epoch_)
    return nullptr;
  if (options_.prefetch == 0) {
    // Synchronous: current_ is the one buffer, refilled in place.
    fill(next_batch_++, current_);
    return delivered();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  if (current_.features.defined())
    spare_.push_back(std::exchange(current_, slot{}));
  // The worker produces every batch of the epoch unless stopping_ is set,
  // and only this thread sets it: this wait always ends.
  cv_.wait(lock, [this] { return !ready_.empty(); });
  current_ = std::move(ready_.front());
  ready_.pop_front();
  // The worker sleeps until the queue is half empty (see worker_loop): waking
  // it for every batch would cost two context switches per step.
  bool wake = ready_.size() <= static_cast<size_t>(options_.prefetch) / 2;
  lock.unlock();
  if (wake)
    cv_.notify_all();
  ++next_batch_;
  return delivered();
}

const batch* loader::delivered() {
  if (current_.error.is_ok())
    return &current_.out;
  error_ = current_.error;
  stop_worker();  // the epoch ends at its first failed batch
  return nullptr;
}

void loader::stop_worker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable())
    worker_.join();
  // Now single-threaded again: every buffer goes back to the spares.
  stopping_ = false;
  for (auto& s : ready_)
    spare_.push_back(std::move(s));
  ready_.clear();
  if (options_.prefetch > 0 && current_.features.defined())
    spare_.push_back(std::exchange(current_, slot{}));
  in_epoch_ = false;
}

loader::slot loader::make_slot(device where) const {
  const int64_t rows = options_.batch_size;
  const int64_t t = data_->target_count();
  slot s;
  s.features = tensor::empty({rows, data_->feature_count()}, where);
  s.targets = t == 1 ? tensor::empty({rows}, where) : tensor::empty({rows, t}, where);
  return s;
}

void loader::fill(int64_t batch_index, slot& out) {
  const int64_t first = batch_index * options_.batch_size;
  const int64_t n =
      std::min(options_.batch_size, static_cast<int64_t>(order_.size()) - first);
  const bool on_host = options_.where.is_cpu();
  if (!out.features.defined())
    out = make_slot(options_.where);
  if (!on_host && !staging_.features.defined())
    staging_ = make_slot(device::cpu());
  slot& host = on_host ? out : staging_;
  out.error = data_->gather(order_.data() + first, n, host.features.data(),
                            host.targets.data());
  if (!out.error.is_ok())
    return;
  if (!on_host) {
    out.features.rows(0, n).copy_from(host.features.rows(0, n));
    out.targets.rows(0, n).copy_from(host.targets.rows(0, n));
  }
  if (n == options_.batch_size)
    out.out = batch{out.features, out.targets};
  else
    out.out = batch{out.features.rows(0, n), out.targets.rows(0, n)};
}

void loader::worker_loop() {
  // A thread starts on device 0; the copies belong on the loader's device.
  if (options_.where.is_cuda())
    (void)cuda::set_device(options_.where.index);
  const size_t depth = static_cast<size_t>(options_.prefetch);
  // Fill up to depth; once full, sleep until the consumer has taken half.
  const size_t refill_at = depth / 2 + 1;  // wake when size < refill_at
  size_t limit = depth;
  for (int64_t b = 0; b < batches_per_epoch_; ++b) {
    slot s;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || ready_.size() < limit; });
      limit = depth;
      if (stopping_)
        return;
      if (!spare_.empty()) {
        s = std::move(spare_.back());
        spare_.pop_back();
      }
    }
    fill(b, s);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(std::move(s));
      if (ready_.size() >= depth)
        limit = refill_at;
    }
    cv_.notify_all();
  }
}

} // namespace dtrain::data
