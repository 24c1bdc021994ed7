// `dtrain launch [--join-timeout S] [--bind ADDR] [--] EXPERIMENT.yaml |
// PROGRAM ARGS...`: the options of one launched task; what it does is
// roles::run_launch (dtrain/roles/launch.hpp).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <string>

#include "command_line.hpp"
#include "dtrain/roles/launch.hpp"

namespace dtrain::cli {

namespace {

// Whether drop_launch_separator found a "--": then COMMAND may start with
// '-'. One parse per process, before any command runs.
bool explicit_command = false;

} // namespace

bool drop_launch_separator(std::vector<char*>& args) {
  // CLI11 refuses what follows a "--" in a prefix command, which takes
  // everything from its first positional on anyway. A "--" right after
  // launch's own options is dropped here (one inside COMMAND is COMMAND's).
  if (args.size() < 2 || std::string(args[1]) != "launch")
    return false;
  for (size_t i = 2; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--") {
      args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
      return explicit_command = true;
    }
    if (a == "--join-timeout" || a == "--bind")
      ++i;  // its value
    else if (a.rfind("--join-timeout=", 0) != 0 && a.rfind("--bind=", 0) != 0)
      break;  // COMMAND starts here
  }
  return false;
}

void add_launch_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<roles::launch_options>();
  auto* launch = app.add_subcommand(
      "launch", "run inside a Slurm or torchrun allocation, once per task: form a cluster of "
                "the tasks (rank 0 holds the head) and run an experiment or a driver program on it");
  launch->add_option("--join-timeout", o->join_timeout_s,
                     "seconds to wait for the head and for every task to join")
      ->capture_default_str();
  launch->add_option("--bind", o->bind,
                     "address the head and nodes listen on (default: the head host's)");
  // EXPERIMENT.yaml, or PROGRAM and its arguments, which may look like
  // options: everything from the first positional on is the command.
  launch->prefix_command();
  launch->allow_extras();
  out.push_back({launch, [o, launch] {
                   o->command = launch->remaining();
                   if (!explicit_command && !o->command.empty() &&
                       o->command.front().rfind("-", 0) == 0) {
                     std::fprintf(stderr, "error: dtrain launch: unknown option %s (a COMMAND "
                                          "starting with '-' goes after --)\n",
                                  o->command.front().c_str());
                     return 2;
                   }
                   return roles::run_launch(*o);
                 }});
}

} // namespace dtrain::cli
