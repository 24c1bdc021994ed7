// The plugin ABI tag check (plugin/loader.hpp: read_abi_tag): any file
// gives its tag or an error, never a crash; the library is never loaded.
#include <cstdint>
#include <string>

#include "dtrain/plugin/loader.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = dtrain::fuzz::scratch_dir() + "/plugin.so";
  dtrain::fuzz::write_file(path, data, size);
  auto tag = dtrain::plugin::read_abi_tag(path);
  if (tag.is_ok() && (tag->size() >= 256 || tag->compare(0, 7, "dtrain ") != 0))
    __builtin_trap();  // a tag is "dtrain ..." and shorter than 256 bytes
  return 0;
}
