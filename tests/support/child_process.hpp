#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

/// A process a test starts (fork + exec), with its output in a file. The
/// destructor SIGKILLs and reaps it if it is still running, so a failing
/// test leaves nothing behind.
namespace dtrain::testing {

class child_process {
public:
  /// Starts `args` (args[0] is the program path) with stdout and stderr
  /// appended to `log`, and stdin read from `input` when given (else this
  /// process's stdin).
  child_process(const std::vector<std::string>& args, const std::string& log,
                const std::string& input = "");
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  /// Sends `sig`; then waits up to `timeout` for the exit. True if it exited.
  bool stop(int sig, std::chrono::milliseconds timeout);
  /// Waits up to `timeout` for the exit; its exit code, or -1.
  int wait(std::chrono::milliseconds timeout);

private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int code_ = -1;
};

/// Polls until `path` exists and is not empty, or the timeout; its content.
std::string wait_for_file(const std::string& path, std::chrono::milliseconds timeout);

/// True while a process with this pid exists (and is not a zombie of ours).
bool process_exists(pid_t pid);

} // namespace dtrain::testing
