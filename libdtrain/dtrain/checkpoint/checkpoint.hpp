#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

/// The checkpoint model: what a checkpoint holds, independent of how it is
/// encoded (serialization/ implements the codec with Cap'n Proto).
///
/// A checkpoint is a directory. A save writes a new one, under a temporary
/// name: every rank writes one shard (its slice of each flat buffer:
/// parameters, optimizer state; or the pieces of a buffer it holds only
/// in part), in parallel; the chief writes the
/// manifest LAST, after collecting every shard's size and checksum, then
/// renames the directory to its final name (begin_save(), publish()).
/// Files are written atomically (temporary file, fsync, rename). A
/// directory without a complete, valid manifest is not a checkpoint; a
/// shard whose size or checksum disagrees with the manifest makes the whole
/// checkpoint invalid, and the error names the file.
namespace dtrain::checkpoint {

using bytes = std::vector<char>;

constexpr int32_t schema_version = 1;

/// Elements [begin, begin + count) of a buffer that a rank holds on its
/// own (ZeRO-sharded optimizer state): `data` points at the first of them,
/// in memory of its own (not data + begin of a whole buffer). Not owned.
struct piece {
  int64_t begin = 0;
  int64_t count = 0;
  const float* data = nullptr;
};

/// A piece to restore into: elements [begin, begin + count) of a buffer go
/// to data[0, count). Not owned.
struct target_piece {
  int64_t begin = 0;
  int64_t count = 0;
  float* data = nullptr;
};

/// A flat float buffer of `count` elements to save; the manifest records
/// `count` either way. Without pieces every rank holds the whole buffer at
/// `data` and rank r of w writes elements [count*r/w, count*(r+1)/w).
/// With pieces, `data` is unused (may be null) and this rank writes exactly
/// its pieces, at their positions in the buffer: each must lie within
/// [0, count) and not overlap another of this rank's, and the ranks'
/// pieces together must cover the buffer once (not checked on writing:
/// read_buffers refuses a checkpoint whose slices leave a gap or overlap
/// in what it reads). A rank that holds nothing of the buffer gives one
/// empty piece ({0, 0, nullptr}): no pieces at all means the whole buffer.
struct buffer_view {
  std::string name;     // "parameters", "optimizer/exp_avg", ...
  const float* data = nullptr;
  int64_t count = 0;
  // The {} spares callers that write {name, data, count} GCC's
  // -Wmissing-field-initializers.
  std::vector<piece> pieces{};
};

/// A flat float buffer of `count` elements to restore into, whatever the
/// world size and the pieces it was written in. Without pieces the whole
/// buffer is filled at `data`. With pieces, `data` is unused (may be null)
/// and only the pieces are filled; they must lie within [0, count) and not
/// overlap each other. One empty piece ({0, 0, nullptr}) restores nothing
/// of the buffer (a rank that owns none of it).
struct buffer_target {
  std::string name;
  float* data = nullptr;
  int64_t count = 0;
  std::vector<target_piece> pieces{};  // {}: as buffer_view's
};

/// What the manifest records of one rank's shard file: enough to tell a
/// complete, undamaged shard from a truncated or altered one.
struct shard_info {
  int32_t rank = 0;
  std::string file;       // relative to the checkpoint directory
  uint64_t size = 0;      // bytes
  uint64_t checksum = 0;  // of the whole file (see the codec)
};

/// A checkpoint's table of contents, written last by the chief: where the
/// run was (epoch, optimizer steps, metrics), which buffers the shards hold
/// and every shard's size and checksum. A plain value.
struct manifest {
  std::string trial;
  int64_t epoch = 0;
  int64_t step = 0;
  std::map<std::string, double> metrics;
  int32_t world_size = 1;
  int32_t version = schema_version;
  std::vector<std::pair<std::string, int64_t>> buffers;  // name, element count
  bytes extra;             // the training operator's own state (chief's)
  std::vector<shard_info> shards;
};

/// How checkpoints are encoded. Implementations are stateless and
/// thread-safe; every call that touches files names them in its errors.
class codec {
public:
  virtual ~codec() = default;

  /// Writes this rank's shard of `buffers` into `dir` (created if missing),
  /// durably (fsync) before returning; the result is what the manifest
  /// records for it: per buffer, its slice r of w or its pieces (see
  /// buffer_view). The buffers are read, never modified, and must stay
  /// untouched during the call. invalid_argument (naming the buffer) for a
  /// negative count, missing data, or a piece out of range or overlapping
  /// another.
  virtual result<shard_info> write_shard(const std::string& dir, int rank, int world_size,
                                         const std::vector<buffer_view>& buffers) = 0;
  /// Writes the manifest (last, atomically). Its shards must all exist.
  virtual status write_manifest(const std::string& dir, const manifest& m) = 0;
  /// The manifest, checked for internal consistency (not the shards):
  /// not_found when `dir` has none, corrupt_data naming the file when it
  /// cannot be decoded or disagrees with itself.
  virtual result<manifest> read_manifest(const std::string& dir) = 0;
  /// Size and checksum of one shard against the manifest.
  virtual status verify_shard(const std::string& dir, const shard_info& shard) = 0;
  /// Fills the targets (whole buffers, or their pieces) from the shards,
  /// whatever the world size and pieces they were written with, verifying
  /// each shard's checksum before using it; every target must match a
  /// buffer of the same name and count in the manifest (buffers without a
  /// target are skipped; invalid_argument otherwise, and for pieces out of
  /// range or overlapping). The shards' slices must cover every target
  /// exactly, each element once: corrupt_data naming the buffer (and the
  /// piece) and the elements in no shard or in two. A slice is copied in
  /// part where it meets a piece, so a rank restoring its pieces copies
  /// only them; a shard none of whose slices meets a piece is neither
  /// verified nor copied from (verify_shard() checks every shard). On error
  /// the targets' contents are unspecified.
  virtual status read_buffers(const std::string& dir, const manifest& m,
                              const std::vector<buffer_target>& targets) = 0;
};

/// Checkpoints under a root directory, one subdirectory each. An epoch's
/// first save is "ckpt-EPOCH", its later saves (a preempted epoch saves
/// the last completed one again) "ckpt-EPOCH-SEQ" with SEQ = 1, 2, ...;
/// EPOCH is zero-padded to 8 digits and SEQ to 4, but both compare as
/// numbers: the newest checkpoint has the greatest (epoch, sequence).
/// Directories from before sequences ("ckpt-EPOCH") are sequence 0.
std::string checkpoint_name(int64_t epoch, int64_t sequence = 0);

/// Where a checkpoint stands in the order of saves.
struct checkpoint_id {
  int64_t epoch = 0;
  int64_t sequence = 0;
  bool operator<(const checkpoint_id& o) const {
    return epoch != o.epoch ? epoch < o.epoch : sequence < o.sequence;
  }
};

/// The id in a checkpoint_name(), or nothing for any other name (a
/// temporary directory of a save among them).
std::optional<checkpoint_id> parse_checkpoint_name(const std::string& name);

/// The checkpoint directories under `root` by epoch (an epoch's newest
/// save), those whose manifest file (the Cap'n Proto codec's
/// manifest.capnp) exists: a cheap listing (no
/// verification) for watching a run's checkpoints come and go. Empty when
/// `root` is missing.
std::map<int64_t, std::string> checkpoint_dirs(const std::string& root);
/// Whether `name` is the temporary directory of a save or a copy in
/// progress ("ckpt-...tmp-..."): never a checkpoint, and removed by
/// retention and by copy_newest_valid() (checkpoint_copy.hpp).
bool is_temporary_name(const std::string& name);

/// A save in progress: every rank writes into `temp`; publish() turns it
/// into `dir`. Before that, `dir` does not exist and every checkpoint
/// already under the root stays as it was, so that a save killed at any
/// point loses nothing but itself.
struct pending_save {
  std::string dir;   // root/ckpt-EPOCH[-SEQ]
  std::string temp;  // dir + ".tmp-" + 8 random hex digits
};

/// The chief's first step of a save of `epoch` under `root` (created when
/// missing): the next name for that epoch (sequence one past every
/// checkpoint of the epoch there, valid or not, so it is newer than all of
/// them and never an existing directory) and a new, empty temporary
/// directory for it. Errors (io_error, not_found) name the root.
result<pending_save> begin_save(const std::string& root, int64_t epoch);

/// The chief's last step, once every shard and the manifest in `temp` are
/// durable: renames `temp` to `dir` (never over an existing directory) and
/// fsyncs the root. Afterwards the checkpoint is there whole, or (on error
/// or a crash) not at all.
status publish(const pending_save& save);

/// Removes what a failed save wrote (best effort: leftovers are cleared
/// by the next apply_retention()).
void abandon(const pending_save& save);

/// The newest checkpoint under `root` whose manifest and shards (size and
/// checksum) are all valid; the invalid ones met on the way are listed in
/// `skipped` (path and reason). Temporary directories of saves are not
/// checkpoints and are passed over silently. not_found when there is none.
result<std::string> newest_valid(codec& c, const std::string& root,
                                 std::vector<std::string>* skipped = nullptr);

/// Deletes checkpoints under `root` except the newest `keep_last` valid
/// ones (every valid one when keep_last <= 0) and the best valid one by
/// `metric` (when not empty; smaller is better when `minimize`; checkpoints
/// without the metric do not compete). Invalid checkpoints and the
/// temporary directories of saves that never finished are deleted too, so
/// `root` must belong to one group, and retention run only when none of
/// its saves is in progress; other names are left alone.
///
/// Validity is checked cheaply (a consistent manifest, every shard present
/// with its recorded size), except that when anything valid would be
/// deleted, the checkpoints are verified in full (checksums), newest
/// first, until one passes: that one is always kept, and the ones newer
/// than it that failed with corrupt_data do not count towards keep_last
/// (they are deleted). So a corrupt newest checkpoint, or one whose
/// manifest records a wrong checksum, never costs the older good one. A
/// save thus re-reads its own checkpoint once. The first deletion that
/// fails is returned (io_error naming the directory); the rest still go.
status apply_retention(codec& c, const std::string& root, int keep_last,
                       const std::string& metric, bool minimize);

} // namespace dtrain::checkpoint
