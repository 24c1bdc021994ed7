#include "dtrain/dashboard/routes.hpp"

#include <algorithm>
#include <cstdint>

#include "dtrain/actors/node_actor.hpp"
#include "dtrain/core/memory.hpp"
#include "dtrain/dashboard/api.hpp"
#include "dtrain/dashboard/assets.hpp"
#include "dtrain/dashboard/prometheus.hpp"
#include "dtrain/dashboard/token.hpp"
#include "dtrain/core/json.hpp"

namespace dtrain::dashboard {

namespace {

http_response error_response(int code, const std::string& message) {
  return {code, "application/json", "{\"error\":" + json::quoted(message) + "}\n", {}};
}

http_response failed(const status& s) {
  const int code = s.code() == error_code::not_found ? 404 : 503;
  return error_response(code, s.to_string());
}

http_response ok_json(std::string body) { return {200, "application/json", std::move(body), {}}; }

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// "/api/v1/experiments/12/trials" with prefix "/api/v1/experiments/" and
// suffix "/trials": "12"; false when the path has another shape.
bool middle(const std::string& path, const std::string& prefix, const std::string& suffix,
            std::string& out) {
  if (path.size() <= prefix.size() + suffix.size() || !starts_with(path, prefix) ||
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  out = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  return out.find('/') == std::string::npos;
}

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 18)
    return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size())
    return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9')
      return false;
  out = std::stoll(s);
  return true;
}

} // namespace

router::router(cluster_source& source, std::string token)
  : source_(source), token_(std::move(token)) {}

http_response router::handle(const http_request& r) {
  const parsed_target t = parse_target(r.target);
  if (r.method == "GET") {
    if (const asset* a = find_asset(t.path))
      return {200, std::string(a->content_type), std::string(a->bytes), {}};
  }
  const std::string bearer = "Bearer ";
  std::string presented;
  if (starts_with(r.authorization, bearer))
    presented = r.authorization.substr(bearer.size());
  else
    presented = t.get("token");
  if (!token_matches(presented, token_)) {
    http_response out = error_response(
        401, "this dashboard needs its token: `Authorization: Bearer TOKEN` or ?token=TOKEN "
             "(printed when it started; kept in $DTRAIN_HOME/dashboard-token)");
    out.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"dtrain\"");
    return out;
  }
  if (r.method != "GET") {
    http_response out = error_response(405, r.method + " " + t.path + ": only GET is served");
    out.headers.emplace_back("Allow", "GET");
    return out;
  }
  std::string id;
  if (t.path == "/api/v1/cluster")
    return cluster();
  if (t.path == "/api/v1/experiments")
    return experiments();
  if (middle(t.path, "/api/v1/experiments/", "/trials", id))
    return trials(id);
  if (middle(t.path, "/api/v1/trials/", "/metrics", id))
    return metrics(id, t);
  if (middle(t.path, "/api/v1/nodes/", "/log", id))
    return node_log(id, t);
  if (middle(t.path, "/api/v1/trials/", "/checkpoints", id))
    return checkpoints(id);
  if (middle(t.path, "/api/v1/trials/", "/events", id))
    return events(id);
  if (t.path == "/metrics")
    return prometheus();
  return error_response(404, "no such path: " + t.path);
}

http_response router::cluster() {
  auto s = source_.status();
  if (!s)
    return failed(s.error());
  return ok_json(cluster_json(*s));
}

http_response router::experiments() {
  auto store = source_.store();
  if (!store)
    return failed(store.error());
  auto rows = (*store)->experiments();
  if (!rows)
    return failed(rows.error());
  std::vector<std::vector<store::trial_row>> trials;
  for (const auto& e : *rows) {
    auto ts = (*store)->trials(e.id);
    if (!ts)
      return failed(ts.error());
    trials.push_back(std::move(*ts));
  }
  return ok_json(experiments_json(*rows, trials));
}

http_response router::trials(const std::string& id) {
  int64_t experiment = 0;
  if (!parse_int(id, experiment))
    return error_response(400, "not an experiment id: " + id);
  auto store = source_.store();
  if (!store)
    return failed(store.error());
  auto e = (*store)->experiment(experiment);
  if (!e)
    return failed(e.error());
  auto ts = (*store)->trials(experiment);
  if (!ts)
    return failed(ts.error());
  return ok_json(trials_json(*e, *ts));
}

http_response router::metrics(const std::string& key, const parsed_target& t) {
  int64_t experiment = 0;
  std::string trial;
  if (!parse_trial_key(key, experiment, trial))
    return error_response(400, "not a trial id (EXPERIMENT-TRIAL, as in 3-00000): " + key);
  int64_t since = 0;
  bool given = false;
  const std::string s = t.get("since", &given);
  if (given && !parse_int(s, since))
    return error_response(400, "since=" + s + ": not an epoch number");
  std::optional<int64_t> after_seq;
  const std::string a = t.get("after_seq", &given);
  if (given) {
    int64_t seq = 0;
    if (!parse_int(a, seq))
      return error_response(400, "after_seq=" + a + ": not a report seq");
    after_seq = seq;
  }
  auto store = source_.store();
  if (!store)
    return failed(store.error());
  auto e = (*store)->experiment(experiment);
  if (!e)
    return failed(e.error());
  auto rows = (*store)->metrics(experiment, trial);
  if (!rows)
    return failed(rows.error());
  return ok_json(metrics_json(experiment, trial, *rows, since, after_seq));
}

http_response router::node_log(const std::string& index, const parsed_target& t) {
  int64_t node = 0;
  if (!parse_int(index, node) || node < 0 || node > INT32_MAX)
    return error_response(400, "not a node index (as GET /api/v1/cluster lists them): " + index);
  bool given = false;
  int64_t max = default_log_bytes;
  const std::string m = t.get("max", &given);
  if (given && (!parse_int(m, max) || max < 0))
    return error_response(400, "max=" + m + ": not a byte count");
  max = std::min<int64_t>(max, actors::max_log_chunk);
  int64_t offset = -max;  // the tail
  const std::string o = t.get("offset", &given);
  if (given && !parse_int(o, offset))
    return error_response(400, "offset=" + o + ": not a byte offset (negative: from the end)");
  auto chunk = source_.node_log(static_cast<int32_t>(node), offset, static_cast<int32_t>(max));
  if (!chunk)
    return failed(chunk.error());
  return ok_json(log_json(static_cast<int32_t>(node), *chunk));
}

namespace {

// The two lists of a trial's rows: checkpoints and events.
template <class Read, class Json>
http_response trial_rows(cluster_source& source, const std::string& key, Read read, Json json) {
  int64_t experiment = 0;
  std::string trial;
  if (!parse_trial_key(key, experiment, trial))
    return error_response(400, "not a trial id (EXPERIMENT-TRIAL, as in 3-00000): " + key);
  auto store = source.store();
  if (!store)
    return failed(store.error());
  auto e = (*store)->experiment(experiment);
  if (!e)
    return failed(e.error());
  auto rows = read(**store, experiment, trial);
  if (!rows)
    return failed(rows.error());
  return ok_json(json(experiment, trial, *rows));
}

} // namespace

http_response router::checkpoints(const std::string& key) {
  return trial_rows(
      source_, key,
      [](store::experiment_store& s, int64_t e, const std::string& t) { return s.checkpoints(e, t); },
      checkpoints_json);
}

http_response router::events(const std::string& key) {
  return trial_rows(
      source_, key,
      [](store::experiment_store& s, int64_t e, const std::string& t) { return s.events(e, t); },
      events_json);
}

http_response router::prometheus() {
  metrics_input in;
  if (auto s = source_.status()) {
    in.cluster_ok = true;
    in.cluster = std::move(*s);
  }
  if (auto store = source_.store()) {
    auto rows = (*store)->experiments();
    in.store_ok = rows.is_ok();
    if (rows)
      in.experiments = std::move(*rows);
    for (const auto& e : in.experiments) {
      auto ts = (*store)->trials(e.id);
      if (!ts) {
        in.store_ok = false;
        break;
      }
      for (const auto& tr : *ts) {
        if (tr.state != "RUNNING" && tr.state != "running")
          continue;
        metrics_input::running_trial r{e.id, tr.id, tr.epochs, {}};
        // The newest report's values: the rows of the highest seq.
        if (auto m = (*store)->metrics(e.id, tr.id); m && !m->empty()) {
          const int64_t seq = m->back().seq;
          for (const auto& row : *m)
            if (row.seq == seq)
              r.latest.emplace_back(row.name, row.value);
        }
        in.running.push_back(std::move(r));
      }
      in.trials.push_back(std::move(*ts));
    }
  }
  if (auto rss = resident_memory_bytes())
    in.rss_bytes = *rss;
  return {200, "text/plain; version=0.0.4; charset=utf-8", head_metrics(in), {}};
}

} // namespace dtrain::dashboard
