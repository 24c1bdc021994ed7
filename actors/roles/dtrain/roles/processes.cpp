#include "dtrain/roles/processes.hpp"

#include "dtrain/core/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace dtrain::roles {

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

bool alive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

// Field 22 of /proc/PID/stat: when the process started, in clock ticks
// since boot. With the pid it names one process for the life of the host
// (a pid is reused, a (pid, start time) pair is not). Empty if unreadable.
std::string start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat))
    return "";
  auto paren = stat.rfind(')');  // the command name may hold spaces and ')'
  if (paren == std::string::npos)
    return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    if (!(fields >> field))
      return "";
  return field;
}

// The program file a process runs ("" if it cannot be read, e.g. another
// user's process), without the " (deleted)" of a rebuilt binary.
std::string executable(const std::string& pid) {
  std::error_code ec;
  std::string path = std::filesystem::read_symlink("/proc/" + pid + "/exe", ec).string();
  const std::string deleted = " (deleted)";
  if (path.size() > deleted.size() &&
      path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0)
    path.resize(path.size() - deleted.size());
  return ec ? "" : path;
}

// Why the process a pid file names is not the process that wrote it, or ""
// when it is: same pid, same start time, running the recorded program (the
// reader's own when the file names none).
std::string not_ours(pid_t pid, const std::string& recorded_start, std::string program = "") {
  if (!alive(pid))
    return "process " + std::to_string(pid) + " is gone";
  if (recorded_start.empty())
    return "the file records no start time (written by an older dtrain?)";
  if (start_time(pid) != recorded_start)
    return "process " + std::to_string(pid) + " started at another time: the pid was reused";
  if (program.empty())
    program = executable("self");
  std::string exe = executable(std::to_string(pid));
  if (exe.empty() || exe != program)
    return "process " + std::to_string(pid) + " runs " +
           (exe.empty() ? "an unreadable program" : exe) + ", not " + program;
  return "";
}

// One pid file's three lines; `ok` is false when the first holds no pid.
struct pid_record {
  bool ok = false;
  long pid = 0;
  std::string started, address, program;
};

pid_record read_record(const std::filesystem::path& file) {
  pid_record r;
  std::ifstream in(file);
  std::string first;
  if (!std::getline(in, first))
    return r;
  std::istringstream fields(first);
  r.ok = static_cast<bool>(fields >> r.pid) && r.pid > 1;
  fields >> r.started;
  std::getline(in, r.address);
  std::getline(in, r.program);
  return r;
}

} // namespace

std::string cluster_dir() { return dtrain_home(); }

status write_pid_file(const std::string& role, const std::string& address) {
  std::error_code ec;
  std::filesystem::create_directories(cluster_dir(), ec);
  std::string path = cluster_dir() + "/" + role + ".pid";
  // Whole or not at all: a reader (dtrain status) never sees half a record.
  std::string record = std::to_string(getpid()) + " " + start_time(getpid()) + "\n" + address +
                       "\n" + executable("self") + "\n";
  return write_file_atomically(path, record.data(), record.size(), durability::visible);
}

result<std::string> local_head_address(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("head-", 0) != 0 || entry.path().extension() != ".pid")
      continue;
    const std::string file = entry.path().string();
    pid_record r = read_record(entry.path());
    if (!r.ok || r.address.empty())
      return corrupt_data("the head record " + file + " cannot be read as \"PID START\" and an "
                          "address: remove it, or give --address HOST:PORT or $DTRAIN_ADDRESS");
    if (std::string why = not_ours(static_cast<pid_t>(r.pid), r.started, r.program); !why.empty())
      return unavailable("the head record " + file + " (" + r.address + ") is stale: " + why +
                         "; `dtrain stop` clears stale records, or give --address HOST:PORT or "
                         "$DTRAIN_ADDRESS");
    found.push_back(r.address + " (" + file + ")");
  }
  if (found.size() > 1)
    return invalid_argument("several dtrain heads run on this host (" + found[0] + ", " +
                            found[1] + (found.size() > 2 ? ", ..." : "") +
                            "): say which with --address or $DTRAIN_ADDRESS");
  return found.empty() ? std::string() : found[0].substr(0, found[0].find(' '));
}

result<std::string> local_head_address() { return local_head_address(cluster_dir()); }

void remove_pid_file(const std::string& role) {
  std::error_code ec;
  std::filesystem::remove(cluster_dir() + "/" + role + ".pid", ec);
}

int stop_recorded_processes(int grace_ms) {
  struct recorded {
    pid_t pid;
    std::string file, started, program;
  };
  std::vector<recorded> found;
  std::vector<std::string> found_addresses;
  std::error_code ec;
  for (auto& entry : std::filesystem::directory_iterator(cluster_dir(), ec)) {
    // Stale once their process stops: `start --detach`'s address files and
    // its dashboard URL files.
    if (entry.path().extension() == ".address" ||
        (entry.path().extension() == ".url" &&
         entry.path().filename().string().rfind("dashboard-", 0) == 0)) {
      found_addresses.push_back(entry.path().string());
      continue;
    }
    if (entry.path().extension() != ".pid")
      continue;
    pid_record r = read_record(entry.path());
    const auto pid = static_cast<pid_t>(r.pid);
    if (!r.ok || pid == getpid())
      continue;
    const std::string& started = r.started;
    std::string why = not_ours(pid, started, r.program);
    if (!why.empty()) {
      std::fprintf(stderr, "dtrain stop: %s is stale (%s); removing it, signalling nothing\n",
                   entry.path().c_str(), why.c_str());
      std::filesystem::remove(entry.path(), ec);
      continue;
    }
    found.push_back({pid, entry.path().string(), started, r.program});
  }
  int stopped = 0;
  for (auto& [pid, file, started, program] : found)
    if (kill(pid, SIGTERM) == 0)
      ++stopped;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (auto& [pid, file, started, program] : found) {
    while (alive(pid) && std::chrono::steady_clock::now() < deadline) {
      waitpid(pid, nullptr, WNOHANG);  // reaps it if it is our child
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (alive(pid) && not_ours(pid, started, program).empty())  // still that process, not a new one
      kill(pid, SIGKILL);
    std::filesystem::remove(file, ec);
  }
  for (auto& file : found_addresses)
    std::filesystem::remove(file, ec);
  return stopped;
}

result<bool> daemonize(const std::string& log_file, const std::string& ready_file) {
  // Everything that can fail on a bad path fails here, in the terminal's
  // process, not in a child whose errors would go nowhere.
  for (const std::string& file : {log_file, ready_file}) {
    std::error_code ec;
    const std::string dir = parent_of(file);
    if (!std::filesystem::create_directories(dir, ec) && ec)
      return io_error("cannot create the directory " + dir + " (for " + file + "): " +
                      ec.message());
  }
  std::error_code ec;
  std::filesystem::remove(ready_file, ec);
  // Only its user, whatever the umask or an earlier file's mode.
  int fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return io_error("cannot open the log file " + log_file + ": " + std::strerror(errno));
  if (fchmod(fd, 0600) != 0) {
    const int err = errno;
    close(fd);
    return io_error("cannot make the log file " + log_file + " private: " + std::strerror(err));
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fd);
    return io_error(std::string("fork failed: ") + std::strerror(err));
  }
  if (pid > 0) {
    close(fd);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!std::filesystem::exists(ready_file, ec) && std::chrono::steady_clock::now() < deadline &&
           waitpid(pid, nullptr, WNOHANG) == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return false;
  }
  setsid();
  dup2(fd, STDOUT_FILENO);  // dup2's copies do not inherit O_CLOEXEC
  dup2(fd, STDERR_FILENO);
  close(fd);
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

signal_watch::signal_watch(std::function<void()> on_signal) {
  install_signal_handlers();
  thread_ = std::thread([this, on_signal = std::move(on_signal)] {
    while (!finished_.load() && !stop_requested())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!finished_.load()) {
      on_signal();
      restore_default_signals();
    }
  });
}

signal_watch::~signal_watch() {
  finished_.store(true);
  thread_.join();
}

} // namespace dtrain::roles
