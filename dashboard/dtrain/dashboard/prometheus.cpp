#include "dtrain/dashboard/prometheus.hpp"

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
     "Seconds per training step in the running trial's newest report."},
    {"loss", "dtrain_trial_loss", "Training loss in the running trial's newest report."},
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

result<int64_t> resident_memory_bytes() {
  const std::string path = "/proc/self/status";
  std::ifstream in(path);
  if (!in)
    return os_error("reading", path, errno);
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %lld kB", &kb) == 1)
      return static_cast<int64_t>(kb) * 1024;
  }
  return not_found(path + ": no VmRSS line");
}

namespace {

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
  p.family("dtrain_slots", "CPU slots of the usable nodes, in use and in all.", "gauge");
  p.sample(used, {{"state", "used"}});
  p.sample(slots, {{"state", "total"}});
  p.family("dtrain_gpus", "GPUs of the usable nodes, in use and in all.", "gauge");
  p.sample(gpus_used, {{"state", "used"}});
  p.sample(gpus, {{"state", "total"}});
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
