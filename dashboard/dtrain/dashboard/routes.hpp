#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "dtrain/dashboard/http.hpp"
#include "dtrain/dashboard/prometheus.hpp"
#include "dtrain/dashboard/source.hpp"

namespace dtrain::dashboard {

/// The dashboard's routes (docs/dashboard.md): the page and its files
/// without a token; everything else only with `Authorization: Bearer
/// TOKEN` or `?token=TOKEN` (401 otherwise, before anything is looked up);
/// then the JSON API under /api/v1 and the Prometheus text at /metrics.
/// Only GET (405 otherwise). A source that fails answers 503 with its
/// error; a malformed id 400; an unknown experiment or path 404.
///
/// Blocking: each call asks `source` (each request bounded by its
/// timeout), and a request that asks it several times (the experiment
/// list with each one's trials, /metrics, ...) stops when `head_timeout`
/// has passed since it began and answers 503 saying the head is slow, so
/// that one answer takes at most about twice head_timeout (plus, with
/// head_source, the wait for other workers' calls to the experiment store,
/// whose client sends one request at a time). /metrics still answers, with
/// dtrain_up 0, when the head failed rather than answered late. quick()
/// never blocks. Thread-safe when `source` is (head_source is): the server calls
/// handle() from several workers at once, and the router holds nothing
/// that changes.
class router {
public:
  /// GET /api/v1/nodes/{index}/log without ?max=: this many bytes.
  static constexpr int64_t default_log_bytes = 64 << 10;

  /// `source` must outlive the router.
  router(cluster_source& source, std::string token,
         std::chrono::milliseconds head_timeout = std::chrono::milliseconds(5000));
  http_response handle(const http_request& r);
  /// The answers that need neither the token nor the source (the page and
  /// its files), or nullopt: what the server answers on its I/O thread.
  std::optional<http_response> quick(const http_request& r) const;

private:
  using clock = std::chrono::steady_clock;

  http_response cluster();
  http_response experiments(clock::time_point deadline);
  http_response trials(const std::string& id, clock::time_point deadline);
  using trials_answer = std::function<http_response(const experiments::experiment_row&,
                                                    const std::vector<experiments::trial_row>&)>;
  http_response with_trials(const std::string& id, const std::string& path,
                            clock::time_point deadline, const trials_answer& answer);
  http_response metrics(const std::string& key, const parsed_target& t,
                        clock::time_point deadline);
  /// GET /api/v1/experiments/{id}/pareto (api.hpp pareto_json).
  http_response pareto(const std::string& id, clock::time_point deadline);
  /// GET /api/v1/experiments/{id}/importance[?method=fanova|fast].
  http_response importance(const std::string& id, const parsed_target& t,
                           clock::time_point deadline);
  http_response node_log(const std::string& index, const parsed_target& t);
  http_response checkpoints(const std::string& key, const std::string& path,
                            clock::time_point deadline);
  http_response events(const std::string& key, const std::string& path,
                       clock::time_point deadline);
  http_response prometheus(clock::time_point deadline);
  /// The store's part of /metrics into `in`; false when `deadline` passed.
  bool store_metrics(metrics_input& in, clock::time_point deadline);
  /// 503: `path` asked the head for longer than head_timeout in all.
  http_response too_slow(const std::string& path) const;

  cluster_source& source_;
  const std::string token_;
  const std::chrono::milliseconds head_timeout_;
};

} // namespace dtrain::dashboard
