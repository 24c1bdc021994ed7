// The read side of the Cap'n Proto checkpoint codec: files are mapped,
// verified and parsed in place, one thread per shard; tensor bytes are
// copied once, from the mappings into the caller's buffers, after every
// check has passed.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
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
    if (it->second != t.count || (t.count > 0 && t.data == nullptr))
      return invalid_argument("the checkpoint's buffer '" + t.name + "' holds " +
                              std::to_string(it->second) + " elements, the target " +
                              std::to_string(t.count));
  }
  return status::ok();
}

// One copy from a shard's mapping into a target.
struct copy_op {
  const kj::byte* from;
  size_t size;
  char* to;
};

// A shard mapped, verified and parsed: the copies its slices call for
// (pointers into the mapping) and the spans they cover, per target.
struct shard_plan {
  std::optional<mapped_file> file;
  std::vector<copy_op> copies;
  std::vector<std::vector<span>> covered;
};

// Plans the copies of one slice into its target (if any), checking the
// slice against the manifest.
status plan_slice(schema::Slice::Reader slice, const manifest& m,
                  const std::vector<buffer_target>& targets, shard_plan& plan) {
  const std::string name = text(slice.getName());
  const int64_t begin = slice.getBegin(), count = slice.getCount();
  auto buffer = std::find_if(m.buffers.begin(), m.buffers.end(),
                             [&](const auto& b) { return b.first == name; });
  if (buffer == m.buffers.end())
    return corrupt_data("a slice of buffer '" + name + "', which the manifest does not list");
  const std::string where = "buffer '" + name + "' slice at " + std::to_string(begin);
  if (begin < 0 || count < 0 || count > buffer->second - begin)
    return corrupt_data(where + " of " + std::to_string(count) + " elements is outside its " +
                        std::to_string(buffer->second));
  auto target = std::find_if(targets.begin(), targets.end(),
                             [&](const auto& t) { return t.name == name; });
  if (target == targets.end())
    return status::ok();
  char* out = reinterpret_cast<char*>(target->data + begin);
  const size_t want = static_cast<size_t>(count) * sizeof(float);
  size_t at = 0;
  for (auto chunk : slice.getChunks()) {
    if (chunk.size() > want - at)
      return corrupt_data(where + " holds more bytes than its " + std::to_string(count) +
                          " elements");
    plan.copies.push_back({chunk.begin(), chunk.size(), out + at});
    at += chunk.size();
  }
  if (at != want)
    return corrupt_data(where + " holds " + std::to_string(at) + " bytes for " +
                        std::to_string(count) + " elements");
  plan.covered[static_cast<size_t>(target - targets.begin())].push_back({begin, count});
  return status::ok();
}

// Parses a verified shard in place (the reader may go: what it hands out
// points into the mapping) and plans its slices' copies.
status plan_slices(const checkpoint::shard_info& info, const manifest& m,
                   const std::vector<buffer_target>& targets, shard_plan& plan) {
  DTRAIN_ASSIGN_OR_RETURN(auto words, words_of(*plan.file));
  capnp::FlatArrayMessageReader reader(words, reader_limits(plan.file->size()));
  auto shard = reader.getRoot<schema::Shard>();
  if (shard.getRank() != info.rank || shard.getWorldSize() != m.world_size)
    return corrupt_data("holds rank " + std::to_string(shard.getRank()) + " of " +
                        std::to_string(shard.getWorldSize()) + ", the manifest says rank " +
                        std::to_string(info.rank) + " of " + std::to_string(m.world_size));
  for (auto slice : shard.getSlices())
    DTRAIN_RETURN_IF_ERROR(plan_slice(slice, m, targets, plan));
  return status::ok();
}

// Maps, verifies (size, CRC-32: the pass that reads the disk) and plans one
// shard. Errors name the file.
status plan_shard(const std::string& dir, const checkpoint::shard_info& info, const manifest& m,
                  const std::vector<buffer_target>& targets, shard_plan& plan) {
  const std::string path = dir + "/" + info.file;
  auto file = mapped_file::open(path);
  if (!file.is_ok())
    return file.error().code() == error_code::not_found
               ? corrupt_data("checkpoint shard " + path + " is missing")
               : file.error();
  plan.file.emplace(std::move(file).value());
  plan.file->expect_sequential_read();
  DTRAIN_RETURN_IF_ERROR(verify_mapped(*plan.file, info));
  plan.covered.resize(targets.size());
  try {
    return plan_slices(info, m, targets, plan).with_context("checkpoint shard " + path);
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

// The slices of one buffer must tile [0, count): no gap, no overlap.
status check_coverage(std::vector<span> spans, const buffer_target& t) {
  std::sort(spans.begin(), spans.end());
  int64_t next = 0;
  for (const auto& [begin, count] : spans) {
    if (count == 0)
      continue;
    if (begin != next)
      return corrupt_data("buffer '" + t.name + "': elements from " +
                          std::to_string(std::min(begin, next)) +
                          (begin < next ? " are in two shards" : " are in no shard"));
    next = begin + count;
  }
  if (next != t.count)
    return corrupt_data("buffer '" + t.name + "': elements from " + std::to_string(next) +
                        " to " + std::to_string(t.count) + " are in no shard");
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
  // Every shard is verified and checked, and the coverage too, before a
  // target is written: a bad checkpoint leaves the targets alone.
  std::vector<shard_plan> plans(m.shards.size());
  std::vector<status> outcomes(m.shards.size());
  parallel_for(plans.size(), [&](size_t i) {
    outcomes[i] = plan_shard(dir, m.shards[i], m, targets, plans[i]);
  });
  for (const status& s : outcomes)
    DTRAIN_RETURN_IF_ERROR(s);
  for (size_t t = 0; t < targets.size(); ++t) {
    std::vector<span> spans;
    for (const auto& plan : plans)
      spans.insert(spans.end(), plan.covered[t].begin(), plan.covered[t].end());
    DTRAIN_RETURN_IF_ERROR(check_coverage(std::move(spans), targets[t])
                               .with_context("checkpoint " + dir));
  }
  // The one copy of the tensor bytes: from the (now cached) mappings.
  parallel_for(plans.size(), [&](size_t i) {
    for (const copy_op& op : plans[i].copies)
      std::memcpy(op.to, op.from, op.size);
  });
  return status::ok();
}

} // namespace dtrain::serialization
