// What the scale harness (tools/bench/scale, docs/scale.md) found, at sizes
// the test command affords: the head's polls stay within their budget
// however many nodes there are, and every node still gets its turn;
// refusals name a bounded number of nodes and holders; status reports the
// head's load; a node whose registration goes unanswered asks again;
// processes schedule without polling.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <stdlib.h>

#include <cctype>
#include <memory>
#include <string>
#include <vector>

#include "cluster/head_fixture.hpp"
#include "dtrain/cluster/experiment_service.hpp"
#include "dtrain/cluster/head_table.hpp"
#include "support/child_process.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using namespace dtrain::testing;

namespace {

/// Registers `n` one-slot fake nodes; false at the first refusal.
bool add_nodes(head_fixture& f, int n) {
  for (int i = 0; i < n; ++i)
    if (!f.add_node("sim" + std::to_string(i), 1, {}))
      return false;
  return true;
}

int known_rss(const cluster_status& s) {
  int known = 0;
  for (int64_t b : s.rss_bytes)
    known += b == 12345;  // what the fake node answers
  return known;
}

} // namespace

BOOST_AUTO_TEST_SUITE(head_scale)

BOOST_AUTO_TEST_CASE(each_rss_slice_asks_every_node_per_round_within_the_budget) {
  using head_detail::poll_share;
  const int32_t cap = static_cast<int32_t>(head_polls_per_second * head_poll_tick.count() / 1000);
  const int32_t one_round = static_cast<int32_t>(head_polls_per_second * head_rss_interval.count() / 1000);
  BOOST_TEST(poll_share(0) == 0);
  BOOST_TEST(poll_share(1) == 1);
  BOOST_TEST(poll_share(128) == 128);              // a small cluster: all of it each round
  BOOST_TEST(poll_share(one_round) == one_round);
  BOOST_TEST(head_detail::polls_fit_one_slice(one_round));
  BOOST_TEST(!head_detail::polls_fit_one_slice(one_round + 1));
  BOOST_TEST(poll_share(one_round + 1) == cap);    // a large one: the budget, in slices
  BOOST_TEST(poll_share(1000000) == cap);
}

BOOST_FIXTURE_TEST_CASE(the_heads_polls_stay_within_budget_and_every_node_gets_its_turn,
                        head_fixture) {
  // Past the budget's size: 3x the nodes one round may ask.
  const int n = 3 * head_polls_per_second * static_cast<int>(head_rss_interval.count()) / 1000;
  BOOST_REQUIRE(add_nodes(*this, n));
  const cluster_status before = status_now();
  const auto t0 = std::chrono::steady_clock::now();
  // Every node is asked within n / budget seconds (6 s here), plus slack.
  const auto turn = milliseconds(1000 * n / head_polls_per_second + 3000);
  BOOST_TEST(eventually([&](const cluster_status& s) { return known_rss(s) == n; }, turn),
             "not every node was asked for its RSS within " << turn.count() << " ms");
  const cluster_status after = status_now();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double rate = static_cast<double>(after.load.node_polls - before.load.node_polls) / seconds;
  // Before the budget the head asked all n every 2 s: 300/s here.
  BOOST_TEST(rate <= head_polls_per_second * 1.3, rate << " polls/s over " << seconds << " s");
  BOOST_TEST(rate >= head_polls_per_second * 0.5, rate << " polls/s over " << seconds << " s");
}

BOOST_FIXTURE_TEST_CASE(a_small_cluster_is_still_asked_all_at_once_each_round, head_fixture) {
  BOOST_REQUIRE(add_nodes(*this, 20));
  BOOST_TEST(eventually([&](const cluster_status& s) { return known_rss(s) == 20; },
                        milliseconds(head_rss_interval.count() + 1500)));
}

BOOST_FIXTURE_TEST_CASE(refusals_name_a_bounded_number_of_holders_and_nodes, head_fixture) {
  const int n = 300;
  BOOST_REQUIRE(add_nodes(*this, n));
  for (int i = 0; i < n; ++i)
    BOOST_REQUIRE(place("t" + std::to_string(1000 + i), 1, false));
  // Full: a trainer waiting for capacity gets this every half second.
  auto busy = place("waiting", 1, false);
  BOOST_REQUIRE(!busy);
  BOOST_TEST(busy.error().code() == error_code::unavailable);
  const std::string why = busy.error().message();
  BOOST_TEST(why.size() < 600u, why.size() << " chars: " << why);
  BOOST_TEST(why.find("0 free, the rest held by t1000, t1001") != std::string::npos, why);
  BOOST_TEST(why.find("and 292 more trainers") != std::string::npos, why);
  // More than the cluster has: the nodes are named, a few of them.
  auto never = place("huge", n + 1, false);
  BOOST_REQUIRE(!never);
  BOOST_TEST(never.error().code() == error_code::invalid_argument);
  const std::string too_large = never.error().message();
  BOOST_TEST(too_large.size() < 800u, too_large.size() << " chars: " << too_large);
  BOOST_TEST(too_large.find("has 300 in all") != std::string::npos, too_large);
  BOOST_TEST(too_large.find("and 292 more nodes") != std::string::npos, too_large);
}

BOOST_FIXTURE_TEST_CASE(status_reports_the_heads_requests_and_placement_times, head_fixture) {
  BOOST_REQUIRE(add_nodes(*this, 4));
  const cluster_status first = status_now();
  for (int i = 0; i < 10; ++i) {
    BOOST_REQUIRE(place("p" + std::to_string(i), 1, false));
    release("p" + std::to_string(i));
  }
  const cluster_status s = status_now();
  BOOST_TEST(s.load.placements_timed == 10);
  BOOST_TEST(s.load.place_p50_ms >= 0.0);
  BOOST_TEST(s.load.place_p99_ms >= s.load.place_p50_ms);
  BOOST_TEST(s.load.place_p99_ms < 1000.0);
  // 10 placements, 10 releases and this status since the first one.
  BOOST_TEST(s.load.requests - first.load.requests == 21);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// A head that leaves the first registration unanswered (as a head too busy
/// to answer within the node's timeout would) and takes the later ones.
/// Everything else is refused: a node does not ask for it.
struct slow_head_state {
  int registrations = 0;
  std::vector<caf::typed_response_promise<int32_t>> parked;
};

head_actor::behavior_type slow_head(head_actor::stateful_pointer<slow_head_state> self) {
  auto no = [](const char* what) { return to_caf(status(error_code::unavailable, what)); };
  return {
    [=](register_atom, node_info&, node_actor&, const std::string&) -> caf::result<int32_t> {
      if (++self->state.registrations == 1) {
        self->state.parked.push_back(self->make_response_promise<int32_t>());
        return self->state.parked.back();
      }
      return int32_t{0};
    },
    [=](rejoin_atom, node_info&, node_actor&, int32_t, const std::vector<hosted_replica>&,
        const std::string&) -> caf::result<int32_t> { return no("rejoin"); },
    [=](place_atom, const std::string&, int32_t, bool, caf::actor&,
        const std::string&) -> caf::result<std::vector<assignment>> { return no("place"); },
    [=](release_atom, const std::string&, const caf::actor&,
        const std::string&) -> caf::result<caf::ok_atom> { return no("release"); },
    [=](resize_atom, const std::string&, const std::vector<assignment>&, int32_t, bool,
        const caf::actor&, const std::string&) -> caf::result<std::vector<assignment>> {
      return no("resize");
    },
    [=](unreach_atom, int32_t, const std::string&) -> caf::result<caf::ok_atom> {
      return no("unreach");
    },
    [=](probe_atom, int32_t) {},
    [=](rss_atom) {},
    [=](status_atom, const std::string&) -> caf::result<cluster_status> { return no("status"); },
    [=](caf::get_atom, int32_t, const std::string&) -> caf::result<node_actor> {
      return no("get");
    },
    [=](experiments_atom, const std::string&) -> caf::result<experiments::experiment_service> {
      return no("experiments");
    },
    [=](hello_atom, const std::string&) -> caf::result<head_hello> { return no("hello"); },
    [=](prove_atom, const std::string&, const std::string&,
        const identity_msg&) -> caf::result<std::string> { return no("prove"); },
  };
}

} // namespace

BOOST_AUTO_TEST_SUITE(head_scale)

// A hundred nodes starting at once on one host once left some of them
// without an answer to their registration for 10 s, and they gave up. A
// node now asks again (registering is idempotent at the head).
BOOST_AUTO_TEST_CASE(a_node_whose_registration_goes_unanswered_asks_again_and_joins) {
  system_config config;
  caf::actor_system sys{config};
  auto head = sys.spawn(slow_head);
  auto port = sys.middleman().publish(head, 0, "127.0.0.1");
  BOOST_REQUIRE(static_cast<bool>(port));
  temp_dir dir;
  const char* home = std::getenv("DTRAIN_HOME");
  const std::string old_home = home ? home : "";
  setenv("DTRAIN_HOME", dir.path().c_str(), 1);  // the node's pid file and secret go there
  const std::string log = dir.file("node.log");
  child_process node({DTRAIN_BINARY, "start", "--address", "127.0.0.1:" + std::to_string(*port),
                      "--slots", "1", "--port", "0", "--reconnect-window", "0"},
                     log, "/dev/null");
  // One registration timed out (10 s), the next one answered.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  std::string text;
  while (std::chrono::steady_clock::now() < deadline &&
         text.find(" joined ") == std::string::npos && node.running()) {
    std::this_thread::sleep_for(milliseconds(200));
    text = read_file(log);
  }
  BOOST_TEST(text.find("did not answer in time") != std::string::npos, text);
  BOOST_TEST(text.find("asking again") != std::string::npos, text);
  BOOST_TEST(text.find("dtrain node 0 joined") != std::string::npos, text);
  BOOST_TEST(node.stop(SIGKILL, milliseconds(5000)));
  caf::anon_send_exit(head, caf::exit_reason::user_shutdown);
  if (old_home.empty())
    unsetenv("DTRAIN_HOME");
  else
    setenv("DTRAIN_HOME", old_home.c_str(), 1);
}

BOOST_AUTO_TEST_CASE(every_process_schedules_with_sleeping_workers_not_polling_ones) {
  // Work stealing's idle polling cost each node process ~1% of a core and
  // kept a head with many peers polling (docs/scale.md).
  system_config config;
  BOOST_TEST(caf::get_or(config, "scheduler.policy", caf::atom("stealing")) == caf::atom("sharing"));
  // The middleman's worker pool lost senders of new connections' messages.
  BOOST_TEST(caf::get_or(config, "middleman.workers", size_t{99}) == size_t{0});
}

// Many nodes joining at once: no registration reaches the head without
// its sender (docs/scale.md: about one in a hundred did, with the
// middleman's worker pool, and that node waited seconds). 48 node processes here,
// the harness runs 128.
BOOST_AUTO_TEST_CASE(nodes_joining_at_once_all_reach_the_head_with_their_sender) {
  const char* home = std::getenv("DTRAIN_HOME");
  const std::string old_home = home ? home : "";
  temp_dir dir;
  setenv("DTRAIN_HOME", dir.path().c_str(), 1);
  child_process head({DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                      dir.file("head.address")},
                     dir.file("head.log"), "/dev/null");
  std::string address = wait_for_file(dir.file("head.address"), milliseconds(20000));
  while (!address.empty() && std::isspace(static_cast<unsigned char>(address.back())))
    address.pop_back();
  BOOST_REQUIRE(!address.empty());
  std::vector<std::unique_ptr<child_process>> nodes;
  const int n = 48;
  for (int i = 0; i < n; ++i)
    nodes.push_back(std::make_unique<child_process>(
        std::vector<std::string>{DTRAIN_BINARY, "start", "--address", address, "--slots", "1",
                                 "--port", "0", "--reconnect-window", "0"},
        dir.file("node" + std::to_string(i) + ".log"), "/dev/null"));
  auto joined = [&] {
    int count = 0;
    for (int i = 0; i < n; ++i)
      count += read_file(dir.file("node" + std::to_string(i) + ".log")).find(" joined ") !=
               std::string::npos;
    return count;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (joined() < n && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(200));
  BOOST_TEST(joined() == n, read_file(dir.file("node0.log")));
  // The loss's mark: a registration that reached the head without its
  // sender. (A node on a loaded machine may still ask twice because an
  // answer took over a second; that is not this defect.)
  const std::string head_log = read_file(dir.file("head.log"));
  BOOST_TEST(head_log.find("invalid-node") == std::string::npos, head_log);
  for (auto& node : nodes)
    node->stop(SIGKILL, milliseconds(5000));
  head.stop(SIGKILL, milliseconds(5000));
  if (old_home.empty())
    unsetenv("DTRAIN_HOME");
  else
    setenv("DTRAIN_HOME", old_home.c_str(), 1);
}

BOOST_AUTO_TEST_SUITE_END()
