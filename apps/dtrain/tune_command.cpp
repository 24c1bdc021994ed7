// `dtrain tune EXPERIMENT.yaml`: its options; run_tune (commands.cpp) runs
// the sweep.
#include <CLI/CLI.hpp>

#include <memory>

#include "command_line.hpp"
#include "commands.hpp"

namespace dtrain::cli {

void add_tune_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<tune_options>();
  auto* tune = app.add_subcommand("tune", "run an experiment file's hyperparameter sweep");
  tune->add_option("experiment", o->experiment, "EXPERIMENT.yaml")->required();
  add_address_option(tune, o->address, "embedded");
  tune->add_flag("--embedded", o->embedded,
                 "run an embedded cluster even when one was started on this host");
  tune->add_option("--local-slots", o->local_slots, "embedded cluster slots (default: cores)");
  tune->add_option("--resume", o->resume, "continue experiment ID after its driver died or stopped");
  tune->add_flag("--force", o->force, "with --resume: continue even if the file changed");
  tune->add_option("--verbosity", o->verbosity,
                   "0 quiet, 1 trial starts and ends, 2 also every epoch")
      ->capture_default_str();
  add_tls_options(tune, o->tls);
  add_dashboard_options(tune, o->dashboard, true);
  out.push_back({tune, [o] { return run_tune(*o); }});
}

} // namespace dtrain::cli
