#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "dtrain/core/status.hpp"

namespace dtrain::roles {

/// While it lives, this process's stdout and stderr still go where they
/// went (the terminal) and are also appended to a log file: a foreground
/// node's output in $DTRAIN_HOME/node-<pid>.log, which the node serves to
/// `dtrain logs` as a detached node serves its own.
///
/// Both descriptors become pipes read by one thread of its own, which
/// copies each to its original descriptor and to the file; stdout is made
/// line-buffered, as it was on a terminal. The destructor flushes stdio,
/// gives both descriptors back, and joins the thread once it has copied
/// everything written before (or, when a child process still holds the
/// pipes, once they stayed quiet for 100 ms). A process that ends with
/// _Exit may lose the last bytes still in the pipes.
class output_tee {
public:
  static result<std::unique_ptr<output_tee>> start(const std::string& log_file);
  ~output_tee();
  output_tee(const output_tee&) = delete;
  output_tee& operator=(const output_tee&) = delete;

private:
  output_tee() = default;
  void copy_until_closed();

  int log_ = -1;
  int saved_[2] = {-1, -1};  // the original stdout and stderr
  int pipes_[2] = {-1, -1};  // read ends of the pipes now on 1 and 2
  std::atomic<bool> closing_{false};
  std::thread thread_;
};

} // namespace dtrain::roles
