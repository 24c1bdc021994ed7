#include "progress_bar.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dtrain::cli {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds))
    return "--";
  const auto total = static_cast<long long>(seconds + 0.5);
  char out[32];
  if (total >= 3600)
    std::snprintf(out, sizeof out, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60,
                  total % 60);
  else
    std::snprintf(out, sizeof out, "%lld:%02lld", total / 60, total % 60);
  return out;
}

std::string format_progress(const actors::progress_msg& p, int replicas, int64_t epochs,
                            int width) {
  const int64_t total = std::max<int64_t>(p.steps_per_epoch, 1);
  const int64_t step = std::clamp<int64_t>(p.step, 0, total);
  std::string eta = "--";
  // The pace of the batches trained in this run (a resumed epoch skipped
  // its first resumed_at ones without training them).
  const int64_t trained = step - std::clamp<int64_t>(p.resumed_at, 0, step);
  if (trained > 0 && p.seconds > 0) {
    const double per_step = p.seconds / static_cast<double>(trained);
    const int64_t later_epochs = std::max<int64_t>(epochs - p.epoch, 0);
    eta = format_duration(per_step * static_cast<double>(total - step + later_epochs * total));
  }
  char tail[160];
  std::snprintf(tail, sizeof tail, " %lld/%lld  loss %.4f  %.0f samples/s  ETA %s",
                static_cast<long long>(step), static_cast<long long>(total), p.loss,
                p.samples_per_second * std::max(replicas, 1), eta.c_str());
  char head[64];
  std::snprintf(head, sizeof head, "epoch %lld/%lld ", static_cast<long long>(p.epoch),
                static_cast<long long>(epochs));
  // The bar takes what the numbers leave, between 10 and 40 columns; on a
  // terminal too narrow for one, the numbers alone.
  const int room = width - static_cast<int>(std::strlen(head) + std::strlen(tail)) - 2;
  std::string bar;
  if (room >= 10) {
    const int cells = std::min(room, 40);
    const int filled = static_cast<int>(static_cast<double>(cells) * step / total);
    bar = "[" + std::string(filled, '=') + (filled < cells ? ">" : "") +
          std::string(std::max(cells - filled - 1, 0), ' ') + "]";
  }
  std::string out = head + bar + tail;
  if (static_cast<int>(out.size()) > width && width > 0)
    out.resize(static_cast<size_t>(width));
  return out;
}

namespace {

bool stdout_is_terminal() {
  if (!isatty(STDOUT_FILENO))
    return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

} // namespace

progress_display::progress_display(int replicas, int64_t epochs, bool verbose)
  : replicas_(replicas), epochs_(epochs), verbose_(verbose), terminal_(stdout_is_terminal()) {
  winsize size{};
  if (terminal_ && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    width_ = size.ws_col;
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
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    width_ = size.ws_col;
  // One column short of the width: a full line would wrap on some terminals.
  std::string bar = format_progress(p, replicas_, epochs_, std::max(width_ - 1, 1));
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

} // namespace dtrain::cli
