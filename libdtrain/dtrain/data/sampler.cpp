#include "dtrain/data/sampler.hpp"

#include <numeric>
#include <string>

#include "dtrain/core/random.hpp"

namespace dtrain::data {

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
  return shard_sampler(options);
}

int64_t shard_sampler::shard_size() const {
  const int64_t ranks = options_.num_ranks;
  return options_.drop_last ? options_.size / ranks : (options_.size + ranks - 1) / ranks;
}

std::vector<int64_t> shard_sampler::indices(int64_t epoch) const {
  const int64_t size = options_.size;
  std::vector<int64_t> order(static_cast<size_t>(size));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options_.shuffle) {
    // One generator per (seed, epoch): every rank draws the same permutation.
    rng gen(hash64(options_.seed, static_cast<uint64_t>(epoch)));
    gen.shuffle(order.data(), size);
  }
  const int64_t per_rank = shard_size();
  const int64_t total = per_rank * options_.num_ranks;
  // Pad by repeating the order's start (cyclically when the padding is
  // longer than the order), as DistributedSampler does; or cut the tail.
  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(per_rank));
  for (int64_t pos = options_.rank; pos < total; pos += options_.num_ranks)
    shard.push_back(order[static_cast<size_t>(pos % size)]);
  return shard;
}

} // namespace dtrain::data
