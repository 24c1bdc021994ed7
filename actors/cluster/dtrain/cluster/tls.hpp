#pragma once

#include <cstdint>
#include <string>

#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"

/// Mutual TLS between dtrain processes: which files a process uses, the
/// checks it runs on them before it starts, and the diagnostics that make
/// a refused TLS handshake visible.
///
/// CAF's openssl module verifies the peer's chain against the CA but no
/// host name or role, and falls back to anonymous TLS when no certificate
/// is configured. So dtrain never loads it without a complete set of files,
/// and checks roles itself, above TLS (see head_actor.hpp, identity).
namespace dtrain::actors {

/// A process's TLS identity: its files (all empty: plain remoting, which
/// is allowed on loopback only), what its certificate says and the
/// fingerprint of the CA it trusts, for messages.
struct tls_identity {
  security::tls_files files;
  security::role role_ = security::role::client;
  std::string subject;         // our certificate's subject
  std::string ca_fingerprint;  // SHA-256 of the CA certificate we trust
  bool enabled() const { return files.complete(); }
};

/// The files a process of role `r` uses: `given` when complete; an error
/// naming what is missing when some but not all are given; else the
/// defaults in $DTRAIN_HOME/tls (security::default_tls_files), with the
/// same rule; none at all: an identity with TLS off. Files in use are
/// checked first (security::check_own_files: expired, wrong role, key
/// mismatch, readable key), so a process reports its own problems instead
/// of failing in a handshake.
result<tls_identity> load_tls_identity(const security::tls_files& given, security::role r);

/// Plain remoting to or from a non-loopback address is refused: the error
/// names `what` ("--bind 10.0.0.2", "the head at 10.0.0.2:4000") and
/// says how to make certificates.
status require_tls_off_loopback(const tls_identity& id, const std::string& host,
                                const std::string& what);

/// A failed TLS connect to `address`, explained: what this side saw
/// (`seen`, from take_tls_client_failure below; may be empty), the likely
/// causes, and our certificate's subject and CA fingerprint.
std::string explain_tls_connect_failure(const tls_identity& id, const std::string& address,
                                        const std::string& caf_error, const std::string& seen);

/// Makes refused TLS handshakes visible. After this call, every TLS
/// connection that fails in its handshake on the server side prints one
/// line to stderr, "<label>: refused a TLS connection from HOST:PORT:
/// <reason>", where the reason names the peer's certificate and what is
/// wrong with it (not from the cluster CA, expired), or that the peer sent
/// no certificate, or that it does not speak TLS. Client-side failures are
/// recorded for explain_tls_connect_failure. Works by wrapping
/// SSL_CTX_set_verify, which CAF's openssl session calls for every
/// connection (tls.cpp); the peer's verdict is unchanged. Thread-safe.
void enable_tls_diagnostics(const std::string& label);

/// Whether this process's SSL_read/SSL_write/SSL_accept/SSL_connect and
/// SSL_CTX_set_verify are dtrain's wrappers (tls.cpp): the library that
/// defines them must come before libssl in symbol lookup (a program that
/// links libssl itself ahead of libdtrain_actors gets libssl's, and then
/// one refused handshake can drop other connections). enable_tls_diagnostics
/// warns on stderr when they are not.
bool tls_wrappers_in_effect();

/// The last handshake failure this process saw as a client towards
/// host:port ("" if none), forgotten once taken.
std::string take_tls_client_failure(const std::string& host, uint16_t port);

} // namespace dtrain::actors
