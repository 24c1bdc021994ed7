#include "support/memory_store.hpp"

#include <algorithm>

namespace dtrain::testing {

using namespace experiments;

status memory_store::missing(int64_t id) const {
  return not_found("no experiment " + std::to_string(id) + " in " + name_);
}

memory_store::tables* memory_store::find(int64_t id) {
  auto it = experiments_.find(id);
  return it == experiments_.end() ? nullptr : &it->second;
}

result<int64_t> memory_store::create_experiment(const experiment_row& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  int64_t id = next_id_++;
  experiments_[id].row = e;
  experiments_[id].row.id = id;
  return id;
}

status memory_store::update_experiment(const experiment_row& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(e.id);
  if (!t)
    return missing(e.id);
  t->row = e;
  return status::ok();
}

result<experiment_row> memory_store::experiment(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(id);
  if (!t)
    return missing(id);
  return t->row;
}

result<std::vector<experiment_row>> memory_store::experiments() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<experiment_row> out;
  for (auto& [id, t] : experiments_)
    out.push_back(t.row);
  return out;
}

status memory_store::delete_experiment(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (experiments_.erase(id) == 0)
    return missing(id);
  return status::ok();
}

status memory_store::put_trial(const trial_row& row) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(row.experiment);
  if (!t)
    return missing(row.experiment);
  auto same = std::find_if(t->trials.begin(), t->trials.end(),
                           [&](const trial_row& x) { return x.id == row.id; });
  if (same != t->trials.end())
    *same = row;
  else
    t->trials.push_back(row);
  std::stable_sort(t->trials.begin(), t->trials.end(),
                   [](const trial_row& a, const trial_row& b) { return a.seq_created < b.seq_created; });
  return status::ok();
}

result<std::vector<trial_row>> memory_store::trials(int64_t experiment) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(experiment);
  if (!t)
    return missing(experiment);
  return t->trials;
}

status memory_store::add_metrics(const std::vector<metric_row>& rows) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& row : rows) {
    auto* t = find(row.experiment);
    if (!t)
      return missing(row.experiment);
    t->metrics.push_back(row);
  }
  return status::ok();
}

result<std::vector<metric_row>> memory_store::metrics(int64_t experiment, const std::string& trial) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(experiment);
  if (!t)
    return missing(experiment);
  std::vector<metric_row> out;
  for (auto& m : t->metrics)
    if (trial.empty() || m.trial == trial)
      out.push_back(m);
  std::stable_sort(out.begin(), out.end(), [](const metric_row& a, const metric_row& b) {
    return a.seq != b.seq ? a.seq < b.seq : a.name < b.name;
  });
  return out;
}

status memory_store::put_checkpoint(const checkpoint_row& c) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(c.experiment);
  if (!t)
    return missing(c.experiment);
  auto same = std::find_if(t->checkpoints.begin(), t->checkpoints.end(),
                           [&](const checkpoint_row& x) { return x.path == c.path; });
  if (same != t->checkpoints.end())
    *same = c;
  else
    t->checkpoints.push_back(c);
  std::stable_sort(t->checkpoints.begin(), t->checkpoints.end(),
                   [](const checkpoint_row& a, const checkpoint_row& b) { return a.seq < b.seq; });
  return status::ok();
}

result<std::vector<checkpoint_row>> memory_store::checkpoints(int64_t experiment,
                                                              const std::string& trial) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(experiment);
  if (!t)
    return missing(experiment);
  std::vector<checkpoint_row> out;
  for (auto& c : t->checkpoints)
    if (trial.empty() || c.trial == trial)
      out.push_back(c);
  return out;
}

status memory_store::add_lineage(const lineage_row& l) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(l.experiment);
  if (!t)
    return missing(l.experiment);
  t->lineage.push_back(l);
  return status::ok();
}

result<std::vector<lineage_row>> memory_store::lineage(int64_t experiment) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(experiment);
  if (!t)
    return missing(experiment);
  return t->lineage;
}

status memory_store::add_event(const event_row& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(e.experiment);
  if (!t)
    return missing(e.experiment);
  auto same = std::find_if(t->events.begin(), t->events.end(), [&](const event_row& x) {
    return x.seq == e.seq && x.trial == e.trial;
  });
  if (same != t->events.end())
    *same = e;
  else
    t->events.push_back(e);
  std::stable_sort(t->events.begin(), t->events.end(),
                   [](const event_row& a, const event_row& b) { return a.seq < b.seq; });
  return status::ok();
}

result<std::vector<event_row>> memory_store::events(int64_t experiment, const std::string& trial) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto* t = find(experiment);
  if (!t)
    return missing(experiment);
  std::vector<event_row> out;
  for (auto& e : t->events)
    if (trial.empty() || e.trial == trial)
      out.push_back(e);
  return out;
}

} // namespace dtrain::testing
