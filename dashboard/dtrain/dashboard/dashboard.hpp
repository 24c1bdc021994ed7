#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "caf/all.hpp"
#include "dtrain/actors/messages.hpp"
#include "dtrain/core/status.hpp"

namespace dtrain::dashboard {

class cluster_source;
class http_server;
class router;

struct dashboard_options {
  /// Where to listen: loopback only (127.0.0.0/8, ::1, "localhost") until
  /// the dashboard speaks TLS; anything else is refused (check_bind).
  std::string bind = "127.0.0.1";
  uint16_t port = 0;                  // 0: any free port
  std::string token_file;             // empty: $DTRAIN_HOME/dashboard-token
  /// Each request to the head (status, the experiment store) may take this
  /// long before the dashboard answers 503.
  std::chrono::milliseconds head_timeout{5000};
  std::chrono::milliseconds connection_timeout{30000};
};

/// Refuses (invalid_argument, naming `bind` and why) an address that is
/// not loopback: the dashboard serves plain HTTP, and a bearer token over
/// plain HTTP off this host would be readable on the network. TLS for the
/// dashboard has not landed; until it does, reach a remote dashboard
/// through an SSH tunnel.
status check_bind(const std::string& bind);

/// The web dashboard of a cluster: an http_server (server.hpp) with the
/// routes of routes.hpp, reading from `head` (the head process's own head
/// actor, or the head of the cluster a driver runs: embedded or attached)
/// through requests with options.head_timeout.
///
/// start() refuses a bind that check_bind refuses, loads or creates the
/// token (token.hpp), listens and starts the I/O thread. stop() and the
/// destructor close every connection and join the thread; the dashboard
/// must be stopped before `sys` is destroyed. Thread-safe accessors.
class dashboard {
public:
  static result<std::unique_ptr<dashboard>> start(caf::actor_system& sys,
                                                   const actors::head_actor& head,
                                                   const dashboard_options& o);
  ~dashboard();
  dashboard(const dashboard&) = delete;
  dashboard& operator=(const dashboard&) = delete;

  uint16_t port() const;
  const std::string& token() const { return token_; }
  const std::string& token_file() const { return token_file_; }
  /// "http://127.0.0.1:PORT/" (an IPv6 literal in brackets).
  std::string url() const;
  /// url() with "?token=TOKEN": what a person opens in a browser.
  std::string url_with_token() const;
  void stop();

private:
  dashboard() = default;
  std::string host_;
  std::string token_;
  std::string token_file_;
  std::unique_ptr<cluster_source> source_;
  std::unique_ptr<router> router_;
  std::unique_ptr<http_server> server_;
};

} // namespace dtrain::dashboard
