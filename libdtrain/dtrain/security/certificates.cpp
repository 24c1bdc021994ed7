// Creating and reading cluster certificates (verification, key checks and
// identity proofs are in verification.cpp).
#include "dtrain/security/certificates.hpp"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/security/openssl_util.hpp"

namespace dtrain::security {

using detail::drain_errors;
using detail::ossl_ptr;

const char* role_name(role r) {
  switch (r) {
    case role::head: return "head";
    case role::node: return "node";
    case role::client: return "client";
  }
  return "unknown";
}

result<role> parse_role(const std::string& name) {
  for (role r : {role::head, role::node, role::client})
    if (name == role_name(r))
      return r;
  return invalid_argument("unknown role '" + name + "' (head, node or client)");
}

std::string default_tls_dir() { return dtrain_home() + "/tls"; }

tls_files default_tls_files(role r, const std::string& dir) {
  auto existing = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? path : std::string();
  };
  const std::string stem = dir + "/" + role_name(r);
  return {existing(stem + ".pem"), existing(stem + "-key.pem"), existing(dir + "/ca.pem")};
}

result<certificate_info> parse_certificate(const std::string& pem) {
  DTRAIN_ASSIGN_OR_RETURN(auto certs, detail::parse_pem_certificates(pem));
  return detail::describe(certs.front().get());
}

result<certificate_info> read_certificate(const std::string& pem_path) {
  DTRAIN_ASSIGN_OR_RETURN(std::string text, detail::read_text(pem_path));
  auto info = parse_certificate(text);
  if (!info)
    return info.error().with_context(pem_path);
  return info;
}

std::string random_hex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  // Without entropy there is nothing safe to return: a predictable challenge
  // or name would be worse than stopping.
  DTRAIN_CHECK(bytes == 0 || RAND_bytes(buf.data(), static_cast<int>(bytes)) == 1,
               "RAND_bytes failed: no entropy source");
  return detail::to_hex(buf.data(), buf.size());
}

std::string sha256_hex(const void* data, size_t size) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  DTRAIN_CHECK(EVP_Digest(data, size, md, &n, EVP_sha256(), nullptr) == 1, "EVP_Digest failed");
  return detail::to_hex(md, n);
}

std::string hmac_sha256_hex(const std::string& key, const std::string& message) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  const unsigned char* mac =
      HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), md, &n);
  DTRAIN_CHECK(mac != nullptr, "HMAC-SHA256 failed");
  return detail::to_hex(md, n);
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

result<std::string> sha256_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return os_error("cannot open", path, errno);
  ossl_ptr<EVP_MD_CTX> ctx(EVP_MD_CTX_new());
  bool ok = ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1;
  char buf[65536];
  size_t n = 0;
  while (ok && (n = std::fread(buf, 1, sizeof buf, f)) > 0)
    ok = EVP_DigestUpdate(ctx.get(), buf, n) == 1;
  const bool read_failed = std::ferror(f) != 0;
  std::fclose(f);
  if (read_failed)
    return io_error("cannot read " + path);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!ok || EVP_DigestFinal_ex(ctx.get(), md, &len) != 1)
    return status(error_code::internal, "SHA-256 of " + path + ": " + drain_errors());
  return detail::to_hex(md, len);
}

std::string format_utc(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// ---- creating ----------------------------------------------------------------

namespace {

status openssl_failure(const std::string& what) {
  return status(error_code::internal, what + ": " + drain_errors());
}

// The TLS directory: its parents as usual, itself 0700 (the keys in it are
// 0600 anyway; the mode keeps others from even listing the names).
status make_private_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(parent_of(dir), ec);
  if (ec)
    return io_error("cannot create directory " + parent_of(dir) + ": " + ec.message());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return os_error("cannot create directory", dir, errno);
  return status::ok();
}

status refuse_existing(const std::vector<std::string>& paths, const std::string& consequence) {
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0)
      return invalid_argument(path + " already exists" + consequence +
                              "; force (--force) replaces it");
  }
  return status::ok();
}

result<ossl_ptr<EVP_PKEY>> new_key() {
  ossl_ptr<EVP_PKEY> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key)
    return openssl_failure("cannot generate an ECDSA P-256 key");
  return key;
}

status add_extension(X509* cert, X509V3_CTX* ctx, int nid, const char* value) {
  ossl_ptr<X509_EXTENSION> ext(X509V3_EXT_nconf_nid(nullptr, ctx, nid, value));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1)
    return openssl_failure(std::string("cannot add the extension ") + OBJ_nid2sn(nid) + "=" + value);
  return status::ok();
}

// The role URI and the hosts as subjectAltNames. Built as GENERAL_NAMEs,
// not as a configuration string, so that a host cannot smuggle in a name
// of another kind ("a,URI:urn:dtrain:role:head").
status add_alt_names(X509* cert, const role* r, const std::vector<std::string>& hosts) {
  ossl_ptr<GENERAL_NAMES> names(sk_GENERAL_NAME_new_null());
  auto push = [&](int type, const std::string& value) {
    GENERAL_NAME* g = a2i_GENERAL_NAME(nullptr, nullptr, nullptr, type, value.c_str(), 0);
    return g != nullptr && sk_GENERAL_NAME_push(names.get(), g) > 0;
  };
  if (r != nullptr && !push(GEN_URI, std::string("urn:dtrain:role:") + role_name(*r)))
    return openssl_failure("cannot encode the role");
  for (const std::string& host : hosts) {
    ossl_ptr<ASN1_OCTET_STRING> ip(a2i_IPADDRESS(host.c_str()));
    ERR_clear_error();  // a host name is not an IP address: not an error
    bool dns_ok = !host.empty() && host.size() < 254;
    for (char c : host)
      dns_ok = dns_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
                          c == '_' || c == '*');
    if (!ip && !dns_ok)
      return invalid_argument("host '" + host + "' is neither an IP address nor a DNS name");
    if (!push(ip ? GEN_IPADD : GEN_DNS, host))
      return openssl_failure("cannot encode host '" + host + "'");
  }
  if (sk_GENERAL_NAME_num(names.get()) == 0)
    return status::ok();
  if (X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, X509V3_ADD_DEFAULT) != 1)
    return openssl_failure("cannot add the subjectAltNames");
  return status::ok();
}

struct signer {
  X509* cert;     // nullptr: self-signed
  EVP_PKEY* key;
};

// A certificate for `key` named CN=name,O=dtrain, valid as asked, with the
// extensions of a CA (role == nullptr) or of a leaf of *role, signed by
// `by`.
result<ossl_ptr<X509>> build_certificate(const std::string& name, EVP_PKEY* key,
                                         const validity& valid, const role* r,
                                         const std::vector<std::string>& hosts, signer by) {
  if (name.empty() || name.size() > 64)
    return invalid_argument("the name must have 1 to 64 characters (a common name), not " +
                            std::to_string(name.size()));
  if (valid.days <= 0)
    return invalid_argument("days must be positive, not " + std::to_string(valid.days));
  ossl_ptr<X509> cert(X509_new());
  unsigned char serial[16];
  if (!cert || RAND_bytes(serial, sizeof serial) != 1)
    return openssl_failure("cannot start a certificate");
  // 128 random bits, read as unsigned so the serial is positive (RFC 5280);
  // zero, which it forbids, has odds of 2^-128 and is made one.
  ossl_ptr<BIGNUM> bn(BN_bin2bn(serial, sizeof serial, nullptr));
  if (bn && BN_is_zero(bn.get()))
    BN_one(bn.get());
  X509_NAME* subject = X509_get_subject_name(cert.get());
  const auto* utf8 = reinterpret_cast<const unsigned char*>(name.c_str());
  if (X509_set_version(cert.get(), X509_VERSION_3) != 1 || !bn ||
      !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) ||
      !X509_gmtime_adj(X509_getm_notBefore(cert.get()), valid.not_before_offset_s) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()),
                       valid.not_before_offset_s + int64_t{valid.days} * 86400) ||
      X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, utf8, -1, -1, 0) != 1 ||
      X509_NAME_add_entry_by_txt(subject, "O", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>("dtrain"), -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), by.cert ? X509_get_subject_name(by.cert) : subject) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1)
    return openssl_failure("cannot fill in the certificate of '" + name + "'");

  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, by.cert ? by.cert : cert.get(), cert.get(), nullptr, nullptr, 0);
  const bool ca = r == nullptr;
  const bool server = r != nullptr && *r != role::client;
  // The subject key identifier goes first: the authority key identifier of
  // a self-signed CA is read from it.
  DTRAIN_RETURN_IF_ERROR(add_extension(cert.get(), &ctx, NID_subject_key_identifier, "hash"));
  DTRAIN_RETURN_IF_ERROR(
      add_extension(cert.get(), &ctx, NID_authority_key_identifier, "keyid:always"));
  DTRAIN_RETURN_IF_ERROR(add_extension(cert.get(), &ctx, NID_basic_constraints,
                                       ca ? "critical,CA:TRUE" : "CA:FALSE"));
  DTRAIN_RETURN_IF_ERROR(add_extension(cert.get(), &ctx, NID_key_usage,
                                       ca ? "critical,keyCertSign,cRLSign"
                                          : "critical,digitalSignature"));
  if (!ca)
    DTRAIN_RETURN_IF_ERROR(add_extension(cert.get(), &ctx, NID_ext_key_usage,
                                         server ? "serverAuth,clientAuth" : "clientAuth"));
  DTRAIN_RETURN_IF_ERROR(add_alt_names(cert.get(), r, hosts));
  if (X509_sign(cert.get(), by.key ? by.key : key, EVP_sha256()) <= 0)
    return openssl_failure("cannot sign the certificate of '" + name + "'");
  return cert;
}

result<std::string> key_pem(EVP_PKEY* key) {
  ossl_ptr<BIO> out(BIO_new(BIO_s_mem()));
  if (!out || PEM_write_bio_PrivateKey(out.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return openssl_failure("cannot encode the private key");
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// The key first (0600 from its creation on), then the certificate: a crash
// between them leaves a key without a certificate, never the reverse.
status write_pair(const std::string& cert_path, const std::string& cert_pem,
                  const std::string& key_path, const std::string& key_text) {
  DTRAIN_RETURN_IF_ERROR(write_file_atomically(key_path, key_text.data(), key_text.size(),
                                               durability::file_and_directory, 0600));
  return write_file_atomically(cert_path, cert_pem.data(), cert_pem.size(),
                               durability::file_and_directory, 0644);
}

} // namespace

result<certificate_info> create_ca(const ca_request& r) {
  const std::string cert_path = r.dir + "/ca.pem", key_path = r.dir + "/ca-key.pem";
  if (!r.force)
    DTRAIN_RETURN_IF_ERROR(refuse_existing(
        {cert_path, key_path}, " (a new CA orphans every certificate the old one signed)"));
  DTRAIN_ASSIGN_OR_RETURN(auto key, new_key());
  DTRAIN_ASSIGN_OR_RETURN(auto cert,
                          build_certificate(r.name, key.get(), r.valid, nullptr, {}, {nullptr, nullptr}));
  DTRAIN_ASSIGN_OR_RETURN(std::string key_text, key_pem(key.get()));
  certificate_info info = detail::describe(cert.get());
  DTRAIN_RETURN_IF_ERROR(make_private_dir(r.dir));
  DTRAIN_RETURN_IF_ERROR(write_pair(cert_path, info.pem, key_path, key_text));
  return info;
}

namespace {

struct loaded_ca {
  ossl_ptr<X509> cert;
  ossl_ptr<EVP_PKEY> key;
};

result<loaded_ca> load_ca(const std::string& dir) {
  const std::string cert_path = dir + "/ca.pem", key_path = dir + "/ca-key.pem";
  auto cert_text = detail::read_text(cert_path);
  if (!cert_text)
    return cert_text.error().with_context("no cluster CA in " + dir +
                                          " (create one with `dtrain cert ca create`)");
  auto certs = detail::parse_pem_certificates(*cert_text);
  if (!certs)
    return certs.error().with_context(cert_path);
  loaded_ca ca{std::move(certs->front()), nullptr};
  if ((X509_get_extension_flags(ca.cert.get()) & EXFLAG_CA) == 0)
    return invalid_argument(cert_path + " is not a CA certificate (no basicConstraints CA:TRUE)");
  DTRAIN_ASSIGN_OR_RETURN(std::string key_text, detail::read_text(key_path));
  auto key = detail::parse_private_key(key_text);
  if (!key)
    return key.error().with_context(key_path);
  ca.key = std::move(*key);
  if (X509_check_private_key(ca.cert.get(), ca.key.get()) != 1) {
    ERR_clear_error();
    return invalid_argument(key_path + " is not the key of " + cert_path);
  }
  return ca;
}

status check_stem(const std::string& stem) {
  if (stem.empty() || stem[0] == '.' || stem.find('/') != std::string::npos || stem == "ca")
    return invalid_argument("'" + stem + "' cannot name certificate files (no '/', no leading "
                            "'.', not 'ca')");
  return status::ok();
}

} // namespace

result<created_certificate> create_certificate(const certificate_request& r) {
  const std::string name =
      !r.name.empty() ? r.name : std::string(role_name(r.role_)) + "@" + net::host_name();
  const std::string stem =
      !r.file_stem.empty() ? r.file_stem : !r.name.empty() ? r.name : role_name(r.role_);
  DTRAIN_RETURN_IF_ERROR(check_stem(stem));
  created_certificate out;
  out.certificate_path = r.out_dir + "/" + stem + ".pem";
  out.key_path = r.out_dir + "/" + stem + "-key.pem";
  if (!r.force)
    DTRAIN_RETURN_IF_ERROR(refuse_existing({out.certificate_path, out.key_path}, ""));
  DTRAIN_ASSIGN_OR_RETURN(loaded_ca ca, load_ca(r.ca_dir));
  DTRAIN_ASSIGN_OR_RETURN(auto key, new_key());
  DTRAIN_ASSIGN_OR_RETURN(auto cert, build_certificate(name, key.get(), r.valid, &r.role_, r.hosts,
                                                       {ca.cert.get(), ca.key.get()}));
  DTRAIN_ASSIGN_OR_RETURN(std::string key_text, key_pem(key.get()));
  out.info = detail::describe(cert.get());
  DTRAIN_RETURN_IF_ERROR(make_private_dir(r.out_dir));
  DTRAIN_RETURN_IF_ERROR(write_pair(out.certificate_path, out.info.pem, out.key_path, key_text));
  return out;
}

} // namespace dtrain::security
