#include "dtrain/roles/output_tee.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace dtrain::roles {

namespace {

// Writes all of `data` to `fd`, ignoring failure: a closed terminal must
// not stop the copy to the log (nor the other way round).
void write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

} // namespace

result<std::unique_ptr<output_tee>> output_tee::start(const std::string& log_file) {
  std::unique_ptr<output_tee> t(new output_tee);
  // Its user's alone (what a node prints may name paths, hosts and data),
  // whatever the umask and whatever mode a file left there had.
  t->log_ = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (t->log_ < 0)
    return io_error("cannot open the log file " + log_file + ": " + std::strerror(errno));
  if (::fchmod(t->log_, 0600) != 0)
    return io_error("cannot make the log file " + log_file + " its user's alone (mode 0600): " +
                    std::strerror(errno));
  std::fflush(nullptr);
  for (int i = 0; i < 2; ++i) {
    const int fd = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
      return io_error(std::string("pipe: ") + std::strerror(errno));
    t->saved_[i] = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    t->pipes_[i] = p[0];
    ::dup2(p[1], fd);  // without O_CLOEXEC: the descriptor stays 1 or 2
    ::close(p[1]);
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  t->thread_ = std::thread([raw = t.get()] { raw->copy_until_closed(); });
  return t;
}

void output_tee::copy_until_closed() {
  pollfd fds[2] = {{pipes_[0], POLLIN, 0}, {pipes_[1], POLLIN, 0}};
  int open = 2;
  char buf[8192];
  while (open > 0) {
    const int ready = ::poll(fds, 2, 100);
    if (ready < 0 && errno != EINTR)
      return;
    // Closing and nothing came for 100 ms: done, even if a process that
    // inherited the descriptors still holds the pipes open.
    if (ready == 0 && closing_.load())
      return;
    if (ready <= 0)
      continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0)
        continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0) {  // every writer closed it
        fds[i].fd = -1;
        --open;
        continue;
      }
      write_all(saved_[i], buf, static_cast<size_t>(n));
      write_all(log_, buf, static_cast<size_t>(n));
    }
  }
}

output_tee::~output_tee() {
  std::fflush(nullptr);
  // Putting the originals back closes the pipes' last write ends: the
  // thread reads what is left, sees the end, and returns.
  ::dup2(saved_[0], STDOUT_FILENO);
  ::dup2(saved_[1], STDERR_FILENO);
  closing_.store(true);
  if (thread_.joinable())
    thread_.join();
  for (int fd : {saved_[0], saved_[1], pipes_[0], pipes_[1], log_})
    if (fd >= 0)
      ::close(fd);
}

} // namespace dtrain::roles
