// A node's log read in chunks from its file: chunks cut short of the end
// end at a whole UTF-8 character, and the chunks together are the file.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "dtrain/actors/cluster.hpp"
#include "dtrain/actors/node_actor.hpp"
#include "dtrain/actors/node_logs.hpp"
#include "../apps/dtrain/output_tee.hpp"
#include "test_util.hpp"

using namespace dtrain;
using namespace dtrain::actors;

namespace {

const std::string euro = "\xE2\x82\xAC";  // U+20AC, 3 bytes

struct node_log_fixture {
  dtrain::testing::temp_dir dir;
  system_config config;
  caf::actor_system sys{config};
  caf::scoped_actor self{sys};
  node_actor node;

  // A node whose log file holds `text`.
  explicit node_log_fixture(const std::string& text) {
    dtrain::testing::write_file(dir.file("node.log"), text);
    node_options o;
    o.log_file = dir.file("node.log");
    node = spawn_node(sys, o);
  }
  ~node_log_fixture() { caf::anon_send_exit(node, caf::exit_reason::user_shutdown); }

  log_chunk read(int64_t offset, int32_t max_bytes) {
    auto c = read_log_chunk(self, node, offset, max_bytes, std::chrono::seconds(10), "node 0");
    BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
    return *c;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(node_log_chunks)

BOOST_AUTO_TEST_CASE(a_chunk_cut_inside_a_character_ends_before_it) {
  node_log_fixture f("ab" + euro + "cd");  // the euro sign at bytes 2..4
  log_chunk first = f.read(0, 4);           // would end after its second byte
  BOOST_TEST(first.bytes == "ab");
  BOOST_TEST(first.next == 2);
  BOOST_TEST(first.size == 7);
  log_chunk second = f.read(first.next, 4);
  BOOST_TEST(second.bytes == euro + "c");
  BOOST_TEST(second.offset == 2);
  BOOST_TEST(second.next == 6);
  log_chunk last = f.read(second.next, 4);
  BOOST_TEST(last.bytes == "d");
  BOOST_TEST(last.next == 7);
  // From the end too: the start is where asked, the end is trimmed.
  BOOST_TEST(f.read(-4, 4).bytes == euro.substr(1) + "cd");  // up to the end
  BOOST_TEST(f.read(-6, 3).bytes == "b");
  BOOST_TEST(f.read(-6, 4).bytes == "b" + euro);
  // Too small for the character: kept as read, so that a reader moves on.
  log_chunk tiny = f.read(2, 2);
  BOOST_TEST(tiny.bytes == euro.substr(0, 2));
  BOOST_TEST(tiny.next == 4);
}

BOOST_AUTO_TEST_CASE(a_character_cut_by_the_end_of_the_file_is_returned_as_it_is) {
  node_log_fixture f("ab" + euro.substr(0, 2));  // still being written
  log_chunk c = f.read(0, 100);
  BOOST_TEST(c.bytes == "ab" + euro.substr(0, 2));
  BOOST_TEST(c.next == 4);
  BOOST_TEST(f.read(2, 4).bytes == euro.substr(0, 2));
}

BOOST_AUTO_TEST_CASE(chunks_read_one_after_another_are_the_whole_file) {
  std::string text;
  for (int i = 0; i < 50; ++i)
    text += "line " + std::to_string(i) + " " + euro + "\xF0\x9F\x98\x80\n";
  node_log_fixture f(text);
  for (int32_t max : {4, 5, 7, 64}) {
    std::string all;
    int64_t at = 0;
    while (at < static_cast<int64_t>(text.size())) {
      log_chunk c = f.read(at, max);
      BOOST_REQUIRE(!c.bytes.empty());
      BOOST_TEST(c.offset == at);
      // Each chunk starts and ends at a character boundary.
      const auto lead = static_cast<unsigned char>(c.bytes.front());
      const auto after = c.next < c.size ? static_cast<unsigned char>(text[c.next]) : 0;
      BOOST_TEST((lead & 0xC0) != 0x80, "max " << max << " at " << at);
      BOOST_TEST((after & 0xC0) != 0x80, "max " << max << " next " << c.next);
      all += c.bytes;
      at = c.next;
    }
    BOOST_TEST(all == text, "max " << max);
  }
}

// A foreground node's copy of its output (output_tee) is its user's alone,
// whatever the umask, also when a file with another mode was there.
BOOST_AUTO_TEST_CASE(a_foreground_nodes_log_file_is_readable_by_its_user_only) {
  dtrain::testing::temp_dir dir;
  const std::string fresh = dir.file("node-1.log"), earlier = dir.file("node-2.log");
  dtrain::testing::write_file(earlier, "an earlier run\n");
  BOOST_REQUIRE(::chmod(earlier.c_str(), 0644) == 0);
  const mode_t umask_before = ::umask(0);
  for (const std::string& path : {fresh, earlier}) {
    auto tee = cli::output_tee::start(path);
    BOOST_REQUIRE_MESSAGE(tee.is_ok(), tee.error().to_string());
    std::printf("a line for %s\n", path.c_str());
    tee->reset();  // gives stdout back
    struct stat st {};
    BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
    const unsigned mode = st.st_mode & 0777;
    BOOST_TEST(mode == 0600u, path << " has mode " << std::oct << mode);
  }
  ::umask(umask_before);
  BOOST_TEST(dtrain::testing::read_file(fresh).find("a line for " + fresh) != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
