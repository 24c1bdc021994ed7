#include "support/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

namespace dtrain::testing {

child_process::child_process(const std::vector<std::string>& args, const std::string& log,
                             const std::string& input) {
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    if (!input.empty()) {
      int in = open(input.c_str(), O_RDONLY);
      if (in >= 0) {
        dup2(in, STDIN_FILENO);
        close(in);
      }
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
}

child_process::~child_process() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool child_process::running() {
  if (pid_ <= 0 || reaped_)
    return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  return true;
}

int child_process::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return reaped_ ? code_ : -1;
}

bool child_process::stop(int sig, std::chrono::milliseconds timeout) {
  if (running())
    kill(pid_, sig);
  wait(timeout);
  return reaped_;
}

std::string wait_for_file(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    if (!text.str().empty())
      return text.str();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

bool process_exists(pid_t pid) {
  if (kill(pid, 0) != 0)
    return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string field;
  for (int i = 0; i < 3 && stat >> field; ++i) {
  }
  return field != "Z";
}

} // namespace dtrain::testing
