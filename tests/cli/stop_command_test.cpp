// `dtrain stop` against pid files: it stops the dtrain processes that wrote
// them, and leaves alone whatever else a stale file's pid now names.
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/child_process.hpp"
#include "support/test_util.hpp"

using dtrain::testing::child_process;
using dtrain::testing::temp_dir;
using std::chrono::milliseconds;

namespace {

// Field 22 of /proc/PID/stat, as dtrain records it.
std::string start_time_of(pid_t pid) {
  std::string stat = dtrain::testing::read_file("/proc/" + std::to_string(pid) + "/stat");
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i)
    fields >> field;
  return field;
}

// Runs `dtrain stop` with DTRAIN_HOME = home; its output.
std::string run_stop(const temp_dir& home) {
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  child_process stop({DTRAIN_BINARY, "stop", "--grace-ms", "2000"}, home.file("stop.log"));
  BOOST_TEST(stop.wait(milliseconds(20000)) == 0);
  return dtrain::testing::read_file(home.file("stop.log"));
}

} // namespace

BOOST_AUTO_TEST_SUITE(stop_command)

BOOST_AUTO_TEST_CASE(a_pid_file_naming_an_unrelated_process_is_removed_without_a_signal) {
  temp_dir home;
  child_process sleeper({"/bin/sleep", "60"}, home.file("sleep.log"));
  const std::string pid = std::to_string(sleeper.pid());
  // The child runs sleep once its exec is done; until then /proc shows the
  // test's own program, and the last file below would name that instead.
  std::error_code ec;
  for (int i = 0; i < 500; ++i) {
    std::string exe = std::filesystem::read_symlink("/proc/" + pid + "/exe", ec).string();
    if (!ec && exe.find("sleep") != std::string::npos)
      break;
    std::this_thread::sleep_for(milliseconds(10));
  }
  // Three stale files: a bare pid (an older format), the pid with a wrong
  // start time (a reused pid), and the pid with its true start time (as if
  // the sleep had reused a dtrain pid in the same tick): only the program
  // check stops the last one.
  std::ofstream(home.file("head-1.pid")) << pid << "\n";
  std::ofstream(home.file("node-2.pid")) << pid << " 1\n";
  std::ofstream(home.file("node-3.pid")) << pid << " " << start_time_of(sleeper.pid()) << "\n";
  std::string out = run_stop(home);
  BOOST_TEST_MESSAGE(out);
  BOOST_TEST(sleeper.running());
  BOOST_TEST(out.find("stopped 0 dtrain processes") != std::string::npos);
  BOOST_TEST(out.find("no start time") != std::string::npos);
  BOOST_TEST(out.find("another time") != std::string::npos);
  BOOST_TEST(out.find("/sleep") != std::string::npos);
  for (const char* f : {"head-1.pid", "node-2.pid", "node-3.pid"})
    BOOST_TEST(!std::ifstream(home.file(f)).good(), f << " was not removed");
}

// $DTRAIN_HOME under a regular file: no directory can be made there. The
// detaching command says so and fails; it threw std::filesystem_error
// from create_directories (std::terminate, SIGABRT) before.
BOOST_AUTO_TEST_CASE(start_detach_without_a_home_directory_fails_naming_it) {
  temp_dir dir;
  std::ofstream(dir.file("plain-file")) << "not a directory\n";
  const std::string home = dir.file("plain-file") + "/home";
  setenv("DTRAIN_HOME", home.c_str(), 1);
  child_process start({DTRAIN_BINARY, "start", "--head", "--port", "0", "--detach"},
                      dir.file("start.log"), "/dev/null");
  const int code = start.wait(milliseconds(20000));
  const std::string out = dtrain::testing::read_file(dir.file("start.log"));
  BOOST_TEST(code == 1, "exit code " << code << ": " << out);
  BOOST_TEST(out.find("error: cannot create the directory " + home) != std::string::npos, out);
  BOOST_TEST(out.find("Not a directory") != std::string::npos, out);
  BOOST_TEST(out.find("terminate") == std::string::npos, out);
}

BOOST_AUTO_TEST_CASE(a_running_head_is_stopped_through_its_pid_file) {
  temp_dir home;
  setenv("DTRAIN_HOME", home.path().c_str(), 1);
  child_process head({DTRAIN_BINARY, "start", "--head", "--port", "0", "--port-file",
                      home.file("head.address")},
                     home.file("head.log"));
  BOOST_REQUIRE(!dtrain::testing::wait_for_file(home.file("head.address"), milliseconds(10000))
                     .empty());
  std::string out = run_stop(home);
  BOOST_TEST_MESSAGE(out);
  BOOST_TEST(out.find("stopped 1 dtrain processes") != std::string::npos);
  BOOST_TEST(head.wait(milliseconds(5000)) == 0);
}

BOOST_AUTO_TEST_SUITE_END()
