#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

/// dtrain's record shards: a dataset written once into a directory of
/// bounded-size files and read back memory-mapped, for sets larger than
/// memory. The directory holds
///  - `index.bin`: a small little-endian binary index (magic "DTRSHIDX",
///    version 1, its own CRC-32 at the end) naming every shard file with its
///    record count, byte size and CRC-32 (zlib's crc32 of the whole file),
///    and the set's feature_count, target_count, sample_shape, class_count,
///    record encoding and source name;
///  - `shard-NNNNN.bin`: the records in order. "raw": each record is its
///    feature_count float32 features then its target_count float32 targets,
///    back to back (host byte order, i.e. little-endian on every platform
///    dtrain builds for). "deflate": each record is those same bytes deflated
///    with zlib, back to back, followed by the shard's offset table of
///    records + 1 little-endian uint64 byte offsets (the last one is where
///    the table starts).
namespace dtrain::data {

/// How write_shards lays out a set.
struct shard_write_options {
  /// The directory to create; it must not exist yet.
  std::string dir;
  /// The most bytes one shard file may hold (> 0). A shard holds at least
  /// one record, so a single record larger than this gets a shard of its own.
  int64_t shard_bytes = 64 << 20;
  /// "raw" (fixed-size float32 records) or "deflate" (each record deflated).
  std::string encoding = "raw";
};

/// Writes every sample of `source` as record shards into `options.dir`.
/// Reads the source in chunks of a few MiB through gather() (never the whole
/// set at once) and writes each shard through a small buffer, so memory stays
/// bounded whatever the set's size (plus 8 bytes per record of the current
/// shard under "deflate", for its offset table). Atomic: everything is
/// written and fsync'd into a temporary directory next to `dir`
/// (".NAME.tmp-PID-N"), which is renamed to `dir` only at the end; on any
/// failure the temporary is removed, so a crash or an error never leaves a
/// half-written set under `dir`. Errors: invalid_argument naming the field
/// (empty dir, shard_bytes <= 0, an unknown encoding, a source with no
/// features), io_error when `dir` already exists or a write fails (naming
/// the path), and the source's own gather failure, passed on with context.
/// Blocks on file I/O; `source` must stay alive during the call.
status write_shards(const dataset& source, const shard_write_options& options);

/// A set of record shards opened by open_shards: a dataset whose gather()
/// copies (raw) or inflates (deflate) records straight out of the mmap'd
/// shard files. The first gather touching a shard verifies its CRC-32 and,
/// for deflate, its offset table: exactly once per shard, whichever threads
/// race to it (the others wait for the result); the pass also pages the
/// shard in, so it doubles as read-ahead. A failed check is remembered: every
/// later gather touching the shard returns the same corrupt_data status,
/// naming the shard file. gather() is safe from any number of threads. The
/// mappings live as long as the object; the files may be unlinked meanwhile
/// but must not be rewritten in place.
class shard_dataset final : public dataset {
public:
  /// The layout open_shards found: one entry per shard file.
  struct shard_file {
    std::string path;   // the shard's full path
    int64_t records;    // records in it
    int64_t bytes;      // its size in bytes
    uint32_t crc32;     // zlib crc32 of all its bytes, as the index says
  };

  ~shard_dataset() override;
  shard_dataset(const shard_dataset&) = delete;
  shard_dataset& operator=(const shard_dataset&) = delete;

  int64_t size() const override { return size_; }
  int64_t feature_count() const override { return feature_count_; }
  int64_t target_count() const override { return target_count_; }
  /// "DIR (N records in S shards)".
  std::string name() const override;
  std::vector<int64_t> sample_shape() const override { return sample_shape_; }
  int64_t class_count() const override { return class_count_; }
  status gather(const int64_t* indices, int64_t n, float* features,
                float* targets) const override;

  /// The index of the first record of each shard, in order (shard s holds
  /// records [starts[s], starts[s + 1]), the last one up to size()), so a
  /// loader can read shard-local windows.
  std::vector<int64_t> shard_starts() const { return starts_; }
  const std::vector<shard_file>& shards() const { return shards_; }
  /// "raw" or "deflate".
  const std::string& encoding() const { return encoding_; }
  /// The name of the dataset the set was written from.
  const std::string& source_name() const { return source_name_; }

  /// Verifies every shard now (the same once-per-shard check gather does on
  /// first touch); the first failure, naming its shard file.
  status verify_all() const;

private:
  friend result<std::shared_ptr<const dataset>> open_shards(const std::string& dir);
  struct mapping;
  shard_dataset() = default;
  status verify(size_t shard) const;
  status read_record(size_t shard, int64_t local, float* features, float* targets) const;

  std::string dir_, encoding_, source_name_;
  int64_t size_ = 0, feature_count_ = 0, target_count_ = 0, class_count_ = 0;
  std::vector<int64_t> sample_shape_;
  std::vector<shard_file> shards_;
  std::vector<int64_t> starts_;
  std::vector<std::unique_ptr<mapping>> maps_;
};

/// Whether `dir` looks like a record-shard set: it holds an `index.bin` file
/// (nothing is read or checked; open_shards does that). For telling a shard
/// directory from an image folder.
bool is_shard_directory(const std::string& dir);

/// Opens the record shards in `dir` written by write_shards: reads and
/// checks the index, then opens and mmaps every shard file (nothing else is
/// read until gather touches a shard). Errors: not_found naming the index or
/// a missing shard file; corrupt_data naming the file for an index that is
/// damaged (bad magic, bad checksum, cut short, inconsistent counts) or a
/// shard whose size differs from the index's (a truncated shard); io_error
/// when a file cannot be opened or mapped. The result is a shard_dataset
/// (dynamic_pointer_cast to reach shard_starts()).
result<std::shared_ptr<const dataset>> open_shards(const std::string& dir);

} // namespace dtrain::data
