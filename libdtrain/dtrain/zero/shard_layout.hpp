#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/optim/optimizer.hpp"

/// ZeRO (DeepSpeed's Zero Redundancy Optimizer): the training state split
/// across the data-parallel ranks instead of copied on each.
namespace dtrain::zero {

/// What is split: stage 1 the optimizer state, stage 2 also the averaged
/// gradients (reduce-scattered instead of all-reduced), stage 3 also the
/// parameters. 0: nothing (every rank holds everything).
constexpr int max_stage = 3;
/// A stage, or invalid_argument naming `field` and what is possible.
status check_stage(int stage, const std::string& field);

/// One gradient bucket and this rank's part of it.
///
/// A bucket [begin, end) of L elements is cut into N chunks of
/// chunk = ceil(L / N): rank r owns [begin + r * chunk, begin + (r+1) *
/// chunk), clipped to end. So a reduce-scatter of the bucket leaves rank r
/// its chunk and an all-gather gives every rank all of it, in place (the
/// NCCL convention: the chunk lies in the bucket at rank * chunk). Only a
/// bucket whose L is not a multiple of N (the layout makes that the one at
/// the buffer's end) is padded: its collectives go through a scratch
/// buffer of N * chunk elements.
struct bucket_shard {
  int64_t begin = 0, end = 0;
  int64_t chunk = 0;
  int64_t own_begin = 0, own_end = 0;  // this rank's part
  bool padded(int ranks) const { return chunk * ranks != end - begin; }
};

/// How a flat buffer of `count` elements is split over `ranks` ranks,
/// bucket by bucket, as seen from `rank`. A plain value.
class shard_layout {
public:
  /// From the gradient buckets (disjoint [begin, end) ranges covering
  /// [0, count) in any order). Errors name a bucket that is empty,
  /// overlaps another or leaves a gap, or a rank outside [0, ranks).
  static result<shard_layout> plan(int64_t count, int ranks, int rank,
                                   std::vector<std::pair<int64_t, int64_t>> buckets);

  int64_t count() const { return count_; }
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  /// By position in the buffer (the first bucket starts at 0).
  const std::vector<bucket_shard>& buckets() const { return buckets_; }
  /// This rank's parts, by position: what optim::optimizer::step_owned takes.
  std::vector<optim::span> owned() const;
  /// Elements this rank owns (its optimizer state per state buffer).
  int64_t owned_count() const { return owned_count_; }

private:
  int64_t count_ = 0;
  int ranks_ = 1, rank_ = 0;
  int64_t owned_count_ = 0;
  std::vector<bucket_shard> buckets_;
};

/// `offset` rounded down to a multiple of `ranks`: where a bucket
/// boundary goes so that the bucket after it splits evenly.
inline int64_t align_down(int64_t offset, int ranks) { return offset - offset % ranks; }

} // namespace dtrain::zero
