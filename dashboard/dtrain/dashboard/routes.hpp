#pragma once

#include <string>

#include "dtrain/dashboard/http.hpp"
#include "dtrain/dashboard/source.hpp"

namespace dtrain::dashboard {

/// The dashboard's routes (README, "Dashboard"): the page and its files
/// without a token; everything else only with `Authorization: Bearer
/// TOKEN` or `?token=TOKEN` (401 otherwise, before anything is looked up);
/// then the JSON API under /api/v1 and the Prometheus text at /metrics.
/// Only GET (405 otherwise). A source that fails answers 503 with its
/// error; a malformed id 400; an unknown experiment or path 404.
///
/// Blocking: each call asks `source` (bounded by its timeout). Not
/// thread-safe: the server calls it from its one I/O thread.
class router {
public:
  /// GET /api/v1/nodes/{index}/log without ?max=: this many bytes.
  static constexpr int64_t default_log_bytes = 64 << 10;

  /// `source` must outlive the router.
  router(cluster_source& source, std::string token);
  http_response handle(const http_request& r);

private:
  http_response cluster();
  http_response experiments();
  http_response trials(const std::string& id);
  http_response metrics(const std::string& key, const parsed_target& t);
  http_response node_log(const std::string& index, const parsed_target& t);
  http_response checkpoints(const std::string& key);
  http_response events(const std::string& key);
  http_response prometheus();

  cluster_source& source_;
  std::string token_;
};

} // namespace dtrain::dashboard
