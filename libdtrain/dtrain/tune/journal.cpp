#include "dtrain/tune/journal.hpp"

#include "dtrain/core/check.hpp"
#include "dtrain/tune/journal_check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <tuple>

namespace dtrain::tune {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

const char* end_name(trial_end how) {
  switch (how) {
  case trial_end::completed: return "completed";
  case trial_end::stopped: return "stopped";
  case trial_end::failed: return "failed";
  }
  return "failed";
}

trial_end end_from(const std::string& name) {
  if (name == "completed")
    return trial_end::completed;
  if (name == "stopped")
    return trial_end::stopped;
  return trial_end::failed;
}

trial_status status_from(const std::string& name) {
  if (name == "RUNNING")
    return trial_status::running;
  if (name == "STOPPED")
    return trial_status::stopped;
  if (name == "TERMINATED")
    return trial_status::terminated;
  if (name == "ERROR")
    return trial_status::error;
  return trial_status::pending;  // PENDING, INTERRUPTED
}

} // namespace

std::string state_name(const trial_record& r) {
  if (r.interrupted)
    return "INTERRUPTED";
  return to_string(r.status);
}

verdict judge(searcher& search, scheduler& sched, std::vector<std::unique_ptr<stopper>>& stoppers,
              const sweep_config& config, const report& rep, int64_t checkpoint_epoch,
              double elapsed_seconds) {
  verdict v;
  if (checkpoint_epoch > 0)
    sched.on_checkpoint(rep.trial, checkpoint_epoch);
  search.on_result(rep);
  auto it = rep.metrics.find(config.metric);
  const double value = it == rep.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
  bool trial_done = false;
  for (auto& st : stoppers)
    trial_done = st->trial_done(rep) || trial_done;
  // The scheduler sees every report, the last epoch's too (as Optuna's
  // pruner does), so its rungs hold the same values Optuna's would.
  v.scheduled = sched.on_result(rep.trial, rep.epoch, value);
  for (auto& st : stoppers)
    if (st->sweep_done(&rep, elapsed_seconds) && v.sweep_done.empty())
      v.sweep_done = st->describe();
  auto end_here = [&](trial_status status, trial_end how) {
    v.ended = true;
    v.status = status;
    sched.on_end(rep.trial, how);
    search.on_end(rep.trial, how);
  };
  if (v.scheduled == decision::stop)
    end_here(trial_status::stopped, trial_end::stopped);
  else if (trial_done)
    end_here(trial_status::terminated, trial_end::completed);
  return v;
}

journal::journal(std::shared_ptr<experiments::experiment_store> s, int64_t experiment, std::string metric,
                 mode direction, int64_t next_seq)
  : store_(std::move(s)), experiment_(experiment), metric_(std::move(metric)),
    direction_(direction), seq_(next_seq) {}

experiments::trial_row journal::row(const trial_record& r) const {
  experiments::trial_row t;
  t.experiment = experiment_;
  t.id = r.id;
  auto c = created_seq_.find(r.id);
  t.seq_created = c == created_seq_.end() ? 0 : c->second;
  auto json = json_.find(r.id);
  t.hyperparameters = json != json_.end() ? json->second : to_json(r.configuration);
  t.state = state_name(r);
  t.restarts = r.restarts;
  t.error = r.error;
  auto best = best_.find(r.id);
  t.best = best != best_.end() ? best->second : r.best(metric_, direction_);
  t.last = r.last(metric_);
  t.epochs = r.epochs();
  t.checkpoint_dir = r.checkpoint_dir;
  auto e = ended_seq_.find(r.id);
  if (e != ended_seq_.end()) {
    t.seq_ended = e->second;
    t.end_how = end_how_.at(r.id);
  }
  // Seconds into the sweep become wall-clock times.
  const double now = unix_now();
  if (r.started_at >= 0)
    t.started_at = now - std::max(0.0, r.ended_at >= 0 ? r.ended_at - r.started_at : 0.0);
  if (r.ended_at >= 0)
    t.ended_at = now;
  return t;
}

void journal::adopt(const std::vector<experiments::trial_row>& rows) {
  for (const auto& t : rows) {
    created_seq_[t.id] = t.seq_created;
    if (t.seq_ended > 0) {
      ended_seq_[t.id] = t.seq_ended;
      end_how_[t.id] = t.end_how;
    }
  }
}

void journal::created(const trial_record& r) {
  created_seq_[r.id] = seq_++;
  json_[r.id] = to_json(r.configuration);
  ended_seq_.erase(r.id);
  (void)store_->put_trial(row(r));
}

void journal::updated(const trial_record& r) { (void)store_->put_trial(row(r)); }

void journal::reported(const trial_record& r, const report& rep) {
  const int64_t seq = seq_++;
  const double now = unix_now();
  std::vector<experiments::metric_row> rows;
  rows.reserve(rep.metrics.size());
  for (const auto& [name, value] : rep.metrics)
    rows.push_back({experiment_, r.id, rep.epoch, name, value, seq, now});
  // The best so far: the whole history once (a continued trial), then
  // one comparison per report.
  auto best = best_.find(r.id);
  if (best == best_.end()) {
    best_[r.id] = r.best(metric_, direction_);
  } else {
    auto it = rep.metrics.find(metric_);
    if (it != rep.metrics.end() && !std::isnan(it->second) &&
        (std::isnan(best->second) ||
         (direction_ == mode::max ? it->second > best->second : it->second < best->second)))
      best->second = it->second;
  }
  (void)store_->add_metrics(rows);
  (void)store_->put_trial(row(r));
}

void journal::checkpoint(const trial_record& r, int64_t epoch, const std::string& path, bool valid) {
  experiments::checkpoint_row c;
  c.experiment = experiment_;
  c.trial = r.id;
  c.epoch = epoch;
  c.path = path;
  for (const auto& rep : r.history)
    if (rep.epoch == epoch) {
      auto it = rep.metrics.find(metric_);
      if (it != rep.metrics.end())
        c.metric = it->second;
    }
  c.valid = valid;
  c.seq = seq_++;
  c.time = unix_now();
  (void)store_->put_checkpoint(c);
}

void journal::checkpoints_changed(const trial_record& r, const std::map<int64_t, std::string>& before,
                                  const std::map<int64_t, std::string>& now) {
  for (const auto& [epoch, dir] : now) {
    auto it = before.find(epoch);
    if (it == before.end() || it->second != dir)
      checkpoint(r, epoch, dir, true);
  }
  for (const auto& [epoch, dir] : before) {
    auto it = now.find(epoch);
    if (it == now.end() || it->second != dir)
      checkpoint(r, epoch, dir, false);
  }
}

void journal::exploited(const trial_record& r, const std::string& source, int64_t source_epoch,
                        const config& before, const config* after) {
  experiments::lineage_row l;
  l.experiment = experiment_;
  l.trial = r.id;
  l.seq = seq_++;
  l.epoch = r.epochs();
  l.source = source;
  l.source_epoch = source_epoch;
  l.before = to_json(before);
  l.after = after != nullptr ? to_json(*after) : "";
  json_[r.id] = to_json(r.configuration);
  l.time = unix_now();
  (void)store_->add_lineage(l);
  (void)store_->put_trial(row(r));
}

void journal::event(const trial_record& r, int64_t epoch, const std::string& kind,
                    const std::string& message) {
  experiments::event_row e;
  e.experiment = experiment_;
  e.trial = r.id;
  e.seq = seq_++;
  e.epoch = epoch;
  e.time = unix_now();
  e.kind = kind;
  e.message = message;
  (void)store_->add_event(e);
}

void journal::ended(const trial_record& r, trial_end how) {
  ended_seq_[r.id] = seq_++;
  end_how_[r.id] = end_name(how);
  (void)store_->put_trial(row(r));
}

status journal::flush() { return store_->flush(); }

result<int64_t> next_sequence(experiments::experiment_store& s, int64_t experiment) {
  int64_t last = 0;
  DTRAIN_ASSIGN_OR_RETURN(auto trials, s.trials(experiment));
  for (const auto& t : trials)
    last = std::max({last, t.seq_created, t.seq_ended});
  DTRAIN_ASSIGN_OR_RETURN(auto metrics, s.metrics(experiment));
  for (const auto& m : metrics)
    last = std::max(last, m.seq);
  DTRAIN_ASSIGN_OR_RETURN(auto checkpoints, s.checkpoints(experiment));
  for (const auto& c : checkpoints)
    last = std::max(last, c.seq);
  DTRAIN_ASSIGN_OR_RETURN(auto lineage, s.lineage(experiment));
  for (const auto& l : lineage)
    last = std::max(last, l.seq);
  DTRAIN_ASSIGN_OR_RETURN(auto events, s.events(experiment));
  for (const auto& e : events)
    last = std::max(last, e.seq);
  return last + 1;
}

result<replayed_sweep> replay(experiments::experiment_store& s, int64_t experiment, searcher& search,
                              scheduler& sched, std::vector<std::unique_ptr<stopper>>& stoppers,
                              const sweep_config& settings, bool check_configs) {
  const std::string where = "replaying experiment " + std::to_string(experiment) + " from " + s.where();
  stored_rows stored;
  DTRAIN_ASSIGN_OR_RETURN(stored.trials, s.trials(experiment));
  DTRAIN_ASSIGN_OR_RETURN(stored.metrics, s.metrics(experiment));
  DTRAIN_ASSIGN_OR_RETURN(stored.checkpoints, s.checkpoints(experiment));
  DTRAIN_ASSIGN_OR_RETURN(stored.lineage, s.lineage(experiment));
  // The trainer's events are for people: replayed they change nothing, but
  // a resumed journal must number after them (or it would replace them).
  DTRAIN_ASSIGN_OR_RETURN(stored.events, s.events(experiment));
  // Everything below trusts these values (a trial ends after it began, an
  // exploit names stored trials, ...): a damaged store is refused here.
  DTRAIN_RETURN_IF_ERROR(check_stored_rows(where, stored));
  auto& trials = stored.trials;
  const auto& metrics = stored.metrics;
  const auto& checkpoints = stored.checkpoints;
  const auto& lineage = stored.lineage;
  const auto& trainer_events = stored.events;

  enum kind { create, report_event, exploit_event, end };
  struct event {
    int64_t seq;
    kind what;
    size_t index;  // into trials, reports, lineage
  };
  std::vector<report> reports;
  std::vector<event> events;
  for (size_t i = 0; i < metrics.size();) {
    report rep{metrics[i].trial, metrics[i].epoch, {}};
    const int64_t seq = metrics[i].seq;
    for (; i < metrics.size() && metrics[i].seq == seq && metrics[i].trial == rep.trial; ++i)
      rep.metrics[metrics[i].name] = metrics[i].value;
    events.push_back({seq, report_event, reports.size()});
    reports.push_back(std::move(rep));
  }
  replayed_sweep out;
  int64_t last_seq = 0;
  for (size_t i = 0; i < trials.size(); ++i) {
    events.push_back({trials[i].seq_created, create, i});
    if (trials[i].seq_ended > 0)
      events.push_back({trials[i].seq_ended, end, i});
    last_seq = std::max({last_seq, trials[i].seq_created, trials[i].seq_ended});
  }
  for (size_t i = 0; i < lineage.size(); ++i)
    events.push_back({lineage[i].seq, exploit_event, i});
  std::set<std::pair<std::string, int64_t>> checkpointed;
  for (const auto& c : checkpoints) {
    checkpointed.insert({c.trial, c.epoch});
    last_seq = std::max(last_seq, c.seq);
    if (c.valid)
      out.checkpoint_epochs[c.trial] = std::max(out.checkpoint_epochs[c.trial], c.epoch);
  }
  for (const auto& e : events)
    last_seq = std::max(last_seq, e.seq);
  for (const auto& e : trainer_events)
    last_seq = std::max(last_seq, e.seq);
  std::stable_sort(events.begin(), events.end(),
                   [](const event& a, const event& b) { return std::tie(a.seq, a.what) < std::tie(b.seq, b.what); });

  std::map<std::string, size_t> index;
  std::map<std::string, const experiments::lineage_row*> first_exploit;
  for (const auto& l : lineage)
    if (first_exploit.count(l.trial) == 0)
      first_exploit[l.trial] = &l;
  for (const event& e : events) {
    switch (e.what) {
    case create: {
      const experiments::trial_row& row = trials[e.index];
      suggestion next = search.suggest(row.id);
      if (next.what != suggestion::kind::trial)
        return invalid_argument(where + ": the searcher gives no trial " + row.id +
                                " now (it did when the experiment ran): the sweep's settings differ");
      // The configuration the trial began with: its stored one, or the one
      // before its first exploit.
      auto f = first_exploit.find(row.id);
      DTRAIN_ASSIGN_OR_RETURN(config original,
                              config_from_json(f != first_exploit.end() ? f->second->before
                                                                        : row.hyperparameters));
      if (check_configs && original != next.configuration)
        return invalid_argument(where + ": trial " + row.id + " was " + to_json(original) +
                                " but the searcher now suggests " + to_json(next.configuration) +
                                ": the sweep's settings differ");
      trial_record r;
      r.id = row.id;
      r.configuration = check_configs ? next.configuration : original;
      // What the trial runs (forced: the stored one), as the tuner told it.
      sched.on_add(row.id, r.configuration);
      r.checkpoint_dir = row.checkpoint_dir;
      r.restarts = row.restarts;
      r.error = row.error;
      index[r.id] = out.trials.size();
      out.trials.push_back(std::move(r));
      break;
    }
    case report_event: {
      const report& rep = reports[e.index];
      auto it = index.find(rep.trial);
      if (it == index.end())
        return status(error_code::corrupt_data, where + ": a report of trial " + rep.trial +
                                                    " comes before the trial was created");
      trial_record& r = out.trials[it->second];
      r.history.push_back(rep);
      out.exploited_epochs.erase(r.id);
      const int64_t ckpt = checkpointed.count({rep.trial, rep.epoch}) != 0 ? rep.epoch : 0;
      verdict v = judge(search, sched, stoppers, settings, rep, ckpt, 0.0);
      if (v.ended) {
        r.status = v.status;
        out.decided.insert(r.id);
      } else {
        r.status = trial_status::running;
        if (v.scheduled == decision::exploit)
          out.pending_exploits[r.id] = sched.exploit(r.id);
      }
      if (!v.sweep_done.empty() && out.sweep_done.empty())
        out.sweep_done = v.sweep_done;
      break;
    }
    case exploit_event: {
      const experiments::lineage_row& l = lineage[e.index];
      auto it = index.find(l.trial);
      auto plan = out.pending_exploits.find(l.trial);
      // Forced, an exploit the scheduler no longer decides stands as
      // stored, like a stored configuration.
      if (it == index.end() || (check_configs && plan == out.pending_exploits.end()))
        return invalid_argument(where + ": the stored exploit of trial " + l.trial +
                                " (seq " + std::to_string(l.seq) +
                                ") was not decided in the replay: the sweep's settings differ");
      if (l.after.empty()) {
        sched.on_exploit_failed(l.trial);
      } else {
        DTRAIN_ASSIGN_OR_RETURN(config after, config_from_json(l.after));
        if (check_configs && (plan->second.source != l.source || plan->second.configuration != after))
          return invalid_argument(where + ": trial " + l.trial + " exploited " + l.source + " with " +
                                  l.after + " but the replay chooses " + plan->second.source +
                                  " with " + to_json(plan->second.configuration));
        exploit_plan done{l.source, after};
        sched.on_exploited(l.trial, done);
        out.trials[it->second].configuration = after;
        out.exploited_epochs[l.trial] = l.source_epoch;
      }
      out.pending_exploits.erase(l.trial);
      break;
    }
    case end: {
      const experiments::trial_row& row = trials[e.index];
      trial_record& r = out.trials[index.at(row.id)];
      if (out.decided.count(row.id) == 0) {
        const trial_end how = end_from(row.end_how);
        sched.on_end(row.id, how);
        search.on_end(row.id, how);
      }
      r.status = status_from(row.state);
      out.failed += r.status == trial_status::error;
      out.pending_exploits.erase(row.id);
      break;
    }
    }
  }
  for (const auto& row : trials)
    if (row.seq_ended == 0 && out.decided.count(row.id) == 0) {
      out.unfinished.insert(row.id);
      out.trials[index.at(row.id)].status = trial_status::pending;
    }
  out.next_seq = last_seq + 1;
  // Past every stored number, not the count: ids that skip a number must
  // not make a new trial take a stored one's id (and its directory).
  out.next_trial = next_trial_number(trials);
  out.rows = std::move(trials);
  return out;
}

} // namespace dtrain::tune
