// The dashboard's head_source against a head actor in this process with a
// fake node: a node's log read through the head, an unknown node, and a
// node that does not answer (bounded by the source's one timeout); and a
// fake head that loses a node between its status and the request for it.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/dashboard/source.hpp"

using namespace dtrain;
using namespace dtrain::actors;
using std::chrono::milliseconds;

namespace {

struct fake_log_state {
  std::vector<caf::typed_response_promise<log_chunk>> parked;  // never answered
};

// A node whose log is `text`, read as node_actor reads its file; while
// `hang` is set, log requests are parked, as a hung node's would be.
node_actor::behavior_type fake_node(node_actor::stateful_pointer<fake_log_state> self,
                                    std::string text, std::shared_ptr<std::atomic<bool>> hang) {
  return {
    [=](spawn_atom, replica_spec&, caf::actor&, rendezvous_actor&,
        const plugin_credential&) -> caf::result<replica_actor> {
      return to_caf(status(error_code::internal, "the fake node spawns nothing"));
    },
    [=](status_atom) -> caf::result<int32_t> { return 0; },
    [=](plugin_atom, const std::string&) -> caf::result<std::vector<std::string>> {
      return to_caf(status(error_code::not_found, "no plugins"));
    },
    [=](plugin_atom, const std::string&, std::vector<char>&,
        const plugin_credential&) -> caf::result<std::vector<std::string>> {
      return to_caf(status(error_code::invalid_argument, "no plugins"));
    },
    [=](challenge_atom) -> caf::result<std::string> { return std::string("none"); },
    [=](log_atom, int64_t offset, int32_t max_bytes,
        const plugin_credential&) -> caf::result<log_chunk> {
      if (hang->load()) {
        auto promise = self->make_response_promise<log_chunk>();
        self->state.parked.push_back(promise);
        return promise;
      }
      const int64_t size = static_cast<int64_t>(text.size());
      const int64_t from = std::clamp<int64_t>(offset < 0 ? size + offset : offset, 0, size);
      log_chunk c;
      c.bytes = text.substr(from, std::max(0, max_bytes));
      c.offset = from;
      c.next = from + static_cast<int64_t>(c.bytes.size());
      c.size = size;
      c.path = "/fake/node.log";
      return c;
    },
    [=](rss_atom) -> caf::result<int64_t> { return int64_t{1}; },
  };
}

// A head whose status lists two nodes, the second at index 5 of its table,
// and that has lost every node by the time it is asked for one, answering
// as head_actor does.
head_actor::behavior_type losing_head() {
  auto no = [](const char* what) { return to_caf(status(error_code::internal, what)); };
  return {
    [=](register_atom, node_info&, node_actor&, std::string&) -> caf::result<int32_t> {
      return no("the fake head registers nothing");
    },
    [=](rejoin_atom, node_info&, node_actor&, int32_t, std::vector<hosted_replica>&,
        std::string&) -> caf::result<int32_t> { return no("the fake head takes no node back"); },
    [=](place_atom, std::string&, int32_t, bool, caf::actor&,
        std::string&) -> caf::result<std::vector<assignment>> { return no("no placement"); },
    [=](resize_atom, std::string&, std::vector<assignment>&, int32_t, bool, caf::actor&,
        std::string&) -> caf::result<std::vector<assignment>> { return no("no placement"); },
    [=](release_atom, std::string&, caf::actor&, std::string&) -> caf::result<caf::ok_atom> {
      return caf::ok_atom::value;
    },
    [=](unreach_atom, int32_t, std::string&) -> caf::result<caf::ok_atom> {
      return caf::ok_atom::value;
    },
    [=](probe_atom, int32_t) {},
    [=](rss_atom) {},
    [=](status_atom, std::string&) -> caf::result<cluster_status> {
      cluster_status st;
      st.nodes = {node_info{"h0", "", 1, 0, 1, "h0", {}, ""},
                  node_info{"h1", "10.0.0.2:4242", 1, 0, 2, "h1", {}, ""}};
      st.node_ids = {3, 5};
      return st;
    },
    [=](caf::get_atom, int32_t index, std::string&) -> caf::result<node_actor> {
      return to_caf(not_found("no live node " + std::to_string(index)));
    },
    [=](experiments_atom, std::string&) -> caf::result<experiments::experiment_service> {
      return no("no store");
    },
    [=](hello_atom, std::string&) -> caf::result<head_hello> { return no("no hello"); },
    [=](prove_atom, std::string&, std::string&, identity_msg&) -> caf::result<std::string> {
      return no("no proof");
    },
  };
}

struct source_fixture {
  system_config config;
  caf::actor_system sys{config};
  head_actor head = spawn_head(sys).head;  // no TLS: no session to present
  std::shared_ptr<std::atomic<bool>> hang = std::make_shared<std::atomic<bool>>(false);
  node_actor node = sys.spawn(fake_node, std::string("one\ntwo\nthree\n"), hang);
  std::unique_ptr<dashboard::cluster_source> source = dashboard::head_source(sys, head, "", milliseconds(500));

  source_fixture() {
    caf::scoped_actor self{sys};
    node_info info{"h", "", 1, 0, 1, "h", {}, ""};
    self->request(head, std::chrono::seconds(5), register_atom::value, info, node, std::string())
        .receive([](int32_t) {}, [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
  }

  ~source_fixture() {
    caf::anon_send_exit(node, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(head, caf::exit_reason::user_shutdown);
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(dashboard_source, source_fixture)

BOOST_AUTO_TEST_CASE(a_nodes_log_is_read_through_the_head_from_an_offset_or_its_end) {
  auto all = source->node_log(0, 0, 100);
  BOOST_REQUIRE_MESSAGE(all.is_ok(), all.error().to_string());
  BOOST_TEST(all->bytes == "one\ntwo\nthree\n");
  BOOST_TEST(all->next == 14);
  BOOST_TEST(all->size == 14);
  BOOST_TEST(all->path == "/fake/node.log");
  auto tail = source->node_log(0, -6, 3);
  BOOST_REQUIRE(tail.is_ok());
  BOOST_TEST(tail->bytes == "thr");
  BOOST_TEST(tail->offset == 8);
  BOOST_TEST(tail->next == 11);
}

BOOST_AUTO_TEST_CASE(an_unknown_node_is_not_found) {
  auto r = source->node_log(1, 0, 100);
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST((r.error().code() == error_code::not_found), r.error().to_string());
  BOOST_TEST(r.error().message().find("no node 1") != std::string::npos, r.error().message());
  BOOST_TEST(!source->node_log(-1, 0, 100).is_ok());
}

BOOST_AUTO_TEST_CASE(a_node_lost_after_the_status_is_named_by_the_position_asked_for) {
  head_actor lossy = sys.spawn(losing_head);
  auto lossy_source = dashboard::head_source(sys, lossy, "", milliseconds(2000));
  auto r = lossy_source->node_log(1, 0, 100);
  caf::anon_send_exit(lossy, caf::exit_reason::user_shutdown);
  BOOST_REQUIRE(!r.is_ok());
  const std::string& m = r.error().message();
  BOOST_TEST((r.error().code() == error_code::not_found), r.error().to_string());
  BOOST_TEST(m.find("node 1 (h1, 10.0.0.2:4242)") != std::string::npos, m);
  BOOST_TEST(m.find("lost") != std::string::npos, m);
  BOOST_TEST(m.find("node 5") == std::string::npos, m);  // the head's index, never seen
}

BOOST_AUTO_TEST_CASE(a_node_that_does_not_answer_fails_within_the_sources_timeout) {
  hang->store(true);
  const auto start = std::chrono::steady_clock::now();
  auto r = source->node_log(0, 0, 100);
  const auto took = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start).count();
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST_MESSAGE(r.error().to_string());
  BOOST_TEST(r.error().message().find("node 0") != std::string::npos, r.error().message());
  // One timeout for the whole call (status, handle, chunk), not one each.
  BOOST_TEST(took >= 400);
  BOOST_TEST(took < 1500);
}

BOOST_AUTO_TEST_SUITE_END()
