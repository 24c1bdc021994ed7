#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/security/tls_files.hpp"

/// A cluster's certificate authority and the certificates of its processes
/// (OpenSSL's libcrypto; CAF-free). `dtrain cert` is a thin layer over this.
///
/// Every certificate carries its role (head, node or client) as a URI
/// subjectAltName "urn:dtrain:role:<role>", and an extendedKeyUsage that
/// matches what the role does on the wire: head and node certificates are
/// TLS servers and clients (serverAuth, clientAuth), a client (driver)
/// certificate is a TLS client only (clientAuth), so OpenSSL itself refuses
/// it as a server. Keys are ECDSA P-256, written with mode 0600.
namespace dtrain::security {

enum class role { head, node, client };

const char* role_name(role r);                      // "head", "node", "client"
result<role> parse_role(const std::string& name);   // errors name the word

/// $DTRAIN_HOME/tls: where `dtrain cert` writes by default.
std::string default_tls_dir();

/// The default files of a process of role `r` in `dir`: ca.pem, and
/// <role>.pem / <role>-key.pem. Only files that exist are filled in, so
/// complete() says whether the defaults are usable and empty() whether
/// there are none at all.
tls_files default_tls_files(role r, const std::string& dir = default_tls_dir());

/// What a certificate says about itself.
struct certificate_info {
  std::string subject;       // one line, "CN=node-1,O=dtrain"
  std::string common_name;
  std::string issuer;        // one line
  bool has_role = false;
  role role_ = role::client; // valid when has_role
  bool is_ca = false;
  bool server_auth = false;  // extendedKeyUsage allows TLS server (or has no EKU)
  bool client_auth = false;  // extendedKeyUsage allows TLS client (or has no EKU)
  std::vector<std::string> hosts;  // DNS and IP subjectAltNames
  std::time_t not_before = 0;
  std::time_t not_after = 0;
  std::string fingerprint;   // SHA-256 of the DER, lowercase hex
  std::string serial;        // hex
  std::string pem;           // the leaf certificate, PEM
};

/// The first certificate of a PEM file or string. Errors name the file and
/// say what is wrong (no such file, not a PEM certificate).
result<certificate_info> read_certificate(const std::string& pem_path);
result<certificate_info> parse_certificate(const std::string& pem);

/// Validity window for new certificates: from now + not_before_offset_s
/// for `days` days. Tests make expired certificates with a negative offset.
struct validity {
  int days = 825;
  int64_t not_before_offset_s = -300;  // a little slack for clock skew
};

/// Creates a self-signed CA in `dir` (ca.pem, ca-key.pem; the directory is
/// made with mode 0700). Refuses to overwrite an existing CA unless
/// `force` (an overwritten CA orphans every certificate it signed).
struct ca_request {
  std::string dir = default_tls_dir();
  std::string name = "dtrain cluster CA";
  validity valid{3650, -300};
  bool force = false;
};
result<certificate_info> create_ca(const ca_request& r);

/// Creates a key and a certificate of `role_` signed by the CA in ca_dir,
/// written to out_dir as <file_stem>.pem and <file_stem>-key.pem
/// (file_stem: the name, else the role's name). `hosts` become DNS/IP
/// subjectAltNames (informational: CAF does not check host names).
/// Refuses to overwrite existing files unless `force`.
struct certificate_request {
  role role_ = role::client;
  std::string name;            // common name; empty: "<role>@<host name>"
  std::string ca_dir = default_tls_dir();
  std::string out_dir = default_tls_dir();
  std::string file_stem;       // empty: the name if given, else the role's name
  std::vector<std::string> hosts;
  validity valid;
  bool force = false;
};
struct created_certificate {
  certificate_info info;
  std::string certificate_path;
  std::string key_path;
};
result<created_certificate> create_certificate(const certificate_request& r);

/// Checks a certificate (PEM) against the CA certificate in ca_file: signed
/// by that CA, inside its validity window now, and of one of the `allowed`
/// roles (an empty list allows any role, and no role). A certificate that
/// is refused gives error_code::invalid_argument naming its subject and
/// the reason: "is not signed by the cluster CA 'X' (it was issued by 'Y')",
/// "expired on 2026-11-20 10:00:00 UTC", "is a client certificate; this
/// needs a node certificate", "carries no dtrain role", "is a CA
/// certificate" (a CA is never a process's identity), and a role whose
/// extendedKeyUsage does not fit it (hand-made certificates). A cert_pem
/// that does not decode gives corrupt_data; a ca_file that cannot be read
/// not_found or io_error, one that holds no CA invalid_argument naming it.
/// Blocks on reading ca_file only; thread-safe.
result<certificate_info> verify_certificate(const std::string& cert_pem, const std::string& ca_file,
                                            const std::vector<role>& allowed);

/// A key and certificate that belong together and are usable by a process
/// of `expected` role: the checks of verify_certificate plus "the key
/// matches the certificate" and "the key file is not readable by others".
/// What `dtrain cert check` and every dtrain process run on their own
/// files before they use them.
result<certificate_info> check_own_files(const tls_files& files, role expected);

/// The key half of check_own_files: the key file at `key_path` is not
/// accessible by group or others (the error says "chmod 600 PATH"), is an
/// unencrypted PEM private key, and matches the leaf of `cert_pem`.
status check_key_file(const std::string& key_path, const std::string& cert_pem);

/// Proof that the caller holds the private key of a certificate, bound to
/// a challenge (a fresh random string chosen by the verifier) and to a
/// purpose (e.g. "join head-3f2a"), so that a signature made for one
/// purpose cannot be replayed for another. A purpose holds no newline (it
/// would make purpose and challenge ambiguous); both calls refuse one.
struct identity_proof {
  std::string certificate_pem;
  std::string signature;  // over "dtrain-identity-v1\n" + purpose + "\n" + challenge;
                          // ECDSA with SHA-256, DER, lowercase hex
};
result<identity_proof> prove_identity(const tls_files& files, const std::string& purpose,
                                      const std::string& challenge);
/// Checks a proof: verify_certificate(proof.certificate_pem, ca_file,
/// allowed) and the signature over the same purpose and challenge. Errors
/// name the subject and the reason.
result<certificate_info> check_identity(const identity_proof& proof, const std::string& purpose,
                                        const std::string& challenge, const std::string& ca_file,
                                        const std::vector<role>& allowed);

/// `bytes` cryptographically random bytes, as lowercase hex.
std::string random_hex(size_t bytes);

/// SHA-256, lowercase hex.
std::string sha256_hex(const void* data, size_t size);
result<std::string> sha256_file(const std::string& path);

/// HMAC-SHA256 of `message` keyed by `key` (OpenSSL's libcrypto), lowercase hex.
std::string hmac_sha256_hex(const std::string& key, const std::string& message);

/// Whether `a` and `b` are equal, in time that depends only on their lengths
/// (for MACs and secrets: where they first differ stays hidden).
bool constant_time_equal(const std::string& a, const std::string& b);

/// "2026-11-20 10:00:00 UTC"
std::string format_utc(std::time_t t);

} // namespace dtrain::security
