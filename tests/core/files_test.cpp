// The file helpers of core/files.hpp: atomic replacement leaves the new
// bytes and no temporary, a directory rename never replaces an existing
// directory (empty or not), and OS errors name the path with the right code.
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dtrain/core/files.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using dtrain::testing::temp_dir;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_SUITE(files)

BOOST_AUTO_TEST_CASE(an_atomic_write_replaces_the_file_and_leaves_no_temporary) {
  temp_dir dir;
  const std::string path = dir.file("value");
  for (durability d : {durability::visible, durability::file, durability::file_and_directory}) {
    const std::string text = "value " + std::to_string(static_cast<int>(d));
    const status s = write_file_atomically(path, text.data(), text.size(), d);
    BOOST_REQUIRE_MESSAGE(s.is_ok(), s.to_string());
    BOOST_TEST(dtrain::testing::read_file(path) == text);
    BOOST_TEST(dtrain::testing::entries(dir.path()).size() == 1u);
  }
}

BOOST_AUTO_TEST_CASE(an_uncommitted_atomic_file_leaves_the_old_file_and_no_temporary) {
  temp_dir dir;
  const std::string path = dir.file("value");
  BOOST_REQUIRE(write_file_atomically(path, "old", 3, durability::file).is_ok());
  {
    auto file = atomic_file::create(path);
    BOOST_REQUIRE(file.is_ok());
    BOOST_REQUIRE(write_all(file->fd(), "new", 3, path).is_ok());
  }
  BOOST_TEST(dtrain::testing::read_file(path) == "old");
  BOOST_TEST(dtrain::testing::entries(dir.path()).size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_directory_rename_never_replaces_an_existing_directory) {
  temp_dir dir;
  const std::string from = dir.file("new"), empty = dir.file("empty"), full = dir.file("full");
  fs::create_directory(from);
  fs::create_directory(empty);
  fs::create_directory(full);
  std::ofstream(full + "/kept") << "x";
  for (const std::string& to : {empty, full}) {
    const status s = rename_directory_durably(from, to);
    BOOST_TEST(s.code() == error_code::io_error, s.to_string());
    BOOST_TEST(s.message().find(to) != std::string::npos, s.message());
    BOOST_TEST(fs::is_directory(from));
  }
  BOOST_TEST(fs::exists(full + "/kept"));
  BOOST_REQUIRE(rename_directory_durably(from, dir.file("renamed")).is_ok());
  BOOST_TEST(fs::is_directory(dir.file("renamed")));
  BOOST_TEST(!fs::exists(from));
}

BOOST_AUTO_TEST_CASE(os_errors_name_the_path_and_tell_a_missing_file_apart) {
  const status missing = os_error("cannot open", "/no/such", ENOENT);
  BOOST_TEST(missing.code() == error_code::not_found);
  BOOST_TEST(missing.message() == "cannot open /no/such: " + std::string(std::strerror(ENOENT)));
  BOOST_TEST(os_error("cannot open", "/x", EACCES).code() == error_code::io_error);
  temp_dir dir;
  const status s = sync_directory(dir.file("absent"));
  BOOST_TEST(s.code() == error_code::not_found);
  BOOST_TEST(s.message().find(dir.file("absent")) != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
