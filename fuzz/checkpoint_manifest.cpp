// The checkpoint manifest reader (capnp_codec::read_manifest): any bytes
// in manifest.capnp give a manifest or an error, never a crash, and Cap'n
// Proto's exceptions never leave the codec.
#include <cstdint>
#include <string>

#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = dtrain::fuzz::scratch_dir();
  dtrain::fuzz::write_file(dir + "/manifest.capnp", data, size);
  dtrain::serialization::capnp_codec codec;
  auto m = codec.read_manifest(dir);
  if (m.is_ok())
    for (const auto& shard : m->shards)
      (void)codec.verify_shard(dir, shard);  // missing files: errors
  return 0;
}
