#pragma once

#include <cstdint>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::data {

/// Which samples one rank sees in each epoch: the epoch's order (a
/// permutation of [0, size) drawn from (seed, epoch) when shuffling, else
/// 0..size-1) is cut into num_ranks disjoint, equally long shards, and rank
/// r takes every num_ranks-th sample starting at r (as PyTorch's
/// DistributedSampler). With drop_last the tail that does not divide evenly
/// is dropped; otherwise the order is padded by repeating its start, so that
/// every rank gets the same count (ranks must run the same number of steps).
/// Every rank computes its shard alone, from the same seed: no coordination.
/// The permutation is dtrain::rng(hash64(seed, epoch)).shuffle, fixed on every
/// platform (unlike std::shuffle). A sampler is an immutable value: copy it
/// freely and call it from any thread.
struct shard_options {
  int64_t size = 0;
  int num_ranks = 1;
  int rank = 0;
  bool shuffle = true;
  bool drop_last = false;
  uint64_t seed = 0;
};

class shard_sampler {
public:
  /// Fails with invalid_argument when rank is not in [0, num_ranks) or
  /// num_ranks < 1 or size < 0.
  static result<shard_sampler> create(const shard_options& options);

  /// Samples per rank per epoch.
  int64_t shard_size() const;
  /// This rank's indices for `epoch`.
  std::vector<int64_t> indices(int64_t epoch) const;
  /// The options it was created with (a loader checks `size` against its
  /// dataset).
  const shard_options& options() const { return options_; }

private:
  explicit shard_sampler(const shard_options& options) : options_(options) {}
  shard_options options_;
};

} // namespace dtrain::data
