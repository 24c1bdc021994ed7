// A node's log read in chunks from its file: chunks cut short of the end
// end at a whole UTF-8 character, and the chunks together are the file.
// A node with a secret or a CA serves its log only with a fresh credential
// for that very read: the same-user MAC, or a client certificate's proof.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/cluster/errors.hpp"
#include "dtrain/driver/node_logs.hpp"
#include "dtrain/cluster/node_secret.hpp"
#include "dtrain/driver/plugin_shipping.hpp"
#include "dtrain/security/certificates.hpp"
#include "dtrain/roles/output_tee.hpp"
#include "support/test_util.hpp"

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
    // No address: a node in this process, which asks for no credential.
    auto c = read_log_chunk(self, log_source{node, node_info{}, {}, "node 0"}, offset, max_bytes,
                            std::chrono::seconds(10));
    BOOST_REQUIRE_MESSAGE(c.is_ok(), c.error().to_string());
    return *c;
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A node process as another process sees it: its node options (a log file,
// and a secret or a CA) and the registration a reader learns them from.
struct guarded_node {
  dtrain::testing::temp_dir dir;
  system_config config;
  caf::actor_system sys{config};
  node_secret secret;
  node_options options;
  node_info info;
  node_actor node;

  // With a same-user secret (tls_ca empty) or a CA file and no secret.
  explicit guarded_node(const std::string& tls_ca = "") {
    dtrain::testing::write_file(dir.file("node.log"), "dtrain node 0 joined\n");
    options.log_file = dir.file("node.log");
    info.host_id = "host-a";
    info.pid = 4242;
    info.address = "127.0.0.1:1";  // not this process: readers present a credential
    options.identity = node_proof_name(info.host_id, info.pid);
    if (tls_ca.empty()) {
      auto made = node_secret::create(dir.file("secrets"), "node-4242");
      BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
      secret = std::move(*made);
      options.secret = secret.value();
      options.secret_file = info.secret_file = secret.path();
    } else {
      options.ca_file = tls_ca;
    }
    node = spawn_node(sys, options);
  }
  ~guarded_node() { caf::anon_send_exit(node, caf::exit_reason::user_shutdown); }

  // A log request with `credential` as it is: "" when the node served it,
  // else its refusal.
  std::string ask(int64_t offset, int32_t max_bytes, const plugin_credential& credential) {
    caf::scoped_actor self{sys};
    std::string why = "no answer";
    self->request(node, std::chrono::seconds(5), log_atom::value, offset, max_bytes, credential)
        .receive([&](log_chunk& c) { why = c.bytes.empty() ? "served nothing" : ""; },
                 [&](caf::error& e) { why = from_caf(e, "log").message(); });
    return why;
  }

  // A start of `spec` with `credential`: "" when a replica started.
  std::string spawn(const replica_spec& spec, const plugin_credential& credential) {
    caf::scoped_actor self{sys};
    std::string why = "no answer";
    self->request(node, std::chrono::seconds(5), spawn_atom::value, spec, caf::actor{},
                  rendezvous_actor{}, credential)
        .receive(
            [&](replica_actor& r) {
              why.clear();
              caf::anon_send_exit(r, caf::exit_reason::kill);
            },
            [&](caf::error& e) { why = from_caf(e, "spawn").message(); });
    return why;
  }

  result<plugin_credential> for_read(int64_t offset, int32_t max_bytes,
                                     const security::tls_files& client = {}) {
    return log_credential(sys, node, info, offset, max_bytes, client, std::chrono::seconds(5));
  }
};

security::tls_files issue(const std::string& ca_dir, security::role r, const std::string& name) {
  security::certificate_request req;
  req.role_ = r;
  req.name = name;
  req.ca_dir = ca_dir;
  req.out_dir = ca_dir;
  auto made = security::create_certificate(req);
  BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
  return {made->certificate_path, made->key_path, ca_dir + "/ca.pem"};
}

} // namespace

BOOST_AUTO_TEST_SUITE(node_log_chunks)

// Reading a node's log was open to anyone who reached the node's port.
BOOST_AUTO_TEST_CASE(a_nodes_log_is_served_only_with_a_same_user_mac_made_for_that_read) {
  guarded_node g;
  // Nothing, a made-up MAC, or the old request without a credential.
  BOOST_TEST(contains(g.ask(0, 100, plugin_credential{}), "log read refused"));
  plugin_credential guess{"same-user", "", "", std::string(64, 'a')};
  BOOST_TEST(contains(g.ask(0, 100, guess), "log read refused"));
  {
    caf::scoped_actor self{g.sys};
    bool served = false;
    self->request(caf::actor_cast<caf::actor>(g.node), std::chrono::seconds(5), log_atom::value,
                  int64_t{0}, int32_t{100})
        .receive([&](log_chunk&) { served = true; }, [](caf::error&) {});
    BOOST_TEST(!served);
  }
  // The reader's own MAC, through read_log_chunk.
  caf::scoped_actor self{g.sys};
  auto chunk = read_log_chunk(self, log_source{g.node, g.info, {}, "node 0"}, 0, 100,
                              std::chrono::seconds(5));
  BOOST_REQUIRE_MESSAGE(chunk.is_ok(), chunk.error().to_string());
  BOOST_TEST(chunk->bytes == "dtrain node 0 joined\n");
  // A MAC holds for one read, once.
  auto once = g.for_read(0, 100).value();
  BOOST_TEST(g.ask(0, 100, once) == "");
  BOOST_TEST(contains(g.ask(0, 100, once), "was used already"));
  auto other_read = g.for_read(0, 10).value();
  const std::string moved = g.ask(0, 100, other_read);
  BOOST_TEST(contains(moved, "log read refused: the driver could not prove it runs as the node's "
                             "user (its MAC does not hold"),
             moved);
  // A credential for starting a replica reads no log, and one for reading
  // the log starts no replica.
  replica_spec spec;
  spec.trainer = "t";
  spec.capability = security::random_hex(16);
  auto for_spawn = spawn_credential(g.sys, g.node, g.info, spec, {}, std::chrono::seconds(5));
  BOOST_REQUIRE(for_spawn.is_ok());
  BOOST_TEST(contains(g.ask(0, 100, *for_spawn), "its MAC does not hold"));
  const std::string spawned = g.spawn(spec, g.for_read(0, 100).value());
  BOOST_TEST(contains(spawned, "replica refused"), spawned);
  BOOST_TEST(contains(dtrain::testing::read_file(g.options.log_file), "dtrain node 0 joined"));
}

// On TLS: a client certificate's proof for that read; a node's or the
// head's certificate reads nothing.
BOOST_AUTO_TEST_CASE(on_tls_only_a_client_certificate_reads_a_nodes_log) {
  dtrain::testing::temp_dir pki;
  security::ca_request ca;
  ca.dir = pki.file("tls");
  BOOST_REQUIRE_MESSAGE(security::create_ca(ca).is_ok(), "create_ca");
  const auto client = issue(ca.dir, security::role::client, "alice");
  const auto node_files = issue(ca.dir, security::role::node, "node-1");
  const auto head_files = issue(ca.dir, security::role::head, "head");
  guarded_node g(ca.dir + "/ca.pem");
  caf::scoped_actor self{g.sys};
  auto chunk = read_log_chunk(self, log_source{g.node, g.info, client, "node 0"}, 0, 100,
                              std::chrono::seconds(5));
  BOOST_REQUIRE_MESSAGE(chunk.is_ok(), chunk.error().to_string());
  BOOST_TEST(chunk->bytes == "dtrain node 0 joined\n");
  const std::string as_node = g.ask(0, 100, g.for_read(0, 100, node_files).value());
  BOOST_TEST(contains(as_node, "log read refused"), as_node);
  BOOST_TEST(contains(as_node, "is a node certificate"), as_node);
  const std::string as_head = g.ask(0, 100, g.for_read(0, 100, head_files).value());
  BOOST_TEST(contains(as_head, "log read refused"), as_head);
  // A client's proof for another read, or for another node process.
  BOOST_TEST(contains(g.ask(0, 100, g.for_read(-100, 100, client).value()),
                      "identity proof does not hold"));
  node_info elsewhere = g.info;
  elsewhere.pid = 1;
  auto moved = log_credential(g.sys, g.node, elsewhere, 0, 100, client, std::chrono::seconds(5));
  BOOST_TEST(contains(g.ask(0, 100, moved.value()), "identity proof does not hold"));
  BOOST_TEST(contains(g.ask(0, 100, plugin_credential{}), "log read refused"));
}

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
    auto tee = roles::output_tee::start(path);
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
