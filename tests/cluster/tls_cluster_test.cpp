// Mutual TLS on loopback: a head and a node started with the dtrain command
// line and certificates from a test CA; a driver with a client certificate
// trains. Refused, each with its reason on both sides and nothing spawned or
// registered: a driver with no certificate, one from another CA, an expired
// one, a client certificate used to join as a node, and a plain CAF client
// remote-spawning a replica on the node. The legit driver still trains after
// all of them. Also: a non-loopback bind without certificates is refused.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>

#include "support/child_process.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/driver/node_logs.hpp"
#include "dtrain/driver/plugin_shipping.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/core/net.hpp"
#include "dtrain/core/threads.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::child_process;
using dtrain::testing::read_file;
using dtrain::testing::wait_for_file;
using std::chrono::milliseconds;
namespace sec = dtrain::security;

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Polls `path` until it contains `part` or `timeout` passes.
bool wait_for_text(const std::string& path, const std::string& part, milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (contains(read_file(path), part))
      return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

/// A cluster CA with head, node and client certificates, a second CA with a
/// client certificate of its own, and an expired client certificate, all
/// made with security::create_ca / create_certificate.
struct test_pki {
  dtrain::testing::temp_dir dir;
  std::string ca_dir, other_dir;

  test_pki() : ca_dir(dir.file("cluster")), other_dir(dir.file("other")) {
    make_ca(ca_dir, "test cluster CA");
    make_ca(other_dir, "someone else's CA");
    issue(sec::role::head, "head", ca_dir, {});
    issue(sec::role::node, "node-1", ca_dir, {});
    issue(sec::role::client, "alice", ca_dir, {});
    issue(sec::role::client, "mallory", other_dir, {});
    sec::validity expired;
    expired.days = 1;
    expired.not_before_offset_s = -3 * 86400;  // valid two days ago, for a day
    issue(sec::role::client, "bob", ca_dir, expired);
  }

  static void make_ca(const std::string& at, const std::string& name) {
    sec::ca_request r;
    r.dir = at;
    r.name = name;
    auto ca = sec::create_ca(r);
    BOOST_REQUIRE_MESSAGE(ca.is_ok(), ca.error().to_string());
  }

  static void issue(sec::role role, const std::string& name, const std::string& ca,
                    sec::validity valid) {
    sec::certificate_request r;
    r.role_ = role;
    r.name = name;
    r.ca_dir = ca;
    r.out_dir = ca;
    r.valid = valid;
    auto made = sec::create_certificate(r);
    BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
  }

  // `name`'s files, trusting the CA in `ca` (default: the one that signed it).
  sec::tls_files files(const std::string& name, const std::string& signer,
                       const std::string& trusted = "") const {
    return {signer + "/" + name + ".pem", signer + "/" + name + "-key.pem",
            (trusted.empty() ? signer : trusted) + "/ca.pem"};
  }

  static std::vector<std::string> flags(const sec::tls_files& f) {
    return {"--tls-cert", f.certificate, "--tls-key", f.key, "--tls-ca", f.ca};
  }
};

/// A TLS head and one TLS node (2 slots) on loopback, in a fresh
/// DTRAIN_HOME without default certificates (every process names its
/// files). The child_process objects kill both when it goes.
struct tls_processes {
  test_pki pki;
  dtrain::testing::temp_dir home;
  std::unique_ptr<child_process> head, node;
  std::string address, node_address;

  tls_processes() {
    setenv("DTRAIN_HOME", home.path().c_str(), 1);
    std::vector<std::string> args{DTRAIN_BINARY, "start", "--head", "--port", "0",
                                  "--port-file", home.file("head.address")};
    for (auto& f : test_pki::flags(pki.files("head", pki.ca_dir)))
      args.push_back(f);
    head = std::make_unique<child_process>(args, home.file("head.log"));
    address = trimmed(wait_for_file(home.file("head.address"), milliseconds(10000)));
    BOOST_REQUIRE_MESSAGE(!address.empty(), "the head did not start: " << head_log());
    args = {DTRAIN_BINARY, "start", "--address", address, "--slots", "2",
            "--port-file", home.file("node.address")};
    for (auto& f : test_pki::flags(pki.files("node-1", pki.ca_dir)))
      args.push_back(f);
    node = std::make_unique<child_process>(args, home.file("node.log"));
    node_address = trimmed(wait_for_file(home.file("node.address"), milliseconds(10000)));
    BOOST_REQUIRE_MESSAGE(!node_address.empty(), "the node did not join: " << node_log());
  }

  std::string head_log() const { return read_file(home.file("head.log")); }
  std::string node_log() const { return read_file(home.file("node.log")); }

  ~tls_processes() {
    node->stop(SIGTERM, milliseconds(5000));
    head->stop(SIGTERM, milliseconds(5000));
  }
};

trainer_config tiny(const std::string& name) {
  trainer_config t;
  t.name = name;
  t.operator_name = "linear_regression";
  t.config = {{"planted", "true"}, {"lr", "0.01"}};
  t.num_replicas = 2;
  t.global_batch_size = 64;
  t.seed = 3;
  t.collective_timeout = milliseconds(10000);
  t.placement_timeout = milliseconds(2000);
  return t;
}

// A driver with `files` trains one epoch on the cluster at `address`.
void train_one_epoch(const std::string& address, const sec::tls_files& files,
                     const std::string& name) {
  cluster::options o{address, 0, 0, milliseconds(10000)};
  o.tls = files;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  auto t = trainer::create(**c, tiny(name));
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  auto m = (*t)->train();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->epoch == 1);
  BOOST_REQUIRE((*t)->shutdown().is_ok());
}

// A driver with `files` is refused; its error, which must name `reason`.
std::string refused_driver(const std::string& address, const sec::tls_files& files,
                           const std::string& reason) {
  cluster::options o{address, 0, 0, milliseconds(3000)};
  o.tls = files;
  auto c = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(!c.is_ok(), "a driver with " << files.certificate << " was let in");
  BOOST_TEST_MESSAGE("driver refused: " << c.error().message());
  BOOST_TEST(contains(c.error().message(), reason), c.error().message());
  return c.error().message();
}

// A raw CAF client with the given openssl settings (no dtrain checks of
// its own files) connects to `address`; false when the handshake failed.
bool raw_tls_client_gets_in(const std::string& address, const sec::tls_files& files) {
  tls_identity id;
  id.files = files;
  system_config cfg{id};
  caf::actor_system sys{cfg};
  auto hp = parse_address(address).value();
  auto head = caf::openssl::remote_actor<head_actor>(sys, hp.first, hp.second);
  return static_cast<bool>(head);
}

// The node's replica count, asked over the legit TLS route.
int32_t replicas_on(const std::string& node_address, const sec::tls_files& files) {
  tls_identity id;
  id.files = files;
  system_config cfg{id};
  caf::actor_system sys{cfg};
  auto hp = parse_address(node_address).value();
  auto node = caf::openssl::remote_actor<node_actor>(sys, hp.first, hp.second);
  if (!node) {
    const std::string why = caf::to_string(node.error());
    BOOST_ERROR("cannot reach the node at " << node_address << ": " << why);
    return -1;
  }
  int32_t count = -1;
  caf::scoped_actor self{sys};
  self->request(*node, std::chrono::seconds(5), status_atom::value)
      .receive([&](int32_t n) { count = n; }, [&](caf::error&) {});
  return count;
}

// A replica spec that would start nothing useful (no operator): what an
// intruder would send; it must not get as far as a replica.
replica_spec intruder_spec() {
  replica_spec spec;
  spec.trainer = "intruder";
  spec.config = {{"path", "/etc/passwd"}};
  return spec;
}

// CAF's remote spawn of a "replica" on the node at `node_address`, by a
// process with `files`: the error, or "" when a replica was spawned.
std::string remote_spawn_replica(const std::string& node_address, const sec::tls_files& files) {
  tls_identity id;
  id.files = files;
  system_config cfg{id};
  caf::actor_system sys{cfg};
  auto hp = parse_address(node_address).value();
  auto node = caf::openssl::remote_actor<node_actor>(sys, hp.first, hp.second);
  // (Boost evaluates the message even when the check holds.)
  BOOST_REQUIRE_MESSAGE(node, "cannot reach the node: "
                                  << (node ? "" : from_caf(node.error(), "").message()));
  auto owner = sys.spawn([](caf::event_based_actor*) -> caf::behavior { return {}; });
  auto spawned = sys.middleman().remote_spawn<replica_actor>(
      node->node(), "replica", caf::make_message(intruder_spec(), caf::actor{owner}, rendezvous_actor{}),
      std::chrono::seconds(5));
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
  if (spawned) {
    caf::anon_send_exit(*spawned, caf::exit_reason::user_shutdown);
    return "";
  }
  return sys.render(spawned.error());
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls_cluster)

BOOST_AUTO_TEST_CASE(a_tls_cluster_serves_its_driver_and_refuses_every_other_peer_with_a_reason) {
  set_blas_threads(1);
  tls_processes tc;
  auto& pki = tc.pki;
  const auto alice = pki.files("alice", pki.ca_dir);
  BOOST_TEST(contains(tc.head_log(), "mutual TLS as 'CN=head,O=dtrain'"));
  train_one_epoch(tc.address, alice, "before");

  // No certificate: a dtrain driver speaks plain remoting, which the TLS
  // head cannot understand; a TLS client without a certificate is refused
  // by the head's handshake.
  refused_driver(tc.address, {}, "does " + tc.address + " use TLS?");
  BOOST_TEST(wait_for_text(tc.home.file("head.log"), "not a TLS client", milliseconds(5000)),
             tc.head_log());
  // CAF refuses to be a TLS client without a certificate; OpenSSL's own
  // client is one.
  auto hp = parse_address(tc.address).value();
  const std::string s_client = "timeout 10 openssl s_client -connect 127.0.0.1:" +
                               std::to_string(hp.second) + " -CAfile " + pki.ca_dir +
                               "/ca.pem < /dev/null > " + tc.home.file("s_client.log") + " 2>&1";
  BOOST_TEST(std::system(s_client.c_str()) != -1);
  BOOST_TEST(wait_for_text(tc.home.file("head.log"), "the peer sent no certificate",
                           milliseconds(5000)),
             tc.head_log());

  // Another CA: our driver refuses the head (not from its CA) and says so;
  // the head sees the refusal. With our CA trusted but its certificate
  // from the other one, the head refuses it.
  refused_driver(tc.address, pki.files("mallory", pki.other_dir),
                 "certificate 'CN=head,O=dtrain' is not from the cluster CA");
  BOOST_TEST(wait_for_text(tc.home.file("head.log"), "the peer refused us (alert: unknown CA)",
                           milliseconds(5000)),
             tc.head_log());
  BOOST_TEST(!raw_tls_client_gets_in(tc.address, pki.files("mallory", pki.other_dir, pki.ca_dir)));
  BOOST_TEST(wait_for_text(tc.home.file("head.log"),
                           "certificate 'CN=mallory,O=dtrain' is not from the cluster CA",
                           milliseconds(5000)),
             tc.head_log());

  // Expired: the driver refuses to use it; a client that sends it anyway
  // is refused by the head.
  BOOST_TEST(!contains(tc.node_log(), "is gone"), "after another CA");
  refused_driver(tc.address, pki.files("bob", pki.ca_dir), "expired");
  BOOST_TEST(!raw_tls_client_gets_in(tc.address, pki.files("bob", pki.ca_dir)));
  BOOST_TEST(wait_for_text(tc.home.file("head.log"), "certificate 'CN=bob,O=dtrain' has expired",
                           milliseconds(5000)),
             tc.head_log());

  BOOST_TEST(!contains(tc.node_log(), "is gone"), "after expired");
  // A client certificate cannot join as a node: `dtrain start` refuses it
  // itself, and a process that tries anyway (TLS is fine: it is from the
  // cluster CA) is refused by the head's role check, at prove and at
  // register. The cluster keeps its one node.
  {
    std::vector<std::string> args{DTRAIN_BINARY, "start", "--address", tc.address,
                                  "--port-file", tc.home.file("bad-node.address")};
    for (auto& f : test_pki::flags(alice))
      args.push_back(f);
    child_process bad(args, tc.home.file("bad-node.log"));
    BOOST_TEST(bad.wait(milliseconds(10000)) == 2);
    std::string log = read_file(tc.home.file("bad-node.log"));
    BOOST_TEST(contains(log, "is a client certificate; a node needs a node certificate"), log);
  }
  BOOST_TEST(!contains(tc.node_log(), "is gone"), "after dtrain start with a client certificate");
  {
    tls_identity id;
    id.files = alice;
    id.role_ = sec::role::node;  // pretends to be a node
    id.subject = "CN=alice,O=dtrain";
    system_config cfg{id};
    caf::actor_system sys{cfg};
    auto head = connect_head(sys, tc.address, milliseconds(5000), {}, id);
    BOOST_REQUIRE_MESSAGE(head.is_ok(), head.error().to_string());
    auto joined = authenticate(sys, *head, id, tc.address, milliseconds(5000));
    BOOST_REQUIRE(!joined.is_ok());
    BOOST_TEST_MESSAGE("joining with a client certificate: " << joined.error().message());
    BOOST_TEST(contains(joined.error().message(),
                        "is a client certificate; this needs a node certificate"),
               joined.error().message());
    BOOST_TEST(wait_for_text(tc.home.file("head.log"), "cannot join", milliseconds(5000)),
               tc.head_log());
    // Registering without a proof is refused too, nothing registered.
    caf::scoped_actor self{sys};
    node_info info{"intruder", "127.0.0.1:1", 8, 0, 1, "x", {}, ""};
    bool registered = false;
    std::string why;
    self->request(*head, std::chrono::seconds(5), register_atom::value, info, node_actor{},
                  std::string())
        .receive([&](int32_t) { registered = true; },
                 [&](caf::error& e) { why = from_caf(e, "register").message(); });
    BOOST_TEST(!registered);
    BOOST_TEST(contains(why, "needs the session of a process that proved a node certificate"), why);
    // Nor with a client session (what an attacker with a client
    // certificate has after a legitimate attach), however it names itself.
    id.role_ = sec::role::client;
    auto attached = authenticate(sys, *head, id, tc.address, milliseconds(5000));
    BOOST_REQUIRE_MESSAGE(attached.is_ok(), attached.error().to_string());
    BOOST_TEST(!attached->empty());
    registered = false;
    self->request(*head, std::chrono::seconds(5), register_atom::value, info, node_actor{},
                  *attached)
        .receive([&](int32_t) { registered = true; },
                 [&](caf::error& e) { why = from_caf(e, "register").message(); });
    BOOST_TEST(!registered);
    BOOST_TEST(contains(why, "is of 'CN=alice,O=dtrain', a client certificate"), why);
    BOOST_TEST(!contains(tc.node_log(), "is gone"), "before the impostor leaves");
  }
  std::this_thread::sleep_for(milliseconds(500));
  BOOST_TEST(!contains(tc.node_log(), "is gone"), "after the impostor left");

  // A plain CAF client cannot reach the node's port to remote-spawn a
  // replica: the node refuses it at the TLS layer; nothing was spawned.
  {
    system_config cfg;
    caf::actor_system sys{cfg};
    auto hp = parse_address(tc.node_address).value();
    auto node = sys.middleman().connect(hp.first, hp.second);
    BOOST_TEST(!node);
  }
  BOOST_TEST(wait_for_text(tc.home.file("node.log"), "dtrain node: refused a TLS connection from",
                           milliseconds(5000)),
             tc.node_log());
  BOOST_TEST(replicas_on(tc.node_address, alice) == 0);

  // The legit driver still trains, and the cluster still has one node.
  train_one_epoch(tc.address, alice, "after");
  BOOST_TEST(tc.head->running());
  BOOST_TEST(tc.node->running());
  BOOST_TEST_MESSAGE("head log:\n" << tc.head_log());
}

// A node's certificate is on every node host, so it must start nothing on
// any node: CAF's remote spawn knows no actor type, and the node actor's
// spawn wants a client's proof. A client certificate still trains.
BOOST_AUTO_TEST_CASE(a_node_certificate_starts_no_replica_on_a_node) {
  set_blas_threads(1);
  tls_processes tc;
  auto& pki = tc.pki;
  const auto node_files = pki.files("node-1", pki.ca_dir);
  const auto alice = pki.files("alice", pki.ca_dir);
  const std::string remote = remote_spawn_replica(tc.node_address, node_files);
  BOOST_TEST(contains(remote, "unknown_type"), "remote spawn with a node certificate: " << remote);
  BOOST_TEST(contains(remote_spawn_replica(tc.node_address, alice), "unknown_type"));
  BOOST_TEST(replicas_on(tc.node_address, alice) == 0);
  {
    tls_identity id;
    id.files = node_files;
    system_config cfg{id};
    caf::actor_system sys{cfg};
    auto hp = parse_address(tc.node_address).value();
    auto node = caf::openssl::remote_actor<node_actor>(sys, hp.first, hp.second);
    BOOST_REQUIRE(node);
    node_info info;
    info.host_id = net::host_identity();
    info.pid = static_cast<int32_t>(tc.node->pid());
    auto spawn = [&](const plugin_credential& c) {
      caf::scoped_actor self{sys};
      std::string why = "spawned";
      self->request(*node, std::chrono::seconds(5), spawn_atom::value, intruder_spec(),
                    caf::actor{self}, rendezvous_actor{}, c)
          .receive([&](replica_actor& r) { caf::anon_send_exit(r, caf::exit_reason::kill); },
                   [&](caf::error& e) { why = from_caf(e, "spawn").message(); });
      return why;
    };
    // A node certificate's proof, made for this very node and spec.
    auto as_node = spawn_credential(sys, *node, info, intruder_spec(), node_files,
                                    milliseconds(5000));
    BOOST_REQUIRE_MESSAGE(as_node.is_ok(), as_node.error().to_string());
    std::string why = spawn(*as_node);
    BOOST_TEST(contains(why, "replica refused"), why);
    BOOST_TEST(contains(why, "is a node certificate"), why);
    BOOST_TEST(contains(spawn(plugin_credential{}), "replica refused"));
    // A client's proof for another spec starts nothing either.
    replica_spec other = intruder_spec();
    other.rank = 1;
    auto for_other = spawn_credential(sys, *node, info, other, alice, milliseconds(5000));
    BOOST_REQUIRE(for_other.is_ok());
    why = spawn(*for_other);
    BOOST_TEST(contains(why, "identity proof does not hold"), why);
  }
  BOOST_TEST(replicas_on(tc.node_address, alice) == 0);
  BOOST_TEST(wait_for_text(tc.home.file("node.log"), "replica refused", milliseconds(5000)),
             tc.node_log());
  train_one_epoch(tc.address, alice, "a client");
  BOOST_TEST(tc.node->running());
}

// A node's log is its user's: on TLS a client certificate reads it (as
// `dtrain logs` does), a node's certificate (on every node host) or the
// head's does not, nor a request without a credential.
BOOST_AUTO_TEST_CASE(a_nodes_log_is_read_with_a_client_certificate_and_not_a_nodes) {
  tls_processes tc;
  auto& pki = tc.pki;
  node_info info;
  info.host_id = net::host_identity();
  info.pid = static_cast<int32_t>(tc.node->pid());
  info.address = tc.node_address;
  auto read_as = [&](const sec::tls_files& files) {
    tls_identity id;
    id.files = files;
    system_config cfg{id};
    caf::actor_system sys{cfg};
    auto hp = parse_address(tc.node_address).value();
    auto node = caf::openssl::remote_actor<node_actor>(sys, hp.first, hp.second);
    BOOST_REQUIRE(node);
    caf::scoped_actor self{sys};
    // An identity proof with `files` for this very read of this node.
    auto chunk = read_log_chunk(self, log_source{*node, info, files, "node 0"}, 0, 1 << 16,
                                milliseconds(5000));
    std::string bare = "served";
    self->request(*node, std::chrono::seconds(5), log_atom::value, int64_t{0}, int32_t{1 << 16},
                  plugin_credential{})
        .receive([](log_chunk&) {}, [&](caf::error& e) { bare = from_caf(e, "log").message(); });
    BOOST_TEST(contains(bare, "log read refused"), bare);
    return chunk.is_ok() ? chunk->bytes : "refused: " + chunk.error().message();
  };
  const std::string as_client = read_as(pki.files("alice", pki.ca_dir));
  BOOST_TEST(contains(as_client, "joined"), as_client);
  const std::string as_node = read_as(pki.files("node-1", pki.ca_dir));
  BOOST_TEST(contains(as_node, "refused: reading the log of node 0: "), as_node);
  BOOST_TEST(contains(as_node, "log read refused"), as_node);
  BOOST_TEST(contains(as_node, "is a node certificate"), as_node);
  const std::string as_head = read_as(pki.files("head", pki.ca_dir));
  BOOST_TEST(contains(as_head, "log read refused"), as_head);
  BOOST_TEST(tc.node->running());
}

// A node certificate is on every node host: with its own, valid node
// session it may register, but the head refuses it every client request
// (the session's role decides, not the node id the message claims). A
// client certificate's session is served, the experiment store included.
BOOST_AUTO_TEST_CASE(a_node_session_is_refused_every_client_request_at_the_head) {
  tls_processes tc;
  tls_identity id;
  id.files = tc.pki.files("node-1", tc.pki.ca_dir);
  id.role_ = sec::role::node;
  id.subject = "CN=node-1,O=dtrain";
  {
    system_config cfg{id};
    caf::actor_system sys{cfg};
    auto head = connect_head(sys, tc.address, milliseconds(5000), {}, id);
    BOOST_REQUIRE_MESSAGE(head.is_ok(), head.error().to_string());
    auto joined = authenticate(sys, *head, id, tc.address, milliseconds(5000));
    BOOST_REQUIRE_MESSAGE(joined.is_ok(), joined.error().to_string());
    BOOST_REQUIRE(!joined->empty());
    const std::string node_role =
        " needs a client certificate; the session is of 'CN=node-1,O=dtrain', a node certificate";
    caf::scoped_actor self{sys};
    std::string why;
    auto failed = [&](caf::error& e) { why = from_caf(e, "").message(); };
    why = "served";
    self->request(*head, std::chrono::seconds(5), status_atom::value, *joined)
        .receive([](cluster_status&) {}, failed);
    BOOST_TEST(contains(why, "the cluster's status" + node_role), why);
    why = "served";
    self->request(*head, std::chrono::seconds(5), place_atom::value, std::string("intruder"),
                  int32_t{1}, false, caf::actor{self}, *joined)
        .receive([](std::vector<assignment>&) {}, failed);
    BOOST_TEST(contains(why, "placing trainer intruder" + node_role), why);
    why = "served";
    self->request(*head, std::chrono::seconds(5), experiments_atom::value, *joined)
        .receive([](experiments::experiment_service&) {}, failed);
    BOOST_TEST(contains(why, "the experiment store" + node_role), why);
    why = "served";
    self->request(*head, std::chrono::seconds(5), caf::get_atom::value, int32_t{0}, *joined)
        .receive([](node_actor&) {}, failed);
    BOOST_TEST(contains(why, "looking up a node" + node_role), why);
  }
  BOOST_TEST(wait_for_text(tc.home.file("head.log"), "refused", milliseconds(5000)),
             tc.head_log());
  cluster::options o{tc.address, 0, 0, milliseconds(10000)};
  o.tls = tc.pki.files("alice", tc.pki.ca_dir);
  auto alice = cluster::connect(o);
  BOOST_REQUIRE_MESSAGE(alice.is_ok(), alice.error().to_string());
  caf::scoped_actor self{(*alice)->system()};
  cluster_status st;
  self->request((*alice)->head(), std::chrono::seconds(5), status_atom::value, (*alice)->session())
      .receive([&](cluster_status& s) { st = std::move(s); },
               [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
  BOOST_TEST(st.nodes.size() == 1u);
  BOOST_TEST(st.trainers.empty(), "the node placed nothing");
  auto store = (*alice)->experiments();
  BOOST_REQUIRE_MESSAGE(store.is_ok(), store.error().to_string());
  auto listed = (*store)->experiments();
  BOOST_TEST(listed.is_ok(), (listed.is_ok() ? "" : listed.error().to_string()));
}

// The head forgets a client whose connection is gone (`dtrain status`
// leaves no actor behind whose end would tell it) and keeps one that is
// still connected however quiet it is: both by its idle sweeps, which ask
// the middleman for the connection.
BOOST_AUTO_TEST_CASE(the_head_forgets_a_client_that_left_and_keeps_a_quiet_connected_one) {
  tls_processes tc;
  const auto alice = tc.pki.files("alice", tc.pki.ca_dir);
  auto attach = [&] {
    cluster::options o{tc.address, 0, 0, milliseconds(10000)};
    o.tls = alice;
    auto c = cluster::connect(o);
    BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
    return std::move(*c);
  };
  auto refusal = [](cluster& c) {  // "" when the head serves its status
    caf::scoped_actor self{c.system()};
    std::string why = "no answer";
    self->request(c.head(), std::chrono::seconds(5), status_atom::value, c.session())
        .receive([&](cluster_status&) { why.clear(); },
                 [&](caf::error& e) { why = from_caf(e, "status").message(); });
    return why;
  };
  auto quiet = attach();
  BOOST_TEST(refusal(*quiet) == "");
  std::string gone;
  {
    auto brief = attach();
    BOOST_TEST(refusal(*brief) == "");
    gone = caf::to_string(brief->system().node());
  }
  BOOST_TEST(wait_for_text(tc.home.file("head.log"), "process " + gone + " left (no connection)",
                           milliseconds(10000)),
             tc.head_log());
  std::this_thread::sleep_for(2 * head_rss_interval);  // a few more sweeps
  const std::string kept = caf::to_string(quiet->system().node());
  BOOST_TEST(!contains(tc.head_log(), "process " + kept + " left"), tc.head_log());
  BOOST_TEST(refusal(*quiet) == "");
}

// libcaf_openssl's SSL_* calls must reach dtrain's wrappers (tls.cpp) in
// this binary too, now that they live in libdtrain_actors.so: lookup order
// is the executable, then its DT_NEEDED breadth-first.
BOOST_AUTO_TEST_CASE(the_tls_wrappers_take_the_place_of_libssls_functions) {
  BOOST_TEST(tls_wrappers_in_effect());
}

BOOST_AUTO_TEST_CASE(a_non_loopback_bind_without_certificates_is_refused) {
  dtrain::testing::temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  child_process head({DTRAIN_BINARY, "start", "--head", "--bind", "0.0.0.0", "--port", "0"},
                     home.file("head.log"));
  BOOST_TEST(head.wait(milliseconds(10000)) == 2);
  std::string log = read_file(home.file("head.log"));
  BOOST_TEST(contains(log, "plain remoting is allowed on loopback only"), log);
  BOOST_TEST(contains(log, "dtrain cert ca create"), log);
  // Some TLS files but not all: the error names what is missing.
  child_process half({DTRAIN_BINARY, "start", "--head", "--tls-cert", home.file("x.pem")},
                     home.file("half.log"));
  BOOST_TEST(half.wait(milliseconds(10000)) == 2);
  log = read_file(home.file("half.log"));
  BOOST_TEST(contains(log, "missing: --tls-key, --tls-ca"), log);
}

BOOST_AUTO_TEST_CASE(with_certificates_a_head_may_listen_on_every_interface) {
  test_pki pki;
  dtrain::testing::temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  std::vector<std::string> args{DTRAIN_BINARY, "start", "--head", "--bind", "0.0.0.0",
                                "--port", "0", "--port-file", home.file("head.address")};
  for (auto& f : test_pki::flags(pki.files("head", pki.ca_dir)))
    args.push_back(f);
  child_process head(args, home.file("head.log"));
  std::string address = trimmed(wait_for_file(home.file("head.address"), milliseconds(10000)));
  BOOST_TEST(!address.empty(), read_file(home.file("head.log")));
  BOOST_TEST(head.stop(SIGTERM, milliseconds(5000)));
}

BOOST_AUTO_TEST_SUITE_END()
