// The head actor on its own, in this process: registration with fake GPU
// device lists, mixed CPU and GPU placement, release, nodes reported
// unreachable that come back (or do not), and what status says of them.
#include <boost/test/unit_test.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <thread>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/driver/trainer.hpp"
#include "dtrain/cuda/runtime.hpp"
#include "cluster/head_fixture.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using namespace dtrain::testing;
using std::chrono::milliseconds;

namespace {

std::set<std::pair<int32_t, int32_t>> gpus_of(const std::vector<assignment>& placed) {
  std::set<std::pair<int32_t, int32_t>> out;
  for (auto& a : placed)
    out.emplace(a.node, a.gpu);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(head_placement)

BOOST_FIXTURE_TEST_CASE(cpu_and_gpu_replicas_are_counted_apart_and_no_gpu_is_handed_out_twice,
                        head_fixture) {
  BOOST_REQUIRE(add_node("h0", 2, {0, 1}).is_ok());
  auto a = place("a", 1, true);
  BOOST_REQUIRE_MESSAGE(a.is_ok(), a.error().to_string());
  BOOST_TEST(a->at(0).gpu == 0);
  auto b = place("b", 2, false);  // both CPU slots: must not use up the GPUs
  BOOST_REQUIRE_MESSAGE(b.is_ok(), b.error().to_string());
  for (auto& x : *b)
    BOOST_TEST(x.gpu == -1);
  auto c = place("c", 1, true);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  BOOST_TEST(c->at(0).gpu == 1);  // not 0 again, though one slot counter would say so
  auto st = status_now();
  BOOST_REQUIRE(st.nodes.size() == 1u);
  BOOST_TEST(st.slots_used.at(0) == 2);
  BOOST_TEST(st.gpus_used.at(0) == 2);
  BOOST_TEST(st.nodes.at(0).gpus == 2);
  auto d = place("d", 1, true);
  BOOST_REQUIRE(!d.is_ok());
  BOOST_TEST((d.error().code() == error_code::unavailable));
  BOOST_TEST(d.error().message().find("0 free") != std::string::npos, d.error().message());
  release("a");
  auto again = place("d", 1, true);
  BOOST_REQUIRE_MESSAGE(again.is_ok(), again.error().to_string());
  BOOST_TEST(again->at(0).gpu == 0);  // the index "a" gave back, and only that one
  st = status_now();
  BOOST_TEST(st.slots_used.at(0) == 2);
  BOOST_TEST(st.gpus_used.at(0) == 2);
  release("b");
  st = status_now();
  BOOST_TEST(st.slots_used.at(0) == 0);
  BOOST_TEST(st.gpus_used.at(0) == 2);
}

BOOST_FIXTURE_TEST_CASE(gpu_indices_come_from_each_nodes_device_list_and_release_returns_them,
                        head_fixture) {
  BOOST_REQUIRE(add_node("h0", 1, {0, 1}).is_ok());
  BOOST_REQUIRE(add_node("h1", 1, {1, 3}).is_ok());  // e.g. CUDA_VISIBLE_DEVICES gaps
  auto a = place("a", 3, true);
  BOOST_REQUIRE_MESSAGE(a.is_ok(), a.error().to_string());
  auto held = gpus_of(*a);
  BOOST_TEST(held.size() == 3u);
  BOOST_TEST(held.count({0, 0}) == 1u);
  BOOST_TEST(held.count({0, 1}) == 1u);
  BOOST_TEST(held.count({1, 1}) == 1u);
  auto b = place("b", 1, true);
  BOOST_REQUIRE_MESSAGE(b.is_ok(), b.error().to_string());
  BOOST_TEST((gpus_of(*b) == std::set<std::pair<int32_t, int32_t>>{{1, 3}}));
  release("a");
  auto c = place("c", 3, true);
  BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
  BOOST_TEST((gpus_of(*c) == held));  // exactly what "a" gave back
  BOOST_TEST(!place("d", 1, true).is_ok());
  auto cpu = place("e", 2, false);  // the CPU slots are untouched by all of it
  BOOST_REQUIRE_MESSAGE(cpu.is_ok(), cpu.error().to_string());
}

BOOST_FIXTURE_TEST_CASE(a_gpu_request_on_nodes_without_gpus_is_a_placement_error_naming_it,
                        head_fixture) {
  BOOST_REQUIRE(add_node("cpu-only", 4, {}).is_ok());
  auto p = place("t", 1, true);
  BOOST_REQUIRE(!p.is_ok());
  BOOST_TEST_MESSAGE(p.error().to_string());
  BOOST_TEST((p.error().code() == error_code::invalid_argument));
  BOOST_TEST(p.error().message().find("needs 1 GPUs but the cluster has 0") != std::string::npos);
  BOOST_TEST(p.error().message().find("cpu-only) no GPUs") != std::string::npos);
  BOOST_TEST(p.error().message().find("no node offers a GPU") != std::string::npos);
  BOOST_TEST(place("t", 4, false).is_ok());  // the head is fine and places CPU replicas
}

BOOST_FIXTURE_TEST_CASE(a_registration_whose_gpu_count_differs_from_its_device_list_is_refused,
                        head_fixture) {
  node_info info{"h", "", 1, 2, 1, "h", {0}, ""};
  auto r = register_node(info, spawn_fake_node());
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST(r.error().message().find("offers 2 GPUs but lists 1") != std::string::npos,
             r.error().message());
  info.gpus = 2;
  info.gpu_devices = {1, 1};
  BOOST_TEST(!register_node(info, spawn_fake_node()).is_ok());
  BOOST_TEST(status_now().nodes.empty());
}

// A registration must bring the node actor of the registering process: a
// null handle would be placed on and handed to trainers.
BOOST_FIXTURE_TEST_CASE(a_registration_without_a_node_actor_is_refused, head_fixture) {
  node_info info{"h", "", 2, 0, 1, "h", {}, ""};
  auto r = register_node(info, node_actor{});
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST(r.error().message().find("no node actor given") != std::string::npos,
             r.error().message());
  BOOST_TEST(status_now().nodes.empty());
  BOOST_TEST(!place("t", 1, false).is_ok());
}

// The dashboard's liveness view: when the head last heard from each usable
// node (its RSS poll refreshes it), and the nodes it no longer places on.
BOOST_FIXTURE_TEST_CASE(status_says_when_each_node_was_last_heard_and_lists_the_lost_ones,
                        head_fixture) {
  BOOST_REQUIRE(add_node("h0", 1, {}).is_ok());
  const auto registered = std::chrono::steady_clock::now();
  auto st = status_now();
  BOOST_REQUIRE(st.last_heard_seconds.size() == 1u);
  BOOST_TEST(st.last_heard_seconds[0] >= 0.0);
  BOOST_TEST(st.last_heard_seconds[0] < 5.0);
  BOOST_TEST(st.lost.empty());
  // An RSS answer (every head_rss_interval) counts as hearing from it.
  auto since_registration = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - registered).count();
  };
  BOOST_TEST(eventually([&](const cluster_status& s) {
    return s.last_heard_seconds.size() == 1u && s.last_heard_seconds[0] + 0.5 < since_registration();
  }, milliseconds(3 * head_rss_interval.count() + 2000)));

  BOOST_REQUIRE(add_node("h1", 1, {}).is_ok());
  answering->store(false);  // its probes go unanswered: it stays suspect
  const int64_t before = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch()).count();
  unreachable(1);
  st = status_now();
  BOOST_REQUIRE(st.nodes.size() == 1u);  // `nodes` stays the usable ones
  BOOST_TEST(st.nodes[0].host == "h0");
  BOOST_TEST(st.last_heard_seconds.size() == 1u);
  BOOST_REQUIRE(st.lost.size() == 1u);
  BOOST_TEST(st.lost[0].info.host == "h1");
  BOOST_TEST(st.lost[0].node_id == 1);
  BOOST_TEST(st.lost[0].state == "suspect");
  BOOST_TEST(st.lost[0].lost_at >= before);
  BOOST_TEST(st.lost[0].lost_at <= before + 5);
  BOOST_TEST(st.lost[0].last_heard_seconds >= 0.0);
  const int64_t lost_at = st.lost[0].lost_at;
  // Its actor goes down: dead, still lost since the first time.
  caf::anon_send_exit(nodes[1], caf::exit_reason::kill);
  BOOST_TEST(eventually([](const cluster_status& s) {
    return s.lost.size() == 1u && s.lost[0].state == "dead";
  }, milliseconds(5000)));
  st = status_now();
  BOOST_REQUIRE(st.lost.size() == 1u);
  BOOST_TEST(st.lost[0].lost_at == lost_at);
  BOOST_TEST(st.nodes.size() == 1u);
}

// A node restarted at the address of a dead one replaces it in the lost
// list; an in-process node (no address) replaces nothing.
BOOST_FIXTURE_TEST_CASE(a_node_back_at_a_dead_ones_address_takes_it_off_the_lost_list,
                        head_fixture) {
  node_info info{"h1", "127.0.0.1:7001", 1, 0, 11, "h1", {}, ""};
  BOOST_REQUIRE(register_node(info, spawn_fake_node()).is_ok());
  BOOST_REQUIRE(add_node("inproc", 1, {}).is_ok());
  caf::anon_send_exit(nodes[0], caf::exit_reason::kill);
  caf::anon_send_exit(nodes[1], caf::exit_reason::kill);
  BOOST_TEST(eventually([](const cluster_status& s) {
    return s.lost.size() == 2u && s.lost[0].state == "dead" && s.lost[1].state == "dead";
  }, milliseconds(5000)));
  BOOST_REQUIRE(add_node("inproc", 1, {}).is_ok());
  BOOST_TEST(status_now().lost.size() == 2u);
  info.pid = 12;
  BOOST_REQUIRE(register_node(info, spawn_fake_node()).is_ok());
  auto st = status_now();
  BOOST_REQUIRE(st.lost.size() == 1u);
  BOOST_TEST(st.lost[0].info.host == "inproc");
  BOOST_TEST(st.nodes.size() == 2u);
}

BOOST_AUTO_TEST_CASE(asking_for_more_gpus_than_the_machine_has_is_an_error_not_an_abort) {
  const int present = cuda::device_count();
  auto none = offered_gpus(0);
  BOOST_REQUIRE(none.is_ok());
  BOOST_TEST(none->empty());
  auto all = offered_gpus(-1);
  BOOST_REQUIRE(all.is_ok());
  BOOST_TEST(static_cast<int>(all->size()) == present);
  auto too_many = offered_gpus(present + 1);
  BOOST_REQUIRE(!too_many.is_ok());
  BOOST_TEST_MESSAGE(too_many.error().to_string());
  BOOST_TEST(too_many.error().message().find("has " + std::to_string(present) + " usable CUDA") !=
             std::string::npos);
  if (present == 0)
    BOOST_TEST(too_many.error().message().find(cuda::unavailable_reason()) != std::string::npos);
  cluster::options o;
  o.local_slots = 1;
  o.local_gpus = present + 1;
  auto c = cluster::connect(o);
  BOOST_REQUIRE(!c.is_ok());
  BOOST_TEST(c.error().message().find("GPUs") != std::string::npos);
}

BOOST_FIXTURE_TEST_CASE(a_node_reported_unreachable_is_probed_and_usable_again_once_it_answers,
                        head_fixture) {
  answering->store(false);
  auto index = add_node("flaky", 2, {0});
  BOOST_REQUIRE(index.is_ok());
  unreachable(*index);
  BOOST_TEST(status_now().nodes.empty());
  auto refused = place("t", 1, false);
  BOOST_REQUIRE(!refused.is_ok());
  BOOST_TEST((refused.error().code() == error_code::invalid_argument));
  // Silent for several probe rounds: still suspect, and the head keeps
  // answering at once meanwhile (the probes never block it).
  for (int i = 0; i < 5; ++i) {
    auto start = std::chrono::steady_clock::now();
    BOOST_TEST(status_now().nodes.empty());
    BOOST_TEST((std::chrono::steady_clock::now() - start < milliseconds(500)));
    std::this_thread::sleep_for(head_probe_interval / 2);
  }
  answering->store(true);
  BOOST_TEST(eventually([](const cluster_status& st) { return st.nodes.size() == 1u; },
                        3 * (head_probe_interval + head_probe_timeout)));
  auto placed = place("t", 2, false);
  BOOST_TEST(placed.is_ok());
  auto gpu = place("g", 1, true);
  BOOST_REQUIRE(gpu.is_ok());
  BOOST_TEST(gpu->at(0).gpu == 0);
}

BOOST_FIXTURE_TEST_CASE(a_node_whose_actor_is_down_stays_dead, head_fixture) {
  answering->store(false);
  auto node = spawn_fake_node();
  auto index = add_node("gone", 1, {}, node);
  BOOST_REQUIRE(index.is_ok());
  unreachable(*index);
  caf::anon_send_exit(node, caf::exit_reason::kill);
  answering->store(true);  // nothing can answer: the actor is gone
  std::this_thread::sleep_for(2 * head_probe_interval + head_probe_timeout);
  BOOST_TEST(status_now().nodes.empty());
  BOOST_TEST(!place("t", 1, false).is_ok());
  // And a node that goes down without any report leaves at once.
  auto other = spawn_fake_node();
  BOOST_REQUIRE(add_node("other", 1, {}, other).is_ok());
  BOOST_TEST(status_now().nodes.size() == 1u);
  caf::anon_send_exit(other, caf::exit_reason::kill);
  BOOST_TEST(eventually([](const cluster_status& st) { return st.nodes.empty(); },
                        milliseconds(2000)));
}

// A node's figures are its own word: past the head's bounds (or negative)
// they are refused, naming the field and the bound; and the head's sums
// over many nodes at the bound (2^31 slots in all) do not overflow.
BOOST_FIXTURE_TEST_CASE(a_registration_past_the_bounds_is_refused_and_sums_do_not_overflow,
                        head_fixture) {
  for (int32_t slots : {std::numeric_limits<int32_t>::max(), max_node_cpu_slots + 1, -1}) {
    auto r = add_node("greedy", slots, {});
    BOOST_REQUIRE_MESSAGE(!r.is_ok(), slots << " CPU slots were accepted");
    BOOST_TEST((r.error().code() == error_code::invalid_argument));
    const std::string why = r.error().message();
    BOOST_TEST(why.find("cpu_slots must be between 0 and 1048576") != std::string::npos, why);
  }
  std::vector<int32_t> devices(max_node_gpus + 1);
  std::iota(devices.begin(), devices.end(), 0);
  auto r = add_node("gpus", 1, devices);
  BOOST_REQUIRE(!r.is_ok());
  const std::string why = r.error().message();
  BOOST_TEST(why.find("gpus must be between 0 and 1024") != std::string::npos, why);
  BOOST_TEST(status_now().nodes.empty());
  for (int i = 0; i < 2048; ++i)
    BOOST_REQUIRE(add_node("big" + std::to_string(i), max_node_cpu_slots, {}).is_ok());
  auto placed = place("t", 4, false);
  BOOST_REQUIRE_MESSAGE(placed.is_ok(), placed.error().to_string());
  BOOST_TEST(placed->size() == 4u);
  auto huge = place("u", max_replicas_per_placement + 1, false);
  BOOST_REQUIRE(!huge.is_ok());
  const std::string too_many = huge.error().message();
  BOOST_TEST(too_many.find("at most 65536 replicas") != std::string::npos, too_many);
}

// Two drivers whose trainers got one id (the old "name-host-pid-n" in two
// containers with one host name and pid): each placement is its own, and
// neither a re-placement nor a release of one frees the other's slots.
BOOST_FIXTURE_TEST_CASE(a_trainer_id_placed_by_another_owner_is_neither_replaced_nor_released,
                        head_fixture) {
  BOOST_REQUIRE(add_node("h0", 4, {}).is_ok());
  auto owner_a = sys.spawn([]() -> caf::behavior { return {[](int32_t) {}}; });
  auto owner_b = sys.spawn([]() -> caf::behavior { return {[](int32_t) {}}; });
  const std::string id = "fit-box-1-0";
  BOOST_REQUIRE(place(id, 2, false, owner_a).is_ok());
  BOOST_REQUIRE(place(id, 2, false, owner_b).is_ok());
  BOOST_TEST(status_now().slots_used.at(0) == 4);
  BOOST_REQUIRE(place(id, 1, false, owner_b).is_ok());  // b restarts with one replica
  BOOST_TEST(status_now().slots_used.at(0) == 3);
  release(id, owner_b);
  BOOST_TEST(status_now().slots_used.at(0) == 2);  // a's, untouched
  release(id, owner_a);
  BOOST_TEST(status_now().slots_used.at(0) == 0);
  caf::anon_send_exit(owner_a, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(owner_b, caf::exit_reason::user_shutdown);
}

// Two processes with one host name and pid, and the same count of ids made
// so far (a fork), still make different trainer ids.
BOOST_AUTO_TEST_CASE(trainer_ids_differ_between_processes_with_one_host_name_and_pid) {
  (void)make_trainer_id("fit", "box", 1);
  int p[2];
  BOOST_REQUIRE(::pipe(p) == 0);
  const pid_t child = ::fork();
  BOOST_REQUIRE(child >= 0);
  if (child == 0) {
    const std::string id = make_trainer_id("fit", "box", 1);
    (void)!::write(p[1], id.data(), id.size());
    ::_exit(0);
  }
  ::close(p[1]);
  const std::string mine = make_trainer_id("fit", "box", 1);
  std::string theirs;
  pollfd in{p[0], POLLIN, 0};
  char buf[256];
  while (::poll(&in, 1, 10000) > 0) {
    const ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n <= 0)
      break;
    theirs.append(buf, static_cast<size_t>(n));
  }
  ::close(p[0]);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  BOOST_TEST_MESSAGE("ids " << mine << " and " << theirs);
  BOOST_TEST(mine.rfind("fit-box-1-", 0) == 0u, mine);
  BOOST_TEST(theirs.rfind("fit-box-1-", 0) == 0u, theirs);
  BOOST_TEST(mine != theirs);
}

// Only the head's own timer probes: probe messages from anyone else start
// no chain of their own (each would ask the node until it answers).
BOOST_FIXTURE_TEST_CASE(probe_messages_from_others_start_no_probe_chain, head_fixture) {
  answering->store(false);
  auto index = add_node("silent", 1, {});
  BOOST_REQUIRE(index.is_ok());
  unreachable(*index);  // the head's own chain: one probe per interval + timeout
  caf::scoped_actor self{sys};
  for (int i = 0; i < 20; ++i)
    self->send(head, probe_atom::value, *index);
  std::this_thread::sleep_for(2 * (head_probe_interval + head_probe_timeout));
  BOOST_TEST_MESSAGE(asked->load() << " status requests");
  BOOST_TEST(asked->load() >= 1);
  BOOST_TEST(asked->load() <= 4);
}

// A node that lost the head for a while (a partition) and registers again
// takes its own entry back: counted once, its slots in use kept, usable.
BOOST_FIXTURE_TEST_CASE(a_node_registering_again_is_counted_once_and_keeps_its_slots_in_use,
                        head_fixture) {
  node_actor a = spawn_fake_node();
  BOOST_REQUIRE(add_node("a", 2, {}, a).value() == 0);
  BOOST_REQUIRE(add_node("b", 1, {}).value() == 1);
  auto owner = sys.spawn([]() -> caf::behavior { return {[](int32_t) {}}; });
  BOOST_REQUIRE(place("t1", 2, false, owner).is_ok());  // both of a's slots
  answering->store(false);
  unreachable(0);
  BOOST_REQUIRE(status_now().nodes.size() == 1u);
  node_info info{"a", "", 2, 0, 1, "a", {}, ""};
  auto again = register_node(info, a);
  BOOST_REQUIRE_MESSAGE(again.is_ok(), again.error().to_string());
  BOOST_TEST(*again == 0);
  auto st = status_now();
  BOOST_TEST(st.nodes.size() == 2u);
  BOOST_TEST(st.lost.empty());
  BOOST_TEST(st.slots_used == (std::vector<int32_t>{2, 0}));
  BOOST_TEST(st.trainers == (std::vector<std::string>{"t1: 2 replicas"}));
  // Usable again: once t1 is gone, its slots are placed anew.
  release("t1", owner);
  auto placed = place("t2", 3, false);
  BOOST_REQUIRE_MESSAGE(placed.is_ok(), placed.error().to_string());
  BOOST_TEST((*placed)[0].node == 0);
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
}

// A head restarted with an empty table: the nodes come back at their
// earlier indices and report the replicas they host, from which the head
// counts the slots in use and the placement again, monitors its owner and
// gives the slots back when the owner goes.
BOOST_FIXTURE_TEST_CASE(a_restarted_head_rebuilds_placements_from_what_its_nodes_report,
                        head_fixture) {
  auto owner = sys.spawn([]() -> caf::behavior { return {[](int32_t) {}}; });
  const hosted_replica r{"t1", owner, -1};
  node_info b{"b", "", 1, 0, 1, "b", {}, ""};
  node_info a{"a", "", 1, 0, 1, "a", {}, ""};
  BOOST_TEST(rejoin(b, spawn_fake_node(), 1, {r}).value() == 1);
  BOOST_TEST(rejoin(a, spawn_fake_node(), 0, {r}).value() == 0);
  auto st = status_now();
  BOOST_TEST(st.node_ids == (std::vector<int32_t>{0, 1}));
  BOOST_TEST(st.nodes[0].host == "a");
  BOOST_TEST(st.slots_used == (std::vector<int32_t>{1, 1}));
  BOOST_TEST(st.trainers == (std::vector<std::string>{"t1: 2 replicas"}));
  BOOST_TEST(st.lost.empty());  // no padding shows
  // The slots are taken: another trainer waits.
  auto full = place("t2", 1, false);
  BOOST_REQUIRE(!full.is_ok());
  BOOST_TEST(full.error().code() == error_code::unavailable);
  // A node reporting again replaces its share, counted once.
  BOOST_TEST(rejoin(a, nodes.back(), 0, {r}).value() == 0);
  BOOST_TEST(status_now().slots_used == (std::vector<int32_t>{1, 1}));
  // The owner goes: its slots come back.
  caf::anon_send_exit(owner, caf::exit_reason::user_shutdown);
  BOOST_TEST(eventually([](const cluster_status& s) {
    return s.trainers.empty() && s.slots_used == std::vector<int32_t>{0, 0};
  }, milliseconds(5000)));
  BOOST_TEST(place("t2", 2, false).is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
