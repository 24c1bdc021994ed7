// Slurm's host lists and task counts: expanded as `scontrol show hostnames`
// does (compared with Debian's scontrol on every pattern where it is
// installed), and refused with the list and the fault named otherwise.
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "dtrain/launch/nodelist.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::launch::expand_nodelist;
using dtrain::launch::expand_tasks_per_node;

namespace {

using names = std::vector<std::string>;

const std::vector<std::pair<std::string, names>> patterns = {
    {"node1", {"node1"}},
    {"node[1-3]", {"node1", "node2", "node3"}},
    {"node[01-03]", {"node01", "node02", "node03"}},
    {"node[08-11]", {"node08", "node09", "node10", "node11"}},
    {"h-[008-011]", {"h-008", "h-009", "h-010", "h-011"}},
    {"gpu[7,9-10]", {"gpu7", "gpu9", "gpu10"}},
    {"a[1-2]b[3-4]", {"a1b3", "a1b4", "a2b3", "a2b4"}},
    {"x,y[1-2],z", {"x", "y1", "y2", "z"}},
    {"n[1-2],m[5]", {"n1", "n2", "m5"}},
    {"rack1-n[1-2]", {"rack1-n1", "rack1-n2"}},
    {"node[9-11,001]", {"node9", "node10", "node11", "node001"}},
    {"host[1,5-7],other[10-11]", {"host1", "host5", "host6", "host7", "other10", "other11"}},
    {"10.0.0.[1-2]", {"10.0.0.1", "10.0.0.2"}},
    {"c[0-1]n[00-01]", {"c0n00", "c0n01", "c1n00", "c1n01"}},
    {"alpha[3,1],beta", {"alpha3", "alpha1", "beta"}},
    {"a[1-2]b[3-4]c[5-6]",
     {"a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"}},
    {"a[1-2]b[3-4]c[5-6]d[7-8]",
     {"a1b3c5d7", "a1b3c5d8", "a2b3c5d7", "a2b3c5d8", "a1b4c5d7", "a1b4c5d8", "a2b4c5d7",
      "a2b4c5d8", "a1b3c6d7", "a1b3c6d8", "a2b3c6d7", "a2b3c6d8", "a1b4c6d7", "a1b4c6d8",
      "a2b4c6d7", "a2b4c6d8"}},
};

// `scontrol show hostnames LIST` with a minimal slurm.conf (scontrol needs
// a configuration source even for this local command), or nullopt when
// scontrol is not installed.
std::optional<names> scontrol_hostnames(const std::string& list, const std::string& conf) {
  if (std::system("command -v scontrol > /dev/null 2>&1") != 0)
    return std::nullopt;
  std::string command = "SLURM_CONF=" + conf + " scontrol show hostnames '" + list + "' 2>&1";
  names out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char line[512];
    while (std::fgets(line, sizeof line, pipe)) {
      std::string s(line);
      while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
        s.pop_back();
      out.push_back(s);
    }
    pclose(pipe);
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(slurm_nodelists)

BOOST_AUTO_TEST_CASE(host_lists_expand_as_scontrol_show_hostnames_does) {
  testing::temp_dir dir;
  testing::write_file(dir.file("slurm.conf"),
                      "ClusterName=dtrain-test\nSlurmctldHost=localhost\n"
                      "NodeName=localhost CPUs=1 State=UNKNOWN\n"
                      "PartitionName=all Nodes=localhost Default=YES\n");
  bool compared = false;
  for (const auto& [list, expected] : patterns) {
    BOOST_TEST_CONTEXT("host list '" << list << "'") {
      auto got = expand_nodelist(list);
      BOOST_REQUIRE_MESSAGE(got.is_ok(), got.error().to_string());
      BOOST_TEST(*got == expected, boost::test_tools::per_element());
      if (auto theirs = scontrol_hostnames(list, dir.file("slurm.conf"))) {
        BOOST_TEST(*got == *theirs, boost::test_tools::per_element());
        compared = true;
      }
    }
  }
  if (!compared)
    BOOST_TEST_MESSAGE("scontrol is not installed: compared with the recorded expansions only");
}

BOOST_AUTO_TEST_CASE(malformed_host_lists_are_refused_naming_the_fault) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"node[1-3", "never closed"},
      {"node1-3]", "without its '['"},
      {"node[3-1]", "runs backwards"},
      {"node[a-b]", "not a number"},
      {"node[1-]", "not a number"},
      {"node[[1]]", "brackets inside brackets"},
      {"n[0-2]-ib", "goes on after its last bracket group"},
      {"", "names no host"},
      {" , ", "names no host"},
  };
  for (const auto& [list, why] : bad) {
    auto got = expand_nodelist(list);
    BOOST_REQUIRE_MESSAGE(!got.is_ok(), "'" << list << "' was accepted");
    BOOST_TEST(got.error().message().find(why) != std::string::npos, got.error().to_string());
    BOOST_TEST(got.error().message().find("'" + list + "'") != std::string::npos);
  }
  // scontrol refuses these too. (It makes something of the others:
  // "node[1-3" gives "node]", "node[1-]" gives "node1"; dtrain refuses
  // them rather than guess.)
  testing::temp_dir dir;
  testing::write_file(dir.file("slurm.conf"), "ClusterName=t\nSlurmctldHost=localhost\n"
                                              "NodeName=localhost CPUs=1\n");
  for (const char* list : {"node[3-1]", "node[a-b]", "node[[1]]", "n[0-2]-ib"})
    if (auto theirs = scontrol_hostnames(list, dir.file("slurm.conf"))) {
      bool refused = false;
      for (const auto& line : *theirs)
        refused = refused || line.find("Invalid hostlist") != std::string::npos;
      BOOST_TEST(refused, "scontrol expanded '" << list << "'");
    }
  auto huge = expand_nodelist("n[1-100000]", 1000);
  BOOST_REQUIRE(!huge.is_ok());
  BOOST_TEST(huge.error().message().find("more than 1000 hosts") != std::string::npos);
}

// Found by fuzz/launch_env: many bracket groups of many numbers were all
// expanded before the names were counted (60 groups of a million numbers:
// gigabytes, minutes); now the product of the groups' sizes is checked
// group by group. Eight groups took seconds and 300 MB before.
BOOST_AUTO_TEST_CASE(many_large_groups_are_refused_before_they_are_expanded) {
  std::string list = "a";
  for (int g = 0; g < 8; ++g)
    list += "[0-999999]";
  const auto start = std::chrono::steady_clock::now();
  auto got = expand_nodelist(list, 1000);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_REQUIRE(!got.is_ok());
  BOOST_TEST(got.error().message().find("more than 1000 hosts") != std::string::npos,
             got.error().to_string());
  BOOST_TEST(seconds < 0.5);
  // Groups of one number each are no product: they pass however many.
  std::string ones = "a";
  for (int g = 0; g < 200; ++g)
    ones += "[7]";
  BOOST_TEST(expand_nodelist(ones, 1)->size() == 1u);
}

BOOST_AUTO_TEST_CASE(tasks_per_node_expand_their_repeats) {
  BOOST_TEST(*expand_tasks_per_node("2(x3),1") == (std::vector<int>{2, 2, 2, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(*expand_tasks_per_node("4") == (std::vector<int>{4}), boost::test_tools::per_element());
  BOOST_TEST(*expand_tasks_per_node("1,2(x2)") == (std::vector<int>{1, 2, 2}),
             boost::test_tools::per_element());
  for (const char* bad : {"", "2(x3", "x", "2(3)", "1,,2"}) {
    auto got = expand_tasks_per_node(bad);
    BOOST_TEST(!got.is_ok(), "'" << bad << "' was accepted");
  }
  // Found by fuzz/launch_env: "999999(x999999)," repeated made a million
  // counts per item (gigabytes from a few kilobytes of text); the counts
  // are now bounded by max_nodes (2^16 by default) before they are made.
  BOOST_TEST(expand_tasks_per_node("1(x65536)")->size() == 65536u);
  for (const char* huge : {"1(x65537)", "1(x65536),1", "999999(x999999),999999(x999999)"}) {
    auto got = expand_tasks_per_node(huge);
    BOOST_REQUIRE_MESSAGE(!got.is_ok(), "'" << huge << "' was accepted");
    BOOST_TEST(got.error().message().find("more than 65536 nodes") != std::string::npos,
               got.error().to_string());
  }
  BOOST_TEST(!expand_tasks_per_node("2(x3),1", 3).is_ok());
}

BOOST_AUTO_TEST_SUITE_END()
