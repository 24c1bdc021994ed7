#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/test_util.hpp"

/// Running the dtrain command line from a test (DTRAIN_BINARY), as a user
/// would, and reading what it printed.
namespace dtrain::testing {

/// How a command ended: its exit code (-1: still running at the timeout,
/// then killed) and its output, stdout and stderr together.
struct command_result {
  int code = -1;
  std::string log;
};

/// `dtrain ARGS...` with this process's environment, stdin from /dev/null
/// (a command that would ask gets end of input, never a hang), output to
/// `log_path`; waits up to `timeout`.
inline command_result run_dtrain(const std::vector<std::string>& args, const std::string& log_path,
                                 std::chrono::milliseconds timeout = std::chrono::milliseconds(300000)) {
  std::vector<std::string> full{DTRAIN_BINARY};
  full.insert(full.end(), args.begin(), args.end());
  child_process p(full, log_path, "/dev/null");
  command_result r;
  r.code = p.wait(timeout);
  r.log = read_file(log_path);
  return r;
}

/// A small one-slot regression experiment (1000 samples: a run takes well
/// under a second) of `epochs` epochs, checkpointing under DIR/ckpt, written
/// to DIR/regression.yaml; its path.
inline std::string regression_experiment(const temp_dir& dir, int epochs = 1) {
  const std::string path = dir.file("regression.yaml");
  write_file(path, "name: regression\n"
                   "operator: linear_regression\n"
                   "hyperparameters: {lr: 0.01, samples: 1000, features: 4, optimizer: sgd}\n"
                   "resources: {slots_per_trial: 1}\n"
                   "global_batch_size: 32\n"
                   "epochs: " + std::to_string(epochs) + "\n"
                   "checkpoint_storage: {host_path: " + dir.file("ckpt") + "}\n");
  return path;
}

} // namespace dtrain::testing
