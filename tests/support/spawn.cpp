#include "support/spawn.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

namespace dtrain::testing {

const char* to_string(rank_mode mode) {
  return mode == rank_mode::threads ? "threads" : "processes";
}

namespace {

std::vector<rank_outcome> run_threads(int n, const std::function<status(int)>& body) {
  std::vector<rank_outcome> out(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] { out[static_cast<size_t>(r)].result = body(r); });
  for (auto& t : threads)
    t.join();
  return out;
}

std::string read_all(int fd) {
  std::string text;
  char buf[512];
  ssize_t got;
  while ((got = read(fd, buf, sizeof buf)) > 0)
    text.append(buf, static_cast<size_t>(got));
  return text;
}

std::vector<rank_outcome> run_processes(int n, std::chrono::milliseconds deadline,
                                        const std::function<status(int)>& body) {
  std::vector<rank_outcome> out(static_cast<size_t>(n));
  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  std::vector<int> pipes(static_cast<size_t>(n), -1);
  std::fflush(nullptr);
  for (int r = 0; r < n; ++r) {
    int fds[2];
    if (pipe(fds) != 0) {
      out[static_cast<size_t>(r)].result = io_error("pipe failed");
      continue;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      status s = body(r);
      std::string text = s.to_string();
      (void)!write(fds[1], text.data(), text.size());
      close(fds[1]);
      _exit(s.is_ok() ? 0 : 1);
    }
    close(fds[1]);
    pids[static_cast<size_t>(r)] = pid;
    pipes[static_cast<size_t>(r)] = fds[0];
  }
  auto end = std::chrono::steady_clock::now() + deadline;
  int left = n;
  std::vector<bool> done(static_cast<size_t>(n), false);
  while (left > 0 && std::chrono::steady_clock::now() < end) {
    for (int r = 0; r < n; ++r) {
      int wstatus = 0;
      if (done[r] || pids[r] < 0 || waitpid(pids[r], &wstatus, WNOHANG) != pids[r])
        continue;
      done[r] = true;
      --left;
      if (!(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)) {
        std::string text = read_all(pipes[r]);
        out[r].result = status(error_code::internal,
                               text.empty() ? "rank process died (wait status " +
                                                  std::to_string(wstatus) + ")"
                                            : text);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (int r = 0; r < n; ++r) {
    if (!done[r] && pids[r] > 0) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], nullptr, 0);
      out[r].killed = true;
      out[r].result = status(error_code::timeout, "rank process killed at the test deadline");
    }
    if (pipes[r] >= 0)
      close(pipes[r]);
  }
  return out;
}

} // namespace

std::vector<rank_outcome> run_ranks(int n, rank_mode mode, std::chrono::milliseconds deadline,
                                    const std::function<status(int)>& body) {
  return mode == rank_mode::threads ? run_threads(n, body) : run_processes(n, deadline, body);
}

std::string failures(const std::vector<rank_outcome>& outcomes) {
  std::string text;
  for (size_t r = 0; r < outcomes.size(); ++r)
    if (!outcomes[r].result.is_ok())
      text += "rank " + std::to_string(r) + ": " + outcomes[r].result.to_string() + "\n";
  return text;
}

status expect(bool cond, const std::string& what) {
  return cond ? status::ok() : status(error_code::internal, "expectation failed: " + what);
}

} // namespace dtrain::testing
