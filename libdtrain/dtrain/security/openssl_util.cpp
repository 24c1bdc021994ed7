#include "dtrain/security/openssl_util.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include "dtrain/core/files.hpp"

namespace dtrain::security::detail {

std::string drain_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

result<std::string> read_text(const std::string& path, size_t limit) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return os_error("cannot open", path, errno);
  std::string text;
  char buf[8192];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() <= limit)
    text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed)
    return io_error("cannot read " + path);
  if (text.size() > limit)
    return corrupt_data(path + " is larger than " + std::to_string(limit) +
                        " bytes: not a PEM file");
  return text;
}

result<std::vector<ossl_ptr<X509>>> parse_pem_certificates(const std::string& pem) {
  ossl_ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<ossl_ptr<X509>> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr))
    certs.emplace_back(cert);
  // The loop ends on end of input (PEM_R_NO_START_LINE) or on a block that
  // does not decode; only the second is an error once one was read.
  const unsigned long last = ERR_peek_last_error();
  const bool clean_end = ERR_GET_LIB(last) == ERR_LIB_PEM &&
                         ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  if (certs.empty() || !clean_end) {
    const std::string why = drain_errors();
    return corrupt_data(certs.empty() ? "not a PEM certificate (" + why + ")"
                                      : "a PEM certificate after the first does not decode (" +
                                            why + ")");
  }
  ERR_clear_error();
  return certs;
}

namespace {
// A passphrase callback that refuses: dtrain keys are unencrypted (mode 0600
// protects them), and OpenSSL's default would prompt on the terminal.
int no_passphrase(char*, int, int, void*) { return -1; }
} // namespace

result<ossl_ptr<EVP_PKEY>> parse_private_key(const std::string& pem) {
  ossl_ptr<BIO> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  ossl_ptr<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr));
  if (!key)
    return corrupt_data("not an unencrypted PEM private key (" + drain_errors() + ")");
  return key;
}

std::string to_hex(const unsigned char* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[data[i] >> 4];
    out[2 * i + 1] = digits[data[i] & 15];
  }
  return out;
}

bool from_hex(const std::string& hex, std::vector<unsigned char>& out) {
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0)
    return false;
  out.clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    out.push_back(static_cast<unsigned char>(hi * 16 + lo));
  }
  return true;
}

std::string name_line(const X509_NAME* name) {
  std::string out;
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(name, i);
    const int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    unsigned char* utf8 = nullptr;
    const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
    out += (out.empty() ? "" : ",") + std::string(nid != NID_undef ? OBJ_nid2sn(nid) : "?") + "=" +
           (n >= 0 ? std::string(reinterpret_cast<char*>(utf8), static_cast<size_t>(n)) : "?");
    OPENSSL_free(utf8);
  }
  return out;
}

namespace {

std::time_t to_time(const ASN1_TIME* t) {
  std::tm tm{};
  return t != nullptr && ASN1_TIME_to_tm(t, &tm) == 1 ? timegm(&tm) : 0;
}

std::string string_of(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<size_t>(ASN1_STRING_length(s)));
}

// The role URI and the host names among the subjectAltNames.
void read_alt_names(X509* cert, certificate_info& info) {
  static const std::string prefix = "urn:dtrain:role:";
  ossl_ptr<GENERAL_NAMES> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names.get(), i);
    if (g->type == GEN_URI) {
      const std::string uri = string_of(g->d.uniformResourceIdentifier);
      if (uri.compare(0, prefix.size(), prefix) != 0)
        continue;
      if (auto r = parse_role(uri.substr(prefix.size()))) {
        info.has_role = true;
        info.role_ = *r;
      }
    } else if (g->type == GEN_DNS) {
      info.hosts.push_back(string_of(g->d.dNSName));
    } else if (g->type == GEN_IPADD) {
      const int len = ASN1_STRING_length(g->d.iPAddress);
      char text[INET6_ADDRSTRLEN] = "?";
      if (len == 4 || len == 16)
        inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(g->d.iPAddress), text,
                  sizeof text);
      info.hosts.push_back(text);
    }
  }
}

} // namespace

certificate_info describe(X509* cert) {
  certificate_info info;
  const X509_NAME* subject = X509_get_subject_name(cert);
  info.subject = name_line(subject);
  info.issuer = name_line(X509_get_issuer_name(cert));
  const int cn = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (cn >= 0) {
    unsigned char* utf8 = nullptr;
    const int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, cn)));
    if (n >= 0)
      info.common_name.assign(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
  }
  read_alt_names(cert, info);
  info.is_ca = (X509_get_extension_flags(cert) & EXFLAG_CA) != 0;
  // No extendedKeyUsage (UINT32_MAX) allows every use, as TLS reads it.
  const uint32_t eku = X509_get_extended_key_usage(cert);
  info.server_auth = (eku & XKU_SSL_SERVER) != 0;
  info.client_auth = (eku & XKU_SSL_CLIENT) != 0;
  info.not_before = to_time(X509_get0_notBefore(cert));
  info.not_after = to_time(X509_get0_notAfter(cert));
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (X509_digest(cert, EVP_sha256(), md, &md_len) == 1)
    info.fingerprint = to_hex(md, md_len);
  ossl_ptr<BIGNUM> serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  if (serial) {
    std::vector<unsigned char> bytes(static_cast<size_t>(BN_num_bytes(serial.get())));
    BN_bn2bin(serial.get(), bytes.data());
    info.serial = to_hex(bytes.data(), bytes.size());
  }
  ossl_ptr<BIO> out(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(out.get(), cert) == 1) {
    char* data = nullptr;
    const long n = BIO_get_mem_data(out.get(), &data);
    info.pem.assign(data, static_cast<size_t>(n));
  }
  ERR_clear_error();
  return info;
}

} // namespace dtrain::security::detail
