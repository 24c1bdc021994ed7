#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::bench {

/// Forks and execs `binary ARGS`, its stdout and stderr to `log`; the
/// child's pid, or -1 when it cannot fork.
inline pid_t spawn_logged(const std::string& binary, std::vector<std::string> args,
                          const std::string& log) {
  args.insert(args.begin(), binary);
  const pid_t pid = fork();
  if (pid == 0) {
    std::FILE* out = std::freopen(log.c_str(), "w", stdout);
    if (out != nullptr)
      dup2(fileno(out), STDERR_FILENO);
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

/// The first word of `path` once it has one, polled every 20 ms for up to
/// `timeout`; "" when it has none by then.
inline std::string wait_for_word(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string word;
  while (word.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream(path) >> word;
  }
  return word;
}

/// SIGKILLs every process of `pids` (a stopped one too) and reaps them.
inline void kill_and_reap(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids)
    kill(pid, SIGKILL);
  for (pid_t pid : pids)
    waitpid(pid, nullptr, 0);
}

/// The `dtrain` binary beside this program.
inline std::string dtrain_beside_me() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  self[n > 0 ? n : 0] = '\0';
  return (std::filesystem::path(self).parent_path() / "dtrain").string();
}

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
    binary_ = dtrain_beside_me();
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
    kill_and_reap(pids_);
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
  /// The node processes' ids (the head's is not among them), in start order.
  std::vector<pid_t> node_pids() const {
    return pids_.empty() ? std::vector<pid_t>{} : std::vector<pid_t>(pids_.begin() + 1, pids_.end());
  }
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
    args.push_back("--port-file");
    args.push_back(port_file);
    const pid_t pid = spawn_logged(binary_, std::move(args), log);
    if (pid < 0)
      return io_error("cannot fork for " + name);
    pids_.push_back(pid);
    at = wait_for_word(port_file, std::chrono::seconds(20));
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

/// A size line of /proc/PID/status (`key` with its colon: "VmHWM:" the
/// peak resident set, "RssAnon:", "RssShmem:", ...), in bytes; not_found
/// when the process or the line is not there.
inline result<int64_t> proc_status_bytes(int64_t pid, const std::string& key) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  std::ifstream f(path);
  std::string word;
  while (f >> word) {
    if (word == key) {
      int64_t kib = 0;
      f >> kib;
      return kib * 1024;
    }
    std::getline(f, word);
  }
  return not_found(path + ": no " + key + " line (is the process gone?)");
}

/// The proportional set size of process `pid` (Pss of
/// /proc/PID/smaps_rollup: private pages plus each shared page divided by
/// the processes mapping it), in bytes; -1 when it cannot be read.
inline int64_t pss_bytes(int64_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string word;
  while (f >> word) {
    if (word == "Pss:") {
      int64_t kib = -1;
      f >> kib;
      return kib < 0 ? -1 : kib * 1024;
    }
    std::getline(f, word);
  }
  return -1;
}

/// The peak of each process's Pss, sampled every `period` on a thread of
/// its own from construction to stop() (or destruction): the kernel keeps
/// a peak of RSS (VmHWM) but not of Pss. A peak shorter than the period can
/// be missed. stop() is idempotent; peaks() after stop().
class pss_sampler {
public:
  pss_sampler(std::vector<int64_t> pids, std::chrono::milliseconds period)
      : pids_(std::move(pids)), peaks_(pids_.size(), -1), thread_([this, period] {
          while (!done_.load()) {
            sample();
            std::this_thread::sleep_for(period);
          }
        }) {}
  ~pss_sampler() { stop(); }
  void stop() {
    if (thread_.joinable()) {
      done_ = true;
      thread_.join();
      sample();
    }
  }
  /// Per process, in the order given: the largest Pss seen, -1 if none.
  const std::vector<int64_t>& peaks() const { return peaks_; }

private:
  void sample() {
    for (size_t i = 0; i < pids_.size(); ++i)
      peaks_[i] = std::max(peaks_[i], pss_bytes(pids_[i]));
  }

  std::vector<int64_t> pids_;
  std::vector<int64_t> peaks_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

} // namespace dtrain::bench
