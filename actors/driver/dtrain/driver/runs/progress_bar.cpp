#include "dtrain/driver/runs/progress_bar.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dtrain::runs {

bool stdout_is_terminal() {
  if (!isatty(STDOUT_FILENO))
    return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

int terminal_width(int fallback) {
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  return fallback;
}

progress_display::progress_display(int replicas, int64_t epochs, bool verbose)
  : replicas_(replicas), epochs_(epochs), verbose_(verbose), terminal_(stdout_is_terminal()) {
  if (terminal_)
    width_ = terminal_width(width_);
}

void progress_display::erase_locked() {
  if (bar_.empty())
    return;
  std::fputs("\r\033[K", stdout);  // to the line's start, erase to its end
  bar_.clear();
}

void progress_display::note(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  erase_locked();
  std::fflush(stdout);
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
}

void progress_display::update(const actors::progress_msg& p) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (verbose_) {
    erase_locked();
    std::printf("[rank %d] epoch %lld step %lld/%lld  loss %.4f  %.0f samples/s\n", p.rank,
                static_cast<long long>(p.epoch), static_cast<long long>(p.step),
                static_cast<long long>(p.steps_per_epoch), p.loss, p.samples_per_second);
    std::fflush(stdout);
    return;
  }
  if (!terminal_ || p.rank != 0 || p.epoch <= finished_)
    return;
  // The window may have been resized since the last bar.
  width_ = terminal_width(width_);
  // One column short of the width: a full line would wrap on some terminals.
  std::string bar = actors::format_progress(p, replicas_, epochs_, std::max(width_ - 1, 1));
  std::fputs("\r\033[K", stdout);
  std::fputs(bar.c_str(), stdout);
  std::fflush(stdout);
  bar_ = std::move(bar);
}

void progress_display::line(const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  erase_locked();
  std::printf("%s\n", text.c_str());
  std::fflush(stdout);
}

void progress_display::finished_epoch(int64_t epoch) {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_ = std::max(finished_, epoch);
  erase_locked();
  std::fflush(stdout);
}

void progress_display::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  erase_locked();
  std::fflush(stdout);
}

} // namespace dtrain::runs
