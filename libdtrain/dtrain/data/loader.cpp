#include "dtrain/data/loader.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/core/random.hpp"
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

status check_options(const loader_options& options) {
  if (options.batch_size < 1)
    return invalid_argument("loader_options.batch_size must be >= 1, got " +
                            std::to_string(options.batch_size));
  if (options.prefetch < 0)
    return invalid_argument("loader_options.prefetch must be >= 0, got " +
                            std::to_string(options.prefetch));
  if (options.workers < 1)
    return invalid_argument("loader_options.workers must be >= 1, got " +
                            std::to_string(options.workers));
  for (size_t i = 0; i < options.transforms.size(); ++i)
    if (options.transforms[i] == nullptr)
      return invalid_argument("loader_options.transforms[" + std::to_string(i) + "] is null");
  return check_where(options.where);
}

} // namespace

result<std::unique_ptr<loader>> loader::create(std::shared_ptr<const dataset> data,
                                               shard_sampler sampler,
                                               const loader_options& options) {
  if (data == nullptr)
    return invalid_argument("loader: the dataset is null");
  DTRAIN_RETURN_IF_ERROR(check_options(options));
  if (sampler.options().size != data->size())
    return invalid_argument("loader: the sampler covers " +
                            std::to_string(sampler.options().size) + " samples but " +
                            data->name() + " has " + std::to_string(data->size()));
  return std::unique_ptr<loader>(new loader(std::move(data), std::move(sampler), options));
}

loader::loader(std::shared_ptr<const dataset> data, shard_sampler sampler,
               const loader_options& options)
  : data_(std::move(data)), sampler_(std::move(sampler)), options_(options) {
  global_batch_ = options_.batch_size * sampler_.options().num_ranks;
  rows_ = sampler_.rank_batch_limit(global_batch_);
  shape_ = data_->sample_shape();
  ring_.resize(static_cast<size_t>(options_.prefetch));
  filled_.assign(ring_.size(), 0);
}

loader::~loader() { stop_workers(); }

int64_t loader::batches_per_epoch() const { return sampler_.steps_from(0, global_batch_); }

int64_t loader::epoch_end() const { return sampler_.epoch_end(global_batch_); }

int64_t loader::position() const {
  const int64_t end = sampler_.epoch_end(global_batch_);
  return std::min(end, start_ + next_step_ * global_batch_);
}

void loader::begin_epoch(int64_t epoch, int64_t position) {
  stop_workers();
  if (epoch != epoch_ || order_.size() != static_cast<size_t>(data_->size()))
    order_ = sampler_.order(epoch);
  epoch_ = epoch;
  start_ = std::clamp<int64_t>(position, 0, sampler_.epoch_end(global_batch_));
  steps_ = sampler_.steps_from(start_, global_batch_);
  next_step_ = 0;
  claimed_ = 0;
  error_ = status::ok();
  in_epoch_ = true;
  if (options_.prefetch == 0 || steps_ == 0)
    return;
  const int threads = static_cast<int>(std::min<int64_t>(options_.workers, steps_));
  for (int w = 0; w < threads; ++w)
    workers_.emplace_back([this] { worker_loop(); });
}

const batch* loader::next() {
  if (!in_epoch_ || next_step_ >= steps_)
    return nullptr;
  if (options_.prefetch == 0) {
    // Synchronous: current_ is the one buffer, refilled in place.
    fill(next_step_++, current_, staging_);
    return delivered();
  }
  const size_t at = static_cast<size_t>(next_step_ % options_.prefetch);
  std::unique_lock<std::mutex> lock(mutex_);
  // Workers fill every step up to steps_ unless stopping_ is set, and only
  // this thread sets it: this wait always ends.
  cv_.wait(lock, [&] { return filled_[at] != 0; });
  std::swap(current_, ring_[at]);
  filled_[at] = 0;
  ++next_step_;
  // Wake the workers only once the queue is half empty: waking them for
  // every batch would cost two context switches per step.
  const bool wake = claimed_ - next_step_ <= options_.prefetch / 2;
  lock.unlock();
  if (wake)
    cv_.notify_all();
  return delivered();
}

const batch* loader::delivered() {
  if (current_.error.is_ok())
    return &current_.out;
  error_ = current_.error;
  stop_workers();  // the epoch ends at its first failed batch
  return nullptr;
}

void loader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_)
    w.join();
  workers_.clear();
  stopping_ = false;
  std::fill(filled_.begin(), filled_.end(), 0);
  in_epoch_ = false;
}

loader::slot loader::make_slot(device where) const {
  const int64_t t = data_->target_count();
  slot s;
  s.features = tensor::empty({rows_, data_->feature_count()}, where);
  s.targets = t == 1 ? tensor::empty({rows_}, where) : tensor::empty({rows_, t}, where);
  return s;
}

void loader::apply_transforms(slot& host, int64_t rows) const {
  if (options_.transforms.empty())
    return;
  const uint64_t epoch_seed = hash64(options_.transform_seed, static_cast<uint64_t>(epoch_));
  const int64_t width = data_->feature_count();
  for (int64_t i = 0; i < rows; ++i) {
    // Drawn from the sample's index, not its row: the same augmentation for
    // the sample whichever rank trains it and however the epoch resumed.
    const int64_t sample = order_[static_cast<size_t>(host.positions[static_cast<size_t>(i)])];
    rng gen(hash64(epoch_seed, static_cast<uint64_t>(sample)));
    float* row = host.features.data() + i * width;
    for (const auto& t : options_.transforms)
      t->apply(row, shape_, gen);
  }
}

void loader::fill(int64_t step, slot& out, slot& staging) const {
  const bool on_host = options_.where.is_cpu();
  if (!out.features.defined())
    out = make_slot(options_.where);
  if (!on_host && !staging.features.defined())
    staging = make_slot(device::cpu());
  slot& host = on_host ? out : staging;
  const int64_t first = start_ + step * global_batch_;
  sampler_.rank_positions(first, global_batch_, host.positions);
  const int64_t global_rows =
      std::min(global_batch_, sampler_.epoch_end(global_batch_) - first);
  const bool filler = host.positions.empty();
  if (filler)  // no sample of this short step is ours: one row of weight 0
    host.positions.push_back(first);
  const int64_t n = static_cast<int64_t>(host.positions.size());
  out.out.samples.clear();
  for (int64_t pos : host.positions)
    out.out.samples.push_back(order_[static_cast<size_t>(pos)]);
  out.error = data_->gather(out.out.samples.data(), n, host.features.data(),
                            host.targets.data());
  if (!out.error.is_ok())
    return;
  apply_transforms(host, n);
  if (!on_host) {
    out.features.rows(0, n).copy_from(host.features.rows(0, n));
    out.targets.rows(0, n).copy_from(host.targets.rows(0, n));
  }
  out.out.features = n == rows_ ? out.features : out.features.rows(0, n);
  out.out.targets = n == rows_ ? out.targets : out.targets.rows(0, n);
  out.out.weight = filler ? 0.0f
                          : static_cast<float>(n * sampler_.options().num_ranks) /
                                static_cast<float>(global_rows);
  if (filler)
    out.out.samples.clear();
}

void loader::worker_loop() {
  // A thread starts on device 0; the copies belong on the loader's device.
  if (options_.where.is_cuda())
    (void)cuda::set_device(options_.where.index);
  slot staging;  // this worker's host buffer for a CUDA `where`
  const int64_t depth = options_.prefetch;
  for (;;) {
    int64_t step;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] {
        return stopping_ || claimed_ >= steps_ || claimed_ < next_step_ + depth;
      });
      if (stopping_ || claimed_ >= steps_)
        return;
      step = claimed_++;
    }
    slot& entry = ring_[static_cast<size_t>(step % depth)];
    fill(step, entry, staging);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      filled_[static_cast<size_t>(step % depth)] = 1;
    }
    cv_.notify_all();
  }
}

} // namespace dtrain::data
