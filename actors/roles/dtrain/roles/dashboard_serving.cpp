// The dashboard in a head process or beside a driver's cluster.
#include "dtrain/roles/dashboard_serving.hpp"

#include <unistd.h>

#include <cstdio>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/dashboard/dashboard.hpp"

namespace dtrain::roles {

status check_dashboard_flags(const dashboard_flags& f) {
  if (f.port < 0)
    return status::ok();
  if (f.port > 65535)
    return invalid_argument("--dashboard-port " + std::to_string(f.port) + ": not a port");
  const bool have_certificate = !f.certificate.empty() && !f.key.empty();
  if (f.tls && !have_certificate)
    return invalid_argument(
        "--dashboard-tls: the dashboard serves HTTPS with the head's certificate, and there is "
        "none here: make them with `dtrain cert ca create` and `dtrain cert create --head`, and "
        "serve the dashboard from `dtrain start --head`");
  return dashboard::check_bind(f.bind, have_certificate);
}

result<std::unique_ptr<dashboard::dashboard>> serve_dashboard(caf::actor_system& sys,
                                                              const actors::head_actor& head,
                                                              const std::string& session,
                                                              const dashboard_flags& f,
                                                              const char* who,
                                                              const security::tls_files& log_client) {
  if (f.port < 0)
    return std::unique_ptr<dashboard::dashboard>();
  DTRAIN_RETURN_IF_ERROR(check_dashboard_flags(f));
  dashboard::dashboard_options o;
  o.bind = f.bind;
  o.port = static_cast<uint16_t>(f.port);
  o.tls = f.tls;
  o.certificate = f.certificate;
  o.key = f.key;
  o.log_client = log_client;
  auto d = dashboard::dashboard::start(sys, head, session, o);
  if (!d)
    return d.error();
  // The URL with its token only on a terminal: a log (a detached head's)
  // may be readable by others, and the token opens the dashboard.
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  std::printf("%s dashboard at %s (token in %s%s)\n", who,
              (terminal ? (*d)->url_with_token() : (*d)->url()).c_str(),
              (*d)->token_file().c_str(), terminal ? "" : "; `dtrain dashboard-token` prints it");
  std::fflush(stdout);
  if (!f.url_file.empty()) {
    const std::string line = (*d)->url() + "\n";
    DTRAIN_RETURN_IF_ERROR(
        write_file_atomically(f.url_file, line.data(), line.size(), durability::visible));
  }
  return d;
}

} // namespace dtrain::roles
