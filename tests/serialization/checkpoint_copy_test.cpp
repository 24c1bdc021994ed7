// Copying a trial's newest valid checkpoint into another trial's root (a
// PBT exploit) over the Cap'n Proto codec: the same bytes, the copy the
// newest there, corrupt checkpoints passed over, and a source that
// vanishes or changes mid-copy retried or failed cleanly.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <functional>
#include <mutex>

#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/checkpoint/checkpoint_copy.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
namespace ckpt = dtrain::checkpoint;
namespace fs = std::filesystem;
using dtrain::serialization::capnp_codec;

namespace {

// The capnp codec with a hook run before each call (op name, directory):
// the tests' way to delete or alter files at a chosen moment.
class hooked_codec final : public ckpt::codec {
public:
  std::function<void(const std::string& op, const std::string& dir)> before;

  result<ckpt::shard_info> write_shard(const std::string& dir, int rank, int world_size,
                                       const std::vector<ckpt::buffer_view>& buffers) override {
    return inner_.write_shard(dir, rank, world_size, buffers);
  }
  status write_manifest(const std::string& dir, const ckpt::manifest& m) override {
    return inner_.write_manifest(dir, m);
  }
  result<ckpt::manifest> read_manifest(const std::string& dir) override {
    call("read_manifest", dir);
    return inner_.read_manifest(dir);
  }
  status verify_shard(const std::string& dir, const ckpt::shard_info& shard) override {
    call("verify_shard", dir);
    return inner_.verify_shard(dir, shard);
  }
  status read_buffers(const std::string& dir, const ckpt::manifest& m,
                      const std::vector<ckpt::buffer_target>& targets) override {
    return inner_.read_buffers(dir, m, targets);
  }

private:
  void call(const std::string& op, const std::string& dir) {
    std::lock_guard<std::mutex> lock(mutex_);  // shards are verified in threads
    if (before)
      before(op, dir);
  }
  capnp_codec inner_;
  std::mutex mutex_;
};

// A checkpoint of `world` shards under root/checkpoint_name(epoch) whose
// parameters are drawn from `seed`; returns its directory.
std::string save(ckpt::codec& c, const std::string& root, int64_t epoch, uint64_t seed,
                 int world = 2) {
  const std::vector<float> parameters = random_tensor({257}, seed).to_vector();
  const std::vector<float> moments = random_tensor({257}, seed + 1).to_vector();
  const std::vector<ckpt::buffer_view> views = {{"parameters", parameters.data(), 257},
                                                {"optimizer/exp_avg", moments.data(), 257}};
  const std::string dir = root + "/" + ckpt::checkpoint_name(epoch);
  ckpt::manifest m;
  for (int rank = 0; rank < world; ++rank)
    m.shards.push_back(c.write_shard(dir, rank, world, views).value());
  m.trial = "source-operator";
  m.epoch = epoch;
  m.step = 100 * epoch;
  m.metrics = {{"validation_loss", 0.5}};
  m.world_size = world;
  m.buffers = {{"parameters", 257}, {"optimizer/exp_avg", 257}};
  BOOST_REQUIRE(c.write_manifest(dir, m).is_ok());
  return dir;
}

// Flips one byte in the middle of a file.
void corrupt(const std::string& path) {
  std::string bytes = read_file(path);
  BOOST_REQUIRE(!bytes.empty());
  bytes[bytes.size() / 2] ^= 0x5a;
  write_file(path, bytes);
}

std::vector<float> parameters_of(ckpt::codec& c, const std::string& dir) {
  auto m = c.read_manifest(dir);
  BOOST_REQUIRE(m.is_ok());
  std::vector<float> out(257);
  std::vector<float> moments(257);
  BOOST_REQUIRE(c.read_buffers(dir, *m, {{"parameters", out.data(), 257},
                                         {"optimizer/exp_avg", moments.data(), 257}})
                    .is_ok());
  return out;
}

bool mentions(const status& s, const std::string& a, const std::string& b) {
  return s.message().find(a) != std::string::npos && s.message().find(b) != std::string::npos;
}

} // namespace

BOOST_AUTO_TEST_SUITE(checkpoint_copy)

BOOST_AUTO_TEST_CASE(a_copy_holds_the_same_bytes_under_the_same_name) {
  temp_dir tmp;
  capnp_codec c;
  const std::string source = tmp.file("a"), target = tmp.file("b/nested");
  const std::string original = save(c, source, 2, 7);
  auto copied = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(copied.is_ok(), copied.error().to_string());
  BOOST_TEST(*copied == target + "/" + ckpt::checkpoint_name(2));
  BOOST_TEST(entries(target) == std::vector<std::string>{ckpt::checkpoint_name(2)});
  BOOST_TEST(entries(*copied) == entries(original));
  for (const std::string& file : entries(original))
    BOOST_TEST((read_file(*copied + "/" + file) == read_file(original + "/" + file)), file);
  BOOST_TEST(parameters_of(c, *copied) == parameters_of(c, original));
  BOOST_TEST(c.read_manifest(*copied)->epoch == 2);
}

BOOST_AUTO_TEST_CASE(the_targets_own_checkpoints_go_so_that_the_copy_is_the_newest) {
  temp_dir tmp;
  capnp_codec c;
  const std::string source = tmp.file("a"), target = tmp.file("b");
  save(c, source, 3, 1);
  save(c, target, 5, 2);
  save(c, target, 7, 3);
  fs::create_directories(target + "/" + ckpt::checkpoint_name(8) + ".tmp-0badf00d");
  fs::create_directories(target + "/" + ckpt::checkpoint_name(9));  // invalid: no manifest
  write_file(target + "/notes.txt", "not a checkpoint");
  auto copied = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(copied.is_ok(), copied.error().to_string());
  BOOST_TEST((entries(target) == std::vector<std::string>{ckpt::checkpoint_name(3), "notes.txt"}));
  BOOST_TEST(ckpt::newest_valid(c, target).value() == *copied);
  // Copying again replaces the copy.
  save(c, source, 4, 4);
  copied = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(copied.is_ok(), copied.error().to_string());
  BOOST_TEST((entries(target) == std::vector<std::string>{ckpt::checkpoint_name(4), "notes.txt"}));
}

BOOST_AUTO_TEST_CASE(a_corrupt_newest_source_checkpoint_copies_the_older_valid_one) {
  temp_dir tmp;
  capnp_codec c;
  const std::string source = tmp.file("a"), target = tmp.file("b");
  const std::string good = save(c, source, 1, 1);
  const std::string bad = save(c, source, 2, 2);
  corrupt(bad + "/" + capnp_codec::shard_file(1, 2));
  auto copied = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(copied.is_ok(), copied.error().to_string());
  BOOST_TEST(*copied == target + "/" + ckpt::checkpoint_name(1));
  BOOST_TEST(parameters_of(c, *copied) == parameters_of(c, good));
}

BOOST_AUTO_TEST_CASE(no_valid_source_is_not_found_naming_both_roots_and_the_target_stays) {
  temp_dir tmp;
  capnp_codec c;
  const std::string source = tmp.file("a"), target = tmp.file("b");
  save(c, target, 4, 1);
  const auto before = entries(target);
  auto missing = ckpt::copy_newest_valid(c, source, target);  // no source root at all
  BOOST_TEST_REQUIRE(!missing.is_ok());
  BOOST_TEST((missing.error().code() == error_code::not_found));
  BOOST_TEST(mentions(missing.error(), source, target), missing.error().to_string());
  const std::string bad = save(c, source, 2, 2);
  corrupt(bad + "/" + capnp_codec::manifest_file);
  auto corrupt_only = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(!corrupt_only.is_ok());
  BOOST_TEST((corrupt_only.error().code() == error_code::not_found));
  BOOST_TEST(mentions(corrupt_only.error(), source, target), corrupt_only.error().to_string());
  BOOST_TEST(entries(target) == before);
  // A copy onto itself would clear what it copies.
  auto onto_itself = ckpt::copy_newest_valid(c, target, target + "/.");
  BOOST_TEST((onto_itself.error().code() == error_code::invalid_argument));
  BOOST_TEST(entries(target) == before);
}

BOOST_AUTO_TEST_CASE(a_source_deleted_mid_copy_is_retried_with_the_next_valid_one) {
  temp_dir tmp;
  hooked_codec c;
  const std::string source = tmp.file("a"), target = tmp.file("b");
  const std::string older = save(c, source, 1, 1);
  const std::string newest = save(c, source, 2, 2);
  // newest_valid reads the manifest once; the copy's own read comes next:
  // the source trial's retention deletes the checkpoint just then.
  int reads = 0;
  c.before = [&](const std::string& op, const std::string& dir) {
    if (op == "read_manifest" && dir == newest && ++reads == 2)
      fs::remove_all(newest);
  };
  auto copied = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(copied.is_ok(), copied.error().to_string());
  BOOST_TEST(*copied == target + "/" + ckpt::checkpoint_name(1));
  BOOST_TEST(parameters_of(c, *copied) == parameters_of(c, older));
  BOOST_TEST(entries(target) == std::vector<std::string>{ckpt::checkpoint_name(1)});
}

BOOST_AUTO_TEST_CASE(a_source_changed_mid_copy_is_copied_again) {
  temp_dir tmp;
  hooked_codec c;
  const std::string source = tmp.file("a"), target = tmp.file("b");
  const std::string original = save(c, source, 3, 3);
  // The first copy is damaged as if a shard changed while it was read: its
  // verification fails, and the second attempt copies it whole.
  bool damaged = false;
  c.before = [&](const std::string& op, const std::string& dir) {
    if (op == "read_manifest" && ckpt::is_temporary_name(fs::path(dir).filename().string()) && !damaged) {
      damaged = true;
      corrupt(dir + "/" + capnp_codec::shard_file(0, 2));
    }
  };
  auto copied = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(copied.is_ok(), copied.error().to_string());
  BOOST_TEST(damaged);
  BOOST_TEST(parameters_of(c, *copied) == parameters_of(c, original));
  BOOST_TEST(entries(target) == std::vector<std::string>{ckpt::checkpoint_name(3)});
}

BOOST_AUTO_TEST_CASE(a_source_that_keeps_changing_fails_cleanly_after_three_attempts) {
  temp_dir tmp;
  hooked_codec c;
  const std::string source = tmp.file("a"), target = tmp.file("b");
  save(c, source, 3, 3);
  save(c, target, 1, 1);
  const auto before = entries(target);
  int copies = 0;
  c.before = [&](const std::string& op, const std::string& dir) {
    if (op == "read_manifest" && ckpt::is_temporary_name(fs::path(dir).filename().string())) {
      ++copies;
      corrupt(dir + "/" + capnp_codec::shard_file(1, 2));
    }
  };
  auto copied = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(!copied.is_ok());
  BOOST_TEST(copies == 3);
  BOOST_TEST((copied.error().code() == error_code::corrupt_data));
  BOOST_TEST(mentions(copied.error(), source, target), copied.error().to_string());
  BOOST_TEST(entries(target) == before);  // its own checkpoint, no temporary left

  // A source root deleted whole mid-copy: not_found, the target as it was.
  c.before = [&](const std::string& op, const std::string& dir) {
    if (op == "read_manifest" && dir.rfind(source, 0) == 0 && copies++ == 3)
      fs::remove_all(source);
  };
  copied = ckpt::copy_newest_valid(c, source, target);
  BOOST_TEST_REQUIRE(!copied.is_ok());
  BOOST_TEST((copied.error().code() == error_code::not_found), copied.error().to_string());
  BOOST_TEST(mentions(copied.error(), source, target), copied.error().to_string());
  BOOST_TEST(entries(target) == before);
}

BOOST_AUTO_TEST_SUITE_END()
