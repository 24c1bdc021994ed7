#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "caf/all.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::dashboard {

class cluster_source;
class http_server;
class router;

struct dashboard_options {
  /// Where to listen. Loopback (127.0.0.0/8, ::1, "localhost"): HTTP, or
  /// HTTPS with `tls`. Any other address: HTTPS only, so `certificate` and
  /// `key` are required (check_bind).
  std::string bind = "127.0.0.1";
  uint16_t port = 0;                  // 0: any free port
  std::string token_file;             // empty: $DTRAIN_HOME/dashboard-token
  /// The head's TLS certificate (PEM chain) and key, as `dtrain cert create
  /// --head` makes them: what a browser checks against the cluster CA.
  std::string certificate;
  std::string key;
  /// HTTPS on loopback too (needs certificate and key).
  bool tls = false;
  /// Each request to the head (status, the experiment store) may take this
  /// long before the dashboard answers 503, and so may all of one page's
  /// requests together (routes.hpp).
  std::chrono::milliseconds head_timeout{5000};
  std::chrono::milliseconds connection_timeout{30000};
  /// What node logs are read with (node_actor.hpp: log): a driver's client
  /// certificate on a TLS cluster; empty: the same-user MAC (a head, whose
  /// own certificate nodes refuse, reads the logs of its user's nodes on
  /// its host only).
  security::tls_files log_client;
};

/// Whether the dashboard on `bind` may start: loopback always; any other
/// address only over HTTPS, that is with `have_certificate` (the head's
/// certificate and key). A refusal (invalid_argument) names `bind`, says
/// that without TLS the dashboard listens on loopback only, and how to make
/// the certificates (`dtrain cert ...`) or reach it through an SSH tunnel.
status check_bind(const std::string& bind, bool have_certificate = false);

/// Whether the dashboard with `o` serves HTTPS: certificate and key given
/// and either o.tls or a non-loopback bind.
bool serves_tls(const dashboard_options& o);

/// The web dashboard of a cluster: an http_server (server.hpp) with the
/// routes of routes.hpp, reading from `head` (the head process's own head
/// actor, or the head of the cluster a driver runs: embedded or attached)
/// through requests with options.head_timeout, on the server's workers,
/// each with `session` (this process's session token at the head:
/// cluster::session(), or spawned_head::session in the head process).
///
/// start() refuses a bind that check_bind refuses (and o.tls without a
/// certificate), loads or creates the token (token.hpp), listens (HTTPS
/// when serves_tls(o)) and starts the I/O thread and the workers. Over HTTPS browsers
/// still present the bearer token: TLS protects it on the way. stop() and the
/// destructor close every connection and join the threads; the dashboard
/// must be stopped before `sys` is destroyed. Thread-safe accessors.
class dashboard {
public:
  static result<std::unique_ptr<dashboard>> start(caf::actor_system& sys,
                                                   const actors::head_actor& head,
                                                   const std::string& session,
                                                   const dashboard_options& o);
  ~dashboard();
  dashboard(const dashboard&) = delete;
  dashboard& operator=(const dashboard&) = delete;

  uint16_t port() const;
  bool tls() const { return tls_; }
  const std::string& token() const { return token_; }
  const std::string& token_file() const { return token_file_; }
  /// "http://127.0.0.1:PORT/" or "https://..." (an IPv6 literal in brackets).
  std::string url() const;
  /// url() with "?token=TOKEN": what a person opens in a browser.
  std::string url_with_token() const;
  void stop();

private:
  dashboard() = default;
  std::string host_;
  bool tls_ = false;
  std::string token_;
  std::string token_file_;
  std::unique_ptr<cluster_source> source_;
  std::unique_ptr<router> router_;
  std::unique_ptr<http_server> server_;
};

} // namespace dtrain::dashboard
