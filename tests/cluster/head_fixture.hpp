#pragma once

// A head actor in this process with fake nodes and blocking helpers to
// talk to it: the fixture of the head's suites (head_placement_test.cpp,
// head_scale_test.cpp).

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "caf/all.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/head_actor.hpp"
#include "dtrain/cluster/system.hpp"

namespace dtrain::testing {

using namespace dtrain::actors;
using std::chrono::milliseconds;

/// A node actor that answers status only while `answering` is true; the
/// requests it gets meanwhile are parked and never answered, as a hung or
/// cut-off node's would be.
struct fake_node_state {
  std::vector<caf::typed_response_promise<int32_t>> parked;
};

/// How many status requests the fake nodes of a fixture got (probes).
using request_counter = std::shared_ptr<std::atomic<int>>;

inline node_actor::behavior_type fake_node(node_actor::stateful_pointer<fake_node_state> self,
                                    std::shared_ptr<std::atomic<bool>> answering,
                                    request_counter asked) {
  return {
    [=](spawn_atom, replica_spec&, caf::actor&, rendezvous_actor&,
        const plugin_credential&) -> caf::result<replica_actor> {
      return to_caf(status(error_code::internal, "the fake node spawns nothing"));
    },
    [=](status_atom) -> caf::result<int32_t> {
      ++*asked;
      if (answering->load())
        return 0;
      auto promise = self->make_response_promise<int32_t>();
      self->state.parked.push_back(promise);
      return promise;
    },
    [=](plugin_atom, const std::string&) -> caf::result<std::vector<std::string>> {
      return to_caf(status(error_code::not_found, "the fake node loads no plugins"));
    },
    [=](plugin_atom, const std::string&, std::vector<char>&,
        const plugin_credential&) -> caf::result<std::vector<std::string>> {
      return to_caf(status(error_code::invalid_argument, "the fake node loads no plugins"));
    },
    [=](challenge_atom) -> caf::result<std::string> { return std::string("none"); },
    [=](log_atom, int64_t, int32_t, const plugin_credential&) -> caf::result<log_chunk> {
      return to_caf(status(error_code::not_found, "the fake node keeps no log"));
    },
    [=](rss_atom) -> caf::result<int64_t> { return int64_t{12345}; },
  };
}

/// An actor system, a head, and blocking helpers to talk to it.
struct head_fixture {
  system_config config;
  caf::actor_system sys{config};
  head_actor head = spawn_head(sys).head;  // no TLS: no session to present
  std::shared_ptr<std::atomic<bool>> answering = std::make_shared<std::atomic<bool>>(true);
  request_counter asked = std::make_shared<std::atomic<int>>(0);

  std::vector<node_actor> nodes;

  ~head_fixture() {
    // A fake node with parked promises holds itself: it must be told to go.
    for (auto& n : nodes)
      caf::anon_send_exit(n, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(head, caf::exit_reason::user_shutdown);
  }

  node_actor spawn_fake_node() {
    nodes.push_back(sys.spawn(fake_node, answering, asked));
    return nodes.back();
  }

  result<int32_t> add_node(const std::string& host, int32_t slots, std::vector<int32_t> gpus,
                           node_actor handle = {}) {
    node_info info{host, "", slots, static_cast<int32_t>(gpus.size()), 1, host, std::move(gpus), ""};
    return register_node(info, handle ? handle : spawn_fake_node());
  }

  result<int32_t> register_node(const node_info& info, const node_actor& handle) {
    caf::scoped_actor self{sys};
    result<int32_t> out{status(error_code::internal, "no reply")};
    self->request(head, std::chrono::seconds(5), register_atom::value, info, handle, std::string())
        .receive([&](int32_t i) { out = i; },
                 [&](caf::error& e) { out = from_caf(e, "register"); });
    return out;
  }

  result<std::vector<assignment>> place(const std::string& trainer, int32_t n, bool gpu,
                                        const caf::actor& owner = {}) {
    caf::scoped_actor self{sys};
    result<std::vector<assignment>> out{status(error_code::internal, "no reply")};
    self->request(head, std::chrono::seconds(5), place_atom::value, trainer, n, gpu, owner,
                  std::string())
        .receive([&](std::vector<assignment>& a) { out = std::move(a); },
                 [&](caf::error& e) { out = from_caf(e, "place " + trainer); });
    return out;
  }

  /// A node registering again (head_actor.hpp: rejoin) with what it hosts.
  result<int32_t> rejoin(const node_info& info, const node_actor& handle, int32_t previous,
                         const std::vector<hosted_replica>& hosted) {
    caf::scoped_actor self{sys};
    result<int32_t> out{status(error_code::internal, "no reply")};
    self->request(head, std::chrono::seconds(5), rejoin_atom::value, info, handle, previous,
                  hosted, std::string())
        .receive([&](int32_t i) { out = i; },
                 [&](caf::error& e) { out = from_caf(e, "rejoin"); });
    return out;
  }

  void release(const std::string& trainer, const caf::actor& owner = {}) {
    caf::scoped_actor self{sys};
    self->request(head, std::chrono::seconds(5), release_atom::value, trainer, owner, std::string())
        .receive([](caf::ok_atom) {}, [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
  }

  void unreachable(int32_t index) {
    caf::scoped_actor self{sys};
    self->request(head, std::chrono::seconds(5), unreach_atom::value, index, std::string())
        .receive([](caf::ok_atom) {}, [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
  }

  cluster_status status_now() {
    caf::scoped_actor self{sys};
    cluster_status out;
    self->request(head, std::chrono::seconds(5), status_atom::value, std::string())
        .receive([&](cluster_status& st) { out = std::move(st); },
                 [](caf::error& e) { BOOST_FAIL(caf::to_string(e)); });
    return out;
  }

  /// Polls status until `pred` holds or `limit` passes.
  template <class Pred>
  bool eventually(Pred pred, milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (pred(status_now()))
        return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return pred(status_now());
  }
};

} // namespace dtrain::testing
