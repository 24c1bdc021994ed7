#pragma once

#include <cstdint>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::data {

/// Which samples one rank trains, step by step, so that sample accounting
/// stays exact when the group changes size.
///
/// An epoch has one global order, a permutation of [0, size) that depends
/// on (seed, epoch) and the options only, never on the number of ranks.
/// The group walks it in global batches: step k of an epoch begun at
/// `position` takes the positions [position + k G, position + (k+1) G) of
/// the order (G = the global batch), and rank r of W takes every W-th of
/// them starting at r (as PyTorch's DistributedSampler strides, but per
/// global batch). The epoch's last global batch may be short: it is split
/// as evenly as the stride allows, nothing is padded or repeated; with
/// drop_last it is dropped. A group that stops after P samples and resumes
/// with any number of ranks at position P trains every sample of the epoch
/// exactly once.
///
/// Orders: with shuffle off, 0..size-1. With shuffle on and no block
/// layout, one permutation drawn by dtrain::rng from hash64(seed, epoch)
/// (the same on every platform). For data streamed from files larger than
/// memory, a block layout (`block_starts`: where each shard's records
/// begin) shuffles whole blocks and then the samples within each window of
/// `window` consecutive positions (a bounded shuffle buffer): a rank reads a
/// few shards at a time, sequentially, instead of the whole set at random.
/// A sampler is an immutable value: copy it freely, call it from any thread.
struct shard_options {
  int64_t size = 0;
  int num_ranks = 1;
  int rank = 0;
  bool shuffle = true;
  bool drop_last = false;
  uint64_t seed = 0;
  /// First sample of each block, ascending from 0 (empty: no blocks).
  std::vector<int64_t> block_starts;
  /// Shuffle-buffer size in samples for the windowed order (0: the whole
  /// epoch when there are no blocks, else one block's length is not
  /// mixed with its neighbours).
  int64_t window = 0;
};

class shard_sampler {
public:
  /// Fails with invalid_argument when rank is not in [0, num_ranks),
  /// num_ranks < 1, size < 0, window < 0, or block_starts does not begin at
  /// 0 and ascend strictly below size.
  static result<shard_sampler> create(const shard_options& options);

  /// The epoch's global order (all ranks' samples), `size` indices.
  std::vector<int64_t> order(int64_t epoch) const;
  /// Positions of the epoch that are trained with a global batch of
  /// `global_batch`: size, less the short last batch with drop_last.
  int64_t epoch_end(int64_t global_batch) const;
  /// Steps left in an epoch from `position` (a number of samples already
  /// trained), with a global batch of `global_batch`.
  int64_t steps_from(int64_t position, int64_t global_batch) const;
  /// Positions (in the order) of this rank's share of the step that begins
  /// at global position `first`, appended to `out` after clearing it.
  void rank_positions(int64_t first, int64_t global_batch, std::vector<int64_t>& out) const;
  /// The most samples a rank takes in one step.
  int64_t rank_batch_limit(int64_t global_batch) const;
  /// The options it was created with (a loader checks `size` against its
  /// dataset).
  const shard_options& options() const { return options_; }

private:
  explicit shard_sampler(const shard_options& options) : options_(options) {}
  shard_options options_;
};

} // namespace dtrain::data
