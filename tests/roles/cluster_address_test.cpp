// Which cluster a command attaches to: actors::resolve_cluster_address's
// order of precedence (flag, then $DTRAIN_ADDRESS, then the head recorded
// on this host), with the pid-file registry's lookup (roles::
// local_head_address) as the last source, and the errors of a record that
// cannot be trusted, each naming its file.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "dtrain/driver/cluster_address.hpp"
#include "dtrain/roles/processes.hpp"
#include "support/test_util.hpp"

using dtrain::error_code;
using dtrain::actors::address_source;
using dtrain::testing::temp_dir;

namespace {

// A DTRAIN_HOME of its own, no $DTRAIN_ADDRESS, and the registry's lookup
// counted (a source that is not consulted must not be read at all).
struct registry_fixture {
  temp_dir home;
  int lookups = 0;
  dtrain::actors::local_head_lookup lookup = [this] {
    ++lookups;
    return dtrain::roles::local_head_address(home.path());
  };

  registry_fixture() {
    setenv("DTRAIN_HOME", home.path().c_str(), 1);
    unsetenv("DTRAIN_ADDRESS");
  }
  ~registry_fixture() { unsetenv("DTRAIN_ADDRESS"); }
};

// Field 22 of /proc/PID/stat, as the registry records it.
std::string start_time_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    fields >> field;
  return field;
}

// /bin/sleep as a child, once its exec is done; killed and reaped by pid.
struct sleeper {
  pid_t pid = fork();
  std::string program;
  sleeper() {
    if (pid == 0) {
      execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    std::error_code ec;
    for (int i = 0; i < 500 && program.find("sleep") == std::string::npos; ++i) {
      program = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec).string();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  ~sleeper() {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(cluster_address, registry_fixture)

BOOST_AUTO_TEST_CASE(the_flag_beats_the_environment_and_the_local_head) {
  BOOST_REQUIRE(dtrain::roles::write_pid_file("head-5001", "127.0.0.1:5001"));
  setenv("DTRAIN_ADDRESS", "127.0.0.1:5002", 1);
  auto found = dtrain::actors::resolve_cluster_address("127.0.0.1:5003", lookup);
  BOOST_REQUIRE(found);
  BOOST_TEST(found->address == "127.0.0.1:5003");
  BOOST_TEST((found->source == address_source::flag));
  BOOST_TEST(lookups == 0);
}

BOOST_AUTO_TEST_CASE(the_environment_beats_the_local_head) {
  BOOST_REQUIRE(dtrain::roles::write_pid_file("head-5001", "127.0.0.1:5001"));
  setenv("DTRAIN_ADDRESS", "127.0.0.1:5002", 1);
  auto found = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(found);
  BOOST_TEST(found->address == "127.0.0.1:5002");
  BOOST_TEST((found->source == address_source::environment));
  BOOST_TEST(lookups == 0);
}

BOOST_AUTO_TEST_CASE(the_local_head_comes_last_and_an_empty_environment_counts_as_unset) {
  BOOST_REQUIRE(dtrain::roles::write_pid_file("head-5001", "127.0.0.1:5001"));
  setenv("DTRAIN_ADDRESS", "", 1);
  auto found = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(found);
  BOOST_TEST(found->address == "127.0.0.1:5001");
  BOOST_TEST((found->source == address_source::local_head));
  BOOST_TEST(lookups == 1);
  // A node's record (no address) is not a head's.
  dtrain::roles::remove_pid_file("head-5001");
  BOOST_REQUIRE(dtrain::roles::write_pid_file("node-5004"));
  auto none = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(none);
  BOOST_TEST((none->source == address_source::none));
  BOOST_TEST(none->address.empty());
}

BOOST_AUTO_TEST_CASE(no_source_is_none_and_an_error_where_a_cluster_is_required) {
  auto none = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(none);
  BOOST_TEST((none->source == address_source::none));
  // Without a lookup (a driver program's cluster::connect) the host's head
  // is not consulted at all.
  BOOST_REQUIRE(dtrain::roles::write_pid_file("head-5001", "127.0.0.1:5001"));
  auto program = dtrain::actors::resolve_cluster_address("");
  BOOST_REQUIRE(program);
  BOOST_TEST((program->source == address_source::none));
  dtrain::roles::remove_pid_file("head-5001");
  auto required = dtrain::actors::require_cluster_address("", lookup);
  BOOST_REQUIRE(!required);
  BOOST_TEST((required.error().code() == error_code::not_found));
  BOOST_TEST(contains(required.error().message(), "no dtrain cluster runs on this host"),
             required.error().message());
  BOOST_TEST(contains(required.error().message(), "dtrain start --head"));
}

BOOST_AUTO_TEST_CASE(a_stale_record_is_an_error_naming_its_file) {
  pid_t gone = fork();
  if (gone == 0)
    _exit(0);
  waitpid(gone, nullptr, 0);
  const std::string file = home.file("head-5005.pid");
  std::ofstream(file) << gone << " 12345\n127.0.0.1:5005\n/usr/bin/dtrain\n";
  auto found = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(!found);
  BOOST_TEST((found.error().code() == error_code::unavailable));
  BOOST_TEST(contains(found.error().message(), file), found.error().message());
  BOOST_TEST(contains(found.error().message(), "is gone"), found.error().message());
  BOOST_TEST(contains(found.error().message(), "dtrain stop"), found.error().message());
  // The sources before it still win without reading it.
  setenv("DTRAIN_ADDRESS", "127.0.0.1:5002", 1);
  auto env = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(env);
  BOOST_TEST(env->address == "127.0.0.1:5002");
}

BOOST_AUTO_TEST_CASE(an_unreadable_record_is_an_error_naming_its_file) {
  const std::string file = home.file("head-5006.pid");
  std::ofstream(file) << "not a pid\n";
  auto found = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(!found);
  BOOST_TEST((found.error().code() == error_code::corrupt_data));
  BOOST_TEST(contains(found.error().message(), file), found.error().message());
  // A directory where a record should be cannot be read either.
  std::filesystem::remove(file);
  std::filesystem::create_directory(file);
  auto dir = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(!dir);
  BOOST_TEST(contains(dir.error().message(), file), dir.error().message());
}

BOOST_AUTO_TEST_CASE(a_record_of_another_program_is_live_while_that_program_runs) {
  sleeper other;
  BOOST_REQUIRE(contains(other.program, "sleep"));
  const std::string pid_line = std::to_string(other.pid) + " " + start_time_of(other.pid);
  // A user's own program recorded itself: live.
  std::ofstream(home.file("head-5007.pid")) << pid_line << "\n127.0.0.1:5007\n"
                                            << other.program << "\n";
  auto found = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(found);
  BOOST_TEST(found->address == "127.0.0.1:5007");
  // The same process named by a record without its program (an older
  // dtrain's) is compared with the reader's program: stale.
  std::ofstream(home.file("head-5007.pid")) << pid_line << "\n127.0.0.1:5007\n";
  auto older = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(!older);
  BOOST_TEST(contains(older.error().message(), "runs " + other.program),
             older.error().message());
}

BOOST_AUTO_TEST_CASE(two_live_heads_are_ambiguous) {
  BOOST_REQUIRE(dtrain::roles::write_pid_file("head-5001", "127.0.0.1:5001"));
  BOOST_REQUIRE(dtrain::roles::write_pid_file("head-5008", "127.0.0.1:5008"));
  auto found = dtrain::actors::resolve_cluster_address("", lookup);
  BOOST_REQUIRE(!found);
  BOOST_TEST((found.error().code() == error_code::invalid_argument));
  BOOST_TEST(contains(found.error().message(), "several dtrain heads"), found.error().message());
  BOOST_TEST(contains(found.error().message(), "127.0.0.1:5001"), found.error().message());
  BOOST_TEST(contains(found.error().message(), "127.0.0.1:5008"), found.error().message());
}

BOOST_AUTO_TEST_SUITE_END()
