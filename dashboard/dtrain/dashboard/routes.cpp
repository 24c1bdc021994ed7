#include "dtrain/dashboard/routes.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>

#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/core/memory.hpp"
#include "dtrain/dashboard/api.hpp"
#include "dtrain/dashboard/assets.hpp"
#include "dtrain/dashboard/prometheus.hpp"
#include "dtrain/dashboard/report.hpp"
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

router::router(cluster_source& source, std::string token, std::chrono::milliseconds head_timeout)
  : source_(source), token_(std::move(token)), head_timeout_(head_timeout) {}

std::optional<http_response> router::quick(const http_request& r) const {
  if (r.method != "GET")
    return std::nullopt;
  if (const asset* a = find_asset(parse_target(r.target).path))
    return http_response{200, std::string(a->content_type), std::string(a->bytes), {}};
  return std::nullopt;
}

http_response router::too_slow(const std::string& path) const {
  return error_response(503, path + ": the head is slow: its answers took more than " +
                                 std::to_string(head_timeout_.count()) +
                                 " ms in all (the dashboard's head timeout); try again");
}

http_response router::handle(const http_request& r) {
  if (auto out = quick(r))
    return std::move(*out);
  const parsed_target t = parse_target(r.target);
  const clock::time_point deadline = clock::now() + head_timeout_;
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
    return experiments(deadline);
  if (middle(t.path, "/api/v1/experiments/", "/trials", id))
    return trials(id, deadline);
  if (middle(t.path, "/api/v1/experiments/", "/importance", id))
    return importance(id, t, deadline);
  if (middle(t.path, "/api/v1/experiments/", "/pareto", id))
    return pareto(id, deadline);
  if (middle(t.path, "/api/v1/trials/", "/metrics", id))
    return metrics(id, t, deadline);
  if (middle(t.path, "/api/v1/nodes/", "/log", id))
    return node_log(id, t);
  if (middle(t.path, "/api/v1/trials/", "/checkpoints", id))
    return checkpoints(id, t.path, deadline);
  if (middle(t.path, "/api/v1/trials/", "/events", id))
    return events(id, t.path, deadline);
  if (t.path == "/metrics")
    return prometheus(deadline);
  return error_response(404, "no such path: " + t.path);
}

http_response router::cluster() {
  auto s = source_.status();
  if (!s)
    return failed(s.error());
  return ok_json(cluster_json(*s));
}

// Each route checks `deadline` before every request to the source after
// its first: each request is bounded by the source's own timeout, so an
// answer takes at most about twice head_timeout.
http_response router::experiments(clock::time_point deadline) {
  auto store = source_.store();
  if (!store)
    return failed(store.error());
  if (clock::now() >= deadline)
    return too_slow("/api/v1/experiments");
  auto rows = (*store)->experiments();
  if (!rows)
    return failed(rows.error());
  std::vector<std::vector<experiments::trial_row>> trials;
  for (const auto& e : *rows) {
    if (clock::now() >= deadline)
      return too_slow("/api/v1/experiments");
    auto ts = (*store)->trials(e.id);
    if (!ts)
      return failed(ts.error());
    trials.push_back(std::move(*ts));
  }
  return ok_json(experiments_json(*rows, trials));
}

// Experiment `id` (parsed from the path) and its trials from the store,
// with the deadline checked before each read, handed to `answer`.
http_response router::with_trials(const std::string& id, const std::string& path,
                                  clock::time_point deadline, const trials_answer& answer) {
  int64_t experiment = 0;
  if (!parse_int(id, experiment))
    return error_response(400, "not an experiment id: " + id);
  auto store = source_.store();
  if (!store)
    return failed(store.error());
  if (clock::now() >= deadline)
    return too_slow(path);
  auto e = (*store)->experiment(experiment);
  if (!e)
    return failed(e.error());
  if (clock::now() >= deadline)
    return too_slow(path);
  auto ts = (*store)->trials(experiment);
  if (!ts)
    return failed(ts.error());
  return answer(*e, *ts);
}

http_response router::trials(const std::string& id, clock::time_point deadline) {
  return with_trials(id, "/api/v1/experiments/" + id + "/trials", deadline,
                     [](const auto& e, const auto& ts) { return ok_json(trials_json(e, ts)); });
}

// The ranking, or {"error": ...} with 200 when the experiment cannot be
// assessed (not a sweep, too few completed trials): the page shows why.
http_response router::importance(const std::string& id, const parsed_target& t,
                                 clock::time_point deadline) {
  bool given = false;
  const std::string name = t.get("method", &given);
  auto method = tune::parse_importance_method(given ? name : "fanova");
  if (!method)
    return error_response(400, method.error().message());
  return with_trials(id, "/api/v1/experiments/" + id + "/importance", deadline,
                     [&](const auto& e, const auto& ts) {
                       return ok_json(importance_json(e, ts, *method));
                     });
}

// Every trial's objectives and whether it is in the Pareto set.
http_response router::pareto(const std::string& id, clock::time_point deadline) {
  int64_t experiment = 0;
  if (!parse_int(id, experiment))
    return error_response(400, "not an experiment id: " + id);
  auto store = source_.store();
  if (!store)
    return failed(store.error());
  if (clock::now() >= deadline)
    return too_slow("/api/v1/experiments/" + id + "/pareto");
  auto view = experiments::pareto_of(**store, experiment);
  // A stored configuration that does not parse (a stub, an older format):
  // 200 with the reason and no objectives, as importance answers; the page
  // leaves the section hidden.
  if (!view && view.error().code() == error_code::corrupt_data)
    return ok_json("{\"error\":" + json::quoted(view.error().message()) + ",\"objectives\":[],"
                   "\"trials\":[]}");
  if (!view)
    return failed(view.error());
  return ok_json(pareto_json(*view));
}

http_response router::metrics(const std::string& key, const parsed_target& t,
                             clock::time_point deadline) {
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
  if (clock::now() >= deadline)
    return too_slow(t.path);
  auto e = (*store)->experiment(experiment);
  if (!e)
    return failed(e.error());
  if (clock::now() >= deadline)
    return too_slow(t.path);
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

// The two lists of a trial's rows: checkpoints and events (at `path`,
// answered by then).
template <class Read, class Json>
http_response trial_rows(cluster_source& source, const std::string& key, const std::string& path,
                         std::chrono::steady_clock::time_point deadline,
                         const std::function<http_response(const std::string&)>& too_slow,
                         Read read, Json json) {
  int64_t experiment = 0;
  std::string trial;
  if (!parse_trial_key(key, experiment, trial))
    return error_response(400, "not a trial id (EXPERIMENT-TRIAL, as in 3-00000): " + key);
  auto store = source.store();
  if (!store)
    return failed(store.error());
  if (std::chrono::steady_clock::now() >= deadline)
    return too_slow(path);
  auto e = (*store)->experiment(experiment);
  if (!e)
    return failed(e.error());
  if (std::chrono::steady_clock::now() >= deadline)
    return too_slow(path);
  auto rows = read(**store, experiment, trial);
  if (!rows)
    return failed(rows.error());
  return ok_json(json(experiment, trial, *rows));
}

} // namespace

http_response router::checkpoints(const std::string& key, const std::string& path,
                                  clock::time_point deadline) {
  return trial_rows(
      source_, key, path, deadline, [this](const std::string& p) { return too_slow(p); },
      [](experiments::experiment_store& s, int64_t e, const std::string& t) { return s.checkpoints(e, t); },
      checkpoints_json);
}

http_response router::events(const std::string& key, const std::string& path,
                             clock::time_point deadline) {
  return trial_rows(
      source_, key, path, deadline, [this](const std::string& p) { return too_slow(p); },
      [](experiments::experiment_store& s, int64_t e, const std::string& t) { return s.events(e, t); },
      events_json);
}

bool router::store_metrics(metrics_input& in, clock::time_point deadline) {
  auto store = source_.store();
  if (!store)
    return true;  // in.store_ok stays false
  if (clock::now() >= deadline)
    return false;
  auto rows = (*store)->experiments();
  in.store_ok = rows.is_ok();
  if (rows)
    in.experiments = std::move(*rows);
  for (const auto& e : in.experiments) {
    if (clock::now() >= deadline)
      return false;
    auto ts = (*store)->trials(e.id);
    if (!ts) {
      in.store_ok = false;
      break;
    }
    for (const auto& tr : *ts) {
      if (tr.state != "RUNNING" && tr.state != "running")
        continue;
      if (clock::now() >= deadline)
        return false;
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
  return true;
}

// A head that does not answer still gives a document (dtrain_up 0, and
// the store is not asked once the time is up); one that answers, but too
// slowly for the deadline, gives 503.
http_response router::prometheus(clock::time_point deadline) {
  metrics_input in;
  if (auto s = source_.status()) {
    in.cluster_ok = true;
    in.cluster = std::move(*s);
  }
  const bool late = clock::now() >= deadline;
  if (late && in.cluster_ok)
    return too_slow("/metrics");
  if (!late && !store_metrics(in, deadline))
    return too_slow("/metrics");
  if (auto rss = resident_memory_bytes())
    in.rss_bytes = *rss;
  return {200, "text/plain; version=0.0.4; charset=utf-8", head_metrics(in), {}};
}

} // namespace dtrain::dashboard
