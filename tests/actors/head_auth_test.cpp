// The head's authentication tables (head_auth) on their own, in this
// process: many short-lived clients that prove a client certificate (real
// proofs, by distinct CAF node ids, without connections) leave them
// bounded; a watched process stays; a forgotten one must prove again.
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <cstdio>

#include "dtrain/actors/cluster.hpp"
#include "dtrain/actors/head_auth.hpp"
#include "test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
namespace sec = dtrain::security;

namespace {

/// A cluster CA with a head and a client certificate, and the head's tables.
struct auth_fixture {
  dtrain::testing::temp_dir dir;
  std::string ca = dir.file("tls");
  head_auth auth{head_identity(), std::chrono::seconds(30)};
  caf::node_id head_node = id_of(999999);

  tls_identity head_identity() {
    sec::ca_request r;
    r.dir = ca;
    r.name = "test CA";
    auto made = sec::create_ca(r);
    BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
    for (auto role : {sec::role::head, sec::role::client}) {
      sec::certificate_request c;
      c.role_ = role;
      c.name = sec::role_name(role);
      c.ca_dir = ca;
      c.out_dir = ca;
      auto issued = sec::create_certificate(c);
      BOOST_REQUIRE_MESSAGE(issued.is_ok(), issued.error().to_string());
    }
    tls_identity id;
    id.files = files("head");
    id.role_ = sec::role::head;
    return id;
  }

  sec::tls_files files(const std::string& name) const {
    return {ca + "/" + name + ".pem", ca + "/" + name + "-key.pem", ca + "/ca.pem"};
  }

  /// The CAF node id of a made-up process `n`.
  static caf::node_id id_of(uint32_t n) {
    char hash[41];
    std::snprintf(hash, sizeof hash, "%040x", n);
    auto id = caf::make_node_id(n, hash);
    BOOST_REQUIRE(id);
    return *id;
  }

  /// What a client does: hello, then prove a client certificate as `peer`.
  std::string attach(const caf::node_id& peer) {
    auto hello = auth.hello(sec::random_hex(16));
    BOOST_REQUIRE_MESSAGE(hello.is_ok(), hello.error().to_string());
    auto proof = sec::prove_identity(files("client"), "attach " + hello->head_id, hello->challenge);
    BOOST_REQUIRE_MESSAGE(proof.is_ok(), proof.error().to_string());
    auto session = auth.prove(peer, "attach", hello->challenge,
                              identity_msg{proof->certificate_pem, proof->signature});
    BOOST_REQUIRE_MESSAGE(session.is_ok(), session.error().to_string());
    return session->token;
  }

  bool may_ask_status(const caf::node_id& peer) {
    return auth.allowed(peer, head_node, sec::role::client, "the cluster's status").is_ok();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(head_auth)

BOOST_FIXTURE_TEST_CASE(ten_thousand_short_lived_clients_leave_the_tables_bounded, auth_fixture) {
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 1; i <= 10000; ++i) {
    const caf::node_id peer = id_of(i);
    attach(peer);
    BOOST_REQUIRE(may_ask_status(peer));  // `dtrain status`, then it goes without a word
  }
  BOOST_TEST_MESSAGE("10000 clients proved in "
                     << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                     << " s; the head remembers " << auth.proven_count() << " processes, "
                     << auth.session_count() << " sessions, " << auth.challenge_count()
                     << " challenges");
  BOOST_TEST(auth.proven_count() <= max_idle_proven);
  BOOST_TEST(auth.session_count() <= max_idle_proven);
  BOOST_TEST(auth.challenge_count() <= 1u);
  BOOST_TEST(may_ask_status(id_of(10000)));  // the newest are kept
  BOOST_TEST(!may_ask_status(id_of(1)));     // the oldest idle are forgotten
  for (const caf::node_id& gone : auth.idle_peers())  // their connections went
    auth.forget(gone);
  BOOST_TEST(auth.proven_count() == 0u);
  BOOST_TEST(auth.session_count() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_watched_process_is_kept_until_its_actors_go_and_a_forgotten_one_proves_again,
                        auth_fixture) {
  system_config config;
  caf::actor_system sys{config};
  auto owner = sys.spawn([]() -> caf::behavior { return {[](int32_t) {}}; });
  const caf::node_id driver = sys.node();
  const std::string token = attach(driver);
  BOOST_TEST(auth.idle(driver));
  BOOST_TEST(auth.watch(owner.address()));   // a trainer's owner, say
  BOOST_TEST(!auth.watch(owner.address()));  // once
  BOOST_TEST(!auth.idle(driver));
  for (uint32_t i = 1; i <= max_idle_proven + 100; ++i)
    attach(id_of(i));
  BOOST_TEST(may_ask_status(driver));  // past the bound, but watched
  BOOST_TEST(auth.proven_count() == max_idle_proven + 1);
  auth.unwatch(owner.address());
  BOOST_TEST(auth.idle(driver));
  BOOST_TEST(may_ask_status(driver));  // idle, the newest idle one
  auth.forget(driver);                 // its connection went
  BOOST_TEST(!may_ask_status(driver));
  BOOST_TEST(!auth.allowed_session(token, driver, head_node, sec::role::client, "x").is_ok());
  attach(driver);
  BOOST_TEST(may_ask_status(driver));
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
