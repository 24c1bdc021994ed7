// Cluster certificates (security/certificates.hpp): a CA and a certificate of
// each role in a temporary directory, read back by us and by the `openssl`
// command line; every refusal with the words its message promises; identity
// proofs bound to purpose, challenge, key and CA.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <ctime>

#include <boost/algorithm/string/case_conv.hpp>

#include "dtrain/security/certificates.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::security;
using dtrain::testing::read_file;
using dtrain::testing::temp_dir;
using dtrain::testing::write_file;

namespace {

unsigned mode_of(const std::string& path) {
  struct stat st {};
  BOOST_REQUIRE_MESSAGE(::stat(path.c_str(), &st) == 0, "stat " << path);
  return st.st_mode & 07777;
}

/// Runs a shell command (always under `timeout`), returns its exit code
/// and, in `out`, its stdout and stderr.
int shell(const std::string& command, std::string& out) {
  out.clear();
  std::FILE* p = ::popen(("timeout 20 " + command + " 2>&1").c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  const int status = ::pclose(p);
  BOOST_TEST_MESSAGE(command << " -> " << status << "\n" << out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

#define REQUIRE_OK(expr)                                                                          \
  [&] {                                                                                           \
    auto r_ = (expr);                                                                             \
    BOOST_REQUIRE_MESSAGE(r_.is_ok(), #expr << ": " << r_.error().to_string());                  \
    return std::move(r_).value();                                                                 \
  }()

/// Requires a failure whose message contains every one of `parts`.
void require_refusal(const status& s, std::initializer_list<std::string> parts) {
  BOOST_REQUIRE_MESSAGE(!s.is_ok(), "expected a refusal containing '" << *parts.begin() << "'");
  BOOST_TEST_MESSAGE("refused: " << s.message());
  for (const std::string& part : parts)
    BOOST_TEST(contains(s.message(), part),
               "'" << s.message() << "' should contain '" << part << "'");
}
template <class T>
void require_refusal(const result<T>& r, std::initializer_list<std::string> parts) {
  require_refusal(r.to_status(), parts);
}

/// A CA in <tmp>/tls and a way to add certificates signed by it.
struct cluster {
  temp_dir tmp;
  std::string dir = tmp.file("tls");
  certificate_info ca;

  explicit cluster(const std::string& ca_name = "dtrain cluster CA") {
    ca_request r;
    r.dir = dir;
    r.name = ca_name;
    ca = REQUIRE_OK(create_ca(r));
  }

  std::string ca_file() const { return dir + "/ca.pem"; }

  created_certificate make(role role_, const std::string& name, validity valid = {}) {
    certificate_request r;
    r.role_ = role_;
    r.name = name;
    r.ca_dir = r.out_dir = dir;
    r.valid = valid;
    return REQUIRE_OK(create_certificate(r));
  }
  tls_files files(const created_certificate& c) const {
    return {c.certificate_path, c.key_path, ca_file()};
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_certificates)

BOOST_AUTO_TEST_CASE(a_ca_and_one_certificate_per_role_are_written_with_private_modes) {
  cluster c;
  BOOST_TEST(mode_of(c.dir) == 0700u);
  BOOST_TEST(mode_of(c.dir + "/ca-key.pem") == 0600u);
  BOOST_TEST(c.ca.is_ca);
  BOOST_TEST(!c.ca.has_role);
  BOOST_TEST(c.ca.subject == "CN=dtrain cluster CA,O=dtrain");
  BOOST_TEST(c.ca.issuer == c.ca.subject);
  BOOST_TEST(c.ca.fingerprint.size() == 64u);

  std::vector<std::string> serials{c.ca.serial};
  for (role r : {role::head, role::node, role::client}) {
    const std::string name = std::string(role_name(r)) + "-1";
    created_certificate made = c.make(r, name);
    BOOST_TEST(made.certificate_path == c.dir + "/" + name + ".pem");
    BOOST_TEST(made.key_path == c.dir + "/" + name + "-key.pem");
    BOOST_TEST(mode_of(made.key_path) == 0600u);

    certificate_info info = REQUIRE_OK(read_certificate(made.certificate_path));
    BOOST_TEST(info.subject == "CN=" + name + ",O=dtrain");
    BOOST_TEST(info.common_name == name);
    BOOST_TEST(info.issuer == c.ca.subject);
    BOOST_TEST(info.has_role);
    BOOST_TEST(role_name(info.role_) == role_name(r));
    BOOST_TEST(!info.is_ca);
    BOOST_TEST(info.client_auth);
    BOOST_TEST(info.server_auth == (r != role::client));
    BOOST_TEST(info.fingerprint == made.info.fingerprint);
    BOOST_TEST(info.not_after - info.not_before == 825 * 86400);
    BOOST_TEST(info.serial.size() >= 30u);  // 128 random bits
    serials.push_back(info.serial);

    certificate_info verified = REQUIRE_OK(verify_certificate(info.pem, c.ca_file(), {r}));
    BOOST_TEST(verified.fingerprint == info.fingerprint);
    REQUIRE_OK(check_own_files(c.files(made), r));
  }
  std::sort(serials.begin(), serials.end());
  BOOST_TEST((std::unique(serials.begin(), serials.end()) == serials.end()));
}

BOOST_AUTO_TEST_CASE(the_default_files_are_only_those_that_exist) {
  cluster c;
  tls_files none = default_tls_files(role::node, c.dir);
  BOOST_TEST(!none.complete());
  BOOST_TEST(none.ca == c.ca_file());
  c.make(role::node, "");  // no name: files named by the role, CN node@host
  tls_files node = default_tls_files(role::node, c.dir);
  BOOST_TEST(node.complete());
  BOOST_TEST(REQUIRE_OK(read_certificate(node.certificate)).common_name.rfind("node@", 0) == 0u);
  BOOST_TEST(default_tls_files(role::head, c.tmp.file("nothing")).empty());
}

BOOST_AUTO_TEST_CASE(hosts_become_dns_and_ip_alt_names_and_junk_hosts_are_refused) {
  cluster c;
  certificate_request r;
  r.role_ = role::head;
  r.name = "head-1";
  r.ca_dir = r.out_dir = c.dir;
  r.hosts = {"head.example.org", "10.0.0.7", "::1"};
  created_certificate made = REQUIRE_OK(create_certificate(r));
  BOOST_TEST(made.info.hosts == r.hosts, boost::test_tools::per_element());

  std::string out;
  BOOST_TEST(shell("openssl x509 -noout -ext subjectAltName -in " + made.certificate_path, out) == 0);
  BOOST_TEST(contains(out, "DNS:head.example.org"));
  BOOST_TEST(contains(out, "IP Address:10.0.0.7"));
  BOOST_TEST(contains(out, "URI:urn:dtrain:role:head"));

  r.name = "head-2";
  r.hosts = {"a,URI:urn:dtrain:role:client"};
  require_refusal(create_certificate(r), {"host 'a,URI:urn:dtrain:role:client'"});
}

BOOST_AUTO_TEST_CASE(the_openssl_command_line_agrees) {
  cluster c, other;
  created_certificate node = c.make(role::node, "node-1");
  created_certificate client = c.make(role::client, "client-1");
  created_certificate foreign = other.make(role::node, "node-1");
  std::string out;
  BOOST_TEST(shell("openssl verify -CAfile " + c.ca_file() + " " + node.certificate_path, out) == 0);
  BOOST_TEST(shell("openssl verify -CAfile " + c.ca_file() + " " + foreign.certificate_path, out) != 0);
  // The extendedKeyUsage choices, as OpenSSL's TLS purposes read them.
  BOOST_TEST(shell("openssl verify -purpose sslserver -CAfile " + c.ca_file() + " " +
                       node.certificate_path, out) == 0);
  BOOST_TEST(shell("openssl verify -purpose sslclient -CAfile " + c.ca_file() + " " +
                       client.certificate_path, out) == 0);
  BOOST_TEST(shell("openssl verify -purpose sslserver -CAfile " + c.ca_file() + " " +
                       client.certificate_path, out) != 0);

  BOOST_TEST(shell("openssl x509 -noout -ext subjectAltName,extendedKeyUsage -in " +
                       node.certificate_path, out) == 0);
  BOOST_TEST(contains(out, "URI:urn:dtrain:role:node"));
  BOOST_TEST(contains(out, "TLS Web Server Authentication, TLS Web Client Authentication"));
  BOOST_TEST(shell("openssl x509 -noout -ext extendedKeyUsage -in " + client.certificate_path, out) == 0);
  BOOST_TEST(contains(out, "TLS Web Client Authentication"));
  BOOST_TEST(!contains(out, "Server"));

  BOOST_TEST(shell("openssl x509 -noout -text -in " + c.ca_file(), out) == 0);
  BOOST_TEST(contains(out, "CA:TRUE"));
  BOOST_TEST(contains(out, "Certificate Sign, CRL Sign"));
  BOOST_TEST(contains(out, "ecdsa-with-SHA256"));
  BOOST_TEST(contains(out, "Version: 3"));
  BOOST_TEST(shell("openssl x509 -noout -text -in " + node.certificate_path, out) == 0);
  BOOST_TEST(contains(out, "CA:FALSE"));
  BOOST_TEST(contains(out, "X509v3 Authority Key Identifier"));
  BOOST_TEST(contains(out, "X509v3 Subject Key Identifier"));
  BOOST_TEST(shell("openssl pkey -noout -text -in " + node.key_path, out) == 0);
  BOOST_TEST(contains(out, "prime256v1"));
  BOOST_TEST(shell("openssl x509 -noout -fingerprint -sha256 -in " + node.certificate_path, out) == 0);
  std::string colons;
  for (size_t i = 0; i < node.info.fingerprint.size(); i += 2)
    colons += (i ? ":" : "") + node.info.fingerprint.substr(i, 2);
  BOOST_TEST(contains(out, boost::algorithm::to_upper_copy(colons)));
}

BOOST_AUTO_TEST_CASE(a_certificate_of_another_ca_is_refused_naming_both_issuers) {
  cluster c, other("other CA"), twin;
  created_certificate foreign = other.make(role::node, "node-1");
  require_refusal(verify_certificate(foreign.info.pem, c.ca_file(), {role::node}),
                  {"certificate 'CN=node-1,O=dtrain' is not signed by the cluster CA "
                   "'CN=dtrain cluster CA,O=dtrain' (it was issued by 'CN=other CA,O=dtrain')"});
  // Same CA name, another key: the names alone cannot tell them apart.
  created_certificate from_twin = twin.make(role::node, "node-1");
  require_refusal(verify_certificate(from_twin.info.pem, c.ca_file(), {}),
                  {"is not signed by the cluster CA", "another CA of the same name"});
}

BOOST_AUTO_TEST_CASE(expired_and_not_yet_valid_certificates_are_refused_with_the_date) {
  cluster c;
  created_certificate expired = c.make(role::node, "old", validity{1, -3 * 86400});
  require_refusal(verify_certificate(expired.info.pem, c.ca_file(), {role::node}),
                  {"certificate 'CN=old,O=dtrain' expired on " + format_utc(expired.info.not_after)});
  created_certificate early = c.make(role::node, "early", validity{10, 2 * 86400});
  require_refusal(verify_certificate(early.info.pem, c.ca_file(), {role::node}),
                  {"is not valid before " + format_utc(early.info.not_before)});
  BOOST_TEST(expired.info.not_after < std::time(nullptr));
}

BOOST_AUTO_TEST_CASE(roles_are_checked_and_a_certificate_without_one_is_refused) {
  cluster c;
  created_certificate client = c.make(role::client, "driver");
  require_refusal(check_own_files(c.files(client), role::node),
                  {"is a client certificate; a node needs a node certificate"});
  require_refusal(verify_certificate(client.info.pem, c.ca_file(), {role::head, role::node}),
                  {"is a client certificate; this needs a head or node certificate"});
  REQUIRE_OK(verify_certificate(client.info.pem, c.ca_file(), {}));

  // A certificate the CA signed without a role (made by hand with the CLI).
  std::string out;
  const std::string key = c.tmp.file("plain-key.pem"), csr = c.tmp.file("plain.csr"),
                    cert = c.tmp.file("plain.pem");
  BOOST_REQUIRE(shell("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                      "-subj /CN=plain -keyout " + key + " -out " + csr, out) == 0);
  BOOST_REQUIRE(shell("openssl x509 -req -days 1 -in " + csr + " -CA " + c.ca_file() + " -CAkey " +
                      c.dir + "/ca-key.pem -set_serial 7 -out " + cert, out) == 0);
  require_refusal(verify_certificate(read_file(cert), c.ca_file(), {role::node}),
                  {"certificate 'CN=plain' carries no dtrain role"});

  // A CA file that holds no CA, and a CA presented as a process's certificate.
  require_refusal(verify_certificate(client.info.pem, client.certificate_path, {}),
                  {client.certificate_path, "is not a CA certificate"});
  require_refusal(verify_certificate(c.ca.pem, c.ca_file(), {}), {"is a CA certificate"});
}

BOOST_AUTO_TEST_CASE(corrupt_and_missing_files_are_refused_naming_the_file) {
  cluster c;
  created_certificate node = c.make(role::node, "node-1");
  std::string pem = read_file(node.certificate_path);
  pem[pem.size() / 2] = pem[pem.size() / 2] == 'A' ? '!' : 'A';
  pem[pem.size() / 2 + 1] = '*';
  write_file(node.certificate_path, pem);
  require_refusal(read_certificate(node.certificate_path), {node.certificate_path, "not a PEM certificate"});
  require_refusal(check_own_files(c.files(node), role::node), {node.certificate_path, "not a PEM certificate"});
  require_refusal(parse_certificate("hello"), {"not a PEM certificate"});
  require_refusal(read_certificate(c.tmp.file("absent.pem")), {c.tmp.file("absent.pem")});
  BOOST_TEST(read_certificate(c.tmp.file("absent.pem")).error().code() == error_code::not_found);
  require_refusal(check_own_files({node.certificate_path, "", c.ca_file()}, role::node),
                  {"the key is missing"});
}

BOOST_AUTO_TEST_CASE(a_key_that_is_not_the_certificates_or_is_readable_by_others_is_refused) {
  cluster c;
  created_certificate node = c.make(role::node, "node-1");
  created_certificate other = c.make(role::node, "node-2");
  require_refusal(check_own_files({node.certificate_path, other.key_path, c.ca_file()}, role::node),
                  {"key " + other.key_path + " does not match certificate 'CN=node-1,O=dtrain'"});
  BOOST_REQUIRE(::chmod(node.key_path.c_str(), 0644) == 0);
  require_refusal(check_own_files(c.files(node), role::node),
                  {"mode 0644", "chmod 600 " + node.key_path});
  BOOST_REQUIRE(::chmod(node.key_path.c_str(), 0600) == 0);
  REQUIRE_OK(check_own_files(c.files(node), role::node));
}

BOOST_AUTO_TEST_CASE(existing_files_are_only_replaced_with_force) {
  cluster c;
  ca_request again;
  again.dir = c.dir;
  require_refusal(create_ca(again), {c.ca_file() + " already exists", "orphans"});
  BOOST_TEST(REQUIRE_OK(read_certificate(c.ca_file())).fingerprint == c.ca.fingerprint);

  created_certificate node = c.make(role::node, "node-1");
  certificate_request r;
  r.role_ = role::node;
  r.name = "node-1";
  r.ca_dir = r.out_dir = c.dir;
  require_refusal(create_certificate(r), {node.certificate_path + " already exists"});
  r.force = true;
  created_certificate replaced = REQUIRE_OK(create_certificate(r));
  BOOST_TEST(replaced.info.fingerprint != node.info.fingerprint);
  REQUIRE_OK(check_own_files(c.files(replaced), role::node));

  again.force = true;
  certificate_info new_ca = REQUIRE_OK(create_ca(again));
  BOOST_TEST(new_ca.fingerprint != c.ca.fingerprint);
  BOOST_TEST(mode_of(c.dir + "/ca-key.pem") == 0600u);
  // The old CA's certificates are orphans now.
  require_refusal(check_own_files(c.files(replaced), role::node), {"is not signed by the cluster CA"});
}

BOOST_AUTO_TEST_CASE(identity_proofs_bind_key_purpose_challenge_and_ca) {
  cluster c, other;
  created_certificate node = c.make(role::node, "node-1");
  const std::string challenge = random_hex(16);
  identity_proof proof = REQUIRE_OK(prove_identity(c.files(node), "join head-3f2a", challenge));
  BOOST_TEST(proof.signature.size() >= 128u);  // hex of a DER ECDSA signature

  certificate_info who =
      REQUIRE_OK(check_identity(proof, "join head-3f2a", challenge, c.ca_file(), {role::node}));
  BOOST_TEST(who.common_name == "node-1");

  require_refusal(check_identity(proof, "join head-0000", challenge, c.ca_file(), {}),
                  {"the identity proof of 'CN=node-1,O=dtrain' does not verify"});
  require_refusal(check_identity(proof, "join head-3f2a", random_hex(16), c.ca_file(), {}),
                  {"does not verify"});
  identity_proof tampered = proof;
  tampered.signature[20] = tampered.signature[20] == '0' ? '1' : '0';
  require_refusal(check_identity(tampered, "join head-3f2a", challenge, c.ca_file(), {}),
                  {"does not verify"});
  tampered.signature = "xyz";
  require_refusal(check_identity(tampered, "join head-3f2a", challenge, c.ca_file(), {}),
                  {"not hex"});
  // Another node's certificate with this node's signature.
  identity_proof swapped = proof;
  swapped.certificate_pem = c.make(role::node, "node-2").info.pem;
  require_refusal(check_identity(swapped, "join head-3f2a", challenge, c.ca_file(), {}),
                  {"'CN=node-2,O=dtrain' does not verify"});
  // A valid proof by a certificate of another CA.
  created_certificate foreign = other.make(role::node, "node-1");
  identity_proof outsider = REQUIRE_OK(prove_identity(other.files(foreign), "join head-3f2a", challenge));
  REQUIRE_OK(check_identity(outsider, "join head-3f2a", challenge, other.ca_file(), {}));
  require_refusal(check_identity(outsider, "join head-3f2a", challenge, c.ca_file(), {}),
                  {"is not signed by the cluster CA"});
  require_refusal(check_identity(proof, "join head-3f2a", challenge, c.ca_file(), {role::client}),
                  {"is a node certificate"});
  require_refusal(prove_identity(c.files(node), "join\nx", challenge), {"no newline"});
}

BOOST_AUTO_TEST_CASE(hashes_random_strings_and_dates_are_as_documented) {
  BOOST_TEST(sha256_hex("abc", 3) ==
             "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  temp_dir tmp;
  write_file(tmp.file("abc"), "abc");
  BOOST_TEST(REQUIRE_OK(sha256_file(tmp.file("abc"))) == sha256_hex("abc", 3));
  BOOST_TEST(sha256_file(tmp.file("none")).error().code() == error_code::not_found);
  const std::string a = random_hex(16), b = random_hex(16);
  BOOST_TEST(a.size() == 32u);
  BOOST_TEST(a != b);
  BOOST_TEST(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  BOOST_TEST(format_utc(0) == "1970-01-01 00:00:00 UTC");
  BOOST_TEST(format_utc(1795168800) == "2026-11-20 10:00:00 UTC");
  BOOST_TEST(role_name(REQUIRE_OK(parse_role("client"))) == "client");
  require_refusal(parse_role("admin"), {"'admin'"});
}

BOOST_AUTO_TEST_SUITE_END()
