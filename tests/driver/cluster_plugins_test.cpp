// A user's operators on a running cluster: a head and node processes on
// loopback (`dtrain start`), a driver in this process whose trainer names a
// plugin library (tests/plugins). The trainer ships it to the nodes that
// host its replicas; refused libraries and credentials leave the nodes up.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/loopback_cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/cluster/node_secret.hpp"
#include "dtrain/driver/plugin_shipping.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/build_config.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/plugin/loader.hpp"
#include "dtrain/security/certificates.hpp"
#include "support/test_util.hpp"

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
  self->request(c.head(), std::chrono::seconds(5), status_atom::value, c.session())
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

// What a fake node (fake_node_impl) received from a driver.
struct fake_node_record {
  std::mutex mutex;
  std::vector<std::string> messages;  // every message, rendered whole
  std::string hash;
  std::vector<char> bytes;
  plugin_credential credential;
  bool shipped = false;
};

// A node another local user registers: it claims the real node's
// registration (secret file, host identity, pid, address) and, asked for a
// challenge, hands out one it got from the real node, so that whatever the
// driver sends would hold there. It records what it is sent and answers
// nothing useful.
node_actor::behavior_type fake_node_impl(node_actor::pointer self,
                                         std::shared_ptr<fake_node_record> rec,
                                         std::string relayed_challenge) {
  auto note = [=](std::string text) {
    std::lock_guard<std::mutex> guard{rec->mutex};
    rec->messages.push_back(std::move(text));
  };
  const caf::error refused = to_caf(invalid_argument("fake node"));
  return {
    [=](spawn_atom, replica_spec&, caf::actor&, rendezvous_actor&,
        const plugin_credential&) -> caf::result<replica_actor> {
      return refused;
    },
    [=](status_atom) -> caf::result<int32_t> { return 0; },
    [=](rss_atom) -> caf::result<int64_t> { return int64_t{-1}; },
    [=](plugin_atom, const std::string& hash) -> caf::result<std::vector<std::string>> {
      note("plugin " + hash);
      return to_caf(not_found("no plugin " + hash));
    },
    [=](plugin_atom, const std::string& hash, std::vector<char>& bytes,
        const plugin_credential& credential) -> caf::result<std::vector<std::string>> {
      note("plugin " + hash + " " + caf::deep_to_string(credential));
      std::lock_guard<std::mutex> guard{rec->mutex};
      rec->hash = hash;
      rec->bytes = std::move(bytes);
      rec->credential = credential;
      rec->shipped = true;
      return refused;
    },
    [=](challenge_atom) -> caf::result<std::string> {
      note("challenge");
      return relayed_challenge;
    },
    [=](log_atom, int64_t, int32_t, const plugin_credential&) -> caf::result<log_chunk> {
      return refused;
    },
  };
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
  auto node = c->node_of(a, milliseconds(5000));
  BOOST_REQUIRE_MESSAGE(node.is_ok(), node.error().to_string());
  // A fresh credential for each shipment: its challenge is single use.
  auto credential = [&](const std::string& hash) {
    auto made = same_user_credential(c->system(), *node, hash, a.info, milliseconds(5000));
    BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
    return *made;
  };
  auto other_bytes = bytes_of(DTRAIN_TEST_PLUGIN_OTHER_VERSION);
  const std::string other_hash = plugin::content_hash(other_bytes.data(), other_bytes.size());
  status s = ship(*c, a, other_hash, other_bytes, credential(other_hash));
  BOOST_TEST_MESSAGE(s.message());
  BOOST_TEST(!s.is_ok());
  BOOST_TEST(contains(s.message(), "built against dtrain 9.9.9"));
  BOOST_TEST(contains(s.message(), std::string("runs dtrain ") + DTRAIN_VERSION));
  BOOST_TEST(!exists(lc.home.file("plugins/" + other_hash + ".so")));  // not kept

  auto missing_bytes = bytes_of(DTRAIN_TEST_PLUGIN_MISSING_SYMBOL);
  const std::string missing_hash =
      plugin::content_hash(missing_bytes.data(), missing_bytes.size());
  s = ship(*c, a, missing_hash, missing_bytes, credential(missing_hash));
  BOOST_TEST_MESSAGE(s.message());
  BOOST_TEST(contains(s.message(), "undefined symbol: dtrain_test_symbol_defined_nowhere"));

  // Bytes that do not hash to the name given.
  s = ship(*c, a, missing_hash, bytes_of(DTRAIN_TEST_PLUGIN), credential(missing_hash));
  BOOST_TEST((s.code() == error_code::corrupt_data));

  // A driver without the node's secret (another user could not read it):
  // a MAC with another key, one made for another library, one used twice.
  const std::string good_hash = hash_of(DTRAIN_TEST_PLUGIN);
  plugin_credential wrong = credential(good_hash);
  wrong.signature = plugin_mac(std::string(64, '0'),
                               plugin_mac_message(wrong.challenge, good_hash,
                                                  node_proof_name(a.info.host_id, a.info.pid),
                                                  a.info.secret_file,
                                                  caf::to_string(node->node())));
  s = ship(*c, a, good_hash, bytes_of(DTRAIN_TEST_PLUGIN), wrong);
  BOOST_TEST_MESSAGE(s.message());
  BOOST_TEST(contains(s.message(), same_user_refusal));
  s = ship(*c, a, good_hash, bytes_of(DTRAIN_TEST_PLUGIN), credential(missing_hash));
  BOOST_TEST(contains(s.message(), same_user_refusal), s.message());
  const plugin_credential once = credential(missing_hash);
  BOOST_TEST(!ship(*c, a, missing_hash, bytes_of(DTRAIN_TEST_PLUGIN), once).is_ok());
  s = ship(*c, a, missing_hash, bytes_of(DTRAIN_TEST_PLUGIN), once);
  BOOST_TEST(contains(s.message(), "was used already"), s.message());
  plugin_credential none;
  none.kind = "identity-proof";
  s = ship(*c, a, good_hash, bytes_of(DTRAIN_TEST_PLUGIN), none);
  BOOST_TEST(contains(s.message(), "plugin refused"));
  BOOST_TEST(!exists(lc.home.file("plugins/" + good_hash + ".so")));

  // The nodes are up and train the good plugin afterwards.
  for (auto& n : lc.nodes)
    BOOST_TEST(n->running());
  auto t = actors::trainer::create(*c, plugin_trainer(2, {DTRAIN_TEST_PLUGIN}));
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  train_epochs(**t, 1, 2);
}

// The secret file's path comes from the node's registration: whoever
// registered as a node must not get a driver to key its MAC with another of
// this user's files (a private key). Only a node-PID.secret of this user,
// closed to others and holding a secret, is read.
BOOST_AUTO_TEST_CASE(the_same_user_key_is_read_only_from_a_node_secret_file) {
  dtrain::testing::temp_dir dir;
  auto write = [](const std::string& path, const std::string& text, mode_t mode) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    BOOST_REQUIRE(f != nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
    BOOST_REQUIRE(::chmod(path.c_str(), mode) == 0);
  };
  const std::string key_text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n";
  std::string path = dir.file("id_ed25519");
  write(path, key_text, 0600);
  auto leaked = read_node_secret(path);
  BOOST_REQUIRE(!leaked.is_ok());
  BOOST_TEST(leaked.error().message().find("MIIE") == std::string::npos);
  path = dir.file("node-12.secret");  // named like one, but a key inside
  write(path, key_text, 0600);
  BOOST_TEST(!read_node_secret(path).is_ok());
  const std::string secret = security::random_hex(32);
  write(path, secret, 0644);  // open to others: not trusted
  BOOST_TEST(!read_node_secret(path).is_ok());
  write(path, secret, 0600);
  auto good = read_node_secret(path);
  BOOST_REQUIRE_MESSAGE(good.is_ok(), good.error().to_string());
  BOOST_TEST(*good == secret);
}

// Another local user registers a fake node that names the real node's
// secret file (and claims its identity): the victim's driver, placed there,
// must not send it the secret, and nothing it sends may be replayed to the
// real node to ship a library there.
BOOST_AUTO_TEST_CASE(a_fake_node_naming_the_real_secret_file_gets_nothing_it_can_use) {
  set_blas_threads(1);
  loopback_cluster lc(1);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  const assignment real = node_assignment(*c, 0);
  BOOST_REQUIRE(!real.info.secret_file.empty());
  auto secret = read_node_secret(real.info.secret_file);  // this test runs as the node's user
  BOOST_REQUIRE_MESSAGE(secret.is_ok(), secret.error().to_string());
  auto real_node = c->node_of(real, milliseconds(5000));
  BOOST_REQUIRE_MESSAGE(real_node.is_ok(), real_node.error().to_string());
  std::string relayed;
  {
    caf::scoped_actor self{c->system()};
    self->request(*real_node, std::chrono::seconds(5), challenge_atom::value)
        .receive([&](std::string& ch) { relayed = ch; }, [](caf::error&) {});
  }
  BOOST_REQUIRE(!relayed.empty());
  auto rec = std::make_shared<fake_node_record>();
  auto fake = c->system().spawn(fake_node_impl, rec, relayed);
  auto plugins = prepare_plugins({DTRAIN_TEST_PLUGIN});
  BOOST_REQUIRE_MESSAGE(plugins.is_ok(), plugins.error().to_string());
  // The driver's shipping, to the fake node placed under the real one's name.
  auto sent = ensure_plugins(c->system(), fake, real, *plugins, {}, milliseconds(5000));
  BOOST_TEST(!sent.is_ok());
  {
    std::lock_guard<std::mutex> guard{rec->mutex};
    BOOST_TEST(!rec->messages.empty());
    for (const auto& m : rec->messages)
      BOOST_TEST(m.find(*secret) == std::string::npos, "the fake node received the secret: " << m);
    BOOST_REQUIRE(rec->shipped);
  }
  // Replayed to the real node (with the real node's own challenge): refused.
  status replayed = ship(*c, real, rec->hash, rec->bytes, rec->credential);
  BOOST_TEST(!replayed.is_ok());
  BOOST_TEST(contains(replayed.message(), "plugin refused"), replayed.message());
  BOOST_TEST(!exists(lc.home.file("plugins/" + rec->hash + ".so")));
  caf::anon_send_exit(fake, caf::exit_reason::user_shutdown);
  // The driver's own shipping to the real node still works.
  auto shipped = ensure_plugins(c->system(), *real_node, real, *plugins, {}, milliseconds(5000));
  BOOST_REQUIRE_MESSAGE(shipped.is_ok(), shipped.error().to_string());
  BOOST_TEST(*shipped == 1);
  BOOST_TEST(exists(lc.home.file("plugins/" + rec->hash + ".so")));
  BOOST_TEST(lc.nodes[0]->running());
}

// Starting a replica runs code on the node as well: on a plain cluster CAF's
// remote spawn knows no actor type (any local user reaches the port), and
// the node actor's spawn wants the same-user MAC for that very replica.
BOOST_AUTO_TEST_CASE(on_a_plain_cluster_a_replica_starts_only_with_the_drivers_mac) {
  loopback_cluster lc(1);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  const assignment a = node_assignment(*c, 0);
  auto node = c->node_of(a, milliseconds(5000));
  BOOST_REQUIRE_MESSAGE(node.is_ok(), node.error().to_string());
  replica_spec spec;
  spec.trainer = "intruder";
  spec.capability = security::random_hex(16);
  auto& sys = c->system();
  auto owner = sys.spawn([](caf::event_based_actor*) -> caf::behavior { return {}; });
  auto remote = sys.middleman().remote_spawn<replica_actor>(
      node->node(), "replica", caf::make_message(spec, caf::actor{owner}, rendezvous_actor{}),
      std::chrono::seconds(5));
  BOOST_TEST(!remote);
  if (remote)
    caf::anon_send_exit(*remote, caf::exit_reason::kill);
  else
    BOOST_TEST(contains(caf::to_string(remote.error()), "unknown_type"), caf::to_string(remote.error()));
  auto spawn = [&](const plugin_credential& credential) {
    caf::scoped_actor self{sys};
    std::string why = "spawned";
    self->request(*node, std::chrono::seconds(5), spawn_atom::value, spec, caf::actor{owner},
                  rendezvous_actor{}, credential)
        .receive([&](replica_actor& r) { caf::anon_send_exit(r, caf::exit_reason::kill); },
                 [&](caf::error& e) { why = from_caf(e, "spawn").message(); });
    return why;
  };
  BOOST_TEST(contains(spawn(plugin_credential{}), "replica refused"));
  replica_spec other = spec;
  other.rank = 1;
  auto for_other = spawn_credential(sys, *node, a.info, other, {}, milliseconds(5000));
  BOOST_REQUIRE_MESSAGE(for_other.is_ok(), for_other.error().to_string());
  const std::string why = spawn(*for_other);
  BOOST_TEST(contains(why, "replica refused: the driver could not prove it runs as the node's user"),
             why);
  int32_t hosted = -1;
  {
    caf::scoped_actor self{sys};
    self->request(*node, std::chrono::seconds(5), status_atom::value)
        .receive([&](int32_t n) { hosted = n; }, [](caf::error&) {});
  }
  BOOST_TEST(hosted == 0);
  // A spec whose capability is under 128 bits starts nothing, whatever
  // credential it comes with: its replica would answer anyone.
  {
    replica_spec open = spec;
    open.capability = "0123456789abcdef";
    auto for_open = spawn_credential(sys, *node, a.info, open, {}, milliseconds(5000));
    BOOST_REQUIRE(for_open.is_ok());
    caf::scoped_actor self{sys};
    std::string refused = "spawned";
    self->request(*node, std::chrono::seconds(5), spawn_atom::value, open, caf::actor{owner},
                  rendezvous_actor{}, *for_open)
        .receive([&](replica_actor& r) { caf::anon_send_exit(r, caf::exit_reason::kill); },
                 [&](caf::error& e) { refused = from_caf(e, "spawn").message(); });
    BOOST_TEST(contains(refused, "capability of 16 characters, under the 32"), refused);
  }
  // The driver's own credential for the spec starts it.
  auto good = spawn_credential(sys, *node, a.info, spec, {}, milliseconds(5000));
  BOOST_REQUIRE(good.is_ok());
  BOOST_TEST(spawn(*good) == "spawned");
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
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
  same_user.signature = "guess";
  BOOST_TEST(contains(send(same_user).message(), same_user_refusal));
  caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
