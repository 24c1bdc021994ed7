// dtrain: the command line. Each command's options and help are in its
// file (start_command.cpp, train_command.cpp, ...); `dtrain --help` and
// `dtrain COMMAND --help` list them. What the commands do lives in the
// libraries: the process roles (head, node, launch, the pid files) in
// dtrain/roles, training and tuning in dtrain/driver.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "command_line.hpp"
#include "dtrain/build_config.hpp"
#include "dtrain/core/threads.hpp"

using namespace dtrain::cli;

namespace {

// The command line parsed and run: main's body, inside its safety net.
int run_command_line(int argc, char** argv) {
  CLI::App app{"dtrain: data-parallel training on actors"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dtrain " DTRAIN_VERSION);
  command_list commands;
  for (auto add : {add_start_command, add_status_command, add_stop_command, add_train_command,
                   add_tune_command, add_experiments_command, add_report_command,
                   add_logs_command, add_cert_command, add_dashboard_token_command,
                   add_predict_command, add_launch_command, add_data_command})
    add(app, commands);
  std::vector<char*> args(argv, argv + argc);
  drop_launch_separator(args);
  CLI11_PARSE(app, static_cast<int>(args.size()), args.data());
  for (const auto& c : commands)
    if (c.app->parsed())
      return c.run();
  return 2;  // require_subcommand(1) leaves none unparsed
}

} // namespace

int main(int argc, char** argv) {
  // Before any other thread starts: OpenBLAS's pool is all there is yet.
  dtrain::name_blas_pool_threads();
  // A safety net, not the way errors travel: every failure the commands
  // know of is a status where it happens. An exception that still reaches
  // here (a library that throws where we did not expect it) ends the
  // command with a message and an exit code instead of std::terminate.
  try {
    return run_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "dtrain: internal error: an exception of unknown type\n");
  }
  return 70;  // EX_SOFTWARE
}
