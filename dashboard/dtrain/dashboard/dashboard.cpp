#include "dtrain/dashboard/dashboard.hpp"

#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/dashboard/routes.hpp"
#include "dtrain/dashboard/server.hpp"
#include "dtrain/dashboard/source.hpp"
#include "dtrain/dashboard/token.hpp"

namespace dtrain::dashboard {

status check_bind(const std::string& bind, bool have_certificate) {
  if (net::is_loopback(bind) || have_certificate)
    return status::ok();
  return invalid_argument(
      "--dashboard-bind " + (bind.empty() ? std::string("\"\"") : bind) +
      ": without TLS the dashboard listens on loopback only (127.0.0.1, ::1, localhost), since "
      "its token would cross the network in clear; off loopback it serves HTTPS with the head's "
      "certificate, and this head has none. Make them with `dtrain cert ca create` and `dtrain "
      "cert create --head --host HOST` (or pass --tls-cert/--tls-key/--tls-ca), then start the "
      "head again; or keep it on loopback and use an SSH tunnel: ssh -L PORT:127.0.0.1:PORT "
      "THIS_HOST");
}

bool serves_tls(const dashboard_options& o) {
  return !o.certificate.empty() && !o.key.empty() && (o.tls || !net::is_loopback(o.bind));
}

result<std::unique_ptr<dashboard>> dashboard::start(caf::actor_system& sys,
                                                     const actors::head_actor& head,
                                                     const std::string& session,
                                                     const dashboard_options& o) {
  const bool have_certificate = !o.certificate.empty() && !o.key.empty();
  DTRAIN_RETURN_IF_ERROR(check_bind(o.bind, have_certificate));
  if (o.tls && !have_certificate)
    return invalid_argument("--dashboard-tls: HTTPS needs the head's certificate and key; make "
                            "them with `dtrain cert ca create` and `dtrain cert create --head`");
  std::unique_ptr<dashboard> d(new dashboard());
  d->tls_ = serves_tls(o);
  d->host_ = o.bind == "localhost" ? "127.0.0.1" : o.bind;
  d->token_file_ = o.token_file.empty() ? default_token_path() : o.token_file;
  DTRAIN_ASSIGN_OR_RETURN(d->token_, load_or_create_token(d->token_file_));
  d->source_ = head_source(sys, head, session, o.head_timeout, o.log_client);
  d->router_ = std::make_unique<router>(*d->source_, d->token_, o.head_timeout);
  http_server::options so;
  so.bind = d->host_;
  so.port = o.port;
  so.timeout = o.connection_timeout;
  if (d->tls_) {
    so.certificate = o.certificate;
    so.key = o.key;
  }
  router* r = d->router_.get();
  DTRAIN_ASSIGN_OR_RETURN(
      d->server_, http_server::start(
                      so, [r](const http_request& q) { return r->handle(q); },
                      [r](const http_request& q) { return r->quick(q); }));
  return d;
}

dashboard::~dashboard() { stop(); }

uint16_t dashboard::port() const { return server_ ? server_->port() : 0; }

std::string dashboard::url() const {
  const bool v6 = host_.find(':') != std::string::npos;
  return (tls_ ? "https://" : "http://") + (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port()) + "/";
}

std::string dashboard::url_with_token() const { return url() + "?token=" + token_; }

void dashboard::stop() {
  // The server first: after it no request reaches the router or the source.
  if (server_)
    server_->stop();
}

} // namespace dtrain::dashboard
