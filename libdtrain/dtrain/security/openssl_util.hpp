#pragma once

// Internal to dtrain/security: owning pointers for OpenSSL's objects and the
// conversions certificates.cpp and verification.cpp share. Not installed,
// not for other components (they use certificates.hpp).
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::security::detail {

struct openssl_free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
  void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(ASN1_STRING* p) const { ASN1_STRING_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
  void operator()(STACK_OF(X509)* p) const { sk_X509_pop_free(p, X509_free); }
};
template <class T>
using ossl_ptr = std::unique_ptr<T, openssl_free>;

/// The reasons in OpenSSL's (thread-local) error queue, which this empties:
/// "error:...; error:...", or "no detail from OpenSSL".
std::string drain_errors();

/// A whole file, at most `limit` bytes; errors name the path.
result<std::string> read_text(const std::string& path, size_t limit = 1 << 20);

/// Every certificate of a PEM text, in order (leaf first for a chain);
/// corrupt_data when there is none or one does not decode.
result<std::vector<ossl_ptr<X509>>> parse_pem_certificates(const std::string& pem);

/// An unencrypted PEM private key; never prompts for a passphrase.
result<ossl_ptr<EVP_PKEY>> parse_private_key(const std::string& pem);

/// What certificate_info holds, read from a parsed certificate.
certificate_info describe(X509* cert);

/// "CN=node-1,O=dtrain": the entries in their order, short names.
std::string name_line(const X509_NAME* name);

/// Lowercase hex of bytes, and back (false on odd length or a non-hex digit).
std::string to_hex(const unsigned char* data, size_t n);
bool from_hex(const std::string& hex, std::vector<unsigned char>& out);

} // namespace dtrain::security::detail
