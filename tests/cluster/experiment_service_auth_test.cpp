// The experiment service's role check, in this process: sessions proved
// to a TLS head's tables (head_auth, real certificates of a test CA) and
// a service over an SQLite file that checks each message's token against
// them. A node certificate's session (every node host has one) is refused
// every operation, reads, writes, create, delete and flush, each refusal
// naming the operation and the certificate, and the store is untouched; a
// client certificate's session is served.
#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <chrono>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/driver/experiment_client.hpp"
#include "dtrain/cluster/experiment_service.hpp"
#include "dtrain/cluster/head_auth.hpp"
#include "support/role_pki.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
namespace sec = dtrain::security;

namespace {

/// A test CA with head, node and client certificates; the head's tables.
struct service_auth_fixture {
  dtrain::testing::temp_dir dir;
  std::string ca = dir.file("tls");
  head_auth auth{make_pki(), std::chrono::seconds(30)};
  system_config config;
  caf::actor_system sys{config};
  const std::string path = dir.file("experiments.db");
  experiments::experiment_service service = experiments::spawn_experiment_service(
      sys, experiments::sqlite_opener(path), path, auth.sessions());

  ~service_auth_fixture() { caf::anon_send_exit(service, caf::exit_reason::user_shutdown); }

  tls_identity make_pki() { return dtrain::testing::make_role_pki(ca); }

  /// This process proves the certificate `name` ("node": join, "client":
  /// attach), as a node or a driver does; its session token. The process
  /// is forgotten first, as if the one before had left: the head refuses a
  /// proof of another certificate for a process that holds a session.
  std::string prove(const std::string& name) {
    const std::string what = name == "node" ? "join" : "attach";
    auth.forget(sys.node());
    auto hello = auth.hello(sec::random_hex(16));
    BOOST_REQUIRE_MESSAGE(hello.is_ok(), hello.error().to_string());
    sec::tls_files files{ca + "/" + name + ".pem", ca + "/" + name + "-key.pem", ca + "/ca.pem"};
    auto proof = sec::prove_identity(files, what + " " + hello->head_id, hello->challenge);
    BOOST_REQUIRE_MESSAGE(proof.is_ok(), proof.error().to_string());
    auto session = auth.prove(sys.node(), what, hello->challenge,
                              identity_msg{proof->certificate_pem, proof->signature});
    BOOST_REQUIRE_MESSAGE(session.is_ok(), session.error().to_string());
    return session->token;
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

experiments::experiment_row an_experiment(const std::string& name) {
  experiments::experiment_row e;
  e.name = name;
  e.kind = "train";
  e.configuration = "name: " + name + "\n";
  e.metric = "validation_loss";
  e.minimize = true;
  return e;
}

// The refusal of a node's session for `op`.
void check_refused(const status& s, const std::string& op) {
  BOOST_TEST(!s.is_ok(), op << " was served to a node's session");
  BOOST_TEST((s.code() == error_code::invalid_argument), s.to_string());
  BOOST_TEST(contains(s.message(), op + " needs a client certificate; the session is of "
                                        "'CN=node,O=dtrain', a node certificate"),
             s.message());
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(experiment_service_auth, service_auth_fixture)

BOOST_AUTO_TEST_CASE(a_node_certificate_is_refused_every_operation_and_a_client_is_served) {
  int64_t kept = 0;
  {
    experiments::service_client alice(sys, service, prove("client"), path);
    auto created = alice.create_experiment(an_experiment("kept"));
    BOOST_REQUIRE_MESSAGE(created.is_ok(), created.error().to_string());
    kept = *created;
    experiments::trial_row t;
    t.experiment = kept;
    t.id = "00001";
    BOOST_REQUIRE(alice.put_trial(t).is_ok());
    const status flushed = alice.flush();
    BOOST_REQUIRE_MESSAGE(flushed.is_ok(), flushed.to_string());
  }
  const std::string node_session = prove("node");
  {
    experiments::service_client node(sys, service, node_session, path);
    check_refused(node.create_experiment(an_experiment("intruder")).error(), "create_experiment");
    check_refused(node.experiment(kept).error(), "experiment");
    check_refused(node.experiments().error(), "experiments");
    check_refused(node.trials(kept).error(), "trials");
    check_refused(node.delete_experiment(kept), "delete_experiment");
    // One-way writes: dropped without a word to the writer; its flush is
    // refused like every request.
    experiments::trial_row t;
    t.experiment = kept;
    t.id = "99999";
    BOOST_TEST(node.put_trial(t).is_ok(), "a write returns at once");
    experiments::metric_row m;
    m.experiment = kept;
    m.trial = "00001";
    m.name = "loss";
    BOOST_TEST(node.add_metrics({m}).is_ok());
    auto changed = an_experiment("renamed by a node");
    changed.id = kept;
    BOOST_TEST(node.update_experiment(changed).is_ok());
    check_refused(node.flush(), "flush");
  }
  // A client again (a new proof of this process): the store is as alice
  // left it, and the node's old token no longer counts for anything.
  experiments::service_client bob(sys, service, prove("client"), path);
  auto all = bob.experiments();
  BOOST_REQUIRE_MESSAGE(all.is_ok(), all.error().to_string());
  BOOST_REQUIRE(all->size() == 1u);
  BOOST_TEST(all->front().name == "kept");
  auto trials = bob.trials(kept);
  BOOST_REQUIRE(trials.is_ok());
  BOOST_REQUIRE(trials->size() == 1u);
  BOOST_TEST(trials->front().id == "00001");
  BOOST_TEST(bob.metrics(kept).value().empty());
  BOOST_TEST(bob.flush().is_ok());
  experiments::service_client stale(sys, service, node_session, path);
  BOOST_TEST(contains(stale.experiments().error().message(), "presented an unknown session"));
}

BOOST_AUTO_TEST_CASE(a_request_without_a_session_is_refused_and_the_heads_own_is_served) {
  experiments::service_client none(sys, service, "", path);
  const auto refused = none.experiments();
  BOOST_REQUIRE(!refused.is_ok());
  BOOST_TEST(contains(refused.error().message(),
                      "experiments needs the session of a process that proved a client "
                      "certificate to this head (hello and prove); process " +
                          caf::to_string(sys.node()) + " presented none"),
             refused.error().message());
  experiments::service_client own(sys, service, auth.local_session(), path);
  BOOST_TEST(own.experiments().is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
