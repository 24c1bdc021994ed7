// Which address `dtrain launch` gives the head when the head's host name
// resolves to loopback, as a stock Debian /etc/hosts maps a host's own name
// (127.0.1.1): loopback on one host, the interface towards the other hosts
// on several, and an error saying why where no loopback address can serve.
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "dtrain/launch/head_address.hpp"

using namespace dtrain;
using dtrain::launch::choose_head_address;

namespace {

// A task of a job on `hosts` (the first the head's), on node `node_rank`.
launch::launch_env job(std::vector<std::string> hosts, int node_rank) {
  launch::launch_env env;
  env.launcher = "slurm";
  env.hosts = std::move(hosts);
  env.nodes = static_cast<int>(env.hosts.size());
  env.node_rank = node_rank;
  env.head_host = env.hosts.front();
  env.head_port = 15077;
  return env;
}

// A host whose route to `peer` leaves from `route` ("" : no route) and
// whose first non-loopback interface is `any`; the peers asked, in order.
struct fake_network {
  std::string route, any;
  std::vector<std::string> asked;
  launch::host_network get() {
    launch::host_network n;
    n.address_towards = [this](const std::string& peer) -> result<std::string> {
      asked.push_back(peer);
      if (route.empty())
        return status(error_code::unavailable, "no route from this host to " + peer);
      return route;
    };
    n.any_interface = [this] { return any; };
    return n;
  }
};

std::string chosen(const launch::launch_env& env, const std::string& resolved, fake_network& net,
                   bool overridden = false) {
  auto a = choose_head_address(env, resolved, overridden, net.get());
  return a ? *a : "error: " + a.error().message();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(launch_head_address)

BOOST_AUTO_TEST_CASE(an_address_off_loopback_is_used_as_it_resolved) {
  fake_network net{"10.0.0.5", "10.0.0.5", {}};
  BOOST_TEST(chosen(job({"gpu01", "gpu02"}, 1), "10.0.0.1", net) == "10.0.0.1");
  BOOST_TEST(chosen(job({"gpu01"}, 0), "192.168.1.4", net) == "192.168.1.4");
  BOOST_TEST(net.asked.empty());
}

BOOST_AUTO_TEST_CASE(debians_127_0_1_1_on_one_host_becomes_127_0_0_1) {
  fake_network net{"10.0.0.5", "10.0.0.5", {}};
  BOOST_TEST(chosen(job({"box"}, 0), "127.0.1.1", net) == "127.0.0.1");
  BOOST_TEST(chosen(job({"box"}, 0), "127.0.0.1", net) == "127.0.0.1");
}

BOOST_AUTO_TEST_CASE(the_head_host_of_several_takes_its_interface_towards_the_second_host) {
  fake_network net{"10.0.0.5", "172.17.0.2", {}};
  BOOST_TEST(chosen(job({"gpu01", "gpu02", "gpu03"}, 0), "127.0.1.1", net) == "10.0.0.5");
  BOOST_TEST((net.asked == std::vector<std::string>{"gpu02"}));
  // No route to it (or a loopback one): the first interface off loopback.
  fake_network unrouted{"", "172.17.0.2", {}};
  BOOST_TEST(chosen(job({"gpu01", "gpu02"}, 0), "127.0.1.1", unrouted) == "172.17.0.2");
  fake_network looped{"127.0.0.1", "172.17.0.2", {}};
  BOOST_TEST(chosen(job({"gpu01", "gpu02"}, 0), "127.0.1.1", looped) == "172.17.0.2");
  // torchrun names no other host: the first interface off loopback.
  launch::launch_env torchrun = job({"gpu01"}, 0);
  torchrun.launcher = "torchrun";
  torchrun.hosts.clear();
  torchrun.nodes = 2;
  fake_network any{"10.0.0.5", "172.17.0.2", {}};
  BOOST_TEST(chosen(torchrun, "127.0.1.1", any) == "172.17.0.2");
  BOOST_TEST(any.asked.empty());
}

BOOST_AUTO_TEST_CASE(a_loopback_head_of_a_job_over_several_hosts_is_refused_saying_why) {
  // Another host than the head's: its name resolves to this host's loopback.
  fake_network net{"10.0.0.5", "10.0.0.5", {}};
  const std::string elsewhere = chosen(job({"gpu01", "gpu02"}, 1), "127.0.1.1", net);
  BOOST_TEST(contains(elsewhere, "error: the head's host gpu01 resolves to 127.0.1.1 (loopback) "
                                 "here, on node 1 of a job over 2 hosts"), elsewhere);
  BOOST_TEST(contains(elsewhere, "DTRAIN_HEAD_ADDR"), elsewhere);
  // The head's host without any address off loopback.
  fake_network isolated{"", "127.0.0.1", {}};
  const std::string alone = chosen(job({"gpu01", "gpu02"}, 0), "127.0.1.1", isolated);
  BOOST_TEST(contains(alone, "error: the head's host gpu01 resolves to 127.0.1.1"), alone);
  BOOST_TEST(contains(alone, "no route from this host to gpu02"), alone);
  BOOST_TEST(contains(alone, "the job spans 2 hosts"), alone);
  // An explicit loopback DTRAIN_HEAD_ADDR is not second-guessed: refused.
  const std::string told = chosen(job({"gpu01", "gpu02"}, 0), "127.0.0.1", net, true);
  BOOST_TEST(contains(told, "error: DTRAIN_HEAD_ADDR is 127.0.0.1, a loopback address, but the "
                            "job spans 2 hosts"), told);
}

BOOST_AUTO_TEST_SUITE_END()
