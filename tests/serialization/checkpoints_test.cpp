// The checkpoint model (names, saves under temporary names, newest_valid,
// retention) over the Cap'n Proto codec: shards written by ranks in threads
// read back whole whatever the writer's world size, big slices split into
// chunks, the manifest last, truncated, altered or missing files reported
// by name, and no save or retention that loses the last good checkpoint.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>

#include <zlib.h>

#include "support/spawn.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::testing;
namespace ckpt = dtrain::checkpoint;
namespace fs = std::filesystem;
using dtrain::serialization::capnp_codec;

namespace {

// Named buffers of distinct values; sizes that do not divide evenly, one
// smaller than the ranks and one empty.
struct model_state {
  std::map<std::string, std::vector<float>> buffers;

  static model_state make(uint64_t seed, int64_t big = 1001) {
    model_state s;
    s.buffers["parameters"] = random_tensor({big}, seed).to_vector();
    s.buffers["optimizer/exp_avg"] = random_tensor({big}, seed + 1).to_vector();
    s.buffers["tiny"] = {1.5f, -2.5f};
    s.buffers["empty"] = {};
    return s;
  }
  std::vector<ckpt::buffer_view> views() const {
    std::vector<ckpt::buffer_view> out;
    for (auto& [name, v] : buffers)
      out.push_back({name, v.data(), static_cast<int64_t>(v.size())});
    return out;
  }
};

// A whole checkpoint the way a group writes one: every rank's shard in a
// thread of its own, then the manifest.
status write_checkpoint(ckpt::codec& c, const std::string& dir, int world,
                        const model_state& state, int64_t epoch = 1,
                        std::map<std::string, double> metrics = {}) {
  std::vector<ckpt::shard_info> shards(static_cast<size_t>(world));
  auto outcomes = run_ranks(world, rank_mode::threads, std::chrono::seconds(60), [&](int rank) {
    auto info = c.write_shard(dir, rank, world, state.views());
    if (info.is_ok())
      shards[static_cast<size_t>(rank)] = *info;
    return info.to_status();
  });
  if (std::string failed = failures(outcomes); !failed.empty())
    return status(error_code::internal, failed);
  ckpt::manifest m;
  m.trial = "test";
  m.epoch = epoch;
  m.step = 10 * epoch;
  m.metrics = std::move(metrics);
  m.world_size = world;
  for (auto& [name, v] : state.buffers)
    m.buffers.emplace_back(name, static_cast<int64_t>(v.size()));
  m.extra = {'x', '\0', 'y'};
  m.shards = shards;
  return c.write_manifest(dir, m);
}

// Reads every buffer of `dir` back and compares it with `state`.
status expect_restores(ckpt::codec& c, const std::string& dir, const model_state& state) {
  DTRAIN_ASSIGN_OR_RETURN(auto m, c.read_manifest(dir));
  std::map<std::string, std::vector<float>> got;
  std::vector<ckpt::buffer_target> targets;
  for (auto& [name, v] : state.buffers) {
    got[name].assign(v.size(), -1.0f);
    targets.push_back({name, got[name].data(), static_cast<int64_t>(v.size())});
  }
  DTRAIN_RETURN_IF_ERROR(c.read_buffers(dir, m, targets));
  DTRAIN_RETURN_IF_ERROR(expect(m.trial == "test" && m.extra == ckpt::bytes{'x', '\0', 'y'},
                                "the manifest's trial or extra state differs"));
  return expect(got == state.buffers, "the buffers read back differ from those written");
}

// `s` failed with `code` and names `needle` (a file).
void check_error(const status& s, error_code code, const std::string& needle) {
  BOOST_TEST_MESSAGE(s.to_string());
  BOOST_TEST(s.code() == code, "expected " << to_string(code) << ", got " << s.to_string());
  BOOST_TEST(s.message().find(needle) != std::string::npos,
             "'" << needle << "' missing from: " << s.message());
}

} // namespace

BOOST_AUTO_TEST_SUITE(checkpoints)

BOOST_AUTO_TEST_CASE(buffers_written_by_1_to_3_ranks_read_back_whole) {
  temp_dir root;
  const auto state = model_state::make(3);
  for (size_t chunk : {capnp_codec::default_max_chunk_bytes, size_t{64}}) {
    capnp_codec c(chunk);
    for (int world = 1; world <= 3; ++world) {
      const std::string dir = root.file("w" + std::to_string(world) + "-" + std::to_string(chunk));
      BOOST_REQUIRE_MESSAGE(write_checkpoint(c, dir, world, state).is_ok(), "world " << world);
      const status s = expect_restores(c, dir, state);
      BOOST_TEST(s.is_ok(), "world " << world << ", chunks of " << chunk << ": " << s.to_string());
    }
  }
}

// What the default codec saves, a capnp_codec reads, and the other way: the
// checkpoints earlier versions wrote keep restoring.
BOOST_AUTO_TEST_CASE(the_default_codec_reads_and_writes_the_capnp_format) {
  temp_dir root;
  const auto state = model_state::make(5);
  auto chosen = serialization::default_checkpoint_codec();
  capnp_codec capnp;
  BOOST_REQUIRE(write_checkpoint(*chosen, root.file("by-default"), 2, state).is_ok());
  BOOST_REQUIRE(write_checkpoint(capnp, root.file("by-capnp"), 2, state).is_ok());
  const status read_by_capnp = expect_restores(capnp, root.file("by-default"), state);
  BOOST_TEST(read_by_capnp.is_ok(), read_by_capnp.to_string());
  const status read_by_default = expect_restores(*chosen, root.file("by-capnp"), state);
  BOOST_TEST(read_by_default.is_ok(), read_by_default.to_string());
  BOOST_TEST(fs::exists(root.file("by-default/" + std::string(capnp_codec::manifest_file))));
  BOOST_TEST(fs::exists(root.file("by-default/" + capnp_codec::shard_file(1, 2))));
}

BOOST_AUTO_TEST_CASE(the_manifest_records_what_the_chief_wrote) {
  temp_dir root;
  capnp_codec c;
  BOOST_REQUIRE(write_checkpoint(c, root.path(), 2, model_state::make(1), 7, {{"loss", 0.25}}).is_ok());
  auto m = c.read_manifest(root.path());
  BOOST_REQUIRE_MESSAGE(m.is_ok(), m.error().to_string());
  BOOST_TEST(m->epoch == 7);
  BOOST_TEST(m->step == 70);
  BOOST_TEST(m->world_size == 2);
  BOOST_TEST(m->version == ckpt::schema_version);
  BOOST_TEST((m->metrics == std::map<std::string, double>{{"loss", 0.25}}));
  BOOST_TEST(m->buffers.size() == 4u);
  BOOST_REQUIRE(m->shards.size() == 2u);
  BOOST_TEST(m->shards[1].file == "shard-1-of-2.capnp");
  BOOST_TEST(m->shards[1].size == fs::file_size(root.file("shard-1-of-2.capnp")));
  // No temporary file is left behind.
  BOOST_TEST((entries(root.path()) ==
              std::vector<std::string>{"manifest.capnp", "shard-0-of-2.capnp", "shard-1-of-2.capnp"}));
}

BOOST_AUTO_TEST_CASE(a_slice_larger_than_one_chunk_is_split_and_need_not_be_aligned) {
  temp_dir root;
  capnp_codec c(1000);  // rounded down to 1000 bytes: 250 floats
  std::vector<float> backing = random_tensor({100003}, 5).to_vector();
  model_state state;
  // Odd offsets: the slices start and end off the 8-byte grid.
  state.buffers["odd"].assign(backing.begin() + 1, backing.end());
  const float* unaligned = backing.data() + 1;
  for (int world = 1; world <= 3; ++world) {
    const std::string dir = root.file("w" + std::to_string(world));
    std::vector<ckpt::shard_info> shards;
    for (int rank = 0; rank < world; ++rank) {
      auto info = c.write_shard(dir, rank, world, {{"odd", unaligned, 100002}});
      BOOST_REQUIRE_MESSAGE(info.is_ok(), info.error().to_string());
      shards.push_back(*info);
    }
    ckpt::manifest m;
    m.trial = "test";
    m.world_size = world;
    m.buffers = {{"odd", 100002}};
    m.extra = {'x', '\0', 'y'};
    m.shards = shards;
    BOOST_REQUIRE(c.write_manifest(dir, m).is_ok());
    const status s = expect_restores(c, dir, state);
    BOOST_TEST(s.is_ok(), "world " << world << ": " << s.to_string());
  }
}

BOOST_AUTO_TEST_CASE(shards_without_a_manifest_are_no_checkpoint) {
  temp_dir root;
  capnp_codec c;
  const auto state = model_state::make(2);
  BOOST_REQUIRE(write_checkpoint(c, root.file(ckpt::checkpoint_name(1)), 2, state).is_ok());
  // A crash after the shards of epoch 2, before its manifest.
  const std::string crashed = root.file(ckpt::checkpoint_name(2));
  for (int rank = 0; rank < 2; ++rank)
    BOOST_REQUIRE(c.write_shard(crashed, rank, 2, state.views()).is_ok());
  check_error(c.read_manifest(crashed).to_status(), error_code::not_found,
              crashed + "/manifest.capnp");
  std::vector<std::string> skipped;
  auto newest = ckpt::newest_valid(c, root.path(), &skipped);
  BOOST_REQUIRE_MESSAGE(newest.is_ok(), newest.error().to_string());
  BOOST_TEST(*newest == root.file(ckpt::checkpoint_name(1)));
  BOOST_REQUIRE(skipped.size() == 1u);
  BOOST_TEST(skipped[0].find(crashed) == 0u);
}

BOOST_AUTO_TEST_CASE(truncated_altered_or_missing_files_are_reported_by_name) {
  temp_dir root;
  capnp_codec c;
  const auto state = model_state::make(4);
  auto damaged = [&](const std::string& name, auto damage) {
    const std::string dir = root.file(name);
    BOOST_REQUIRE(write_checkpoint(c, dir, 2, state).is_ok());
    damage(dir + "/shard-1-of-2.capnp", dir + "/manifest.capnp");
    return dir;
  };
  const std::string cut = damaged("cut", [](auto shard, auto) {
    fs::resize_file(shard, fs::file_size(shard) - 8);
  });
  const std::string flipped = damaged("flipped", [](auto shard, auto) {
    std::string bytes = read_file(shard);
    bytes[bytes.size() / 2] ^= 0x10;
    write_file(shard, bytes);
  });
  const std::string gone = damaged("gone", [](auto shard, auto) { fs::remove(shard); });
  for (const std::string& dir : {cut, flipped, gone}) {
    auto m = c.read_manifest(dir);
    BOOST_REQUIRE(m.is_ok());  // the manifest itself is fine
    const std::string shard = dir + "/shard-1-of-2.capnp";
    check_error(c.verify_shard(dir, m->shards[1]), error_code::corrupt_data, shard);
    std::vector<float> into(1001);
    check_error(c.read_buffers(dir, *m, {{"parameters", into.data(), 1001}}),
                error_code::corrupt_data, shard);
  }
  check_error(c.verify_shard(cut, c.read_manifest(cut)->shards[1]), error_code::corrupt_data,
              "manifest says");
  check_error(c.verify_shard(flipped, c.read_manifest(flipped)->shards[1]),
              error_code::corrupt_data, "CRC-32");
}

BOOST_AUTO_TEST_CASE(a_missing_or_damaged_manifest_is_reported_by_name) {
  temp_dir root;
  capnp_codec c;
  const std::string dir = root.file("ckpt");
  BOOST_REQUIRE(write_checkpoint(c, dir, 1, model_state::make(6)).is_ok());
  const std::string manifest = dir + "/manifest.capnp", good = read_file(manifest);
  write_file(manifest, good.substr(0, good.size() - 8));
  check_error(c.read_manifest(dir).to_status(), error_code::corrupt_data, manifest);
  write_file(manifest, good.substr(0, good.size() - 3));
  check_error(c.read_manifest(dir).to_status(), error_code::corrupt_data, manifest);
  write_file(manifest, std::string(64, '\xff'));
  check_error(c.read_manifest(dir).to_status(), error_code::corrupt_data, manifest);
  write_file(manifest, good + std::string(8, '\0'));
  check_error(c.read_manifest(dir).to_status(), error_code::corrupt_data, manifest);
  fs::remove(manifest);
  check_error(c.read_manifest(dir).to_status(), error_code::not_found, manifest);
}

BOOST_AUTO_TEST_CASE(a_shard_that_matches_its_checksum_but_does_not_parse_is_corrupt_data) {
  temp_dir root;
  capnp_codec c;
  BOOST_REQUIRE(write_checkpoint(c, root.path(), 1, model_state::make(7)).is_ok());
  auto m = *c.read_manifest(root.path());
  // Garbage with a manifest that vouches for it: Cap'n Proto's exception
  // must come back as an error naming the shard.
  const std::string shard = root.file("shard-0-of-1.capnp"), garbage(64, '\xff');
  write_file(shard, garbage);
  m.shards[0].size = garbage.size();
  m.shards[0].checksum = ::crc32(0, reinterpret_cast<const Bytef*>(garbage.data()), 64);
  BOOST_REQUIRE(c.write_manifest(root.path(), m).is_ok());
  BOOST_REQUIRE(c.verify_shard(root.path(), m.shards[0]).is_ok());
  std::vector<float> into(1001);
  check_error(c.read_buffers(root.path(), m, {{"parameters", into.data(), 1001}}),
              error_code::corrupt_data, shard);
}

BOOST_AUTO_TEST_CASE(inconsistent_manifests_and_mismatched_targets_are_refused) {
  temp_dir root;
  capnp_codec c;
  const auto state = model_state::make(8);
  BOOST_REQUIRE(write_checkpoint(c, root.path(), 2, state).is_ok());
  auto m = *c.read_manifest(root.path());
  auto bad = m;
  bad.world_size = 3;
  check_error(c.write_manifest(root.path(), bad), error_code::invalid_argument, "world size 3");
  bad = m;
  bad.shards[1].rank = 0;
  check_error(c.write_manifest(root.path(), bad), error_code::invalid_argument, "rank 0");
  bad = m;
  bad.shards[0].file = "../elsewhere";
  check_error(c.write_manifest(root.path(), bad), error_code::invalid_argument, "../elsewhere");
  std::vector<float> wrong(1000);
  check_error(c.read_buffers(root.path(), m, {{"parameters", wrong.data(), 1000}}),
              error_code::invalid_argument, "'parameters' holds 1001");
  check_error(c.read_buffers(root.path(), m, {{"momentum", wrong.data(), 1000}}),
              error_code::invalid_argument, "'momentum'");
}

BOOST_AUTO_TEST_CASE(a_buffer_that_a_shard_leaves_out_is_corrupt_data) {
  temp_dir root;
  capnp_codec c;
  const auto state = model_state::make(9);
  std::vector<ckpt::shard_info> shards;
  const auto& params = state.buffers.at("parameters");
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<ckpt::buffer_view> views{{"parameters", params.data(), 1001}};
    if (rank == 1)  // rank 1 "forgets" its half of the parameters
      views.clear();
    shards.push_back(*c.write_shard(root.path(), rank, 2, views));
  }
  ckpt::manifest m;
  m.world_size = 2;
  m.buffers = {{"parameters", 1001}};
  m.shards = shards;
  BOOST_REQUIRE(c.write_manifest(root.path(), m).is_ok());
  std::vector<float> into(1001);
  check_error(c.read_buffers(root.path(), m, {{"parameters", into.data(), 1001}}),
              error_code::corrupt_data, "elements from 500 to 1001 are in no shard");
}

BOOST_AUTO_TEST_CASE(newest_valid_skips_an_invalid_newest_checkpoint) {
  temp_dir root;
  capnp_codec c;
  const auto state = model_state::make(10);
  for (int64_t epoch = 1; epoch <= 3; ++epoch)
    BOOST_REQUIRE(write_checkpoint(c, root.file(ckpt::checkpoint_name(epoch)), 2, state, epoch).is_ok());
  const std::string newest = root.file(ckpt::checkpoint_name(3));
  std::string bytes = read_file(newest + "/shard-0-of-2.capnp");
  bytes[bytes.size() - 100] ^= 1;
  write_file(newest + "/shard-0-of-2.capnp", bytes);
  std::vector<std::string> skipped;
  auto found = ckpt::newest_valid(c, root.path(), &skipped);
  BOOST_REQUIRE_MESSAGE(found.is_ok(), found.error().to_string());
  BOOST_TEST(*found == root.file(ckpt::checkpoint_name(2)));
  BOOST_REQUIRE(skipped.size() == 1u);
  BOOST_TEST(skipped[0].find(newest + "/shard-0-of-2.capnp") != std::string::npos, skipped[0]);
  temp_dir empty;
  check_error(ckpt::newest_valid(c, empty.path()).to_status(), error_code::not_found,
              empty.path());
  check_error(ckpt::newest_valid(c, empty.file("nowhere")).to_status(), error_code::not_found,
              "nowhere");
}

BOOST_AUTO_TEST_CASE(retention_keeps_the_newest_k_and_the_best_and_drops_invalid_ones) {
  temp_dir root;
  capnp_codec c;
  const auto state = model_state::make(11, 64);
  const std::vector<double> loss = {0.5, 0.1, 0.4, 0.3, 0.2, 0.6};
  for (int64_t epoch = 1; epoch <= 6; ++epoch)
    BOOST_REQUIRE(write_checkpoint(c, root.file(ckpt::checkpoint_name(epoch)), 1, state, epoch,
                                   {{"loss", loss[epoch - 1]}, {"accuracy", 1 - loss[epoch - 1]}})
                      .is_ok());
  fs::remove(root.file(ckpt::checkpoint_name(6)) + "/manifest.capnp");  // invalid
  fs::create_directory(root.file("unrelated"));
  auto names = [&](std::initializer_list<int> epochs) {
    std::vector<std::string> out{"unrelated"};
    for (int e : epochs)
      out.push_back(ckpt::checkpoint_name(e));
    std::sort(out.begin(), out.end());
    return out;
  };
  BOOST_REQUIRE(ckpt::apply_retention(c, root.path(), 0, "", true).is_ok());  // keeps all valid
  BOOST_TEST(entries(root.path()) == names({1, 2, 3, 4, 5}));
  BOOST_REQUIRE(ckpt::apply_retention(c, root.path(), 3, "accuracy", false).is_ok());
  BOOST_TEST(entries(root.path()) == names({2, 3, 4, 5}));  // the newest 3 and the best
  BOOST_REQUIRE(ckpt::apply_retention(c, root.path(), 1, "loss", true).is_ok());
  BOOST_TEST(entries(root.path()) == names({2, 5}));
  BOOST_REQUIRE(ckpt::apply_retention(c, root.path(), 1, "no_such_metric", true).is_ok());
  BOOST_TEST(entries(root.path()) == names({5}));
}

// Flips one byte in the middle of `path`: the size stays, the CRC does not.
void flip_a_byte(const std::string& path) {
  std::string bytes = read_file(path);
  bytes[bytes.size() / 2] ^= 0x20;
  write_file(path, bytes);
}

BOOST_AUTO_TEST_CASE(retention_keeps_the_older_good_checkpoint_when_the_newest_is_corrupt) {
  capnp_codec c;
  const auto older = model_state::make(12), newer = model_state::make(13);
  // The newest has a shard with a flipped byte, or a manifest that records
  // a wrong checksum for a good shard (the same damage, seen from the other side).
  for (const bool in_the_manifest : {false, true}) {
    temp_dir root;
    const std::string good = root.file(ckpt::checkpoint_name(1));
    const std::string bad = root.file(ckpt::checkpoint_name(2));
    BOOST_REQUIRE(write_checkpoint(c, good, 2, older, 1).is_ok());
    BOOST_REQUIRE(write_checkpoint(c, bad, 2, newer, 2).is_ok());
    if (in_the_manifest) {
      auto m = *c.read_manifest(bad);
      m.shards[1].checksum ^= 1;
      BOOST_REQUIRE(c.write_manifest(bad, m).is_ok());
    } else {
      flip_a_byte(bad + "/shard-1-of-2.capnp");
    }
    BOOST_REQUIRE(ckpt::apply_retention(c, root.path(), 1, "", true).is_ok());
    const auto kept = entries(root.path());
    BOOST_TEST((std::find(kept.begin(), kept.end(), ckpt::checkpoint_name(1)) != kept.end()),
                "the good checkpoint went (damage in the manifest: " << in_the_manifest << ")");
    auto newest = ckpt::newest_valid(c, root.path());
    BOOST_REQUIRE_MESSAGE(newest.is_ok(), newest.error().to_string());
    BOOST_TEST(*newest == good);
    const status s = expect_restores(c, good, older);
    BOOST_TEST(s.is_ok(), s.to_string());
  }
}

BOOST_AUTO_TEST_CASE(leftovers_of_a_crashed_save_are_ignored_and_then_removed_by_retention) {
  temp_dir root;
  capnp_codec c;
  const auto state = model_state::make(14);
  const std::string good = root.file(ckpt::checkpoint_name(1));
  BOOST_REQUIRE(write_checkpoint(c, good, 2, state, 1).is_ok());
  // A save killed before it was published: complete up to the manifest,
  // and one with a shard only.
  BOOST_REQUIRE(write_checkpoint(c, root.file("ckpt-00000002.tmp-4f2a"), 2, state, 2).is_ok());
  BOOST_REQUIRE(c.write_shard(root.file("ckpt-00000001-0001.tmp-77c1"), 0, 2, state.views()).is_ok());
  std::vector<std::string> skipped;
  auto newest = ckpt::newest_valid(c, root.path(), &skipped);
  BOOST_REQUIRE_MESSAGE(newest.is_ok(), newest.error().to_string());
  BOOST_TEST(*newest == good);
  BOOST_TEST(skipped.empty());
  fs::create_directory(root.file("unrelated"));
  BOOST_REQUIRE(ckpt::apply_retention(c, root.path(), 1, "", true).is_ok());
  BOOST_TEST((entries(root.path()) == std::vector<std::string>{ckpt::checkpoint_name(1), "unrelated"}));
}

BOOST_AUTO_TEST_CASE(later_saves_of_an_epoch_are_newer_and_sequence_numbers_compare_as_numbers) {
  temp_dir root;
  capnp_codec c;
  // Old-style ckpt-EPOCH first, then re-saves of epoch 2 numbered 1, 9999
  // and 10000 (wider than the padding), and an older epoch's re-save.
  const std::vector<std::string> names = {"ckpt-00000002", "ckpt-00000002-0001",
                                          "ckpt-00000002-9999", "ckpt-00000002-10000",
                                          "ckpt-00000001-0005"};
  for (size_t i = 0; i < names.size(); ++i)
    BOOST_REQUIRE(write_checkpoint(c, root.file(names[i]), 1, model_state::make(20 + i, 16), 2).is_ok());
  auto newest = ckpt::newest_valid(c, root.path());
  BOOST_REQUIRE_MESSAGE(newest.is_ok(), newest.error().to_string());
  BOOST_TEST(*newest == root.file("ckpt-00000002-10000"));
  BOOST_REQUIRE(ckpt::apply_retention(c, root.path(), 2, "", true).is_ok());
  BOOST_TEST((entries(root.path()) ==
              std::vector<std::string>{"ckpt-00000002-10000", "ckpt-00000002-9999"}));
}

BOOST_AUTO_TEST_CASE(each_save_of_an_epoch_gets_a_new_name_and_publishing_never_replaces_one) {
  temp_dir root;
  capnp_codec c;
  const auto state = model_state::make(15, 16);
  const std::string under = root.file("checkpoints");  // created by the first save
  std::vector<std::string> published;
  for (int save = 0; save < 3; ++save) {
    auto pending = ckpt::begin_save(under, 4);
    BOOST_REQUIRE_MESSAGE(pending.is_ok(), pending.error().to_string());
    BOOST_TEST(!fs::exists(pending->dir));
    BOOST_TEST(fs::is_directory(pending->temp));
    BOOST_TEST(pending->temp.rfind(pending->dir + ".tmp-", 0) == 0u, pending->temp);
    BOOST_REQUIRE(write_checkpoint(c, pending->temp, 2, state, 4).is_ok());
    BOOST_REQUIRE(ckpt::publish(*pending).is_ok());
    published.push_back(pending->dir);
  }
  BOOST_TEST((published == std::vector<std::string>{under + "/ckpt-00000004",
                                                    under + "/ckpt-00000004-0001",
                                                    under + "/ckpt-00000004-0002"}));
  // Two saves that raced for one name: the second cannot replace the first.
  auto first = ckpt::begin_save(under, 5), second = ckpt::begin_save(under, 5);
  BOOST_REQUIRE(first.is_ok() && second.is_ok());
  BOOST_TEST(first->dir == second->dir);
  BOOST_TEST(first->temp != second->temp);
  BOOST_REQUIRE(write_checkpoint(c, first->temp, 1, state, 5).is_ok());
  BOOST_REQUIRE(ckpt::publish(*first).is_ok());
  check_error(ckpt::publish(*second), error_code::io_error, second->dir);
  ckpt::abandon(*second);
  BOOST_TEST(!fs::exists(second->temp));
  BOOST_TEST(ckpt::newest_valid(c, under).value() == first->dir);
  // A root that is a file cannot hold checkpoints.
  write_file(root.file("a-file"), "x");
  check_error(ckpt::begin_save(root.file("a-file"), 1).to_status(), error_code::io_error,
              root.file("a-file"));
}

BOOST_AUTO_TEST_CASE(checkpoint_names_order_by_epoch_then_sequence) {
  BOOST_TEST(ckpt::checkpoint_name(7) == "ckpt-00000007");
  BOOST_TEST(ckpt::checkpoint_name(7, 2) == "ckpt-00000007-0002");
  BOOST_TEST(ckpt::checkpoint_name(9) < ckpt::checkpoint_name(10));
  auto id = [](const std::string& name) { return ckpt::parse_checkpoint_name(name); };
  BOOST_TEST((id("ckpt-00000007-0002")->epoch == 7 && id("ckpt-00000007-0002")->sequence == 2));
  BOOST_TEST((id("ckpt-00000007")->epoch == 7 && id("ckpt-00000007")->sequence == 0));
  BOOST_TEST((*id("ckpt-00000007-9999") < *id("ckpt-00000007-10000")));
  BOOST_TEST((*id("ckpt-00000007-0001") < *id("ckpt-00000008")));
  for (const char* other : {"ckpt-", "ckpt-7-", "ckpt-x", "ckpt-00000007.tmp-1a2b", "ckpt-7-1-2",
                            "ckpt--1", "model-00000007"})
    BOOST_TEST(!id(other).has_value(), other);
}

// An experiment directory's owner marker: claimed once, then only its
// owner (token, id and creation time) may use or delete inside it.
BOOST_AUTO_TEST_CASE(an_owner_marker_admits_its_owner_only) {
  temp_dir dir;
  auto t1 = checkpoint::new_owner_token(), t2 = checkpoint::new_owner_token();
  BOOST_TEST_REQUIRE(t1.is_ok());
  BOOST_TEST_REQUIRE(t2.is_ok());
  BOOST_TEST(t1->size() == 32u);
  BOOST_TEST(*t1 != *t2);
  const std::string root = dir.file("ckpt/1-" + *t1);
  checkpoint::owner me{*t1, 1, checkpoint::created_text(1700000000.5), "/a/experiments.db", "mnist"};
  bool adopted = true;
  BOOST_REQUIRE(checkpoint::claim(root, me, &adopted).is_ok());
  BOOST_TEST(!adopted);
  BOOST_TEST(checkpoint::check_owner(root, me, "delete").is_ok());
  BOOST_TEST(checkpoint::read_owner(root)->store == "/a/experiments.db");
  // Another store's experiment 1: same token copied into its row, other time.
  checkpoint::owner other = me;
  other.created = checkpoint::created_text(1700000001);
  other.store = "/b/experiments.db";
  status refused = checkpoint::claim(root, other);
  BOOST_TEST(refused.code() == error_code::invalid_argument);
  BOOST_TEST(refused.message().find("belongs to experiment 1 (mnist) of the store /a/experiments.db") !=
                 std::string::npos,
             refused.message());
  std::filesystem::create_directories(root + "/00000/ckpt-1");
  BOOST_TEST(!checkpoint::remove_owned(root, other, root + "/00000").is_ok());
  BOOST_TEST(std::filesystem::exists(root + "/00000/ckpt-1"));
  BOOST_TEST(!checkpoint::remove_owned(root, me, dir.file("ckpt")).is_ok(), "outside the root");
  BOOST_TEST(std::filesystem::exists(root));
  BOOST_TEST(checkpoint::remove_owned(root, me, root + "/00000").is_ok());
  BOOST_TEST(!std::filesystem::exists(root + "/00000"));
  // An unmarked directory with files is adopted, and said to be.
  const std::string old = dir.file("ckpt/7");
  std::filesystem::create_directories(old + "/00000");
  BOOST_TEST(checkpoint::check_owner(old, me, "delete").code() == error_code::not_found);
  BOOST_REQUIRE(checkpoint::claim(old, me, &adopted).is_ok());
  BOOST_TEST(adopted);
}

BOOST_AUTO_TEST_SUITE_END()
