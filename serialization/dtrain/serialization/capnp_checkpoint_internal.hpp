#pragma once

#include <cstddef>
#include <string>

#include <capnp/message.h>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/serialization/file_io.hpp"

/// What the two halves of the Cap'n Proto checkpoint codec share
/// (capnp_checkpoint.cpp writes, capnp_checkpoint_read.cpp reads). Not part
/// of serialization/'s interface.
namespace dtrain::serialization {

/// Why `m` is not a consistent manifest (schema version, world size against
/// shards, ranks 0..w-1 each once, plain shard file names, buffer names
/// unique), or "" when it is.
std::string manifest_problem(const checkpoint::manifest& m);

/// The mapped shard's size and CRC-32 against `shard`: corrupt_data naming
/// the file and both values when they differ.
status verify_mapped(const mapped_file& file, const checkpoint::shard_info& shard);

/// Reader options for a message of `file_bytes`: a traversal limit from the
/// size (the default 64 MiB would refuse big shards), the default nesting.
capnp::ReaderOptions reader_limits(size_t file_bytes);

} // namespace dtrain::serialization
