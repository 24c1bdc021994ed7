#pragma once

#include <memory>
#include <string>

#include "caf/all.hpp"
#include "dtrain/cluster/messages.hpp"
#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::dashboard {
class dashboard;  // dtrain/dashboard/dashboard.hpp: include it to hold one
}

namespace dtrain::roles {

/// The dashboard flags of `dtrain start --head` and `dtrain train/tune`.
struct dashboard_flags {
  int port = -1;              // -1: no dashboard; 0: any free port
  std::string bind = "127.0.0.1";
  /// --dashboard-tls: HTTPS on loopback too (off loopback it always is).
  bool tls = false;
  /// The head's certificate and key (its tls_identity's files), which the
  /// dashboard serves HTTPS with; empty: a head without certificates, or a
  /// driver (whose client certificate is not a server's).
  std::string certificate;
  std::string key;
  /// Where to write the dashboard's URL (without the token) once it
  /// listens; empty: nowhere.
  std::string url_file;
};

/// Refuses flags that cannot work (a bind off loopback, or --dashboard-tls,
/// without the head's certificate) before anything starts; ok when the
/// dashboard is off.
status check_dashboard_flags(const dashboard_flags& f);

/// Starts the dashboard on `head` when f.port >= 0 (else nullptr), asking
/// with `session` (this process's token at the head: cluster::session(),
/// or spawned_head::session in the head process), prints
/// "`who` dashboard at URL?token=TOKEN" on stdout and writes f.url_file.
/// Its log route reads node logs with `log_client` (dashboard_options).
result<std::unique_ptr<dashboard::dashboard>> serve_dashboard(caf::actor_system& sys,
                                                              const actors::head_actor& head,
                                                              const std::string& session,
                                                              const dashboard_flags& f,
                                                              const char* who,
                                                              const security::tls_files& log_client = {});

} // namespace dtrain::roles
