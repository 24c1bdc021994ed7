// plugin/loader: content-addressed loading of operator libraries, the ABI
// check before any of a library's code runs, and the loader's errors.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "dtrain/build_config.hpp"
#include "dtrain/plugin/loader.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::temp_dir;

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::vector<char> bytes_of(const std::string& path) {
  std::string s = dtrain::testing::read_file(path);
  return std::vector<char>(s.begin(), s.end());
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(plugin_loader)

BOOST_AUTO_TEST_CASE(this_process_tag_names_its_version_and_abi) {
  const std::string tag = plugin::abi_tag();
  BOOST_TEST(tag.rfind(std::string("dtrain ") + DTRAIN_VERSION + ";", 0) == 0u);
  BOOST_TEST(contains(tag, "gxx-abi "));
  BOOST_TEST(contains(tag, "cxx11-string-abi "));
  auto read = plugin::read_abi_tag(DTRAIN_TEST_PLUGIN);
  BOOST_REQUIRE_MESSAGE(read.is_ok(), read.error().to_string());
  BOOST_TEST(*read == tag);
  auto other = plugin::read_abi_tag(DTRAIN_TEST_PLUGIN_OTHER_VERSION);
  BOOST_REQUIRE(other.is_ok());
  BOOST_TEST(other->rfind("dtrain 9.9.9;", 0) == 0u);
}

BOOST_AUTO_TEST_CASE(a_plugin_loads_once_per_hash_and_lists_its_operators) {
  temp_dir dir;
  setenv("DTRAIN_TEST_PLUGIN_MARKER", dir.file("loaded").c_str(), 1);
  auto first = plugin::load_plugin(DTRAIN_TEST_PLUGIN);
  unsetenv("DTRAIN_TEST_PLUGIN_MARKER");
  BOOST_REQUIRE_MESSAGE(first.is_ok(), first.error().to_string());
  BOOST_TEST(first->hash.size() == 64u);
  BOOST_TEST(first->operators == std::vector<std::string>{"plugin_linear"});
  // The marker works: the library's static initializer ran (the first load
  // in this process; the other-version case relies on its absence).
  BOOST_TEST(exists(dir.file("loaded")));
  // A copy elsewhere is the same content: the earlier load, not a second.
  const std::string copy = dir.file("copy.so");
  dtrain::testing::write_file(copy, dtrain::testing::read_file(DTRAIN_TEST_PLUGIN));
  auto second = plugin::load_plugin(copy);
  BOOST_REQUIRE(second.is_ok());
  BOOST_TEST(second->hash == first->hash);
  BOOST_TEST(second->path == std::string(DTRAIN_TEST_PLUGIN));
  auto found = plugin::find_plugin(first->hash);
  BOOST_REQUIRE(found.is_ok());
  BOOST_TEST(found->operators == first->operators);
  BOOST_TEST(plugin::find_plugin(std::string(64, '0')).error().code() == error_code::not_found);
}

BOOST_AUTO_TEST_CASE(operators_come_from_the_named_plugins_then_the_builtins) {
  auto p = plugin::load_plugin(DTRAIN_TEST_PLUGIN);
  BOOST_REQUIRE(p.is_ok());
  auto op = plugin::make_operator("plugin_linear", {p->hash});
  BOOST_REQUIRE_MESSAGE(op.is_ok(), op.error().to_string());
  BOOST_TEST((*op != nullptr));
  // Never process-wide: without the plugin named the name is unknown.
  auto unnamed = plugin::make_operator("plugin_linear", {});
  BOOST_REQUIRE(!unnamed.is_ok());
  BOOST_TEST((unnamed.error().code() == error_code::not_found));
  BOOST_TEST(train::make_operator("plugin_linear").error().code() == error_code::not_found);
  // Built-ins are still there with a plugin named.
  BOOST_TEST(plugin::make_operator("linear_regression", {p->hash}).is_ok());
  // An unknown name lists what the plugin offers.
  auto unknown = plugin::make_operator("my_op", {p->hash});
  BOOST_REQUIRE(!unknown.is_ok());
  BOOST_TEST(contains(unknown.error().message(), "my_op"));
  BOOST_TEST(contains(unknown.error().message(), "offers plugin_linear"));
  auto missing = plugin::make_operator("plugin_linear", {std::string(64, 'a')});
  BOOST_REQUIRE(!missing.is_ok());
  BOOST_TEST(contains(missing.error().message(), std::string(64, 'a') + " is not loaded"));
}

BOOST_AUTO_TEST_CASE(a_plugin_of_another_version_is_refused_naming_both_before_it_runs) {
  temp_dir dir;
  const std::string marker = dir.file("loaded");
  setenv("DTRAIN_TEST_PLUGIN_MARKER", marker.c_str(), 1);
  auto p = plugin::load_plugin(DTRAIN_TEST_PLUGIN_OTHER_VERSION);
  unsetenv("DTRAIN_TEST_PLUGIN_MARKER");
  BOOST_REQUIRE(!p.is_ok());
  BOOST_TEST((p.error().code() == error_code::invalid_argument));
  const std::string& m = p.error().message();
  BOOST_TEST_MESSAGE(m);
  BOOST_TEST(contains(m, DTRAIN_TEST_PLUGIN_OTHER_VERSION));
  BOOST_TEST(contains(m, "built against dtrain 9.9.9"));
  BOOST_TEST(contains(m, std::string("runs dtrain ") + DTRAIN_VERSION));
  // Its static initializer would have written the marker.
  BOOST_TEST(!exists(marker));
}

BOOST_AUTO_TEST_CASE(a_missing_symbol_is_the_loaders_message) {
  auto p = plugin::load_plugin(DTRAIN_TEST_PLUGIN_MISSING_SYMBOL);
  BOOST_REQUIRE(!p.is_ok());
  BOOST_TEST_MESSAGE(p.error().message());
  BOOST_TEST(contains(p.error().message(), "cannot be loaded"));
  BOOST_TEST(contains(p.error().message(), "undefined symbol: dtrain_test_symbol_defined_nowhere"));
  // Again: the same answer, and this process is fine.
  auto again = plugin::load_plugin(DTRAIN_TEST_PLUGIN_MISSING_SYMBOL);
  BOOST_TEST(!again.is_ok());
}

BOOST_AUTO_TEST_CASE(a_library_without_the_macro_or_a_missing_file_is_not_found) {
  auto p = plugin::load_plugin(DTRAIN_TEST_NOT_A_PLUGIN);
  BOOST_REQUIRE(!p.is_ok());
  BOOST_TEST((p.error().code() == error_code::not_found));
  BOOST_TEST(contains(p.error().message(), "is not a dtrain plugin"));
  auto tag = plugin::read_abi_tag(DTRAIN_TEST_NOT_A_PLUGIN);
  BOOST_TEST((tag.error().code() == error_code::not_found));
  auto none = plugin::load_plugin("/nonexistent/plugin.so");
  BOOST_REQUIRE(!none.is_ok());
  BOOST_TEST(contains(none.error().message(), "/nonexistent/plugin.so"));
}

// A file of markers without their NULs nearby: the tag's NUL is looked
// for in the 256 bytes after each marker, not to the end of the file (each
// of 200,000 markers scanned megabytes before: a minute for 4 MB), and a
// tag of 256 bytes or more is still none.
BOOST_AUTO_TEST_CASE(a_file_of_markers_is_read_in_linear_time) {
  testing::temp_dir dir;
  const std::string marker = "dtrain-plugin-abi:";
  std::string bytes;
  while (bytes.size() < (size_t{4} << 20))
    bytes += marker + "x";
  bytes += '\0';
  testing::write_file(dir.file("markers.so"), bytes);
  const auto start = std::chrono::steady_clock::now();
  auto tag = plugin::read_abi_tag(dir.file("markers.so"));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST((!tag.is_ok() && tag.error().code() == error_code::not_found));
  BOOST_TEST(seconds < 2.0);
  testing::write_file(dir.file("long.so"), marker + "dtrain " + std::string(248, 'v') + '\0');
  BOOST_TEST(plugin::read_abi_tag(dir.file("long.so"))->size() == 256u - 1);
  testing::write_file(dir.file("longer.so"), marker + "dtrain " + std::string(250, 'v') + '\0' +
                                                 marker + "dtrain 1" + '\0');
  BOOST_TEST(*plugin::read_abi_tag(dir.file("longer.so")) == "dtrain 1");
}

BOOST_AUTO_TEST_CASE(install_checks_the_hash_before_writing_anything) {
  temp_dir home;
  const std::string dir = home.file("plugins");
  auto bytes = bytes_of(DTRAIN_TEST_PLUGIN);
  auto good = plugin::load_plugin(DTRAIN_TEST_PLUGIN);
  BOOST_REQUIRE(good.is_ok());
  std::string wrong = good->hash;
  wrong[0] = wrong[0] == '0' ? '1' : '0';
  auto refused = plugin::install_plugin(dir, wrong, bytes);
  BOOST_REQUIRE(!refused.is_ok());
  BOOST_TEST((refused.error().code() == error_code::corrupt_data));
  BOOST_TEST(!exists(dir));
  // Not a hash at all (it would be a path component): refused too.
  auto bad_name = plugin::install_plugin(dir, "../../etc/x", bytes);
  BOOST_TEST((bad_name.error().code() == error_code::invalid_argument));
  BOOST_TEST(!exists(dir));
}

BOOST_AUTO_TEST_CASE(install_writes_the_library_under_its_hash) {
  temp_dir home;
  const std::string dir = home.file("plugins");
  auto good = plugin::load_plugin(DTRAIN_TEST_PLUGIN);
  BOOST_REQUIRE(good.is_ok());
  auto installed = plugin::install_plugin(dir, good->hash, bytes_of(DTRAIN_TEST_PLUGIN));
  BOOST_REQUIRE_MESSAGE(installed.is_ok(), installed.error().to_string());
  BOOST_TEST(installed->hash == good->hash);
  BOOST_TEST(installed->operators == good->operators);
  const std::string file = dir + "/" + good->hash + ".so";
  BOOST_TEST(dtrain::testing::read_file(file) == dtrain::testing::read_file(DTRAIN_TEST_PLUGIN));
  struct stat st {};
  BOOST_REQUIRE(::stat(dir.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0700u);
  // Again: the file is reused.
  BOOST_TEST(plugin::install_plugin(dir, good->hash, bytes_of(DTRAIN_TEST_PLUGIN)).is_ok());
}

// Others must not be able to swap a library between its hash check and
// dlopen(): a plugin directory that is a link, or writable by others, is
// refused and nothing is written.
BOOST_AUTO_TEST_CASE(install_refuses_a_plugin_directory_others_may_write_to_or_a_link) {
  temp_dir home;
  auto good = plugin::load_plugin(DTRAIN_TEST_PLUGIN);
  BOOST_REQUIRE(good.is_ok());
  const std::string open_dir = home.file("open");
  BOOST_REQUIRE(::mkdir(open_dir.c_str(), 0700) == 0);
  BOOST_REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
  auto refused = plugin::install_plugin(open_dir, good->hash, bytes_of(DTRAIN_TEST_PLUGIN));
  BOOST_REQUIRE(!refused.is_ok());
  BOOST_TEST(contains(refused.error().message(), "writable by no one else"),
             refused.error().message());
  BOOST_TEST(!exists(open_dir + "/" + good->hash + ".so"));
  const std::string target = home.file("target");
  BOOST_REQUIRE(::mkdir(target.c_str(), 0700) == 0);
  const std::string link = home.file("link");
  BOOST_REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  auto via_link = plugin::install_plugin(link, good->hash, bytes_of(DTRAIN_TEST_PLUGIN));
  BOOST_REQUIRE(!via_link.is_ok());
  BOOST_TEST(contains(via_link.error().message(), "not a directory"), via_link.error().message());
  BOOST_TEST(!exists(target + "/" + good->hash + ".so"));
}

BOOST_AUTO_TEST_SUITE_END()
