#include "dtrain/zero/shard_layout.hpp"

#include <algorithm>

namespace dtrain::zero {

status check_stage(int stage, const std::string& field) {
  if (stage < 0 || stage > max_stage)
    return invalid_argument(field + " must be 0, 1, 2 or 3, got " + std::to_string(stage));
  return status::ok();
}

namespace {

bucket_shard split(int64_t begin, int64_t end, int ranks, int rank) {
  bucket_shard b;
  b.begin = begin;
  b.end = end;
  b.chunk = (end - begin + ranks - 1) / ranks;
  b.own_begin = std::min(end, begin + b.chunk * rank);
  b.own_end = std::min(end, begin + b.chunk * (rank + 1));
  return b;
}

} // namespace

result<shard_layout> shard_layout::plan(int64_t count, int ranks, int rank,
                                        std::vector<std::pair<int64_t, int64_t>> buckets) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return invalid_argument("shard layout: rank " + std::to_string(rank) + " of " +
                            std::to_string(ranks));
  std::sort(buckets.begin(), buckets.end());
  shard_layout out;
  out.count_ = count;
  out.ranks_ = ranks;
  out.rank_ = rank;
  int64_t at = 0;
  for (const auto& [begin, end] : buckets) {
    if (begin != at || end <= begin)
      return invalid_argument("shard layout: bucket [" + std::to_string(begin) + ", " +
                              std::to_string(end) + ") does not follow the one ending at " +
                              std::to_string(at));
    bucket_shard b = split(begin, end, ranks, rank);
    out.owned_count_ += b.own_end - b.own_begin;
    out.buckets_.push_back(b);
    at = end;
  }
  if (at != count)
    return invalid_argument("shard layout: the buckets end at " + std::to_string(at) + " of " +
                            std::to_string(count) + " elements");
  return out;
}

std::vector<optim::span> shard_layout::owned() const {
  std::vector<optim::span> out;
  for (const bucket_shard& b : buckets_)
    if (b.own_end > b.own_begin)
      out.push_back({b.own_begin, b.own_end - b.own_begin});
  return out;
}

} // namespace dtrain::zero
