#include "processes.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

namespace dtrain::cli {

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

bool alive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

} // namespace

std::string cluster_dir() {
  if (const char* home = std::getenv("DTRAIN_HOME"))
    return home;
  const char* user_home = std::getenv("HOME");
  return std::string(user_home != nullptr ? user_home : "/tmp") + "/.dtrain";
}

status write_pid_file(const std::string& role) {
  std::error_code ec;
  std::filesystem::create_directories(cluster_dir(), ec);
  std::string path = cluster_dir() + "/" + role + ".pid";
  std::ofstream out(path);
  if (!(out << getpid() << "\n"))
    return io_error("cannot write pid file " + path);
  return status::ok();
}

void remove_pid_file(const std::string& role) {
  std::error_code ec;
  std::filesystem::remove(cluster_dir() + "/" + role + ".pid", ec);
}

int stop_recorded_processes(int grace_ms) {
  std::vector<std::pair<pid_t, std::string>> found;
  std::vector<std::string> found_addresses;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(cluster_dir(), ec)) {
    if (entry.path().extension() == ".address") {  // stale once its process stops
      found_addresses.push_back(entry.path().string());
      continue;
    }
    if (entry.path().extension() != ".pid")
      continue;
    std::ifstream in(entry.path());
    long pid = 0;
    if (in >> pid && pid > 1 && pid != getpid())
      found.emplace_back(static_cast<pid_t>(pid), entry.path().string());
  }
  int stopped = 0;
  for (auto& [pid, file] : found)
    if (kill(pid, SIGTERM) == 0)
      ++stopped;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (auto& [pid, file] : found) {
    while (alive(pid) && std::chrono::steady_clock::now() < deadline) {
      waitpid(pid, nullptr, WNOHANG);  // reaps it if it is our child
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (alive(pid))
      kill(pid, SIGKILL);
    std::filesystem::remove(file, ec);
  }
  for (auto& file : found_addresses)
    std::filesystem::remove(file, ec);
  return stopped;
}

result<bool> daemonize(const std::string& log_file, const std::string& ready_file) {
  std::error_code ec;
  std::filesystem::remove(ready_file, ec);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0)
    return io_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid > 0) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!std::filesystem::exists(ready_file) && std::chrono::steady_clock::now() < deadline &&
           waitpid(pid, nullptr, WNOHANG) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return false;
  }
  setsid();
  int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    close(null);
  }
  return true;
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop.load(); }

void restore_default_signals() {
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
}

} // namespace dtrain::cli
