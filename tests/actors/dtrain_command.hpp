#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "actors/child_process.hpp"
#include "test_util.hpp"

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

} // namespace dtrain::testing
