#include "dtrain/driver/progress_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace dtrain::actors {

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

std::string format_progress(const progress_msg& p, int replicas, int64_t epochs,
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

} // namespace dtrain::actors
