// Verifying certificates against the cluster CA, checking a process's own
// key, and identity proofs (creating and reading are in certificates.cpp).
#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/security/certificates.hpp"
#include "dtrain/security/openssl_util.hpp"

namespace dtrain::security {

using detail::drain_errors;
using detail::ossl_ptr;

namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// "a head or node certificate"
std::string roles_phrase(const std::vector<role>& roles) {
  std::string out = "a ";  // every role's name starts with a consonant
  for (size_t i = 0; i < roles.size(); ++i)
    out += (i == 0 ? "" : i + 1 == roles.size() ? " or " : ", ") + std::string(role_name(roles[i]));
  return out + " certificate";
}

result<ossl_ptr<X509>> load_cluster_ca(const std::string& ca_file) {
  auto text = detail::read_text(ca_file);
  if (!text)
    return text.error().with_context("the cluster CA");
  auto certs = detail::parse_pem_certificates(*text);
  if (!certs)
    return certs.error().with_context(ca_file);
  ossl_ptr<X509> ca = std::move(certs->front());
  if ((X509_get_extension_flags(ca.get()) & EXFLAG_CA) == 0)
    return invalid_argument(ca_file + " holds " + quoted(detail::name_line(X509_get_subject_name(ca.get()))) +
                            ", which is not a CA certificate (no basicConstraints CA:TRUE)");
  return ca;
}

// Why X509_verify_cert refused, in words that name both sides; OpenSSL's own
// reason follows in parentheses for a search engine.
std::string chain_failure(X509_STORE_CTX* ctx, const certificate_info& leaf, X509* ca) {
  const int err = X509_STORE_CTX_get_error(ctx);
  const std::string openssl = " (" + std::string(X509_verify_cert_error_string(err)) + ")";
  const std::string ca_name = detail::name_line(X509_get_subject_name(ca));
  X509* at = X509_STORE_CTX_get_current_cert(ctx);
  const bool at_ca = at != nullptr && X509_cmp(at, ca) == 0;
  const std::string who = at_ca ? "the cluster CA " + quoted(ca_name) : "certificate " + quoted(leaf.subject);
  switch (err) {
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return "certificate " + quoted(leaf.subject) + " is not signed by the cluster CA " +
             quoted(ca_name) + " (it was issued by " + quoted(leaf.issuer) +
             (leaf.issuer == ca_name ? ", another CA of the same name" : "") + ")" + openssl;
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return who + " expired on " + format_utc(at ? detail::describe(at).not_after : leaf.not_after) +
             openssl;
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return who + " is not valid before " +
             format_utc(at ? detail::describe(at).not_before : leaf.not_before) + openssl;
    default:
      return who + " does not verify against the cluster CA " + quoted(ca_name) + ": " +
             X509_verify_cert_error_string(err);
  }
}

result<certificate_info> verify_as(const std::string& cert_pem, const std::string& ca_file,
                                   const std::vector<role>& allowed, const char* needed_by) {
  DTRAIN_ASSIGN_OR_RETURN(auto certs, detail::parse_pem_certificates(cert_pem));
  DTRAIN_ASSIGN_OR_RETURN(ossl_ptr<X509> ca, load_cluster_ca(ca_file));
  X509* leaf = certs.front().get();
  certificate_info info = detail::describe(leaf);

  ossl_ptr<X509_STORE> store(X509_STORE_new());
  ossl_ptr<STACK_OF(X509)> chain(sk_X509_new_null());
  for (size_t i = 1; chain && i < certs.size(); ++i)
    if (sk_X509_push(chain.get(), certs[i].get()) > 0)
      certs[i].release();  // owned by the stack now
  ossl_ptr<X509_STORE_CTX> ctx(X509_STORE_CTX_new());
  if (!store || !chain || !ctx || X509_STORE_add_cert(store.get(), ca.get()) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), leaf, chain.get()) != 1)
    return status(error_code::internal, "cannot set up certificate verification: " + drain_errors());
  const int verified = X509_verify_cert(ctx.get());
  ERR_clear_error();
  if (verified != 1)
    return invalid_argument(chain_failure(ctx.get(), info, ca.get()));

  const std::string subject = "certificate " + quoted(info.subject);
  if (info.is_ca)
    return invalid_argument(subject + " is a CA certificate, not the certificate of a process");
  if (allowed.empty() && !info.has_role)
    return info;  // any role allowed, and none needed
  if (!info.has_role)
    return invalid_argument(subject + " carries no dtrain role (no subjectAltName "
                            "urn:dtrain:role:head|node|client)");
  if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), info.role_) == allowed.end())
    return invalid_argument(subject + " is a " + role_name(info.role_) + " certificate; " +
                            (needed_by ? std::string(needed_by) + " needs "
                                       : std::string("this needs ")) +
                            roles_phrase(allowed));
  // Our certificates always match; a hand-made one might not, and TLS would
  // then fail with a reason far from the cause.
  if (info.role_ != role::client && !info.server_auth)
    return invalid_argument(subject + " is a " + role_name(info.role_) +
                            " certificate without extendedKeyUsage serverAuth");
  if (!info.client_auth)
    return invalid_argument(subject + " lacks extendedKeyUsage clientAuth");
  return info;
}

bool has_newline(const std::string& s) { return s.find('\n') != std::string::npos; }

std::string signed_text(const std::string& purpose, const std::string& challenge) {
  return "dtrain-identity-v1\n" + purpose + "\n" + challenge;
}

} // namespace

result<certificate_info> verify_certificate(const std::string& cert_pem, const std::string& ca_file,
                                            const std::vector<role>& allowed) {
  return verify_as(cert_pem, ca_file, allowed, nullptr);
}

status check_key_file(const std::string& key_path, const std::string& cert_pem) {
  struct stat st {};
  if (::stat(key_path.c_str(), &st) != 0)
    return os_error("cannot read the key", key_path, errno);
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return invalid_argument("key " + key_path + " is accessible by group or others (mode " + mode +
                            "): chmod 600 " + key_path);
  }
  DTRAIN_ASSIGN_OR_RETURN(std::string key_text, detail::read_text(key_path));
  auto key = detail::parse_private_key(key_text);
  if (!key)
    return key.error().with_context(key_path);
  auto certs = detail::parse_pem_certificates(cert_pem);
  if (!certs)
    return certs.error().with_context("the certificate");
  if (X509_check_private_key(certs->front().get(), key->get()) != 1) {
    ERR_clear_error();
    return invalid_argument("key " + key_path + " does not match certificate " +
                            quoted(detail::name_line(X509_get_subject_name(certs->front().get()))));
  }
  return status::ok();
}

result<certificate_info> check_own_files(const tls_files& files, role expected) {
  if (!files.complete())
    return invalid_argument(std::string("TLS needs a certificate, its key and the cluster CA; ") +
                            (files.certificate.empty() ? "the certificate"
                             : files.key.empty()       ? "the key"
                                                       : "the CA") +
                            " is missing");
  DTRAIN_ASSIGN_OR_RETURN(std::string pem, detail::read_text(files.certificate));
  const std::string needed_by = std::string("a ") + role_name(expected);
  auto info = verify_as(pem, files.ca, {expected}, needed_by.c_str());
  if (!info)
    return info.error().with_context(files.certificate);
  DTRAIN_RETURN_IF_ERROR(check_key_file(files.key, pem));
  return info;
}

result<identity_proof> prove_identity(const tls_files& files, const std::string& purpose,
                                      const std::string& challenge) {
  if (has_newline(purpose))
    return invalid_argument("an identity proof's purpose holds no newline");
  if (files.certificate.empty() || files.key.empty())
    return invalid_argument("an identity proof needs a certificate and its key");
  identity_proof proof;
  DTRAIN_ASSIGN_OR_RETURN(proof.certificate_pem, detail::read_text(files.certificate));
  DTRAIN_ASSIGN_OR_RETURN(std::string key_text, detail::read_text(files.key));
  auto key = detail::parse_private_key(key_text);
  if (!key)
    return key.error().with_context(files.key);

  const std::string text = signed_text(purpose, challenge);
  const auto* data = reinterpret_cast<const unsigned char*>(text.data());
  ossl_ptr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  size_t len = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key->get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &len, data, text.size()) != 1)
    return status(error_code::internal, "cannot sign with " + files.key + ": " + drain_errors());
  std::vector<unsigned char> sig(len);
  if (EVP_DigestSign(ctx.get(), sig.data(), &len, data, text.size()) != 1)
    return status(error_code::internal, "cannot sign with " + files.key + ": " + drain_errors());
  proof.signature = detail::to_hex(sig.data(), len);
  return proof;
}

result<certificate_info> check_identity(const identity_proof& proof, const std::string& purpose,
                                        const std::string& challenge, const std::string& ca_file,
                                        const std::vector<role>& allowed) {
  if (has_newline(purpose))
    return invalid_argument("an identity proof's purpose holds no newline");
  DTRAIN_ASSIGN_OR_RETURN(certificate_info info,
                          verify_certificate(proof.certificate_pem, ca_file, allowed));
  const std::string refused = "the identity proof of " + quoted(info.subject);
  std::vector<unsigned char> sig;
  if (proof.signature.empty() || !detail::from_hex(proof.signature, sig))
    return invalid_argument(refused + " has a signature that is not hex");
  DTRAIN_ASSIGN_OR_RETURN(auto certs, detail::parse_pem_certificates(proof.certificate_pem));
  const std::string text = signed_text(purpose, challenge);
  ossl_ptr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  const bool set_up = ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr,
                                                  X509_get0_pubkey(certs.front().get())) == 1;
  const int ok = set_up ? EVP_DigestVerify(ctx.get(), sig.data(), sig.size(),
                                           reinterpret_cast<const unsigned char*>(text.data()),
                                           text.size())
                        : -1;
  ERR_clear_error();
  if (!set_up)
    return status(error_code::internal, refused + ": cannot set up verification");
  if (ok != 1)
    return invalid_argument(refused + " does not verify: signed by another key, or for another "
                            "purpose or challenge");
  return info;
}

} // namespace dtrain::security
