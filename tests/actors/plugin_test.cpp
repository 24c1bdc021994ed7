// A user's operators on a running cluster: a head and node processes on
// loopback (`dtrain start`), a driver in this process whose trainer names a
// plugin library (tests/plugins). The trainer ships it to the nodes that
// host its replicas; refused libraries and credentials leave the nodes up.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "actors/child_process.hpp"
#include "actors/loopback_cluster.hpp"
#include "dtrain/actors/errors.hpp"
#include "dtrain/actors/node_actor.hpp"
#include "dtrain/actors/node_secret.hpp"
#include "dtrain/actors/plugin_shipping.hpp"
#include "dtrain/actors/trainer.hpp"
#include "dtrain/config.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/plugin/loader.hpp"
#include "dtrain/security/certificates.hpp"
#include "test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::child_process;
using dtrain::testing::loopback_cluster;
using dtrain::testing::require_identical_replicas;
using std::chrono::milliseconds;

namespace {

actors::trainer_config plugin_trainer(int replicas, std::vector<std::string> plugins) {
  actors::trainer_config t;
  t.name = "plugin-linear";
  t.operator_name = "plugin_linear";
  t.plugins = std::move(plugins);
  t.config = {{"samples", "1024"}};
  t.num_replicas = replicas;
  t.global_batch_size = 64;
  t.seed = 5;
  t.collective_timeout = milliseconds(10000);
  t.placement_timeout = milliseconds(2000);
  return t;
}


bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<char> bytes_of(const std::string& path) {
  std::string s = dtrain::testing::read_file(path);
  return std::vector<char>(s.begin(), s.end());
}

std::string hash_of(const std::string& path) {
  auto p = plugin::load_plugin(path);
  BOOST_REQUIRE_MESSAGE(p.is_ok(), p.error().to_string());
  return p->hash;
}

// The placement of node `index` as the head lists it.
assignment node_assignment(cluster& c, int index) {
  assignment a;
  caf::scoped_actor self{c.system()};
  self->request(c.head(), std::chrono::seconds(5), status_atom::value)
      .receive([&](cluster_status& st) { a.info = st.nodes.at(static_cast<size_t>(index)); },
               [](caf::error&) {});
  a.node = index;
  return a;
}

// Sends a library to a node as a driver would, with `credential`; the
// node's answer as a status.
status ship(cluster& c, const assignment& a, const std::string& hash,
            const std::vector<char>& bytes, const plugin_credential& credential) {
  auto node = c.node_of(a, milliseconds(5000));
  if (!node)
    return node.error();
  caf::scoped_actor self{c.system()};
  status out;
  self->request(*node, std::chrono::seconds(30), plugin_atom::value, hash, bytes, credential)
      .receive([](std::vector<std::string>&) {}, [&](caf::error& e) { out = from_caf(e, "ship"); });
  return out;
}

void train_epochs(actors::trainer& t, int epochs, int replicas) {
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    auto m = t.train();
    BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
    BOOST_TEST(m->epoch == epoch);
    require_identical_replicas(t, replicas);
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(cluster_plugins)

BOOST_AUTO_TEST_CASE(a_plugin_operator_trains_on_two_nodes_and_is_shipped_once_per_node) {
  set_blas_threads(1);
  loopback_cluster lc(2);
  const std::string hash = hash_of(DTRAIN_TEST_PLUGIN);
  {
    auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)});
    BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
    {
      auto t = actors::trainer::create(**c, plugin_trainer(2, {DTRAIN_TEST_PLUGIN}));
      BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
      BOOST_TEST((*t)->placement()[0].node != (*t)->placement()[1].node);
      BOOST_TEST((*t)->plugins_sent() == 2);
      train_epochs(**t, 2, 2);
      BOOST_TEST((*t)->shutdown().is_ok());
    }
    // The nodes keep the library under its hash ($DTRAIN_HOME is shared here).
    BOOST_TEST(exists(lc.home.file("plugins/" + hash + ".so")));
    // A second trainer finds it loaded on both nodes: nothing is sent.
    auto again = actors::trainer::create(**c, plugin_trainer(2, {DTRAIN_TEST_PLUGIN}));
    BOOST_REQUIRE_MESSAGE(again.is_ok(), again.error().to_string());
    BOOST_TEST((*again)->plugins_sent() == 0);
    train_epochs(**again, 1, 2);
  }
  lc.stop_all(milliseconds(5000));
  for (int i = 0; i < 2; ++i) {
    const std::string log = dtrain::testing::read_file(lc.home.file("node" + std::to_string(i) + ".log"));
    BOOST_TEST(count_of(log, "installed plugin " + hash) == 1, log);
  }
}

BOOST_AUTO_TEST_CASE(refused_libraries_name_the_reason_and_the_nodes_stay_up) {
  set_blas_threads(1);
  loopback_cluster lc(2);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  // The driver refuses them itself, before anything is sent.
  auto other = actors::trainer::create(*c, plugin_trainer(2, {DTRAIN_TEST_PLUGIN_OTHER_VERSION}));
  BOOST_REQUIRE(!other.is_ok());
  BOOST_TEST_MESSAGE(other.error().message());
  BOOST_TEST(contains(other.error().message(), "built against dtrain 9.9.9"));
  BOOST_TEST(contains(other.error().message(), std::string("runs dtrain ") + DTRAIN_VERSION));
  auto missing = actors::trainer::create(*c, plugin_trainer(2, {DTRAIN_TEST_PLUGIN_MISSING_SYMBOL}));
  BOOST_REQUIRE(!missing.is_ok());
  BOOST_TEST(contains(missing.error().message(), "undefined symbol: dtrain_test_symbol_defined_nowhere"));

  // A node refuses them as well (a driver that skipped its own check).
  const assignment a = node_assignment(*c, 0);
  BOOST_REQUIRE(!a.info.secret_file.empty());
  auto credential = credential_for(a.info);
  BOOST_REQUIRE_MESSAGE(credential.is_ok(), credential.error().to_string());
  auto other_bytes = bytes_of(DTRAIN_TEST_PLUGIN_OTHER_VERSION);
  const std::string other_hash = plugin::content_hash(other_bytes.data(), other_bytes.size());
  status s = ship(*c, a, other_hash, other_bytes, *credential);
  BOOST_TEST_MESSAGE(s.message());
  BOOST_TEST(!s.is_ok());
  BOOST_TEST(contains(s.message(), "built against dtrain 9.9.9"));
  BOOST_TEST(contains(s.message(), std::string("runs dtrain ") + DTRAIN_VERSION));
  BOOST_TEST(!exists(lc.home.file("plugins/" + other_hash + ".so")));  // not kept

  auto missing_bytes = bytes_of(DTRAIN_TEST_PLUGIN_MISSING_SYMBOL);
  const std::string missing_hash =
      plugin::content_hash(missing_bytes.data(), missing_bytes.size());
  s = ship(*c, a, missing_hash, missing_bytes, *credential);
  BOOST_TEST_MESSAGE(s.message());
  BOOST_TEST(contains(s.message(), "undefined symbol: dtrain_test_symbol_defined_nowhere"));

  // Bytes that do not hash to the name given.
  s = ship(*c, a, missing_hash, bytes_of(DTRAIN_TEST_PLUGIN), *credential);
  BOOST_TEST((s.code() == error_code::corrupt_data));

  // A driver without the node's secret (another user could not read it).
  plugin_credential wrong = *credential;
  wrong.secret = std::string(wrong.secret.size(), '0');
  s = ship(*c, a, hash_of(DTRAIN_TEST_PLUGIN), bytes_of(DTRAIN_TEST_PLUGIN), wrong);
  BOOST_TEST_MESSAGE(s.message());
  BOOST_TEST(contains(s.message(), same_user_refusal));
  plugin_credential none;
  none.kind = "identity-proof";
  s = ship(*c, a, hash_of(DTRAIN_TEST_PLUGIN), bytes_of(DTRAIN_TEST_PLUGIN), none);
  BOOST_TEST(contains(s.message(), "plugin refused"));
  BOOST_TEST(!exists(lc.home.file("plugins/" + hash_of(DTRAIN_TEST_PLUGIN) + ".so")));

  // The nodes are up and train the good plugin afterwards.
  for (auto& n : lc.nodes)
    BOOST_TEST(n->running());
  auto t = actors::trainer::create(*c, plugin_trainer(2, {DTRAIN_TEST_PLUGIN}));
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  train_epochs(**t, 1, 2);
}

// The secret file's path comes from the node's registration: whoever
// registered as a node must not get another of this user's files (a private
// key) sent to it as the credential. Only a node-PID.secret of this user,
// closed to others and holding a secret, is read.
BOOST_AUTO_TEST_CASE(the_same_user_credential_is_read_only_from_a_node_secret_file) {
  dtrain::testing::temp_dir dir;
  auto write = [](const std::string& path, const std::string& text, mode_t mode) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    BOOST_REQUIRE(f != nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    BOOST_REQUIRE(::chmod(path.c_str(), mode) == 0);
  };
  const std::string key_text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n";
  node_info info;
  info.secret_file = dir.file("id_ed25519");
  write(info.secret_file, key_text, 0600);
  auto leaked = credential_for(info);
  BOOST_REQUIRE(!leaked.is_ok());
  BOOST_TEST(leaked.error().message().find("MIIE") == std::string::npos);
  info.secret_file = dir.file("node-12.secret");  // named like one, but a key inside
  write(info.secret_file, key_text, 0600);
  BOOST_TEST(!credential_for(info).is_ok());
  const std::string secret = security::random_hex(32);
  write(info.secret_file, secret, 0644);  // open to others: not trusted
  BOOST_TEST(!credential_for(info).is_ok());
  write(info.secret_file, secret, 0600);
  auto good = credential_for(info);
  BOOST_REQUIRE_MESSAGE(good.is_ok(), good.error().to_string());
  BOOST_TEST(good->secret == secret);
}

BOOST_AUTO_TEST_CASE(a_node_started_with_a_plugin_preloads_it) {
  set_blas_threads(1);
  loopback_cluster lc(0);
  lc.add_node(1, {"--plugin", DTRAIN_TEST_PLUGIN});
  {
    auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
    auto t = actors::trainer::create(*c, plugin_trainer(1, {DTRAIN_TEST_PLUGIN}));
    BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
    BOOST_TEST((*t)->plugins_sent() == 0);
    train_epochs(**t, 1, 1);
  }
  const std::string log = dtrain::testing::read_file(lc.home.file("node0.log"));
  BOOST_TEST(contains(log, "preloaded plugin"), log);

  // A library that does not load is a startup error naming it.
  child_process bad({DTRAIN_BINARY, "start", "--address", lc.address, "--plugin",
                     DTRAIN_TEST_PLUGIN_MISSING_SYMBOL},
                    lc.home.file("bad-node.log"));
  BOOST_TEST(bad.wait(milliseconds(10000)) == 2);
  const std::string bad_log = dtrain::testing::read_file(lc.home.file("bad-node.log"));
  BOOST_TEST(contains(bad_log, "--plugin"), bad_log);
  BOOST_TEST(contains(bad_log, "undefined symbol"), bad_log);
}

BOOST_AUTO_TEST_CASE(on_tls_a_client_certificate_proof_is_the_credential_and_is_single_use) {
  dtrain::testing::temp_dir dir;
  security::ca_request ca;
  ca.dir = dir.file("tls");
  BOOST_REQUIRE_MESSAGE(security::create_ca(ca).is_ok(), "create_ca");
  auto make = [&](security::role r, const std::string& stem) {
    security::certificate_request req;
    req.role_ = r;
    req.name = stem;
    req.ca_dir = ca.dir;
    req.out_dir = ca.dir;
    auto made = security::create_certificate(req);
    BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
    return security::tls_files{made->certificate_path, made->key_path, ca.dir + "/ca.pem"};
  };
  const security::tls_files client = make(security::role::client, "driver");
  const security::tls_files node_files = make(security::role::node, "node-1");

  system_config cfg;
  caf::actor_system sys{cfg};
  node_options o;
  o.plugin_dir = dir.file("plugins");
  o.identity = "127.0.0.1:7777";
  o.ca_file = ca.dir + "/ca.pem";
  auto node = spawn_node(sys, o);
  const std::string hash = hash_of(DTRAIN_TEST_PLUGIN);
  const auto bytes = bytes_of(DTRAIN_TEST_PLUGIN);
  auto send = [&](const plugin_credential& c) {
    caf::scoped_actor self{sys};
    status out;
    self->request(node, std::chrono::seconds(30), plugin_atom::value, hash, bytes, c)
        .receive([](std::vector<std::string>&) {}, [&](caf::error& e) { out = from_caf(e, "ship"); });
    return out;
  };
  auto proof = identity_credential(sys, node, hash, o.identity, client, milliseconds(5000));
  BOOST_REQUIRE_MESSAGE(proof.is_ok(), proof.error().to_string());
  status accepted = send(*proof);
  BOOST_TEST(accepted.is_ok(), accepted.to_string());
  BOOST_TEST(exists(o.plugin_dir + "/" + hash + ".so"));
  // The same proof again: its challenge is spent.
  status replayed = send(*proof);
  BOOST_TEST(contains(replayed.message(), "was used already"), replayed.message());
  // A proof for another node's address does not hold here.
  auto elsewhere = identity_credential(sys, node, hash, "127.0.0.1:1", client, milliseconds(5000));
  BOOST_REQUIRE(elsewhere.is_ok());
  status moved = send(*elsewhere);
  BOOST_TEST(contains(moved.message(), "identity proof does not hold"), moved.message());
  // A node certificate is not a driver's.
  auto as_node = identity_credential(sys, node, hash, o.identity, node_files, milliseconds(5000));
  BOOST_REQUIRE(as_node.is_ok());
  status wrong_role = send(*as_node);
  BOOST_TEST(contains(wrong_role.message(), "plugin refused"), wrong_role.message());
  // And a same-user secret means nothing to a node without one.
  plugin_credential same_user;
  same_user.kind = "same-user";
  same_user.secret = "guess";
  BOOST_TEST(contains(send(same_user).message(), same_user_refusal));
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
