#include "dtrain/cluster/tls.hpp"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "dtrain/core/net.hpp"
#include "dtrain/security/openssl_util.hpp"  // name_line: subjects as certificates.hpp writes them

namespace dtrain::actors {

// ---------------------------------------------------------------------------
// Files

namespace {

std::string missing_parts(const security::tls_files& f, const char* cert, const char* key,
                          const char* ca) {
  std::string out;
  auto add = [&](bool missing, const char* what) {
    if (missing)
      out += (out.empty() ? "" : ", ") + std::string(what);
  };
  add(f.certificate.empty(), cert);
  add(f.key.empty(), key);
  add(f.ca.empty(), ca);
  return out;
}

const char* how_to_make(security::role r) {
  switch (r) {
    case security::role::head:
      return "make them with `dtrain cert ca create` and `dtrain cert create --head`";
    case security::role::node:
      return "make them with `dtrain cert create --node` (on the host of the cluster CA)";
    case security::role::client:
      break;
  }
  return "make them with `dtrain cert create --client` (on the host of the cluster CA)";
}

} // namespace

result<tls_identity> load_tls_identity(const security::tls_files& given, security::role r) {
  tls_identity id;
  id.role_ = r;
  if (!given.empty()) {
    if (!given.complete())
      return invalid_argument("--tls-cert, --tls-key and --tls-ca go together; missing: " +
                              missing_parts(given, "--tls-cert", "--tls-key", "--tls-ca"));
    id.files = given;
  } else {
    const std::string dir = security::default_tls_dir();
    id.files = security::default_tls_files(r, dir);
    if (id.files.empty())
      return id;  // plain remoting (loopback only)
    const std::string role = security::role_name(r);
    if (!id.files.complete())
      return invalid_argument("incomplete TLS files in " + dir + " for a " + role +
                              ": missing " +
                              missing_parts(id.files, (role + ".pem").c_str(),
                                            (role + "-key.pem").c_str(), "ca.pem") +
                              " (" + how_to_make(r) + ", or give --tls-cert/--tls-key/--tls-ca)");
  }
  auto own = security::check_own_files(id.files, r);
  if (!own)
    return own.error().with_context("this " + std::string(security::role_name(r)) +
                                    "'s TLS certificate " + id.files.certificate);
  id.subject = own->subject;
  auto ca = security::read_certificate(id.files.ca);
  if (!ca)
    return ca.error().with_context("the cluster CA");
  id.ca_fingerprint = ca->fingerprint;
  return id;
}

status require_tls_off_loopback(const tls_identity& id, const std::string& host,
                                const std::string& what) {
  if (id.enabled() || net::is_loopback(host))
    return status::ok();
  return invalid_argument(
      what + ": plain remoting is allowed on loopback only (anyone who reaches the port could "
             "spawn actors); this needs mutual TLS: give --tls-cert, --tls-key and --tls-ca, or "
             "put ca.pem, " + std::string(security::role_name(id.role_)) + ".pem and " +
      security::role_name(id.role_) + "-key.pem in " + security::default_tls_dir() + " (" +
      how_to_make(id.role_) + ")");
}

std::string explain_tls_connect_failure(const tls_identity& id, const std::string& address,
                                        const std::string& caf_error, const std::string& seen) {
  std::string text = "the TLS handshake with " + address + " failed (" + caf_error + ")";
  if (!seen.empty())
    text += ": " + seen;
  text += ". Likely causes: the peer refused our certificate (not signed by its CA, expired, "
          "or the wrong role), or the peer's certificate is not from our CA, or the peer does "
          "not use TLS. We presented '" + id.subject + "' (role " +
          security::role_name(id.role_) + ") and trust the CA with SHA-256 fingerprint " +
          id.ca_fingerprint;
  return text;
}

// ---------------------------------------------------------------------------
// Handshake diagnostics

namespace {

std::mutex diagnostics_mutex;
std::string diagnostics_label;                       // guarded; empty: off
std::atomic<bool> diagnostics_on{false};
std::map<std::string, std::string> client_failures;  // guarded; "ip:port" -> reason

// What one connection's handshake recorded (SSL ex_data, freed with the SSL).
struct handshake_note {
  std::string verify_failure;  // the peer's certificate and why it was refused
  std::string peer;            // "ip:port", taken at the first event (a closed socket has none)
  bool reported = false;
};

void free_note(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<handshake_note*>(ptr);
}

int note_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, free_note);
  return index;
}

handshake_note* note_of(const SSL* ssl, bool create) {
  auto* note = static_cast<handshake_note*>(SSL_get_ex_data(ssl, note_index()));
  if (!note && create) {
    note = new handshake_note;
    if (SSL_set_ex_data(const_cast<SSL*>(ssl), note_index(), note) != 1) {
      delete note;
      return nullptr;
    }
  }
  return note;
}

std::string subject_of(X509* cert) {
  return cert ? security::detail::name_line(X509_get_subject_name(cert)) : "(none)";
}

std::string describe_refused_certificate(X509* cert, int err) {
  const std::string cert_text = "certificate '" + subject_of(cert) + "'";
  const std::string why = X509_verify_cert_error_string(err);
  switch (err) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return cert_text + " is not from the cluster CA (" + why + ")";
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return cert_text + " has expired (" + why + ")";
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return cert_text + " is not valid yet (" + why + ")";
    case X509_V_ERR_INVALID_PURPOSE:
      return cert_text + " may not be used for this (" + why +
             "): a client certificate cannot serve as a head or node";
    default:
      return cert_text + " was refused (" + why + ")";
  }
}

// OpenSSL's verdict is kept; the callback only records the first failure.
int verify_and_note(int preverify_ok, X509_STORE_CTX* ctx) {
  if (preverify_ok)
    return preverify_ok;
  auto* ssl = static_cast<SSL*>(
      X509_STORE_CTX_get_ex_data(ctx, SSL_get_ex_data_X509_STORE_CTX_idx()));
  if (auto* note = ssl ? note_of(ssl, true) : nullptr; note && note->verify_failure.empty())
    note->verify_failure = describe_refused_certificate(X509_STORE_CTX_get0_cert(ctx),
                                                        X509_STORE_CTX_get_error(ctx));
  return preverify_ok;
}

std::string peer_of(const SSL* ssl) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  int fd = SSL_get_fd(ssl);
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      addr.sin_family != AF_INET)
    return "an unknown peer";
  char ip[INET_ADDRSTRLEN] = {0};
  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(addr.sin_port));
}

// Why we ended a handshake with a fatal alert, from OpenSSL's error queue
// when the certificate check did not record anything.
std::string own_refusal_reason(const handshake_note* note, int alert) {
  if (note && !note->verify_failure.empty())
    return note->verify_failure;
  unsigned long e = ERR_peek_last_error();
  if (ERR_GET_LIB(e) == ERR_LIB_SSL) {
    switch (ERR_GET_REASON(e)) {
      case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
        return "the peer sent no certificate";
      case SSL_R_WRONG_VERSION_NUMBER:
      case SSL_R_HTTP_REQUEST:
      case SSL_R_UNKNOWN_PROTOCOL:
      case SSL_R_PACKET_LENGTH_TOO_LONG:
        return std::string("not a TLS client (") + ERR_reason_error_string(e) + ")";
      case SSL_R_NO_SHARED_CIPHER:
        return "the peer offered no cipher we accept (an anonymous TLS client without a "
               "certificate?) (no shared cipher)";
      default:
        if (const char* r = ERR_reason_error_string(e))
          return r;
    }
  }
  return std::string("handshake failed (alert: ") + SSL_alert_desc_string_long(alert) + ")";
}

// A peer that connected and closed without sending a byte (a port probe,
// like the one dtrain makes before each connect) is not worth a line.
bool closed_silently(const SSL* ssl) {
  unsigned long e = ERR_peek_last_error();
  return BIO_number_read(SSL_get_rbio(ssl)) == 0 && ERR_GET_LIB(e) == ERR_LIB_SSL &&
         ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

// Called by OpenSSL during every handshake. A failure shows as a fatal alert
// we send or receive, or (when OpenSSL sends none, e.g. to a peer that does
// not speak TLS) as the handshake's exit with an error on the queue.
void report_failure(const SSL* ssl, handshake_note* note, bool fatal_alert, bool we_refused,
                    int ret) {
  if (note)
    note->reported = true;
  if (we_refused && closed_silently(ssl))
    return;
  const std::string reason =
      we_refused ? own_refusal_reason(note, fatal_alert ? ret : SSL_AD_HANDSHAKE_FAILURE)
                 : std::string("the peer refused us (alert: ") + SSL_alert_desc_string_long(ret) +
                       "): it does not accept our certificate, or it trusts another CA";
  const std::string peer = note ? note->peer : peer_of(ssl);
  std::lock_guard<std::mutex> lock(diagnostics_mutex);
  if (SSL_is_server(ssl)) {
    std::fprintf(stderr, "%s: %s a TLS connection from %s: %s\n", diagnostics_label.c_str(),
                 we_refused ? "refused" : "lost", peer.c_str(), reason.c_str());
    std::fflush(stderr);
  } else {
    client_failures[peer] = (we_refused ? "we refused the peer: " : "") + reason;
  }
}

void on_handshake_event(const SSL* ssl, int where, int ret) {
  handshake_note* note = note_of(ssl, true);
  if (note && note->peer.empty())
    note->peer = peer_of(ssl);  // now: once the peer has gone there is no address
  if (where & SSL_CB_HANDSHAKE_DONE) {
    if (note)
      note->reported = true;  // established: later events are not handshake failures
    return;
  }
  const bool fatal_alert = (where & SSL_CB_ALERT) && (ret >> 8) == SSL3_AL_FATAL;
  const bool failed_exit =
      (where & SSL_CB_EXIT) && ret <= 0 && SSL_get_error(ssl, ret) == SSL_ERROR_SSL;
  if ((fatal_alert || failed_exit) && !(note && note->reported))
    report_failure(ssl, note, fatal_alert, failed_exit || (where & SSL_CB_WRITE) != 0, ret);
}

// libssl's definition of `name`. Asked of libssl itself first: RTLD_NEXT
// only searches the objects after libdtrain_actors in lookup order, and
// libssl comes before it in a program that names libssl first. Neither
// found while a wrapper is called means a libssl we cannot hand on to: the
// process stops (passing a call on to nothing would skip the peer check or
// crash later, far from the cause).
template <class Fn>
Fn next_definition(const char* name) {
  void* f = nullptr;
  if (void* ssl = dlopen("libssl.so.3", RTLD_LAZY | RTLD_NOLOAD)) {
    f = dlvsym(ssl, name, "OPENSSL_3.0.0");
    if (!f)
      f = dlsym(ssl, name);
    dlclose(ssl);  // only drops the reference RTLD_NOLOAD took
  }
  if (!f)
    f = dlvsym(RTLD_NEXT, name, "OPENSSL_3.0.0");
  if (!f)
    f = dlsym(RTLD_NEXT, name);
  if (!f) {
    std::fprintf(stderr, "dtrain: cannot find libssl's %s to hand a call on to; stopping\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

using set_verify_fn = void (*)(SSL_CTX*, int, SSL_verify_cb);

set_verify_fn real_set_verify() {
  static const set_verify_fn real = next_definition<set_verify_fn>("SSL_CTX_set_verify");
  return real;
}

} // namespace

bool tls_wrappers_in_effect() {
  // The object each name resolves to in global lookup, against the object
  // that holds this function (the same library as the wrappers).
  Dl_info own{};
  if (dladdr(reinterpret_cast<void*>(&tls_wrappers_in_effect), &own) == 0)
    return false;
  for (const char* name :
       {"SSL_read", "SSL_write", "SSL_accept", "SSL_connect", "SSL_CTX_set_verify"}) {
    Dl_info where{};
    void* f = dlsym(RTLD_DEFAULT, name);
    if (f == nullptr || dladdr(f, &where) == 0 || where.dli_fbase != own.dli_fbase)
      return false;
  }
  return true;
}

void enable_tls_diagnostics(const std::string& label) {
  if (!tls_wrappers_in_effect()) {
    std::fprintf(stderr,
                 "%s: warning: libssl comes before libdtrain_actors in this program's symbol "
                 "lookup, so dtrain's TLS wrappers are not in effect (refused handshakes are not "
                 "explained, and one failed connection can close others): link dtrain before "
                 "OpenSSL\n",
                 label.c_str());
    std::fflush(stderr);
  }
  if (const char* off = std::getenv("DTRAIN_TLS_DIAGNOSTICS"); off && std::string(off) == "0")
    return;  // CAF's own handshake, untouched (to rule dtrain's callbacks out)
  std::lock_guard<std::mutex> lock(diagnostics_mutex);
  diagnostics_label = label;
  diagnostics_on = !label.empty();
}

std::string take_tls_client_failure(const std::string& host, uint16_t port) {
  auto ip = net::resolve_ipv4(host);
  std::lock_guard<std::mutex> lock(diagnostics_mutex);
  auto it = client_failures.find((ip ? *ip : host) + ":" + std::to_string(port));
  if (it == client_failures.end())
    return "";
  std::string out = std::move(it->second);
  client_failures.erase(it);
  return out;
}

} // namespace dtrain::actors

// CAF's openssl session calls SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
// SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr) on the context of every
// connection. This definition takes the place of libssl's (the executable
// comes first in symbol lookup) and hands on to it, adding a verify callback
// that keeps OpenSSL's verdict and only records it, and an info callback
// that reports the failed handshake. Calls without SSL_VERIFY_PEER, with a
// callback of their own, or before enable_tls_diagnostics pass through.
//
// CAF 0.17.6 also calls SSL_read/SSL_write/SSL_accept/SSL_connect without
// clearing the thread's OpenSSL error queue first, which OpenSSL requires
// for SSL_get_error to be right. A connection that ends in an error (a port
// probe, a refused handshake, a peer gone without close_notify) leaves its
// errors there; the next SSL_get_error of any other connection served by
// the same thread reads them as its own failure, and CAF closes that one
// too: one port probe or one departing driver dropped the head's nodes.
// These four wrappers clear the queue first, as OpenSSL asks, and hand on.
#define DTRAIN_CLEARING_WRAPPER(name, params, args)                         \
  extern "C" int name params {                                             \
    using fn = int(*) params;                                              \
    static const fn real = dtrain::actors::next_definition<fn>(#name);     \
    ERR_clear_error();                                                     \
    return real args;                                                      \
  }
DTRAIN_CLEARING_WRAPPER(SSL_read, (SSL* ssl, void* buf, int num), (ssl, buf, num))
DTRAIN_CLEARING_WRAPPER(SSL_write, (SSL* ssl, const void* buf, int num), (ssl, buf, num))
DTRAIN_CLEARING_WRAPPER(SSL_accept, (SSL* ssl), (ssl))
DTRAIN_CLEARING_WRAPPER(SSL_connect, (SSL* ssl), (ssl))
#undef DTRAIN_CLEARING_WRAPPER

extern "C" void SSL_CTX_set_verify(SSL_CTX* ctx, int mode, SSL_verify_cb callback) {
  auto real = dtrain::actors::real_set_verify();  // never null: see next_definition
  if (dtrain::actors::diagnostics_on && (mode & SSL_VERIFY_PEER) && callback == nullptr) {
    real(ctx, mode, &dtrain::actors::verify_and_note);
    SSL_CTX_set_info_callback(ctx, &dtrain::actors::on_handshake_event);
    return;
  }
  real(ctx, mode, callback);
}
