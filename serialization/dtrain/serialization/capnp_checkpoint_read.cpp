// The read side of the Cap'n Proto checkpoint codec: files are mapped,
// verified and parsed in place, one thread per shard; tensor bytes are
// copied once, from the mappings into the caller's buffers, after every
// check has passed.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <system_error>
#include <thread>

#include <capnp/serialize.h>

#include "checkpoint.capnp.h"
#include "dtrain/core/check.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "dtrain/serialization/capnp_checkpoint_internal.hpp"

namespace dtrain::serialization {

namespace {

using checkpoint::buffer_target;
using checkpoint::manifest;
using span = std::pair<int64_t, int64_t>;  // begin, count

std::string text(capnp::Text::Reader t) { return std::string(t.begin(), t.size()); }

// The mapping as words, or corrupt_data when it cannot be a message.
result<kj::ArrayPtr<const capnp::word>> words_of(const mapped_file& file) {
  if (file.size() == 0 || file.size() % sizeof(capnp::word) != 0)
    return corrupt_data(std::to_string(file.size()) +
                        " bytes, not a whole number of 8-byte words (truncated?)");
  return kj::ArrayPtr<const capnp::word>(reinterpret_cast<const capnp::word*>(file.data()),
                                         file.size() / sizeof(capnp::word));
}

// Every field is read once: the traversal limit counts each access.
manifest decode_manifest(schema::Manifest::Reader in) {
  manifest m;
  m.trial = text(in.getTrial());
  m.epoch = in.getEpoch();
  m.step = in.getStep();
  for (auto metric : in.getMetrics())
    m.metrics[text(metric.getName())] = metric.getValue();
  m.world_size = in.getWorldSize();
  m.version = in.getSchemaVersion();
  for (auto b : in.getBuffers())
    m.buffers.emplace_back(text(b.getName()), b.getCount());
  auto extra = in.getExtra();
  m.extra.assign(reinterpret_cast<const char*>(extra.begin()),
                 reinterpret_cast<const char*>(extra.end()));
  for (auto s : in.getShards())
    m.shards.push_back({s.getRank(), text(s.getFile()), s.getSize(), s.getChecksum()});
  return m;
}

// Each target names a buffer of the manifest with the same count.
status check_targets(const manifest& m, const std::vector<buffer_target>& targets) {
  for (const auto& t : targets) {
    auto it = std::find_if(m.buffers.begin(), m.buffers.end(),
                           [&](const auto& b) { return b.first == t.name; });
    if (it == m.buffers.end())
      return invalid_argument("the checkpoint holds no buffer '" + t.name + "'");
    if (it->second != t.count || (t.count > 0 && t.data == nullptr && t.pieces.empty()))
      return invalid_argument("the checkpoint's buffer '" + t.name + "' holds " +
                              std::to_string(it->second) + " elements, the target " +
                              std::to_string(t.count));
    if (std::string problem = pieces_problem(t.pieces, t.count); !problem.empty())
      return invalid_argument("the target of buffer '" + t.name + "': " + problem);
  }
  return status::ok();
}

// Elements [begin, begin + count) of targets[target]'s buffer, to be
// copied to `to`: the whole buffer of a target without pieces, or one of
// its (non-empty) pieces.
struct fill_range {
  size_t target;
  int64_t begin;
  int64_t count;
  char* to;
  bool whole;
};

// Every target's ranges, by target then begin. A target's ranges do not
// overlap (check_targets), so their ends are in order too.
std::vector<fill_range> fill_ranges(const std::vector<buffer_target>& targets) {
  std::vector<fill_range> out;
  for (size_t t = 0; t < targets.size(); ++t) {
    const auto& target = targets[t];
    if (target.pieces.empty())
      out.push_back({t, 0, target.count, reinterpret_cast<char*>(target.data), true});
    for (const auto& p : target.pieces)
      if (p.count > 0)
        out.push_back({t, p.begin, p.count, reinterpret_cast<char*>(p.data), false});
  }
  std::sort(out.begin(), out.end(), [](const fill_range& a, const fill_range& b) {
    return a.target != b.target ? a.target < b.target : a.begin < b.begin;
  });
  return out;
}

// What read_buffers was asked for, checked.
struct request {
  const manifest& m;
  const std::vector<buffer_target>& targets;
  std::vector<fill_range> ranges;
  bool pieces;  // some target has pieces: shards that meet none are skipped
};

// The ranges of target `t` that meet elements [begin, end), as indices
// [first, last) into `ranges`.
std::pair<size_t, size_t> meeting(const std::vector<fill_range>& ranges, size_t t,
                                  int64_t begin, int64_t end) {
  auto first = std::partition_point(ranges.begin(), ranges.end(), [&](const fill_range& r) {
    return r.target < t || (r.target == t && r.begin + r.count <= begin);
  });
  auto last = std::partition_point(first, ranges.end(), [&](const fill_range& r) {
    return r.target == t && r.begin < end;
  });
  return {static_cast<size_t>(first - ranges.begin()), static_cast<size_t>(last - ranges.begin())};
}

// The index of the target named `name`, or targets.size().
size_t target_of(const std::vector<buffer_target>& targets, const std::string& name) {
  return static_cast<size_t>(
      std::find_if(targets.begin(), targets.end(), [&](const auto& t) { return t.name == name; }) -
      targets.begin());
}

// One copy from a shard's mapping into a target.
struct copy_op {
  const kj::byte* from;
  size_t size;
  char* to;
};

// A run of a slice's bytes: one of its chunks, at `at` in the slice.
struct chunk_at {
  const kj::byte* data;
  size_t size;
  size_t at;
};

// A shard mapped, verified and parsed: the copies its slices call for
// (pointers into the mapping) and the elements they cover, per range
// (an index into request::ranges).
struct shard_plan {
  std::optional<mapped_file> file;
  std::vector<copy_op> copies;
  std::vector<std::pair<size_t, span>> covered;
};

// The slice's chunks, which must hold exactly its `count` floats.
result<std::vector<chunk_at>> chunks_of(schema::Slice::Reader slice, const std::string& where) {
  const int64_t count = slice.getCount();
  const size_t want = static_cast<size_t>(count) * sizeof(float);
  std::vector<chunk_at> out;
  size_t at = 0;
  for (auto chunk : slice.getChunks()) {
    if (chunk.size() > want - at)
      return corrupt_data(where + " holds more bytes than its " + std::to_string(count) +
                          " elements");
    out.push_back({chunk.begin(), chunk.size(), at});
    at += chunk.size();
  }
  if (at != want)
    return corrupt_data(where + " holds " + std::to_string(at) + " bytes for " +
                        std::to_string(count) + " elements");
  return out;
}

// Plans the copies of slice elements [lo, hi) (slice starting at element
// `begin`) into range `r`: the parts of the chunks they lie in.
void plan_part(const std::vector<chunk_at>& chunks, int64_t begin, int64_t lo, int64_t hi,
               const fill_range& r, std::vector<copy_op>& copies) {
  const size_t from = static_cast<size_t>(lo - begin) * sizeof(float);
  const size_t to = static_cast<size_t>(hi - begin) * sizeof(float);
  char* out = r.to + static_cast<size_t>(lo - r.begin) * sizeof(float);
  for (const chunk_at& c : chunks) {
    const size_t a = std::max(from, c.at), b = std::min(to, c.at + c.size);
    if (a < b)
      copies.push_back({c.data + (a - c.at), b - a, out + (a - from)});
  }
}

// Plans the copies of one slice into the ranges it meets (if any),
// checking the slice against the manifest.
status plan_slice(schema::Slice::Reader slice, const request& q, shard_plan& plan) {
  const std::string name = text(slice.getName());
  const int64_t begin = slice.getBegin(), count = slice.getCount();
  auto buffer = std::find_if(q.m.buffers.begin(), q.m.buffers.end(),
                             [&](const auto& b) { return b.first == name; });
  if (buffer == q.m.buffers.end())
    return corrupt_data("a slice of buffer '" + name + "', which the manifest does not list");
  const std::string where = "buffer '" + name + "' slice at " + std::to_string(begin);
  if (begin < 0 || count < 0 || count > buffer->second - begin)
    return corrupt_data(where + " of " + std::to_string(count) + " elements is outside its " +
                        std::to_string(buffer->second));
  const size_t target = target_of(q.targets, name);
  if (target == q.targets.size())
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(auto chunks, chunks_of(slice, where));
  const auto [first, last] = meeting(q.ranges, target, begin, begin + count);
  for (size_t i = first; i < last; ++i) {
    const fill_range& r = q.ranges[i];
    const int64_t lo = std::max(begin, r.begin), hi = std::min(begin + count, r.begin + r.count);
    plan_part(chunks, begin, lo, hi, r, plan.copies);
    plan.covered.push_back({i, {lo, hi - lo}});
  }
  return status::ok();
}

// Parses a verified shard in place (the reader may go: what it hands out
// points into the mapping) and plans its slices' copies.
status plan_slices(const checkpoint::shard_info& info, const request& q, shard_plan& plan) {
  DTRAIN_ASSIGN_OR_RETURN(auto words, words_of(*plan.file));
  capnp::FlatArrayMessageReader reader(words, reader_limits(plan.file->size()));
  auto shard = reader.getRoot<schema::Shard>();
  if (shard.getRank() != info.rank || shard.getWorldSize() != q.m.world_size)
    return corrupt_data("holds rank " + std::to_string(shard.getRank()) + " of " +
                        std::to_string(shard.getWorldSize()) + ", the manifest says rank " +
                        std::to_string(info.rank) + " of " + std::to_string(q.m.world_size));
  for (auto slice : shard.getSlices())
    DTRAIN_RETURN_IF_ERROR(plan_slice(slice, q, plan));
  return status::ok();
}

// Whether a slice of the (not yet verified) shard seems to meet a range:
// its slice headers are parsed, the tensor bytes not touched. Anything
// that does not parse counts as a yes, so that the full reading reports
// it as it would without pieces.
bool meets_a_range(const mapped_file& file, const request& q) {
  auto words = words_of(file);
  if (!words.is_ok())
    return true;
  try {
    capnp::FlatArrayMessageReader reader(*words, reader_limits(file.size()));
    for (auto slice : reader.getRoot<schema::Shard>().getSlices()) {
      const size_t target = target_of(q.targets, text(slice.getName()));
      const int64_t begin = slice.getBegin(), count = slice.getCount();
      if (target == q.targets.size() || count == 0)
        continue;
      if (begin < 0 || count < 0 || count > std::numeric_limits<int64_t>::max() - begin)
        return true;  // odd: let the full reading say what is wrong
      const auto [first, last] = meeting(q.ranges, target, begin, begin + count);
      if (first < last)
        return true;
    }
    return false;
  } catch (const kj::Exception&) {
    return true;
  }
}

// Maps, verifies (size, CRC-32: the pass that reads the disk) and plans one
// shard; with pieces, a shard that meets none of them is left unread.
// Errors name the file.
status plan_shard(const std::string& dir, const checkpoint::shard_info& info, const request& q,
                  shard_plan& plan) {
  const std::string path = dir + "/" + info.file;
  auto file = mapped_file::open(path);
  if (!file.is_ok())
    return file.error().code() == error_code::not_found
               ? corrupt_data("checkpoint shard " + path + " is missing")
               : file.error();
  if (q.pieces && !meets_a_range(*file, q))
    return status::ok();
  plan.file.emplace(std::move(file).value());
  plan.file->expect_sequential_read();
  DTRAIN_RETURN_IF_ERROR(verify_mapped(*plan.file, info));
  try {
    return plan_slices(info, q, plan).with_context("checkpoint shard " + path);
  } catch (const kj::Exception& e) {
    return corrupt_data("checkpoint shard " + path + ": " + e.getDescription().cStr());
  }
}

// Runs body(0..n-1) on up to one thread per core (this one included):
// shards are verified and copied in parallel, as they were written.
void parallel_for(size_t n, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++)
      body(i);
  };
  const size_t helpers = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency())) - 1;
  std::vector<std::thread> threads;
  for (size_t t = 0; t < helpers; ++t) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // fewer threads: this one does the rest
    }
  }
  work();
  for (auto& t : threads)
    t.join();
}

// What a coverage error names: the buffer, and the piece if it is one.
std::string range_name(const fill_range& r, const std::vector<buffer_target>& targets) {
  const std::string buffer = "buffer '" + targets[r.target].name + "'";
  if (r.whole)
    return buffer;
  return buffer + " piece [" + std::to_string(r.begin) + ", " +
         std::to_string(r.begin + r.count) + ")";
}

// The slices' parts `spans` (sorted) must tile range `r`: no gap, no overlap.
status check_range(const std::vector<std::pair<size_t, span>>& spans, size_t first,
                   size_t last, const fill_range& r, const std::vector<buffer_target>& targets) {
  int64_t next = r.begin;
  for (size_t i = first; i < last; ++i) {
    const auto [begin, count] = spans[i].second;
    if (count == 0)
      continue;
    if (begin != next)
      return corrupt_data(range_name(r, targets) + ": elements from " +
                          std::to_string(std::min(begin, next)) +
                          (begin < next ? " are in two shards" : " are in no shard"));
    next = begin + count;
  }
  if (next != r.begin + r.count)
    return corrupt_data(range_name(r, targets) + ": elements from " + std::to_string(next) +
                        " to " + std::to_string(r.begin + r.count) + " are in no shard");
  return status::ok();
}

// Every range must be tiled by the parts of slices the shards cover it with.
status check_coverage(const std::vector<shard_plan>& plans, const request& q) {
  std::vector<std::pair<size_t, span>> spans;
  for (const auto& plan : plans)
    spans.insert(spans.end(), plan.covered.begin(), plan.covered.end());
  std::sort(spans.begin(), spans.end());
  size_t first = 0;
  for (size_t r = 0; r < q.ranges.size(); ++r) {
    size_t last = first;
    while (last < spans.size() && spans[last].first == r)
      ++last;
    DTRAIN_RETURN_IF_ERROR(check_range(spans, first, last, q.ranges[r], q.targets));
    first = last;
  }
  return status::ok();
}

} // namespace

result<manifest> capnp_codec::read_manifest(const std::string& dir) {
  const std::string path = dir + "/" + manifest_file;
  auto file = mapped_file::open(path);
  if (!file.is_ok())
    return file.error().code() == error_code::not_found
               ? not_found("checkpoint " + dir + " has no manifest (" + path + " is missing)")
               : file.error();
  try {
    auto words = words_of(*file);
    if (!words.is_ok())
      return words.error().with_context("checkpoint manifest " + path);
    capnp::FlatArrayMessageReader reader(*words, reader_limits(file->size()));
    if (reader.getEnd() != words->end())
      return corrupt_data("checkpoint manifest " + path + " has bytes after its message");
    manifest m = decode_manifest(reader.getRoot<schema::Manifest>());
    if (std::string problem = manifest_problem(m); !problem.empty())
      return corrupt_data("checkpoint manifest " + path + ": " + problem);
    return m;
  } catch (const kj::Exception& e) {
    return corrupt_data("checkpoint manifest " + path + ": " + e.getDescription().cStr());
  }
}

status capnp_codec::read_buffers(const std::string& dir, const manifest& m,
                                 const std::vector<buffer_target>& targets) {
  DTRAIN_RETURN_IF_ERROR(check_targets(m, targets).with_context("checkpoint " + dir));
  const bool pieces = std::any_of(targets.begin(), targets.end(),
                                  [](const buffer_target& t) { return !t.pieces.empty(); });
  const request q{m, targets, fill_ranges(targets), pieces};
  // Every shard is verified and checked, and the coverage too, before a
  // target is written: a bad checkpoint leaves the targets alone.
  std::vector<shard_plan> plans(m.shards.size());
  std::vector<status> outcomes(m.shards.size());
  parallel_for(plans.size(),
               [&](size_t i) { outcomes[i] = plan_shard(dir, m.shards[i], q, plans[i]); });
  for (const status& s : outcomes)
    DTRAIN_RETURN_IF_ERROR(s);
  DTRAIN_RETURN_IF_ERROR(check_coverage(plans, q).with_context("checkpoint " + dir));
  // The one copy of the tensor bytes: from the (now cached) mappings.
  parallel_for(plans.size(), [&](size_t i) {
    for (const copy_op& op : plans[i].copies)
      std::memcpy(op.to, op.from, op.size);
  });
  return status::ok();
}

} // namespace dtrain::serialization
