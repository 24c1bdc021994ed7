// The write side of the Cap'n Proto checkpoint codec, and the checks both
// sides share (capnp_checkpoint_read.cpp reads).
#include "dtrain/serialization/capnp_checkpoint.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include "checkpoint.capnp.h"
#include "dtrain/core/check.hpp"
#include "dtrain/serialization/capnp_checkpoint_internal.hpp"
#include "dtrain/serialization/file_io.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoints store floats as little-endian bytes");

namespace dtrain::serialization {

namespace {

using checkpoint::buffer_view;

// A run of bytes to store as one Data chunk: referenced in place, or
// copied when it cannot be a segment of its own.
struct piece {
  const kj::byte* data;
  size_t size;
  bool external;
};

// [data, data + n) as chunks: an unaligned head and a short tail are
// copied (a segment is whole, aligned words); the aligned middle is
// referenced in pieces of at most max_chunk bytes (a multiple of 8).
std::vector<piece> split(const char* data, size_t n, size_t max_chunk) {
  std::vector<piece> out;
  auto* p = reinterpret_cast<const kj::byte*>(data);
  const size_t head = std::min(n, (8 - reinterpret_cast<uintptr_t>(p) % 8) % 8);
  if (head > 0)
    out.push_back({p, head, false});
  p += head;
  n -= head;
  for (size_t whole = n / 8 * 8; whole > 0;) {
    const size_t size = std::min(whole, max_chunk);
    out.push_back({p, size, true});
    p += size;
    n -= size;
    whole -= size;
  }
  if (n > 0)
    out.push_back({p, n, false});
  return out;
}

// One slice to write: elements [begin, begin + count) of buffer `name`,
// whose floats start at `data`.
struct slice_range {
  const std::string* name;
  int64_t begin;
  int64_t count;
  const float* data;
};

// What this rank writes of each buffer, in order: slice r of w of a whole
// buffer, or its non-empty pieces.
std::vector<slice_range> slice_ranges(const std::vector<buffer_view>& buffers, int rank,
                                      int world) {
  std::vector<slice_range> out;
  for (const auto& b : buffers) {
    if (b.pieces.empty()) {
      const int64_t begin = b.count * rank / world, end = b.count * (rank + 1) / world;
      out.push_back({&b.name, begin, end - begin, b.data + begin});
      continue;
    }
    for (const auto& p : b.pieces)
      if (p.count > 0)
        out.push_back({&b.name, p.begin, p.count, p.data});
  }
  return out;
}

void build_slice(capnp::Orphanage orphanage, schema::Slice::Builder slice,
                 const slice_range& r, size_t max_chunk) {
  slice.setName(capnp::Text::Reader(r.name->data(), r.name->size()));
  slice.setBegin(r.begin);
  slice.setCount(r.count);
  const auto pieces = split(reinterpret_cast<const char*>(r.data),
                            static_cast<size_t>(r.count) * sizeof(float), max_chunk);
  auto chunks = slice.initChunks(static_cast<unsigned>(pieces.size()));
  for (unsigned i = 0; i < pieces.size(); ++i) {
    const capnp::Data::Reader bytes(pieces[i].data, pieces[i].size);
    if (pieces[i].external)
      chunks.adopt(i, orphanage.referenceExternalData(bytes));
    else
      chunks.set(i, bytes);
  }
}

void encode_manifest(const checkpoint::manifest& m, schema::Manifest::Builder out) {
  out.setTrial(capnp::Text::Reader(m.trial.data(), m.trial.size()));
  out.setEpoch(m.epoch);
  out.setStep(m.step);
  auto metrics = out.initMetrics(static_cast<unsigned>(m.metrics.size()));
  unsigned i = 0;
  for (const auto& [name, value] : m.metrics) {
    metrics[i].setName(capnp::Text::Reader(name.data(), name.size()));
    metrics[i++].setValue(value);
  }
  out.setWorldSize(m.world_size);
  out.setSchemaVersion(m.version);
  auto buffers = out.initBuffers(static_cast<unsigned>(m.buffers.size()));
  for (i = 0; i < m.buffers.size(); ++i) {
    buffers[i].setName(capnp::Text::Reader(m.buffers[i].first.data(), m.buffers[i].first.size()));
    buffers[i].setCount(m.buffers[i].second);
  }
  out.setExtra(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(m.extra.data()),
                                   m.extra.size()));
  auto shards = out.initShards(static_cast<unsigned>(m.shards.size()));
  for (i = 0; i < m.shards.size(); ++i) {
    const auto& s = m.shards[i];
    shards[i].setRank(s.rank);
    shards[i].setFile(capnp::Text::Reader(s.file.data(), s.file.size()));
    shards[i].setSize(s.size);
    shards[i].setChecksum(s.checksum);
  }
}

struct written {
  uint64_t size;
  uint32_t crc;
};

// Writes `message` to `path` atomically, hashing the file as it goes out.
result<written> write_message(const std::string& path, capnp::MessageBuilder& message,
                              bool sync_dir) {
  DTRAIN_ASSIGN_OR_RETURN(atomic_file file, atomic_file::create(path));
  // writeMessageToFd() with a stream that also hashes: the segment table,
  // then every segment, in file order.
  crc_fd_output out(file.fd(), path);
  capnp::writeMessage(out, message);
  DTRAIN_RETURN_IF_ERROR(out.error());
  DTRAIN_RETURN_IF_ERROR(
      file.commit(sync_dir ? durability::file_and_directory : durability::file));
  return written{out.bytes_written(), out.crc()};
}

status check_buffers(const std::vector<buffer_view>& buffers) {
  std::set<std::string> names;
  for (const auto& b : buffers) {
    if (b.count < 0 || (b.count > 0 && b.data == nullptr && b.pieces.empty()))
      return invalid_argument("buffer '" + b.name + "' has no data or a negative count");
    if (!names.insert(b.name).second)
      return invalid_argument("buffer '" + b.name + "' is given twice");
    if (std::string problem = pieces_problem(b.pieces, b.count); !problem.empty())
      return invalid_argument("buffer '" + b.name + "': " + problem);
  }
  return status::ok();
}

} // namespace

// ---- shared checks -----------------------------------------------------------

std::string manifest_problem(const checkpoint::manifest& m) {
  if (m.version != checkpoint::schema_version)
    return "schema version " + std::to_string(m.version) + ", this build reads version " +
           std::to_string(checkpoint::schema_version);
  if (m.world_size < 1 || static_cast<size_t>(m.world_size) != m.shards.size())
    return "world size " + std::to_string(m.world_size) + " with " +
           std::to_string(m.shards.size()) + " shards";
  std::vector<bool> seen(m.shards.size(), false);
  for (const auto& s : m.shards) {
    if (s.rank < 0 || s.rank >= m.world_size || seen[static_cast<size_t>(s.rank)])
      return "shard rank " + std::to_string(s.rank) + " is out of range or repeated";
    seen[static_cast<size_t>(s.rank)] = true;
    if (s.file.empty() || s.file == "." || s.file == ".." ||
        s.file.find('/') != std::string::npos || s.file.find('\0') != std::string::npos)
      return "shard file name '" + s.file + "' is not a plain file name";
  }
  std::set<std::string> names;
  for (const auto& [name, count] : m.buffers)
    if (count < 0 || !names.insert(name).second)
      return "buffer '" + name + "' has a negative count or is listed twice";
  return "";
}

status verify_mapped(const mapped_file& file, const checkpoint::shard_info& shard) {
  if (file.size() != shard.size)
    return corrupt_data("checkpoint shard " + file.path() + " has " +
                        std::to_string(file.size()) + " bytes, the manifest says " +
                        std::to_string(shard.size));
  const uint32_t crc = crc32_of(0, file.data(), file.size());
  if (crc != shard.checksum) {
    char text[96];
    std::snprintf(text, sizeof text, "CRC-32 0x%08x, the manifest says 0x%08llx", crc,
                  static_cast<unsigned long long>(shard.checksum));
    return corrupt_data("checkpoint shard " + file.path() + ": " + text);
  }
  return status::ok();
}

capnp::ReaderOptions reader_limits(size_t file_bytes) {
  capnp::ReaderOptions options;
  // Every pointer is followed once, so the words traversed are about the
  // file's; twice that plus a margin still bounds a malicious file.
  options.traversalLimitInWords = 2 * (file_bytes / sizeof(capnp::word)) + 1024;
  return options;
}

// ---- capnp_codec: writing ----------------------------------------------------

capnp_codec::capnp_codec(size_t max_chunk_bytes)
  : max_chunk_bytes_(std::clamp<size_t>(max_chunk_bytes / 8 * 8, 8, default_max_chunk_bytes)) {}

std::string capnp_codec::shard_file(int rank, int world_size) {
  return "shard-" + std::to_string(rank) + "-of-" + std::to_string(world_size) + ".capnp";
}

result<checkpoint::shard_info> capnp_codec::write_shard(const std::string& dir, int rank,
                                                        int world_size,
                                                        const std::vector<buffer_view>& buffers) {
  const std::string file = shard_file(rank, world_size), path = dir + "/" + file;
  if (world_size < 1 || rank < 0 || rank >= world_size)
    return invalid_argument("checkpoint shard " + path + ": rank " + std::to_string(rank) +
                            " of world size " + std::to_string(world_size));
  DTRAIN_RETURN_IF_ERROR(check_buffers(buffers).with_context("checkpoint shard " + path));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return io_error("checkpoint directory " + dir + ": cannot create: " + ec.message());
  try {
    capnp::MallocMessageBuilder message;
    auto shard = message.initRoot<schema::Shard>();
    shard.setRank(rank);
    shard.setWorldSize(world_size);
    const auto ranges = slice_ranges(buffers, rank, world_size);
    auto slices = shard.initSlices(static_cast<unsigned>(ranges.size()));
    for (unsigned i = 0; i < ranges.size(); ++i)
      build_slice(message.getOrphanage(), slices[i], ranges[i], max_chunk_bytes_);
    DTRAIN_ASSIGN_OR_RETURN(written w, write_message(path, message, false));
    return checkpoint::shard_info{rank, file, w.size, w.crc};
  } catch (const kj::Exception& e) {
    return status(error_code::internal,
                  "checkpoint shard " + path + ": " + e.getDescription().cStr());
  }
}

status capnp_codec::write_manifest(const std::string& dir, const checkpoint::manifest& m) {
  const std::string path = dir + "/" + manifest_file;
  if (std::string problem = manifest_problem(m); !problem.empty())
    return invalid_argument("checkpoint manifest " + path + ": " + problem);
  for (const auto& s : m.shards) {
    struct stat st {};
    const std::string shard = dir + "/" + s.file;
    if (::stat(shard.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_size) != s.size)
      return invalid_argument("checkpoint manifest " + path + ": shard " + shard +
                              " is missing or not " + std::to_string(s.size) + " bytes");
  }
  try {
    capnp::MallocMessageBuilder message;
    encode_manifest(m, message.initRoot<schema::Manifest>());
    return write_message(path, message, true).to_status();
  } catch (const kj::Exception& e) {
    return status(error_code::internal,
                  "checkpoint manifest " + path + ": " + e.getDescription().cStr());
  }
}

status capnp_codec::verify_shard(const std::string& dir, const checkpoint::shard_info& shard) {
  const std::string path = dir + "/" + shard.file;
  auto file = mapped_file::open(path);
  if (!file.is_ok())
    return file.error().code() == error_code::not_found
               ? corrupt_data("checkpoint shard " + path + " is missing")
               : file.error();
  file->expect_sequential_read();
  return verify_mapped(*file, shard);
}

std::shared_ptr<checkpoint::codec> make_capnp_codec() {
  return std::make_shared<capnp_codec>();
}

std::shared_ptr<checkpoint::codec> default_checkpoint_codec() { return make_capnp_codec(); }

} // namespace dtrain::serialization
