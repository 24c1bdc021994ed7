#include "dtrain/dashboard/api.hpp"

#include <array>
#include <cmath>

#include "dtrain/core/json.hpp"
#include "dtrain/core/utf8.hpp"

namespace dtrain::dashboard {

namespace {

// Appends `"key":` (with a comma unless it is the object's first field).
void key(std::string& out, const char* k) {
  if (out.back() != '{')
    out += ',';
  json::append_string(out, k);
  out += ':';
}

void field(std::string& out, const char* k, const std::string& v) {
  key(out, k);
  json::append_string(out, v);
}

void field(std::string& out, const char* k, double v) {
  key(out, k);
  out += json_number(v);
}

void field(std::string& out, const char* k, int64_t v) {
  key(out, k);
  out += std::to_string(v);
}

void field(std::string& out, const char* k, bool v) {
  key(out, k);
  out += v ? "true" : "false";
}

void field(std::string& out, const char* k, int v) { field(out, k, static_cast<int64_t>(v)); }

// A stored JSON document (hyperparameters) as it is when it looks like an
// object; otherwise as a string, so the document stays well-formed.
void raw_object(std::string& out, const char* k, const std::string& text) {
  key(out, k);
  const size_t first = text.find_first_not_of(" \t\n");
  if (first != std::string::npos && text[first] == '{' && text.find("NaN") == std::string::npos &&
      text.find("Infinity") == std::string::npos)
    out += text;
  else
    json::append_string(out, text);
}

double best_of(const experiments::experiment_row& e, const std::vector<experiments::trial_row>& trials) {
  const experiments::trial_row* best = best_trial(e, trials);
  return best ? best->best : experiments::no_value;
}

// ---- one table per row type: the fields of its JSON object, in order ----------

// A field of a row's JSON object: its key and how it is written.
template <class Row>
struct json_field {
  const char* key;
  void (*write)(std::string& out, const char* key, const Row& row);
};

template <class Member>
struct member_of;
template <class Row, class Value>
struct member_of<Value Row::*> {
  using row = Row;
};

// The field `key` holding data member `Member` as it is.
template <auto Member>
constexpr json_field<typename member_of<decltype(Member)>::row> member(const char* key) {
  using row = typename member_of<decltype(Member)>::row;
  return {key, [](std::string& out, const char* k, const row& r) { field(out, k, r.*Member); }};
}

template <class Row, class Table>
void write_fields(std::string& out, const Table& table, const Row& row) {
  for (const auto& f : table)
    f.write(out, f.key, row);
}

// The stored row's fields the dashboard shows (not the configuration, its
// hash or the storage directory).
constexpr std::array experiment_json_fields{
    member<&experiments::experiment_row::id>("id"),
    member<&experiments::experiment_row::name>("name"),
    member<&experiments::experiment_row::kind>("kind"),
    member<&experiments::experiment_row::state>("state"),
    member<&experiments::experiment_row::metric>("metric"),
    member<&experiments::experiment_row::minimize>("minimize"),
    member<&experiments::experiment_row::created_at>("created_at"),
    member<&experiments::experiment_row::updated_at>("updated_at"),
    member<&experiments::experiment_row::ended_at>("ended_at"),
    member<&experiments::experiment_row::owner>("owner"),
    member<&experiments::experiment_row::message>("message"),
};

// A trial's key across experiments (trial_key).
void trial_key_field(std::string& out, const char* k, const experiments::trial_row& t) {
  field(out, k, trial_key(t.experiment, t.id));
}

void hyperparameters_field(std::string& out, const char* k, const experiments::trial_row& t) {
  raw_object(out, k, t.hyperparameters);
}

// "id" is the trial's key across experiments, "trial" its id within its
// experiment.
constexpr std::array trial_json_fields{
    json_field<experiments::trial_row>{"id", trial_key_field},
    member<&experiments::trial_row::id>("trial"),
    member<&experiments::trial_row::state>("state"),
    json_field<experiments::trial_row>{"hyperparameters", hyperparameters_field},
    member<&experiments::trial_row::epochs>("epochs"),
    member<&experiments::trial_row::best>("best"),
    member<&experiments::trial_row::last>("last"),
    member<&experiments::trial_row::restarts>("restarts"),
    member<&experiments::trial_row::error>("error"),
    member<&experiments::trial_row::end_how>("end_how"),
    member<&experiments::trial_row::started_at>("started_at"),
    member<&experiments::trial_row::ended_at>("ended_at"),
};

constexpr std::array checkpoint_json_fields{
    member<&experiments::checkpoint_row::epoch>("epoch"),
    member<&experiments::checkpoint_row::path>("path"),
    member<&experiments::checkpoint_row::metric>("metric"),
    member<&experiments::checkpoint_row::valid>("valid"),
    member<&experiments::checkpoint_row::seq>("seq"),
    member<&experiments::checkpoint_row::time>("time"),
};

constexpr std::array event_json_fields{
    member<&experiments::event_row::seq>("seq"),
    member<&experiments::event_row::time>("time"),
    member<&experiments::event_row::epoch>("epoch"),
    member<&experiments::event_row::kind>("kind"),
    member<&experiments::event_row::message>("message"),
};

void experiment_fields(std::string& out, const experiments::experiment_row& e) {
  write_fields(out, experiment_json_fields, e);
}

} // namespace

void parse_trainer(const std::string& text, std::string& id, int64_t& replicas) {
  id = text;
  replicas = -1;
  const size_t colon = text.rfind(": ");
  if (colon == std::string::npos)
    return;
  const std::string rest = text.substr(colon + 2);
  const size_t space = rest.find(' ');
  try {
    replicas = std::stoll(rest.substr(0, space));
    id = text.substr(0, colon);
  } catch (...) {
    replicas = -1;
  }
}


const experiments::trial_row* best_trial(const experiments::experiment_row& e,
                                   const std::vector<experiments::trial_row>& trials) {
  const experiments::trial_row* best = nullptr;
  for (const auto& t : trials) {
    if (std::isnan(t.best))
      continue;
    if (!best || (e.minimize ? t.best < best->best : t.best > best->best))
      best = &t;
  }
  return best;
}

std::string json_number(double d) { return std::isfinite(d) ? json::number(d) : "null"; }

std::string cluster_json(const actors::cluster_status& s) {
  std::string out = "{\"nodes\":[";
  int64_t slots = 0, used = 0, gpus = 0, gpus_used = 0;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const auto& n = s.nodes[i];
    const int64_t u = i < s.slots_used.size() ? s.slots_used[i] : 0;
    const int64_t g = i < s.gpus_used.size() ? s.gpus_used[i] : 0;
    slots += n.cpu_slots;
    used += u;
    gpus += n.gpus;
    gpus_used += g;
    out += i == 0 ? "{" : ",{";
    field(out, "index", static_cast<int64_t>(i));
    field(out, "host", n.host);
    field(out, "address", n.address.empty() ? std::string("in-process") : n.address);
    field(out, "pid", static_cast<int64_t>(n.pid));
    field(out, "cpu_slots", static_cast<int64_t>(n.cpu_slots));
    field(out, "slots_used", u);
    field(out, "gpus", static_cast<int64_t>(n.gpus));
    field(out, "gpus_used", g);
    field(out, "replicas", static_cast<int64_t>(i < s.replicas.size() ? s.replicas[i] : 0));
    key(out, "rss_bytes");
    const int64_t rss = i < s.rss_bytes.size() ? s.rss_bytes[i] : -1;
    out += rss < 0 ? "null" : std::to_string(rss);
    // Usable nodes are alive by definition (the lost ones are below).
    field(out, "state", std::string("alive"));
    key(out, "last_heard_seconds");
    out += i < s.last_heard_seconds.size() ? json_number(s.last_heard_seconds[i]) : "null";
    out += '}';
  }
  out += "],\"lost\":[";
  for (size_t i = 0; i < s.lost.size(); ++i) {
    const auto& l = s.lost[i];
    out += i == 0 ? "{" : ",{";
    field(out, "node_id", static_cast<int64_t>(l.node_id));
    field(out, "host", l.info.host);
    field(out, "address", l.info.address.empty() ? std::string("in-process") : l.info.address);
    field(out, "pid", static_cast<int64_t>(l.info.pid));
    field(out, "state", l.state);
    field(out, "lost_at", l.lost_at);
    key(out, "last_heard_seconds");
    out += l.last_heard_seconds < 0 ? "null" : json_number(l.last_heard_seconds);
    out += '}';
  }
  out += "],\"slots\":{";
  field(out, "used", used);
  field(out, "total", slots);
  out += "},\"gpus\":{";
  field(out, "used", gpus_used);
  field(out, "total", gpus);
  out += "},\"trainers\":[";
  for (size_t i = 0; i < s.trainers.size(); ++i) {
    std::string id;
    int64_t replicas = -1;
    parse_trainer(s.trainers[i], id, replicas);
    out += i == 0 ? "{" : ",{";
    field(out, "id", id);
    key(out, "replicas");
    out += replicas < 0 ? "null" : std::to_string(replicas);
    out += ",\"nodes\":[";
    if (i < s.trainer_nodes.size())
      for (size_t j = 0; j < s.trainer_nodes[i].size(); ++j)
        out += (j == 0 ? "" : ",") + std::to_string(s.trainer_nodes[i][j]);
    out += "]}";
  }
  out += "]}";
  return out;
}

std::string experiments_json(const std::vector<experiments::experiment_row>& experiments,
                             const std::vector<std::vector<experiments::trial_row>>& trials) {
  std::string out = "{\"experiments\":[";
  for (size_t i = 0; i < experiments.size(); ++i) {
    out += i == 0 ? "{" : ",{";
    experiment_fields(out, experiments[i]);
    static const std::vector<experiments::trial_row> none;
    const auto& ts = i < trials.size() ? trials[i] : none;
    field(out, "trials", static_cast<int64_t>(ts.size()));
    field(out, "best", best_of(experiments[i], ts));
    out += '}';
  }
  out += "]}";
  return out;
}

std::string trials_json(const experiments::experiment_row& e, const std::vector<experiments::trial_row>& trials) {
  std::string out = "{\"experiment\":{";
  experiment_fields(out, e);
  out += "},\"trials\":[";
  for (size_t i = 0; i < trials.size(); ++i) {
    out += i == 0 ? "{" : ",{";
    write_fields(out, trial_json_fields, trials[i]);
    out += '}';
  }
  out += "]}";
  return out;
}

std::string pareto_json(const experiments::pareto_view& v) {
  std::string out = "{\"objectives\":[";
  for (size_t i = 0; i < v.objectives.size(); ++i) {
    out += i == 0 ? "{" : ",{";
    field(out, "metric", v.objectives[i].metric);
    field(out, "minimize", v.objectives[i].direction == tune::mode::min);
    out += '}';
  }
  out += "],\"trials\":[";
  for (size_t i = 0; i < v.trials.size(); ++i) {
    const auto& p = v.trials[i];
    out += i == 0 ? "{" : ",{";
    field(out, "id", trial_key(p.row.experiment, p.row.id));
    field(out, "trial", p.row.id);
    field(out, "state", p.row.state);
    field(out, "pareto", p.pareto);
    out += ",\"values\":[";
    for (size_t k = 0; k < p.values.size(); ++k)
      out += (k ? "," : "") + json_number(p.values[k]);
    out += "]}";
  }
  out += "]}";
  return out;
}

std::string trial_key(int64_t experiment, const std::string& trial) {
  return std::to_string(experiment) + "-" + trial;
}

bool parse_trial_key(const std::string& key, int64_t& experiment, std::string& trial) {
  const size_t dash = key.find('-');
  if (dash == 0 || dash == std::string::npos || dash + 1 >= key.size())
    return false;
  for (size_t i = 0; i < dash; ++i)
    if (key[i] < '0' || key[i] > '9')
      return false;
  try {
    experiment = std::stoll(key.substr(0, dash));
  } catch (...) {
    return false;
  }
  trial = key.substr(dash + 1);
  return true;
}

std::string metrics_json(int64_t experiment, const std::string& trial,
                         const std::vector<experiments::metric_row>& rows, int64_t since,
                         std::optional<int64_t> after_seq) {
  std::string out = "{";
  field(out, "id", trial_key(experiment, trial));
  field(out, "experiment", experiment);
  field(out, "trial", trial);
  field(out, "since", since);
  key(out, "after_seq");
  out += after_seq ? std::to_string(*after_seq) : "null";
  out += ",\"reports\":[";
  bool first = true;
  for (size_t i = 0; i < rows.size();) {
    // One report: the rows of one seq (a report of four metrics is four rows).
    size_t end = i;
    while (end < rows.size() && rows[end].seq == rows[i].seq)
      ++end;
    if (rows[i].epoch > since && (!after_seq || rows[i].seq > *after_seq)) {
      out += first ? "{" : ",{";
      first = false;
      field(out, "epoch", rows[i].epoch);
      field(out, "seq", rows[i].seq);
      field(out, "time", rows[i].time);
      out += ",\"metrics\":{";
      for (size_t j = i; j < end; ++j)
        field(out, rows[j].name.c_str(), rows[j].value);
      out += '}';
      out += '}';
    }
    i = end;
  }
  out += "]}";
  return out;
}

namespace {

// `{"id":..,"experiment":..,"trial":..,"NAME":[` of a trial's list.
std::string trial_list_head(int64_t experiment, const std::string& trial, const char* name) {
  std::string out = "{";
  field(out, "id", trial_key(experiment, trial));
  field(out, "experiment", experiment);
  field(out, "trial", trial);
  key(out, name);
  out += '[';
  return out;
}

} // namespace

std::string checkpoints_json(int64_t experiment, const std::string& trial,
                             const std::vector<experiments::checkpoint_row>& rows) {
  std::string out = trial_list_head(experiment, trial, "checkpoints");
  for (const auto& c : rows) {
    out += out.back() == '[' ? "{" : ",{";
    write_fields(out, checkpoint_json_fields, c);
    out += '}';
  }
  out += "]}";
  return out;
}

std::string events_json(int64_t experiment, const std::string& trial,
                        const std::vector<experiments::event_row>& rows) {
  std::string out = trial_list_head(experiment, trial, "events");
  for (const auto& e : rows) {
    out += out.back() == '[' ? "{" : ",{";
    write_fields(out, event_json_fields, e);
    out += '}';
  }
  out += "]}";
  return out;
}

} // namespace dtrain::dashboard

namespace dtrain::dashboard {

std::string log_json(int32_t node, const actors::log_chunk& c) {
  std::string out = "{";
  field(out, "node", static_cast<int64_t>(node));
  // A log holds whatever its process wrote, and a path whatever bytes the
  // node's file system allows; JSON must be UTF-8.
  field(out, "path", utf8::replace_invalid(c.path));
  field(out, "offset", c.offset);
  field(out, "next", c.next);
  field(out, "size", c.size);
  field(out, "text", utf8::replace_invalid(c.bytes));
  out += '}';
  return out;
}

} // namespace dtrain::dashboard
