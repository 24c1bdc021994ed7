#include "dtrain/experiments/write_errors.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace dtrain::experiments {

void write_errors::keep(int64_t experiment, const status& s) {
  if (s.is_ok())
    return;
  auto found = kept_.find(experiment);
  if (found != kept_.end()) {
    ++found->second.more;
    return;
  }
  if (kept_.size() >= capacity_)
    kept_.erase(kept_.begin());
  kept_.emplace(experiment, kept{s, 0, next_order_++});
}

status write_errors::take(const std::vector<int64_t>& experiments) {
  std::vector<kept> taken;
  for (int64_t id : experiments) {
    auto found = kept_.find(id);
    if (found == kept_.end())
      continue;
    taken.push_back(std::move(found->second));
    kept_.erase(found);
  }
  return reported(taken);
}

status write_errors::take_all() {
  std::vector<kept> taken;
  for (auto& [id, k] : kept_)
    taken.push_back(std::move(k));
  kept_.clear();
  return reported(taken);
}

// One status for several experiments' errors: the earliest one's code,
// every message (a writer rarely writes more than one experiment).
status write_errors::reported(std::vector<kept> errors) {
  std::sort(errors.begin(), errors.end(),
            [](const kept& a, const kept& b) { return a.order < b.order; });
  std::string message;
  for (const kept& k : errors) {
    if (!message.empty())
      message += "; and ";
    message += k.first.message();
    if (k.more > 0)
      message += " (and " + std::to_string(k.more) + " more failed write" +
                 (k.more == 1 ? "" : "s") + " of that experiment)";
  }
  return errors.empty() ? status::ok() : status(errors.front().first.code(), message);
}

} // namespace dtrain::experiments
