// Certificates of security/certificates.hpp in CAF's own TLS (caf::openssl,
// mutual TLS with OpenSSL's verification): ECDSA P-256 keys and the
// extendedKeyUsage per role are accepted where they should be and refused
// where they should not. Two actor systems in one process, on loopback.
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <chrono>

#include "dtrain/security/certificates.hpp"
#include "support/test_util.hpp"

using namespace dtrain::security;
using dtrain::testing::temp_dir;

namespace {

struct tls_config : caf::actor_system_config {
  explicit tls_config(const tls_files& f) {
    load<caf::io::middleman>();
    load<caf::openssl::manager>();  // after the middleman, or construction throws
    openssl_certificate = f.certificate;
    openssl_key = f.key;
    openssl_cafile = f.ca;
  }
};

/// A CA with certificates: node (server and client), client (client only),
/// and a client of another CA.
struct pki {
  temp_dir tmp;
  std::string dir = tmp.file("tls"), other_dir = tmp.file("other");
  tls_files node, client, foreign_client;

  pki() {
    for (const std::string& d : {dir, other_dir}) {
      ca_request r;
      r.dir = d;
      BOOST_REQUIRE(create_ca(r).is_ok());
    }
    node = make(role::node, dir);
    client = make(role::client, dir);
    foreign_client = make(role::client, other_dir);
    foreign_client.ca = dir + "/ca.pem";  // trusts our CA, presents the other's certificate
  }

  tls_files make(role r, const std::string& ca_dir) {
    certificate_request req;
    req.role_ = r;
    req.ca_dir = req.out_dir = ca_dir;
    auto made = create_certificate(req);
    BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
    return {made->certificate_path, made->key_path, ca_dir + "/ca.pem"};
  }
};

caf::behavior echo() {
  return {[](int x) { return x + 1; }};
}

/// Publishes an echo actor over TLS with `server`'s files; then connects
/// with `client`'s and asks it 41. True when 42 came back.
bool round_trip(const tls_files& server, const tls_files& client) {
  tls_config server_cfg(server), client_cfg(client);
  caf::actor_system server_sys(server_cfg), client_sys(client_cfg);
  caf::actor server_actor = server_sys.spawn(echo);
  // The systems' destructors wait for their actors: the echo actor must end
  // however the connection went.
  struct stop_echo {
    caf::actor& a;
    ~stop_echo() { caf::anon_send_exit(a, caf::exit_reason::user_shutdown); }
  } stop{server_actor};
  auto port = caf::openssl::publish(server_actor, 0, "127.0.0.1", true);
  if (!port)  // the message is built even on success: render only an error
    BOOST_FAIL("publish: " << server_sys.render(port.error()));
  auto remote = caf::openssl::remote_actor(client_sys, "127.0.0.1", *port);
  if (!remote) {
    BOOST_TEST_MESSAGE("connect refused: " << client_sys.render(remote.error()));
    return false;
  }
  caf::scoped_actor self(client_sys);
  bool answered = false;
  self->request(*remote, std::chrono::seconds(10), 41)
      .receive([&](int y) { answered = y == 42; },
               [&](caf::error& e) { BOOST_TEST_MESSAGE("echo failed: " << client_sys.render(e)); });
  return answered;
}

} // namespace

BOOST_AUTO_TEST_SUITE(caf_tls_certificates)

BOOST_AUTO_TEST_CASE(a_node_server_and_a_client_of_the_same_ca_talk_over_mutual_tls) {
  pki p;
  BOOST_TEST(round_trip(p.node, p.client));
  BOOST_TEST(round_trip(p.node, p.node));  // node to node: both sides serverAuth and clientAuth
}

BOOST_AUTO_TEST_CASE(a_client_certificate_of_another_ca_is_refused) {
  pki p;
  BOOST_TEST(!round_trip(p.node, p.foreign_client));
}

BOOST_AUTO_TEST_CASE(a_client_certificate_cannot_serve) {
  // Its extendedKeyUsage is clientAuth only: the connecting side's OpenSSL
  // refuses it as a TLS server.
  pki p;
  BOOST_TEST(!round_trip(p.client, p.node));
}

BOOST_AUTO_TEST_SUITE_END()
