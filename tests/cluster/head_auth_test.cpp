// The head's authentication tables (head_auth) on their own, in this
// process: many short-lived clients that prove a client certificate (real
// proofs, by distinct CAF node ids, without connections) leave them
// bounded; a watched process stays; a forgotten one must prove again. A
// node's session is no client's; the head's own node id is trusted only
// with its local session, in head_auth and in a TLS head actor.
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <cstdio>

#include "support/memory_store.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/experiment_client.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/head_auth.hpp"
#include "support/role_pki.hpp"
#include "support/test_util.hpp"

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

  tls_identity head_identity() { return dtrain::testing::make_role_pki(ca); }

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

  /// What a client does: hello, then prove a client certificate as `peer`
  /// ("join": a node certificate, what a node does).
  std::string attach(const caf::node_id& peer, const std::string& what = "attach") {
    auto hello = auth.hello(sec::random_hex(16));
    BOOST_REQUIRE_MESSAGE(hello.is_ok(), hello.error().to_string());
    const std::string name = what == "join" ? "node" : "client";
    auto proof = sec::prove_identity(files(name), what + " " + hello->head_id, hello->challenge);
    BOOST_REQUIRE_MESSAGE(proof.is_ok(), proof.error().to_string());
    auto session = auth.prove(peer, what, hello->challenge,
                              identity_msg{proof->certificate_pem, proof->signature});
    BOOST_REQUIRE_MESSAGE(session.is_ok(), session.error().to_string());
    return session->token;
  }

  bool may_ask_status(const caf::node_id& peer, const std::string& token) {
    return auth.allowed_session(token, peer, head_node, sec::role::client, "the cluster's status")
        .is_ok();
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(head_auth)

BOOST_FIXTURE_TEST_CASE(ten_thousand_short_lived_clients_leave_the_tables_bounded, auth_fixture) {
  const auto start = std::chrono::steady_clock::now();
  std::string first, last;
  for (uint32_t i = 1; i <= 10000; ++i) {
    const caf::node_id peer = id_of(i);
    last = attach(peer);
    if (i == 1)
      first = last;
    BOOST_REQUIRE(may_ask_status(peer, last));  // `dtrain status`, then it goes without a word
  }
  BOOST_TEST_MESSAGE("10000 clients proved in "
                     << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
                     << " s; the head remembers " << auth.proven_count() << " processes, "
                     << auth.session_count() << " sessions, " << auth.challenge_count()
                     << " challenges");
  BOOST_TEST(auth.proven_count() <= max_idle_proven);
  BOOST_TEST(auth.session_count() <= max_idle_proven);
  BOOST_TEST(auth.challenge_count() <= 1u);
  BOOST_TEST(may_ask_status(id_of(10000), last));  // the newest are kept
  BOOST_TEST(!may_ask_status(id_of(1), first));    // the oldest idle are forgotten
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
  std::string token = attach(driver);
  BOOST_TEST(auth.idle(driver));
  BOOST_TEST(auth.watch(owner.address()));   // a trainer's owner, say
  BOOST_TEST(!auth.watch(owner.address()));  // once
  BOOST_TEST(!auth.idle(driver));
  for (uint32_t i = 1; i <= max_idle_proven + 100; ++i)
    attach(id_of(i));
  BOOST_TEST(may_ask_status(driver, token));  // past the bound, but watched
  BOOST_TEST(auth.proven_count() == max_idle_proven + 1);
  auth.unwatch(owner.address());
  BOOST_TEST(auth.idle(driver));
  BOOST_TEST(may_ask_status(driver, token));  // idle, the newest idle one
  auth.forget(driver);                        // its connection went
  BOOST_TEST(!may_ask_status(driver, token));
  token = attach(driver);
  BOOST_TEST(may_ask_status(driver, token));
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
}

// CAF 0.17 takes a routed message's source node from the message, so a
// peer can claim to be the head's own process: that claim alone, without
// the head's local session, is worth nothing; nor is a node's session for
// a client's request.
BOOST_FIXTURE_TEST_CASE(the_heads_own_node_id_needs_its_local_session_and_a_node_session_is_no_clients,
                        auth_fixture) {
  const std::string& local = auth.local_session();
  BOOST_REQUIRE(!local.empty());
  const status none = auth.allowed_session("", head_node, head_node, sec::role::client, "status");
  BOOST_TEST(!none.is_ok());
  BOOST_TEST(none.message().find("presented none") != std::string::npos, none.message());
  BOOST_TEST(!may_ask_status(head_node, "not the local session"));
  BOOST_TEST(may_ask_status(head_node, local));
  BOOST_TEST(!may_ask_status(id_of(7), local), "the local session is the head's process's only");
  const caf::node_id node = id_of(8);
  const std::string joined = attach(node, "join");
  const status refused =
      auth.allowed_session(joined, node, head_node, sec::role::client, "the cluster's status");
  BOOST_TEST(!refused.is_ok());
  BOOST_TEST(refused.message() == "the cluster's status needs a client certificate; the session "
                                  "is of 'CN=node,O=dtrain', a node certificate",
             refused.message());
  BOOST_TEST(auth.allowed_session(joined, node, head_node, sec::role::node, "registering").is_ok());
}

// A node certificate's process that claims a driver's node id (CAF 0.17
// believes a message's source node) gets nothing with its own, valid node
// session: the session decides, not the node id.
BOOST_FIXTURE_TEST_CASE(a_node_claiming_a_drivers_node_id_is_refused_with_its_own_node_session,
                        auth_fixture) {
  const caf::node_id driver = id_of(21), node = id_of(22);
  const std::string client_token = attach(driver);
  const std::string node_token = attach(node, "join");
  BOOST_TEST(may_ask_status(driver, client_token));
  for (const std::string& presented : {node_token, std::string()}) {
    const status s = auth.allowed_session(presented, driver, head_node, sec::role::client,
                                          "placing trainer t");
    BOOST_TEST(!s.is_ok(), "a forged node id with " << (presented.empty() ? "no" : "a node's")
                                                    << " session was served");
    BOOST_TEST(s.message().find("placing trainer t needs the session of a process that proved a "
                                "client certificate") != std::string::npos,
               s.message());
  }
  BOOST_TEST(!may_ask_status(node, node_token));
}

// The same in a TLS head actor: a request from the head's own process (its
// node id) is refused without the local session spawn_head hands out, and
// served with it, the experiment store included.
BOOST_FIXTURE_TEST_CASE(a_tls_head_serves_its_own_process_only_with_its_local_session,
                        auth_fixture) {
  system_config config;
  caf::actor_system sys{config};
  auto opener = []() -> result<std::unique_ptr<experiments::experiment_store>> {
    return std::unique_ptr<experiments::experiment_store>(new dtrain::testing::memory_store());
  };
  tls_identity id;  // the fixture's CA and head certificate, made already
  id.files = files("head");
  id.role_ = sec::role::head;
  spawned_head head = spawn_head(sys, opener, "memory", id);
  BOOST_REQUIRE(!head.session.empty());
  caf::scoped_actor self{sys};
  auto status_with = [&](const std::string& token) {
    std::string why = "no answer";
    self->request(head.head, std::chrono::seconds(5), status_atom::value, token)
        .receive([&](cluster_status&) { why.clear(); },
                 [&](caf::error& e) { why = from_caf(e, "status").message(); });
    return why;
  };
  const std::string none = status_with("");
  BOOST_TEST(none.find("the cluster's status needs the session of a process that proved a "
                       "client certificate") != std::string::npos,
             none);
  BOOST_TEST(status_with("0123456789abcdef").find("an unknown session") != std::string::npos);
  BOOST_TEST(status_with(head.session) == "");
  experiments::experiment_service service;
  self->request(head.head, std::chrono::seconds(5), experiments_atom::value, std::string())
      .receive([&](experiments::experiment_service& s) { service = s; }, [](caf::error&) {});
  BOOST_TEST(!service, "the store's handle without a session");
  self->request(head.head, std::chrono::seconds(5), experiments_atom::value, head.session)
      .receive([&](experiments::experiment_service& s) { service = s; },
               [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
  BOOST_REQUIRE(service);
  {
    experiments::service_client own(sys, service, head.session, "the head");
    experiments::service_client forged(sys, service, "", "the head");
    BOOST_TEST(own.experiments().is_ok());
    auto refused = forged.experiments();
    BOOST_REQUIRE(!refused.is_ok());
    BOOST_TEST(refused.error().message().find("experiments needs the session of a process") !=
                   std::string::npos,
               refused.error().message());
  }
  caf::anon_send_exit(head.head, caf::exit_reason::user_shutdown);
}

// A process's node id is what its messages claim: a proof of another
// certificate for a process that holds a session must not replace that
// session (anyone with a certificate of the CA could have a driver
// refused everything). The same certificate may prove again.
BOOST_FIXTURE_TEST_CASE(a_proof_of_another_certificate_never_replaces_a_processs_session,
                        auth_fixture) {
  const caf::node_id driver = id_of(7);
  const std::string token = attach(driver);
  auto hello = auth.hello(sec::random_hex(16));
  BOOST_REQUIRE(hello.is_ok());
  auto proof = sec::prove_identity(files("node"), "join " + hello->head_id, hello->challenge);
  BOOST_REQUIRE(proof.is_ok());
  auto stolen = auth.prove(driver, "join", hello->challenge,
                           identity_msg{proof->certificate_pem, proof->signature});
  BOOST_REQUIRE(!stolen.is_ok());
  BOOST_TEST(stolen.error().message().find("is refused until that process leaves") !=
                 std::string::npos,
             stolen.error().message());
  BOOST_TEST(may_ask_status(driver, token));  // the driver's session stands
  const std::string again = attach(driver);   // its own certificate proves again
  BOOST_TEST(may_ask_status(driver, again));
  BOOST_TEST(!may_ask_status(driver, token));  // one session per process
}

BOOST_AUTO_TEST_SUITE_END()
