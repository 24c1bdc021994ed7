#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::bench {

/// A head and `nodes` one-slot node processes (`dtrain start`) of the
/// `dtrain` binary beside this program, on loopback, in a DTRAIN_HOME of
/// their own (a fresh directory under the temporary one, also where the
/// caller may put files the nodes read). Each process's output goes to
/// NAME.log there. Every process is killed (SIGKILL) by its pid and reaped,
/// and the directory removed, when this is destroyed. Starting waits up to
/// 20 s per process for its port file. Not thread-safe.
class local_nodes {
public:
  local_nodes(const std::string& tag, int nodes) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    binary_ = (std::filesystem::path(self).parent_path() / "dtrain").string();
    home_ = std::filesystem::temp_directory_path() /
            (tag + "-" + std::to_string(getpid()) + "-" + std::to_string(++instances_));
    std::error_code ec;
    std::filesystem::create_directories(home_, ec);
    if (ec) {
      started_ = io_error("cannot create " + home_.string() + ": " + ec.message());
      return;
    }
    setenv("DTRAIN_HOME", home_.c_str(), 1);
    started_ = start({"start", "--head", "--port", "0"}, "head", address_);
    for (int i = 0; i < nodes && started_.is_ok(); ++i) {
      std::string ignored;
      started_ = start({"start", "--address", address_, "--slots", "1"},
                       "node" + std::to_string(i), ignored);
    }
  }
  ~local_nodes() {
    for (pid_t pid : pids_)
      kill(pid, SIGKILL);
    for (pid_t pid : pids_)
      waitpid(pid, nullptr, 0);
    std::error_code ec;
    std::filesystem::remove_all(home_, ec);
  }
  local_nodes(const local_nodes&) = delete;
  local_nodes& operator=(const local_nodes&) = delete;

  /// ok, or which process did not start (and where its log is).
  const status& started() const { return started_; }
  /// The head's HOST:PORT.
  const std::string& address() const { return address_; }
  const std::string home() const { return home_.string(); }
  /// Whether `pid` is one of the processes this started.
  bool owns(int64_t pid) const {
    return std::find(pids_.begin(), pids_.end(), static_cast<pid_t>(pid)) != pids_.end();
  }

private:
  // Starts `dtrain ARGS --port-file F`; what it wrote to F within 20 s into
  // `at`, else an error naming the process and its log.
  status start(std::vector<std::string> args, const std::string& name, std::string& at) {
    const std::string port_file = (home_ / (name + ".address")).string();
    const std::string log = (home_ / (name + ".log")).string();
    args.insert(args.begin(), binary_);
    args.push_back("--port-file");
    args.push_back(port_file);
    const pid_t pid = fork();
    if (pid == 0) {
      std::FILE* out = std::freopen(log.c_str(), "w", stdout);
      if (out != nullptr)
        dup2(fileno(out), STDERR_FILENO);
      std::vector<char*> argv;
      for (auto& a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary_.c_str(), argv.data());
      _exit(127);
    }
    if (pid < 0)
      return io_error("cannot fork for " + name);
    pids_.push_back(pid);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (at.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::ifstream(port_file) >> at;
    }
    if (at.empty())
      return unavailable(name + " (" + binary_ + ") did not start within 20 s; see " + log);
    return status::ok();
  }

  static inline int instances_ = 0;
  std::string binary_;
  std::filesystem::path home_;
  std::string address_;
  std::vector<pid_t> pids_;
  status started_;
};

/// The peak resident set (VmHWM of /proc/PID/status) of process `pid`, in
/// bytes; not_found when the process or the line is not there.
inline result<int64_t> vm_hwm_bytes(int64_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  std::ifstream f(path);
  std::string key;
  while (f >> key) {
    if (key == "VmHWM:") {
      int64_t kib = 0;
      f >> kib;
      return kib * 1024;
    }
    std::getline(f, key);
  }
  return not_found(path + ": no VmHWM line (is the process gone?)");
}

} // namespace dtrain::bench
