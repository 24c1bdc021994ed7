// The sweep's table: its headline, the running trials' bars and notes,
// drawn in place (tune_config::redraw) or as lines (tune::trial_table).
#include <chrono>
#include <string>
#include <vector>

#include "dtrain/driver/progress_text.hpp"
#include "dtrain/driver/tuner/sweep_state.hpp"

namespace dtrain::actors::sweep_detail {

namespace {

std::string headline(tuner_state& s) {
  int running = 0, pending = 0;
  for (const auto& t : s.trials) {
    running += t.status == tune::trial_status::running;
    pending += t.status == tune::trial_status::pending;
  }
  return "sweep " + s.sw->config.experiment + ": " + std::to_string(s.trials.size()) +
         " trials, " + std::to_string(running) + " running, " + std::to_string(pending) +
         " pending";
}

// The bars under the running trials' rows (tune_config::bar_width).
tune::trial_table::bar_lines bars(const tuner_state& s) {
  tune::trial_table::bar_lines out;
  const int width = s.sw->config.bar_width - 3;  // indented 2, one short of the edge
  if (width <= 0)
    return out;
  auto running = [&](const std::string& id) {
    auto it = s.index.find(id);
    return it != s.index.end() && s.trials[it->second].status == tune::trial_status::running;
  };
  for (const auto& [id, p] : s.progress)
    if (running(id))
      out[id] = format_progress(p, s.sw->trial_template.num_replicas, s.sw->config.max_epochs,
                                width);
  // A note (a failure, a recovery) above the bar, cut to the width.
  for (const auto& [id, text] : s.notes)
    if (running(id)) {
      std::string line = text.substr(0, static_cast<size_t>(width));
      auto bar = out.find(id);
      out[id] = bar == out.end() ? line : line + "\n  " + bar->second;
    }
  return out;
}

} // namespace

void redraw(tuner_state& s, bool force) {
  if (!s.sw->config.redraw || (!force && !s.table->due()))
    return;
  if (s.live.empty())
    return s.table->show(s.trials, s.elapsed(), headline(s), force, bars(s));
  // Running trials show their time so far (a record counts ended runs).
  std::vector<tune::trial_record> now = s.trials;
  for (const auto& [id, t] : s.live)
    if (auto it = s.index.find(id); it != s.index.end())
      now[it->second].seconds += std::chrono::duration<double>(clock_type::now() - t.since).count();
  s.table->show(now, s.elapsed(), headline(s), force, bars(s));
}

} // namespace dtrain::actors::sweep_detail
