#pragma once

#include <string>
#include <vector>

namespace dtrain::roles {

/// `dtrain launch [--] EXPERIMENT.yaml | PROGRAM ARGS...`, run once per task
/// by a launcher (srun, torchrun). Each task reads its launcher's
/// environment (launch/environment.hpp) and starts a node of one slot that
/// joins the head; the task of rank 0 first starts the head on the head's
/// host and port, waits until every task's node has joined (or names the
/// hosts whose tasks did not within join_timeout_s), then runs the driver:
/// `dtrain train EXPERIMENT.yaml --address HEAD`, or PROGRAM with
/// $DTRAIN_ADDRESS set to the head. Everything ends with the driver: rank 0
/// stops its node and the head, whose nodes then exit, and every task exits
/// with the driver's status. A task whose node or head dies, or a node lost
/// while the driver runs, ends the task with an error (the launcher then
/// ends the others). The head and nodes are child processes of the task
/// (`dtrain start`), stopped by their pids on every exit path.
struct launch_options {
  std::vector<std::string> command;  // EXPERIMENT.yaml, or PROGRAM and its arguments
  int join_timeout_s = 60;
  /// The head's and nodes' bind address; empty: the head host's address.
  std::string bind;
  /// The dtrain program the head, nodes and `dtrain train` run as; empty:
  /// this process's own program (when it is dtrain).
  std::string dtrain_program;
};

/// One task's part (blocks until the driver ends or the task fails; SIGINT
/// and SIGTERM end it, stopping its children). Returns the task's exit
/// code: the driver's, or 1 with the reason on stderr.
int run_launch(const launch_options& o);

} // namespace dtrain::roles
