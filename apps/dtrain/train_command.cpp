// `dtrain train EXPERIMENT.yaml`: its options; run_train (commands.cpp)
// runs it.
#include <CLI/CLI.hpp>

#include <memory>

#include "command_line.hpp"
#include "commands.hpp"

namespace dtrain::cli {

void add_train_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<train_options>();
  auto* train = app.add_subcommand("train", "run an experiment file");
  train->add_option("experiment", o->experiment, "EXPERIMENT.yaml")->required();
  add_address_option(train, o->address, "embedded");
  train->add_flag("--embedded", o->embedded,
                  "run an embedded cluster even when one was started on this host");
  train->add_option("--local-slots", o->local_slots, "embedded cluster slots");
  train->add_option("--resume", o->resume, "continue experiment ID (see `dtrain experiments list`)");
  train->add_flag("--force", o->force, "with --resume: continue even if the file changed");
  train->add_flag("--verbose", o->verbose,
                  "every replica's progress as lines (default: one bar for the group on a "
                  "terminal, only epoch lines elsewhere)");
  add_tls_options(train, o->tls);
  add_dashboard_options(train, o->dashboard, true);
  // Ctrl-C ends it; its replicas follow (they monitor it).
  out.push_back({train, [o] { return run_train(*o); }});
}

} // namespace dtrain::cli
