// A trial's configuration as JSON (tune/space.hpp: config_from_json): what
// the store and the control plane carry between the tuner and its peers.
// Any text gives a configuration or an error; what it accepts writes back
// (to_json) to JSON that reads to the same configuration.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dtrain/tune/space.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto c = dtrain::tune::config_from_json(text);
  if (!c.is_ok())
    return 0;
  const std::string json = dtrain::tune::to_json(*c);
  auto again = dtrain::tune::config_from_json(json);
  if (!again.is_ok() || dtrain::tune::to_json(*again) != json) {
    std::fprintf(stderr, "to_json wrote '%s', which does not read back (%s)\n", json.c_str(),
                 again.is_ok() ? "different" : again.error().to_string().c_str());
    std::abort();
  }
  (void)dtrain::tune::to_strings(*c);
  return 0;
}
