// The experiment YAML reader (config/experiment.hpp): parse_experiment on
// any text never throws or crashes, and what it accepts writes back
// (to_yaml) to YAML it reads again to the same canonical text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dtrain/experiments/experiment.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto exp = dtrain::experiments::parse_experiment(text, "fuzz.yaml");
  dtrain::fuzz::show(exp.is_ok() ? "accepted" : exp.error().to_string());
  if (!exp.is_ok())
    return 0;
  const std::string yaml = dtrain::experiments::to_yaml(*exp);
  auto again = dtrain::experiments::parse_experiment(yaml, "canonical.yaml");
  if (!again.is_ok()) {
    std::fprintf(stderr, "to_yaml wrote what parse_experiment refuses: %s\n%s\n",
                 again.error().to_string().c_str(), yaml.c_str());
    std::abort();
  }
  if (dtrain::experiments::to_yaml(*again) != yaml) {
    std::fprintf(stderr, "the canonical YAML changed on a round trip:\n%s\n---\n%s\n",
                 yaml.c_str(), dtrain::experiments::to_yaml(*again).c_str());
    std::abort();
  }
  (void)dtrain::experiments::config_hash(yaml);
  (void)dtrain::experiments::config_differences(yaml, text);
  return 0;
}
