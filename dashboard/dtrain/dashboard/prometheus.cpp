#include "dtrain/dashboard/prometheus.hpp"

#include "dtrain/dashboard/api.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/core/json.hpp"

namespace dtrain::dashboard {

namespace {

bool valid_name(const std::string& n) {
  if (n.empty())
    return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!letter && !(i > 0 && c >= '0' && c <= '9'))
      return false;
  }
  return true;
}

std::string escaped(const std::string& s, bool quote) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote)
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

std::string value_text(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  // Counts as integers ("dtrain_nodes 3"), everything else exactly.
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0)
    return std::to_string(static_cast<int64_t>(v));
  return json::number(v);
}

// Label values in lower case: the store keeps trial states as the tuner
// names them (TERMINATED), experiment states in lower case.
std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// The metrics a trial's reports may carry that /metrics shows per running
// trial, with their family names and help (the store has them when the
// training operator reports them).
struct trial_family {
  const char* metric;
  const char* name;
  const char* help;
};
constexpr trial_family trial_families[] = {
    {"samples_per_second", "dtrain_trial_samples_per_second",
     "Training samples per second in the running trial's newest report."},
    {"step_seconds", "dtrain_trial_step_seconds",
     "Seconds per optimizer step in the running trial's newest report."},
    {"allreduce_seconds", "dtrain_trial_allreduce_seconds",
     "Seconds the running trial's chief waited in the gradient all-reduce during its newest "
     "reported epoch."},
    {"restarts", "dtrain_trial_restarts",
     "Recoveries of the running trial's replica group from failures, as of its newest report."},
    {"loss", "dtrain_trial_loss", "Training loss in the running trial's newest report."},
    // The chief replica's memory accounting (ZeRO shards two of them).
    {"memory.parameters_bytes", "dtrain_trial_parameter_bytes",
     "Bytes of parameters one replica of the running trial holds."},
    {"memory.gradients_bytes", "dtrain_trial_gradient_bytes",
     "Bytes of gradients one replica of the running trial holds between steps (ZeRO stage 2 "
     "gives back the other replicas' parts)."},
    {"memory.optimizer_bytes", "dtrain_trial_optimizer_state_bytes",
     "Bytes of optimizer state one replica of the running trial holds (ZeRO: its shard)."},
};

} // namespace

void prometheus_text::family(const std::string& name, const std::string& help,
                             const std::string& type) {
  DTRAIN_CHECK(valid_name(name), ("not a Prometheus metric name: " + name).c_str());
  name_ = name;
  text_ += "# HELP " + name + " " + escaped(help, false) + "\n";
  text_ += "# TYPE " + name + " " + type + "\n";
}

void prometheus_text::sample(double value, const labels& l, const std::string& suffix) {
  text_ += name_ + suffix;
  if (!l.empty()) {
    text_ += '{';
    for (size_t i = 0; i < l.size(); ++i) {
      DTRAIN_CHECK(valid_name(l[i].first), ("not a Prometheus label name: " + l[i].first).c_str());
      text_ += (i == 0 ? "" : ",") + l[i].first + "=\"" + escaped(l[i].second, true) + "\"";
    }
    text_ += '}';
  }
  text_ += " " + value_text(value) + "\n";
}

namespace {

// Per usable node, labelled by its index in the status list and its
// address ("in-process" for an embedded cluster's nodes).
void node_families(prometheus_text& p, const actors::cluster_status& s) {
  auto labels_of = [&](size_t i) {
    const std::string& a = s.nodes[i].address;
    return prometheus_text::labels{{"node", std::to_string(i)},
                                   {"address", a.empty() ? "in-process" : a}};
  };
  auto per_node = [&](const char* name, const char* help, auto value) {
    p.family(name, help, "gauge");
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      const double v = value(i);
      if (v >= 0)
        p.sample(v, labels_of(i));
    }
  };
  per_node("dtrain_node_slots_used", "CPU slots in use on the node.", [&](size_t i) {
    return i < s.slots_used.size() ? static_cast<double>(s.slots_used[i]) : 0.0;
  });
  per_node("dtrain_node_replicas", "Replicas placed on the node (CPU and GPU).", [&](size_t i) {
    return i < s.replicas.size() ? static_cast<double>(s.replicas[i]) : 0.0;
  });
  per_node("dtrain_node_resident_memory_bytes",
           "Resident memory of the node's process (VmRSS), as it last told the head; absent "
           "until it has.",
           [&](size_t i) { return i < s.rss_bytes.size() ? static_cast<double>(s.rss_bytes[i]) : -1.0; });
}

void cluster_families(prometheus_text& p, const actors::cluster_status& s) {
  double slots = 0, used = 0, gpus = 0, gpus_used = 0;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    slots += s.nodes[i].cpu_slots;
    gpus += s.nodes[i].gpus;
    used += i < s.slots_used.size() ? s.slots_used[i] : 0;
    gpus_used += i < s.gpus_used.size() ? s.gpus_used[i] : 0;
  }
  p.family("dtrain_nodes", "Usable nodes registered with the head.", "gauge");
  p.sample(static_cast<double>(s.nodes.size()));
  p.family("dtrain_trainers", "Trainers holding slots or GPUs.", "gauge");
  p.sample(static_cast<double>(s.trainers.size()));
  // Per trainer holding slots now (a trial's trainer while it runs), so the
  // label set stays as small as the cluster's current work.
  p.family("dtrain_trainer_replicas", "Replicas of a trainer holding slots or GPUs.", "gauge");
  for (const auto& text : s.trainers) {
    std::string id;
    int64_t replicas = -1;
    parse_trainer(text, id, replicas);
    if (replicas >= 0)
      p.sample(static_cast<double>(replicas), {{"trainer", id}});
  }
  p.family("dtrain_slots", "CPU slots of the usable nodes, in use and in all.", "gauge");
  p.sample(used, {{"state", "used"}});
  p.sample(slots, {{"state", "total"}});
  p.family("dtrain_gpus", "GPUs of the usable nodes, in use and in all.", "gauge");
  p.sample(gpus_used, {{"state", "used"}});
  p.sample(gpus, {{"state", "total"}});
  node_families(p, s);
}

// Counts by state; the usual states always present (as 0), so a series
// does not vanish when nothing is in that state.
void state_family(prometheus_text& p, const char* name, const char* help,
                  std::map<std::string, int64_t> counts, std::initializer_list<const char*> usual) {
  for (const char* st : usual)
    counts.emplace(st, 0);
  p.family(name, help, "gauge");
  for (const auto& [state, n] : counts)
    p.sample(static_cast<double>(n), {{"state", state}});
}

void store_families(prometheus_text& p, const metrics_input& in) {
  std::map<std::string, int64_t> experiments, trials;
  for (const auto& e : in.experiments)
    ++experiments[lower(e.state)];
  for (const auto& ts : in.trials)
    for (const auto& t : ts)
      ++trials[lower(t.state)];
  state_family(p, "dtrain_experiments", "Experiments in the store, by state.", experiments,
               {"running", "completed", "interrupted", "failed"});
  state_family(p, "dtrain_trials", "Trials in the store, by state.", trials,
               {"pending", "running", "stopped", "terminated", "error", "interrupted"});
  double restarts = 0;
  for (const auto& ts : in.trials)
    for (const auto& t : ts)
      restarts += t.restarts;
  for (const auto& r : in.running)
    for (const auto& [name, value] : r.latest)
      if (name == "restarts")
        restarts += value;  // a running trial's row says 0 until it ends
  p.family("dtrain_trial_restarts_total",
           "Recoveries from failures over all trials in the store (running ones as of their "
           "newest report).", "counter");
  p.sample(restarts);
  // Per running trial only, so that label sets end with their trial.
  p.family("dtrain_trial_epoch", "The running trial's last reported epoch.", "gauge");
  for (const auto& r : in.running)
    p.sample(static_cast<double>(r.epoch),
             {{"experiment", std::to_string(r.experiment)}, {"trial", r.trial}});
  for (const auto& f : trial_families) {
    bool started = false;
    for (const auto& r : in.running)
      for (const auto& [name, value] : r.latest)
        if (name == f.metric) {
          if (!started)
            p.family(f.name, f.help, "gauge");
          started = true;
          p.sample(value, {{"experiment", std::to_string(r.experiment)}, {"trial", r.trial}});
        }
  }
}

} // namespace

std::string head_metrics(const metrics_input& in) {
  prometheus_text p;
  p.family("dtrain_up", "Whether the head (cluster) and the experiment store (store) answered "
           "this scrape.", "gauge");
  p.sample(in.cluster_ok ? 1 : 0, {{"part", "cluster"}});
  p.sample(in.store_ok ? 1 : 0, {{"part", "store"}});
  if (in.cluster_ok)
    cluster_families(p, in.cluster);
  if (in.store_ok)
    store_families(p, in);
  if (in.rss_bytes >= 0) {
    p.family("dtrain_head_resident_memory_bytes",
             "Resident memory of the process serving this dashboard (VmRSS).", "gauge");
    p.sample(static_cast<double>(in.rss_bytes));
  }
  return p.text();
}

} // namespace dtrain::dashboard
