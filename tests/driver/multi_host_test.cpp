// Multi-host clusters on separate network hosts: the head and each node in
// a network namespace of its own (its own interface, address and host
// name) on one bridge, made and removed by the test (netns_lab). The
// driver is this process, moved into the head's namespace. Checks that
// replicas on two hosts train over Gloo with identical parameters, that a
// host whose node is killed is survived with fewer replicas (no spare
// node) and the group grows back when it returns, and that a cut cable is
// found through heartbeats. Every process speaks mutual TLS (certificates
// made by the test in $DTRAIN_HOME/tls, the default place), since dtrain
// refuses plain remoting off loopback. Skipped, saying why, where the
// machine does not allow network namespaces.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>

#include "support/child_process.hpp"
#include "support/netns_lab.hpp"
#include "support/trainer_runs.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/security/certificates.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using dtrain::testing::status_of;
using dtrain::testing::child_process;
using dtrain::testing::netns_lab;
using std::chrono::milliseconds;
using clock_type = std::chrono::steady_clock;

namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

/// A fresh DTRAIN_HOME (set in the environment, so that the head, the
/// nodes and this driver find them) with a cluster CA and head, node and
/// client certificates in its tls/ directory.
struct tls_home {
  dtrain::testing::temp_dir home;

  tls_home() {
    setenv("DTRAIN_HOME", home.path().c_str(), 1);
    const std::string dir = security::default_tls_dir();
    security::ca_request ca;
    ca.dir = dir;
    auto made = security::create_ca(ca);
    BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
    for (auto role : {security::role::head, security::role::node, security::role::client}) {
      security::certificate_request r;
      r.role_ = role;
      r.name = std::string("multi-host ") + security::role_name(role);
      r.file_stem = security::role_name(role);
      r.ca_dir = dir;
      r.out_dir = dir;
      auto cert = security::create_certificate(r);
      BOOST_REQUIRE_MESSAGE(cert.is_ok(), cert.error().to_string());
    }
  }
  std::string file(const std::string& name) const { return home.file(name); }
};

bool lab_or_skip() {
  std::string why = netns_lab::unavailable_reason();
  if (why.empty())
    return true;
  BOOST_TEST_MESSAGE("SKIPPED (no network namespaces: " << why << ")");
  return false;
}

/// A head on host 0 and a node with one slot on each other host, started
/// with the dtrain command line over the lab's network (non-loopback
/// addresses); the driver (this thread) sits in host 0's namespace.
struct lab_cluster {
  netns_lab lab;
  tls_home home;
  std::unique_ptr<child_process> head;
  std::vector<std::unique_ptr<child_process>> nodes;
  std::string address;
  std::unique_ptr<netns_lab::enter> inside;

  explicit lab_cluster(int hosts) : lab(hosts) {
    BOOST_REQUIRE_MESSAGE(lab.ok(), lab.error());
    head = std::make_unique<child_process>(
        lab.on_host(0, {DTRAIN_BINARY, "start", "--head", "--bind", lab.address(0), "--port", "0",
                        "--port-file", home.file("head.address")}),
        home.file("head.log"));
    address = trimmed(dtrain::testing::wait_for_file(home.file("head.address"), milliseconds(10000)));
    BOOST_REQUIRE_MESSAGE(address == lab.address(0) + address.substr(address.find(':')),
                          "the head did not start on " << lab.address(0) << ": '" << address << "'");
    nodes.resize(hosts);
    for (int h = 1; h < hosts; ++h)
      start_node(h);
    inside = std::make_unique<netns_lab::enter>(lab, 0);
    BOOST_REQUIRE(inside->ok());
  }

  // A node on host h, which finds its own address (the interface that
  // routes to the head) and advertises it.
  void start_node(int h) {
    std::string port_file = home.file("node" + std::to_string(h) + "-" +
                                      std::to_string(clock_type::now().time_since_epoch().count()));
    nodes[h] = std::make_unique<child_process>(
        lab.on_host(h, {DTRAIN_BINARY, "start", "--address", address, "--slots", "1",
                        "--port-file", port_file}),
        home.file("node" + std::to_string(h) + ".log"));
    std::string at = trimmed(dtrain::testing::wait_for_file(port_file, milliseconds(10000)));
    BOOST_REQUIRE_MESSAGE(at.rfind(lab.address(h) + ":", 0) == 0,
                          "node on host " << h << " advertises '" << at << "'");
  }

  // Which host a replica runs on, from the address its node advertised.
  int host_of(const assignment& a) const {
    for (int h = 0; h < lab.hosts(); ++h)
      if (a.info.address.rfind(lab.address(h) + ":", 0) == 0)
        return h;
    return -1;
  }

  ~lab_cluster() {
    inside.reset();  // back to the test's own namespace
    for (auto& n : nodes)
      if (n)
        n->stop(SIGKILL, milliseconds(2000));
    if (head)
      head->stop(SIGKILL, milliseconds(2000));
  }
};

trainer_config small_mlp(const std::string& checkpoints) {
  trainer_config t;
  t.name = "multi-host";
  t.operator_name = "mlp_classifier";
  t.config = {{"hidden", "128"}, {"epochs", "3"}, {"data_dir", dtrain::testing::fashion_mnist_dir()}};
  t.num_replicas = 2;
  t.global_batch_size = 128;
  t.seed = 5;
  t.collective_timeout = milliseconds(20000);
  t.placement_timeout = milliseconds(20000);
  t.checkpoint_dir = checkpoints;
  t.max_failures = 3;
  return t;
}

void require_identical(trainer& t) {
  auto hashes = t.parameter_hashes();
  BOOST_REQUIRE_MESSAGE(hashes.is_ok(), hashes.error().to_string());
  for (auto h : *hashes)
    BOOST_TEST(h == hashes->front());
}

// Trains until the replicas have done `epochs`; the validation accuracy.
double train_to(trainer& t, int64_t epochs) {
  for (int64_t done = 0; done < epochs;) {
    auto m = t.train();
    BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
    done = m->epoch;
    require_identical(t);
  }
  auto v = t.validate();
  BOOST_REQUIRE_MESSAGE(v.is_ok(), v.error().to_string());
  return v->accuracy;
}

// Trains epoch 1 (checkpointed), starts epoch 2 and, once it is under way,
// does `hit` to the host of replica 1; that host, epoch 2's outcome, and how
// long after the hit the trainer noticed its first failure.
struct mid_epoch_fault {
  int host = -1;
  result<metrics_msg> epoch2{status(error_code::internal, "not run")};
  milliseconds noticed_after{0};
};

mid_epoch_fault hit_mid_epoch_two(trainer& t, lab_cluster& lc, const std::function<void(int)>& hit) {
  mid_epoch_fault out;
  BOOST_REQUIRE(t.train().is_ok());
  out.host = lc.host_of(t.placement()[1]);
  BOOST_REQUIRE(out.host > 0);
  auto epoch2 = t.train_async();
  std::this_thread::sleep_for(milliseconds(300));
  auto hit_at = clock_type::now();
  hit(out.host);
  out.epoch2 = epoch2.get();
  BOOST_REQUIRE_MESSAGE(out.epoch2.is_ok(), out.epoch2.error().to_string());
  BOOST_REQUIRE(!t.failures().empty());
  out.noticed_after = std::chrono::duration_cast<milliseconds>(t.failures()[0].noticed - hit_at);
  BOOST_TEST_MESSAGE("noticed after " << out.noticed_after.count() << " ms: " << t.failures()[0].cause);
  return out;
}

// Whether the head lists a usable node on `host` of the lab.
bool lists_host(cluster& c, const lab_cluster& lc, int host) {
  for (const auto& n : status_of(c).nodes)
    if (n.address.rfind(lc.lab.address(host) + ":", 0) == 0)
      return true;
  return false;
}

// Polls until `what` holds or `limit` has passed; whether it held.
bool eventually(const std::function<bool()>& what, milliseconds limit) {
  const auto end = clock_type::now() + limit;
  for (;;) {
    if (what())
      return true;
    if (clock_type::now() >= end)
      return false;
    std::this_thread::sleep_for(milliseconds(200));
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(multi_host)

BOOST_AUTO_TEST_CASE(two_hosts_train_the_shipped_experiment_over_gloo_with_identical_replicas) {
  if (!lab_or_skip())
    return;
  lab_cluster lc(3);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)});
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  auto e = experiments::load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist.yaml");
  BOOST_REQUIRE_MESSAGE(e.is_ok(), e.error().to_string());
  dtrain::testing::temp_dir ckpt;
  auto cfg = trainer_config_from(*e);
  cfg.config["data_dir"] = dtrain::testing::fashion_mnist_dir();
  cfg.checkpoint_dir = ckpt.path();
  auto t = trainer::create(**c, cfg);
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  // One replica on each node host, each knowing its host apart.
  const auto& placed = (*t)->placement();
  BOOST_REQUIRE(placed.size() == 2u);
  BOOST_TEST(lc.host_of(placed[0]) + lc.host_of(placed[1]) == 3);
  BOOST_TEST(placed[0].info.host_id != placed[1].info.host_id);
  BOOST_TEST(placed[0].info.host != placed[1].info.host);
  auto first = (*t)->train();
  BOOST_REQUIRE_MESSAGE(first.is_ok(), first.error().to_string());
  require_identical(**t);
  // The gradients crossed between the two node hosts over TCP (Gloo); the
  // control plane never links two nodes directly.
  std::string sockets = lc.lab.run_on(1, "ss -tnH state established");
  BOOST_TEST_MESSAGE("host 1 sockets:\n" << sockets);
  BOOST_TEST(sockets.find(lc.lab.address(2) + ":") != std::string::npos);
  double accuracy = train_to(**t, e->epochs);
  BOOST_TEST_MESSAGE("shipped experiment over two hosts: accuracy " << accuracy);
  BOOST_TEST(accuracy >= 0.88);
  BOOST_TEST((*t)->failures().empty());
  BOOST_REQUIRE((*t)->shutdown().is_ok());
}

BOOST_AUTO_TEST_CASE(a_host_killed_is_survived_without_a_spare_node_and_the_group_grows_back) {
  if (!lab_or_skip())
    return;
  setenv("DTRAIN_HANG_TIMEOUT_MS", "2000", 1);
  lab_cluster lc(3);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  double reference = 0;
  {
    dtrain::testing::temp_dir ckpt;
    auto t = trainer::create(*c, small_mlp(ckpt.path())).value();
    reference = train_to(*t, 3);
  }
  dtrain::testing::temp_dir ckpt;
  auto cfg = small_mlp(ckpt.path());
  cfg.min_replicas = 1;
  auto t = trainer::create(*c, cfg).value();
  auto fault = hit_mid_epoch_two(*t, lc, [&](int host) { kill(lc.nodes[host]->pid(), SIGKILL); });
  BOOST_REQUIRE(t->failures().size() == 1u);
  BOOST_TEST((fault.noticed_after < milliseconds(1500)));
  BOOST_TEST(t->world_size() == 1);  // no spare node: the group went on with one
  BOOST_TEST(fault.epoch2->epoch == 2);
  // The host comes back: at the next epoch boundary the group grows to two.
  lc.start_node(fault.host);
  // Listening is not yet registered: the group grows at the first epoch
  // boundary after the head lists the node again (on a loaded machine that
  // can be after the next boundary, so wait for it).
  BOOST_REQUIRE(eventually([&] { return lists_host(*c, lc, fault.host); }, milliseconds(20000)));
  double accuracy = train_to(*t, 3);
  BOOST_TEST(t->world_size() == 2);
  BOOST_TEST_MESSAGE("accuracy " << accuracy << " vs uninterrupted " << reference);
  BOOST_TEST(std::fabs(accuracy - reference) <= 0.005);
  BOOST_REQUIRE(t->shutdown().is_ok());
}

BOOST_AUTO_TEST_CASE(a_host_whose_link_is_cut_is_found_by_heartbeats_and_survived) {
  if (!lab_or_skip())
    return;
  setenv("DTRAIN_HANG_TIMEOUT_MS", "2000", 1);
  lab_cluster lc(3);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  dtrain::testing::temp_dir ckpt;
  auto cfg = small_mlp(ckpt.path());
  cfg.min_replicas = 1;
  auto t = trainer::create(*c, cfg).value();
  auto fault = hit_mid_epoch_two(*t, lc, [&](int host) { BOOST_REQUIRE(lc.lab.set_link(host, false)); });
  BOOST_TEST((fault.noticed_after < milliseconds(2000 + 2000)));
  BOOST_TEST(t->world_size() == 1);
  // The cut may land in epoch 2 or, when that epoch was quick, in the save
  // after it (whose shards may then be complete): either way the next
  // epoch follows the one the recovered group reported.
  BOOST_TEST(fault.epoch2->epoch >= 2);
  auto last = t->train();
  BOOST_REQUIRE_MESSAGE(last.is_ok(), last.error().to_string());
  BOOST_TEST(last->epoch == fault.epoch2->epoch + 1);
  BOOST_REQUIRE(t->shutdown().is_ok());
}

BOOST_AUTO_TEST_CASE(a_node_host_cut_off_for_8_s_joins_again_and_takes_replicas) {
  if (!lab_or_skip())
    return;
  setenv("DTRAIN_HANG_TIMEOUT_MS", "2000", 1);  // both sides drop the link after 2 s
  lab_cluster lc(3);
  auto c = cluster::connect({lc.address, 0, 0, milliseconds(10000)}).value();
  BOOST_REQUIRE(status_of(*c).nodes.size() == 2u);
  const pid_t node_pid = lc.nodes[1]->pid();
  BOOST_REQUIRE(lc.lab.set_link(1, false));
  // The head gives the node up once its heartbeats stop...
  BOOST_TEST(eventually([&] { return !lists_host(*c, lc, 1); }, milliseconds(6000)));
  std::this_thread::sleep_for(milliseconds(8000) - milliseconds(6000));
  BOOST_REQUIRE(lc.lab.set_link(1, true));
  const auto mended = clock_type::now();
  // ...and the node, which kept running, is back within seconds.
  BOOST_TEST(eventually([&] { return lists_host(*c, lc, 1); }, milliseconds(10000)));
  const auto back = std::chrono::duration_cast<milliseconds>(clock_type::now() - mended);
  BOOST_TEST_MESSAGE("listed again " << back.count() << " ms after the link returned");
  BOOST_TEST((back < milliseconds(8000)));
  BOOST_TEST(lc.nodes[1]->running());
  BOOST_TEST(lc.nodes[1]->pid() == node_pid);
  const auto st = status_of(*c);
  BOOST_TEST(st.nodes.size() == 2u);  // counted once
  BOOST_TEST(st.lost.empty());
  // It takes replicas again: two replicas need both one-slot nodes.
  dtrain::testing::temp_dir ckpt;
  auto t = trainer::create(*c, small_mlp(ckpt.path()));
  BOOST_REQUIRE_MESSAGE(t.is_ok(), t.error().to_string());
  BOOST_TEST(lc.host_of((*t)->placement()[0]) + lc.host_of((*t)->placement()[1]) == 3);
  auto m = (*t)->train();
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  require_identical(**t);
  BOOST_REQUIRE((*t)->shutdown().is_ok());
  const std::string log = dtrain::testing::read_file(lc.home.file("node1.log"));
  BOOST_TEST(log.find("joined " + lc.address + " again") != std::string::npos, log);
}

BOOST_AUTO_TEST_CASE(a_head_address_that_never_answers_is_an_error_within_the_connect_timeout) {
  if (!lab_or_skip())
    return;
  netns_lab lab(1);
  BOOST_REQUIRE_MESSAGE(lab.ok(), lab.error());
  tls_home home;  // a driver without certificates would be refused at once
  netns_lab::enter inside(lab, 0);
  BOOST_REQUIRE(inside.ok());
  // Nobody has this address on the lab's network: the connection attempt
  // gets no answer at all (CAF alone would wait about two minutes).
  auto start = clock_type::now();
  auto c = cluster::connect({"10.213.0.99:6379", 0, 0, milliseconds(1500)});
  auto took = std::chrono::duration_cast<milliseconds>(clock_type::now() - start);
  BOOST_REQUIRE(!c.is_ok());
  BOOST_TEST_MESSAGE("after " << took.count() << " ms: " << c.error().to_string());
  BOOST_TEST(c.error().message().find("10.213.0.99:6379") != std::string::npos);
  BOOST_TEST((took < milliseconds(3000)));
}

BOOST_AUTO_TEST_SUITE_END()
