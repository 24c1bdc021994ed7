#pragma once

#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "dtrain/driver/trainer.hpp"
#include "support/test_util.hpp"

namespace dtrain::testing {

/// A head and `node_count` node processes (`slots` CPU slots each) started
/// with the dtrain command line on loopback, in a fresh DTRAIN_HOME. The
/// child_process objects kill whatever is still running when it goes.
struct loopback_cluster {
  temp_dir home;
  std::unique_ptr<child_process> head;
  std::vector<std::unique_ptr<child_process>> nodes;
  std::vector<std::string> node_addresses;
  std::string address;

  explicit loopback_cluster(int node_count, int slots = 1) {
    using std::chrono::milliseconds;
    setenv("DTRAIN_HOME", home.path().c_str(), 1);
    head = std::make_unique<child_process>(
        std::vector<std::string>{DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                                 home.file("head.address")},
        home.file("head.log"));
    address = trimmed(wait_for_file(home.file("head.address"), milliseconds(10000)));
    BOOST_REQUIRE_MESSAGE(!address.empty(), "the head did not start");
    for (int i = 0; i < node_count; ++i)
      add_node(slots);
  }

  /// Starts one more node (e.g. a replacement for a killed one), with
  /// `extra` arguments for `dtrain start`.
  void add_node(int slots = 1, const std::vector<std::string>& extra = {}) {
    const std::string i = std::to_string(nodes.size());
    std::string port_file = home.file("node" + i + ".address");
    std::vector<std::string> args{DTRAIN_BINARY, "start", "--address", address, "--slots",
                                  std::to_string(slots), "--port-file", port_file};
    args.insert(args.end(), extra.begin(), extra.end());
    nodes.push_back(std::make_unique<child_process>(args, home.file("node" + i + ".log")));
    node_addresses.push_back(trimmed(wait_for_file(port_file, std::chrono::milliseconds(10000))));
    BOOST_REQUIRE_MESSAGE(!node_addresses.back().empty(), "node " << i << " did not join");
  }

  /// The node process whose replicas listen on `node_address`.
  child_process* node_at(const std::string& node_address) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (node_addresses[i] == node_address)
        return nodes[i].get();
    return nullptr;
  }

  /// SIGTERM to all; each must be gone within `limit`.
  void stop_all(std::chrono::milliseconds limit) {
    auto start = std::chrono::steady_clock::now();
    for (auto& n : nodes) {
      if (!n->running())
        continue;  // a test killed it
      kill(n->pid(), SIGCONT);  // a test may have stopped one
      BOOST_TEST(n->stop(SIGTERM, limit));
    }
    BOOST_TEST(head->stop(SIGTERM, limit));
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    BOOST_TEST_MESSAGE("cluster stopped in " << took.count() << " ms");
    BOOST_TEST((took < limit));
  }

private:
  static std::string trimmed(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
      s.pop_back();
    return s;
  }
};

/// Every replica of `t` (`replicas` of them) holds the same parameters,
/// bit for bit.
inline void require_identical_replicas(actors::trainer& t, int replicas) {
  auto hashes = t.parameter_hashes();
  BOOST_REQUIRE_MESSAGE(hashes.is_ok(), hashes.error().to_string());
  BOOST_REQUIRE(static_cast<int>(hashes->size()) == replicas);
  for (auto h : *hashes)
    BOOST_TEST(h == hashes->front());
}

} // namespace dtrain::testing
