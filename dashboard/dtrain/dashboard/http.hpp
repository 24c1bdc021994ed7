#pragma once

#include <string>
#include <utility>
#include <vector>

/// The HTTP exchange as the dashboard's routes see it: plain values, no
/// Boost types, so that routes are tested without a socket.
namespace dtrain::dashboard {

struct http_request {
  std::string method;         // "GET", ...
  std::string target;         // "/api/v1/trials/3-00000/metrics?since=2"
  std::string authorization;  // the Authorization header ("" none)
};

struct http_response {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones
};

/// `target` split at '?': the path, and the query's `key=value` pairs
/// percent-decoded ('+' as a space), in order.
struct parsed_target {
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  /// The first value of `key`, or "" (and `found` false).
  std::string get(const std::string& key, bool* found = nullptr) const;
};
parsed_target parse_target(const std::string& target);

} // namespace dtrain::dashboard
