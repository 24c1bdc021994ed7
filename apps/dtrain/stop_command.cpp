// `dtrain stop`: the dtrain processes this host's pid files record.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "command_line.hpp"
#include "dtrain/roles/processes.hpp"

namespace dtrain::cli {

void add_stop_command(CLI::App& app, command_list& out) {
  auto grace_ms = std::make_shared<int>(5000);
  auto* stop = app.add_subcommand("stop", "stop the dtrain processes started on this host");
  stop->add_option("--grace-ms", *grace_ms, "wait this long before SIGKILL")->capture_default_str();
  out.push_back({stop, [grace_ms] {
                   int n = roles::stop_recorded_processes(*grace_ms);
                   std::printf("stopped %d dtrain processes\n", n);
                   return 0;
                 }});
}

} // namespace dtrain::cli
