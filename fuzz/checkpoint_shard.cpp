// The checkpoint shard reader (capnp_codec::read_buffers): the input is a
// shard file of rank 0 of 1; the manifest (built here) carries its real
// size and CRC-32, so that the parsing behind the checksum is reached, and
// names two buffers whose counts come from the input's first bytes.
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  const int64_t count_a = data[0] % 64, count_b = data[1] % 16;
  data += 2;
  size -= 2;
  const std::string& dir = dtrain::fuzz::scratch_dir();
  const std::string file = dtrain::serialization::capnp_codec::shard_file(0, 1);
  dtrain::fuzz::write_file(dir + "/" + file, data, size);

  dtrain::checkpoint::manifest m;
  m.trial = "fuzz";
  m.world_size = 1;
  m.version = dtrain::checkpoint::schema_version;
  m.buffers = {{"parameters", count_a}, {"optimizer/exp_avg", count_b}};
  const uLong crc = ::crc32(::crc32(0L, Z_NULL, 0), data, static_cast<uInt>(size));
  m.shards.push_back({0, file, size, static_cast<uint64_t>(crc)});

  std::vector<float> a(static_cast<size_t>(count_a)), b(static_cast<size_t>(count_b));
  std::vector<dtrain::checkpoint::buffer_target> targets = {
      {"parameters", a.data(), count_a}, {"optimizer/exp_avg", b.data(), count_b}};
  dtrain::serialization::capnp_codec codec;
  (void)codec.verify_shard(dir, m.shards[0]);
  (void)codec.read_buffers(dir, m, targets);
  return 0;
}
