// `dtrain cert` end to end: the built binary, run with a temporary
// DTRAIN_HOME; its exit codes, the lines a person reads, and the refusals.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <cstdlib>

#include "support/child_process.hpp"
#include "support/test_util.hpp"

using dtrain::testing::child_process;
using dtrain::testing::read_file;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

struct cert_home {
  temp_dir home;
  std::string tls = home.file("tls");
  int runs = 0;

  cert_home() { setenv("DTRAIN_HOME", home.path().c_str(), 1); }

  /// Runs `dtrain cert ARGS...`: its exit code, its stdout and stderr in `out`.
  int run(const std::vector<std::string>& args, std::string& out) {
    std::vector<std::string> argv{DTRAIN_BINARY, "cert"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string log = home.file("run" + std::to_string(++runs) + ".log");
    child_process p(argv, log, "/dev/null");
    const int code = p.wait(milliseconds(30000));
    out = read_file(log);
    BOOST_TEST_MESSAGE("dtrain cert ... -> " << code << "\n" << out);
    return code;
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cert_command)

BOOST_AUTO_TEST_CASE(a_ca_and_a_node_certificate_are_created_and_check_clean) {
  cert_home h;
  std::string out;
  BOOST_REQUIRE(h.run({"ca", "create"}, out) == 0);
  BOOST_TEST(contains(out, "created the cluster CA 'CN=dtrain cluster CA,O=dtrain'"));
  BOOST_TEST(contains(out, h.tls + "/ca-key.pem (mode 0600"));
  BOOST_REQUIRE(h.run({"create", "--node", "--name", "node-1", "--host", "10.0.0.7"}, out) == 0);
  BOOST_TEST(contains(out, "created a node certificate 'CN=node-1,O=dtrain'"));
  BOOST_TEST(contains(out, "node (serverAuth, clientAuth)"));
  BOOST_TEST(contains(out, "host         10.0.0.7"));
  BOOST_REQUIRE(h.run({"create", "--client"}, out) == 0);
  BOOST_TEST(contains(out, h.tls + "/client.pem"));
  BOOST_TEST(contains(out, "client (clientAuth)"));

  struct stat st {};
  BOOST_REQUIRE(::stat((h.tls + "/node-1-key.pem").c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0600u);
  BOOST_REQUIRE(::stat(h.tls.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0700u);

  BOOST_TEST(h.run({"check"}, out) == 0);
  BOOST_TEST(contains(out, "cluster CA " + h.tls + "/ca.pem"));
  BOOST_TEST(contains(out, "fingerprint  sha256:"));
  BOOST_TEST(contains(out, h.tls + "/node-1.pem\n  subject      CN=node-1,O=dtrain"));
  BOOST_TEST(contains(out, "chain        ok (signed by the cluster CA)"));
  BOOST_TEST(contains(out, h.tls + "/node-1-key.pem: private, matches the certificate"));
  BOOST_TEST(contains(out, "days left)"));
  BOOST_TEST(contains(out, "2 certificates checked: all ok"));
  BOOST_TEST(!contains(out, "error:"));
}

BOOST_AUTO_TEST_CASE(existing_files_are_replaced_only_with_force) {
  cert_home h;
  std::string out;
  BOOST_REQUIRE(h.run({"ca", "create"}, out) == 0);
  const std::string ca = read_file(h.tls + "/ca.pem");
  BOOST_TEST(h.run({"ca", "create"}, out) == 1);
  BOOST_TEST(contains(out, "error: " + h.tls + "/ca.pem already exists"));
  BOOST_TEST(read_file(h.tls + "/ca.pem") == ca);
  BOOST_REQUIRE(h.run({"create", "--head"}, out) == 0);
  BOOST_TEST(h.run({"create", "--head"}, out) == 1);
  BOOST_TEST(contains(out, "error: " + h.tls + "/head.pem already exists"));
  BOOST_TEST(h.run({"create", "--head", "--force"}, out) == 0);
  BOOST_TEST(h.run({"create", "--head", "--node"}, out) == 2);
  BOOST_TEST(contains(out, "exactly one of --head, --node or --client"));
  BOOST_TEST(h.run({"ca", "create", "--force", "--days", "30"}, out) == 0);
  BOOST_TEST(read_file(h.tls + "/ca.pem") != ca);
  // The new CA did not sign the head's certificate.
  BOOST_TEST(h.run({"check"}, out) == 1);
  BOOST_TEST(contains(out, "is not signed by the cluster CA"));
}

BOOST_AUTO_TEST_CASE(foreign_tampered_and_exposed_certificates_fail_the_check) {
  cert_home h;
  temp_dir other;
  std::string out;
  BOOST_REQUIRE(h.run({"ca", "create"}, out) == 0);
  BOOST_REQUIRE(h.run({"create", "--node", "--name", "node-1"}, out) == 0);
  BOOST_REQUIRE(h.run({"ca", "create", "--dir", other.path(), "--name", "rogue CA"}, out) == 0);
  BOOST_REQUIRE(h.run({"create", "--node", "--name", "stranger", "--dir", other.path(), "--out",
                       h.tls}, out) == 0);
  BOOST_TEST(h.run({"check"}, out) == 1);
  BOOST_TEST(contains(out, "error: " + h.tls + "/stranger.pem: certificate 'CN=stranger,O=dtrain' "
                           "is not signed by the cluster CA 'CN=dtrain cluster CA,O=dtrain' (it was "
                           "issued by 'CN=rogue CA,O=dtrain')"));
  BOOST_TEST(contains(out, "chain        FAILED"));
  BOOST_TEST(contains(out, "2 certificates checked: 1 failed"));
  BOOST_TEST(h.run({"check", h.tls + "/node-1.pem"}, out) == 0);
  BOOST_TEST(h.run({"check", h.tls + "/node-1.pem", "--ca", other.file("ca.pem")}, out) == 1);

  const std::string node = h.tls + "/node-1.pem";
  std::string pem = read_file(node);
  pem.replace(pem.size() / 2, 4, "!!!!");
  dtrain::testing::write_file(node, pem);
  BOOST_TEST(h.run({"check", node}, out) == 1);
  BOOST_TEST(contains(out, "error: " + node + ": not a PEM certificate"));

  BOOST_REQUIRE(h.run({"create", "--client", "--name", "driver"}, out) == 0);
  BOOST_REQUIRE(::chmod((h.tls + "/driver-key.pem").c_str(), 0644) == 0);
  BOOST_TEST(h.run({"check", h.tls + "/driver.pem"}, out) == 1);
  BOOST_TEST(contains(out, "chmod 600 " + h.tls + "/driver-key.pem"));
}

BOOST_AUTO_TEST_SUITE_END()
