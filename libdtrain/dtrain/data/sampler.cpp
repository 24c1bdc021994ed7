#include "dtrain/data/sampler.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "dtrain/core/check.hpp"
#include "dtrain/core/random.hpp"

namespace dtrain::data {

namespace {

status check_blocks(const shard_options& options) {
  const auto& starts = options.block_starts;
  if (starts.empty())
    return status::ok();
  if (starts.front() != 0)
    return invalid_argument("shard_options.block_starts must begin at 0, got " +
                            std::to_string(starts.front()));
  for (size_t i = 1; i < starts.size(); ++i)
    if (starts[i] <= starts[i - 1] || starts[i] >= options.size)
      return invalid_argument("shard_options.block_starts[" + std::to_string(i) + "] = " +
                              std::to_string(starts[i]) + " does not ascend below size " +
                              std::to_string(options.size));
  return status::ok();
}

// Salts keep the block permutation and the windows' draws apart from the
// plain permutation's (which must stay as it was: checkpoints of runs made
// before blocks existed resume into it).
constexpr uint64_t block_salt = 0x626c6f636b73ull;   // "blocks"
constexpr uint64_t window_salt = 0x77696e646f77ull;  // "window"

// The blocks in a shuffled order, concatenated.
std::vector<int64_t> shuffled_blocks(const std::vector<int64_t>& starts, int64_t size,
                                     uint64_t epoch_seed) {
  std::vector<int64_t> blocks(starts.size());
  std::iota(blocks.begin(), blocks.end(), int64_t{0});
  rng gen(hash64(epoch_seed, block_salt));
  gen.shuffle(blocks.data(), static_cast<int64_t>(blocks.size()));
  std::vector<int64_t> order;
  order.reserve(static_cast<size_t>(size));
  for (int64_t b : blocks) {
    const int64_t end = static_cast<size_t>(b + 1) < starts.size() ? starts[b + 1] : size;
    for (int64_t i = starts[b]; i < end; ++i)
      order.push_back(i);
  }
  return order;
}

} // namespace

result<shard_sampler> shard_sampler::create(const shard_options& options) {
  if (options.num_ranks < 1)
    return invalid_argument("shard_options.num_ranks must be >= 1, got " +
                            std::to_string(options.num_ranks));
  if (options.rank < 0 || options.rank >= options.num_ranks)
    return invalid_argument("shard_options.rank " + std::to_string(options.rank) +
                            " is not in [0, " + std::to_string(options.num_ranks) + ")");
  if (options.size < 0)
    return invalid_argument("shard_options.size must be >= 0, got " +
                            std::to_string(options.size));
  if (options.window < 0)
    return invalid_argument("shard_options.window must be >= 0, got " +
                            std::to_string(options.window));
  DTRAIN_RETURN_IF_ERROR(check_blocks(options));
  return shard_sampler(options);
}

std::vector<int64_t> shard_sampler::order(int64_t epoch) const {
  const int64_t size = options_.size;
  const uint64_t epoch_seed = hash64(options_.seed, static_cast<uint64_t>(epoch));
  const bool windowed = !options_.block_starts.empty() || options_.window > 0;
  std::vector<int64_t> order;
  if (options_.shuffle && !options_.block_starts.empty()) {
    order = shuffled_blocks(options_.block_starts, size, epoch_seed);
  } else {
    order.resize(static_cast<size_t>(size));
    std::iota(order.begin(), order.end(), int64_t{0});
  }
  if (!options_.shuffle)
    return order;
  if (!windowed) {
    // One generator per (seed, epoch): every rank draws the same permutation.
    rng gen(epoch_seed);
    gen.shuffle(order.data(), size);
    return order;
  }
  const int64_t window = options_.window > 0 ? options_.window : size;
  for (int64_t first = 0, k = 0; first < size; first += window, ++k) {
    rng gen(hash64(hash64(epoch_seed, window_salt), static_cast<uint64_t>(k)));
    gen.shuffle(order.data() + first, std::min(window, size - first));
  }
  return order;
}

int64_t shard_sampler::epoch_end(int64_t global_batch) const {
  const int64_t size = options_.size;
  if (!options_.drop_last || global_batch < 1)
    return size;
  return size - size % global_batch;
}

int64_t shard_sampler::steps_from(int64_t position, int64_t global_batch) const {
  const int64_t left = epoch_end(global_batch) - position;
  if (left <= 0 || global_batch < 1)
    return 0;
  return (left + global_batch - 1) / global_batch;
}

void shard_sampler::rank_positions(int64_t first, int64_t global_batch,
                                   std::vector<int64_t>& out) const {
  out.clear();
  const int64_t end = std::min(first + global_batch, epoch_end(global_batch));
  for (int64_t pos = first + options_.rank; pos < end; pos += options_.num_ranks)
    out.push_back(pos);
}

int64_t shard_sampler::rank_batch_limit(int64_t global_batch) const {
  return (global_batch + options_.num_ranks - 1) / options_.num_ranks;
}

} // namespace dtrain::data
