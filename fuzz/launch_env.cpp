// The Slurm/torchrun readers (launch/): the input is an environment, one
// NAME=VALUE per line, read by read_launch_env; each value is also given
// to the nodelist and tasks-per-node expanders directly.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "dtrain/launch/environment.hpp"
#include "dtrain/launch/nodelist.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> vars;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) {
      vars[line.substr(0, eq)] = line.substr(eq + 1);
      (void)dtrain::launch::expand_nodelist(line.substr(eq + 1), 4096);
      (void)dtrain::launch::expand_tasks_per_node(line.substr(eq + 1));
    }
    start = end + 1;
  }
  auto env = [&](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end())
      return std::nullopt;
    return it->second;
  };
  auto r = dtrain::launch::read_launch_env(env);
  if (r.is_ok() && (r->rank < 0 || r->rank >= r->world_size))
    __builtin_trap();  // the reader promises a rank below the world size
  return 0;
}
