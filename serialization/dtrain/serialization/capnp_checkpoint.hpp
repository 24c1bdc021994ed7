#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/checkpoint/checkpoint.hpp"

namespace dtrain::serialization {

/// The checkpoint codec in Cap'n Proto (schema/checkpoint.capnp).
///
/// Files in a checkpoint directory: "shard-RANK-of-WORLD.capnp" per rank
/// and "manifest.capnp". Each is written to a temporary file, fsynced and
/// renamed; the manifest's directory is fsynced after its rename, which
/// also makes the shards' earlier renames durable.
///
/// Checksum: CRC-32 as zlib computes it (crc32(), the gzip/PNG polynomial)
/// over every byte of the shard file, kept in the low 32 bits of the
/// manifest's 64-bit field. It is computed while writing: messages go out
/// through capnp::writeMessage() over a file-descriptor stream that hashes
/// each piece right after writing it, in file order (writeMessageToFd()
/// plus the hash); on reading, over a mapping.
///
/// Writing copies no tensor bytes: a slice's floats become Data chunks of
/// at most max_chunk_bytes (a Data field holds < 512 MiB) that reference
/// the caller's memory as external segments (referenceExternalData); only
/// a float at either end of a slice that is not 8-byte aligned is copied
/// into a chunk of its own (Cap'n Proto segments are whole words).
/// Reading maps the files (mmap) and parses them in place
/// (FlatArrayMessageReader, traversal limit from the file size);
/// read_buffers verifies and parses the shards on up to one thread per
/// core, checks that the slices tile every target (or target piece), and
/// only then makes the one copy, from the mappings into the targets (so a
/// bad checkpoint leaves them untouched). A buffer a rank writes in pieces
/// is one slice per piece, at its place in the buffer: the format is the
/// one old checkpoints have, which could always hold any slices. When
/// targets have pieces, a shard is first parsed for its slices' places
/// only, and left unverified and unread if none meets a target range.
///
/// Errors name the file: corrupt_data for contents that are wrong
/// (including anything Cap'n Proto rejects: its kj::Exception never
/// leaves this class), io_error when the OS refuses, not_found for a
/// missing manifest, invalid_argument for bad arguments. Stateless apart
/// from its chunk size; thread-safe; every call blocks on file I/O.
class capnp_codec final : public checkpoint::codec {
public:
  static constexpr size_t default_max_chunk_bytes = size_t{256} << 20;
  static constexpr const char* manifest_file = "manifest.capnp";

  /// max_chunk_bytes (tests make it small) is rounded down to a multiple
  /// of 8 and clamped to [8, 256 MiB].
  explicit capnp_codec(size_t max_chunk_bytes = default_max_chunk_bytes);

  /// "shard-RANK-of-WORLD.capnp".
  static std::string shard_file(int rank, int world_size);

  result<checkpoint::shard_info> write_shard(
      const std::string& dir, int rank, int world_size,
      const std::vector<checkpoint::buffer_view>& buffers) override;
  status write_manifest(const std::string& dir, const checkpoint::manifest& m) override;
  result<checkpoint::manifest> read_manifest(const std::string& dir) override;
  status verify_shard(const std::string& dir, const checkpoint::shard_info& shard) override;
  status read_buffers(const std::string& dir, const checkpoint::manifest& m,
                      const std::vector<checkpoint::buffer_target>& targets) override;

private:
  size_t max_chunk_bytes_;
};

/// A capnp_codec with the default chunk size.
std::shared_ptr<checkpoint::codec> make_capnp_codec();

/// The codec every checkpoint dtrain saves, restores, verifies, copies and
/// scans goes through (today make_capnp_codec()): the one place that names
/// it, so that writers and readers cannot pick different ones.
std::shared_ptr<checkpoint::codec> default_checkpoint_codec();

} // namespace dtrain::serialization
