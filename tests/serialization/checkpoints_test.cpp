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
#include <random>

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

// Buffers without pieces are written as they always were (rank r of w:
// elements [count*r/w, count*(r+1)/w) of each, in one slice): the sizes
// and CRC-32s of shards of fixed values were recorded before pieces
// existed. Small chunks and a slice off the 8-byte grid cover the splitting.
BOOST_AUTO_TEST_CASE(shards_without_pieces_are_written_byte_for_byte_as_before) {
  temp_dir root;
  capnp_codec c(64);
  std::vector<float> params(1001), state(7);
  std::iota(params.begin(), params.end(), 0.5f);
  std::iota(state.begin(), state.end(), -3.0f);
  std::vector<std::pair<uint64_t, uint64_t>> got;
  for (int rank = 0; rank < 2; ++rank) {
    auto info = c.write_shard(root.path(), rank, 2,
                              {{"parameters", params.data(), 1001},
                               {"optimizer/exp_avg", state.data(), 7}});
    BOOST_REQUIRE_MESSAGE(info.is_ok(), info.error().to_string());
    BOOST_TEST_MESSAGE("rank " << rank << ": " << info->size << " bytes, CRC " << info->checksum);
    got.emplace_back(info->size, info->checksum);
  }
  const std::vector<std::pair<uint64_t, uint64_t>> before = {{3096, 2911199560u},
                                                              {3128, 2396038624u}};
  BOOST_TEST((got == before));
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

// ---- buffers held in pieces (ZeRO-sharded optimizer state) ---------------

namespace {

// Per-rank pieces of a 20-element buffer: rank 0 holds [0,3) and [10,14),
// rank 1 [3,10) and [14,20) (chunks of two buckets, as ZeRO deals them).
using layout = std::vector<std::vector<std::pair<int64_t, int64_t>>>;  // per rank: begin, end
const layout two_ranks = {{{0, 3}, {10, 14}}, {{3, 10}, {14, 20}}};

// A rank's pieces of `whole`, each in memory of its own: copies, so the
// codec can only find the values through the pieces' pointers. Each starts
// one float past an 8-byte boundary (unaligned, as a slice may be).
struct held_pieces {
  std::vector<std::vector<float>> memory;
  std::vector<ckpt::piece> pieces;

  held_pieces(const std::vector<float>& whole, const std::vector<std::pair<int64_t, int64_t>>& own) {
    for (const auto& [begin, end] : own) {
      auto& m = memory.emplace_back(1, 0.0f);
      m.insert(m.end(), whole.begin() + begin, whole.begin() + end);
    }
    for (size_t i = 0; i < own.size(); ++i)
      pieces.push_back({own[i].first, own[i].second - own[i].first, memory[i].data() + 1});
    if (pieces.empty())
      pieces.push_back({0, 0, nullptr});  // holds nothing of the buffer
  }
};

// Writes `whole` as `pieces` per rank (and "parameters" the old way next to it).
status write_pieces(ckpt::codec& c, const std::string& dir, const std::vector<float>& whole,
                    const layout& pieces, const std::vector<float>& params) {
  const int world = static_cast<int>(pieces.size());
  ckpt::manifest m;
  m.world_size = world;
  m.buffers = {{"parameters", static_cast<int64_t>(params.size())},
               {"optimizer/exp_avg", static_cast<int64_t>(whole.size())}};
  for (int rank = 0; rank < world; ++rank) {
    held_pieces held(whole, pieces[static_cast<size_t>(rank)]);
    ckpt::buffer_view state{"optimizer/exp_avg", nullptr, static_cast<int64_t>(whole.size())};
    state.pieces = held.pieces;
    auto info = c.write_shard(dir, rank, world,
                              {{"parameters", params.data(), static_cast<int64_t>(params.size())},
                               state});
    DTRAIN_RETURN_IF_ERROR(info.to_status());
    m.shards.push_back(*info);
  }
  return c.write_manifest(dir, m);
}

// Reads `name` (of `count` elements) of `dir` as `ranges` into pieces of
// their own (with a guard element after each) and compares with `whole`.
status expect_pieces(ckpt::codec& c, const std::string& dir, const std::string& name,
                     const std::vector<float>& whole,
                     const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  DTRAIN_ASSIGN_OR_RETURN(auto m, c.read_manifest(dir));
  std::vector<std::vector<float>> memory;
  ckpt::buffer_target target{name, nullptr, static_cast<int64_t>(whole.size())};
  for (const auto& [begin, end] : ranges)
    memory.emplace_back(static_cast<size_t>(end - begin) + 1, -1.0f);
  for (size_t i = 0; i < ranges.size(); ++i)
    target.pieces.push_back({ranges[i].first, ranges[i].second - ranges[i].first, memory[i].data()});
  if (ranges.empty())
    target.pieces.push_back({0, 0, nullptr});
  DTRAIN_RETURN_IF_ERROR(c.read_buffers(dir, m, {target}));
  for (size_t i = 0; i < ranges.size(); ++i) {
    const std::vector<float> want(whole.begin() + ranges[i].first, whole.begin() + ranges[i].second);
    const std::vector<float> got(memory[i].begin(), memory[i].end() - 1);
    DTRAIN_RETURN_IF_ERROR(expect(got == want && memory[i].back() == -1.0f,
                                  "piece at " + std::to_string(ranges[i].first) + " of '" + name +
                                      "' read back wrong"));
  }
  return status::ok();
}

} // namespace

BOOST_AUTO_TEST_CASE(pieces_written_by_2_ranks_read_back_whole) {
  temp_dir root;
  const auto whole = random_tensor({20}, 31).to_vector(), params = random_tensor({11}, 32).to_vector();
  for (size_t chunk : {capnp_codec::default_max_chunk_bytes, size_t{8}}) {
    capnp_codec c(chunk);  // 8 bytes: two floats a chunk, so pieces span chunks
    const std::string dir = root.file("c" + std::to_string(chunk));
    BOOST_REQUIRE(write_pieces(c, dir, whole, two_ranks, params).is_ok());
    auto m = c.read_manifest(dir);
    BOOST_REQUIRE(m.is_ok());
    BOOST_TEST((m->buffers[1] == std::pair<std::string, int64_t>{"optimizer/exp_avg", 20}));
    std::vector<float> got(20, -1.0f), got_params(11, -1.0f);
    const status s = c.read_buffers(dir, *m, {{"optimizer/exp_avg", got.data(), 20},
                                              {"parameters", got_params.data(), 11}});
    BOOST_REQUIRE_MESSAGE(s.is_ok(), s.to_string());
    BOOST_TEST(got == whole);
    BOOST_TEST(got_params == params);
  }
  // A rank that holds none of the buffer gives one empty piece.
  capnp_codec c;
  const layout idle_third = {{{0, 10}}, {{10, 20}}, {}};
  BOOST_REQUIRE(write_pieces(c, root.file("idle"), whole, idle_third, params).is_ok());
  const status s = expect_pieces(c, root.file("idle"), "optimizer/exp_avg", whole, {{0, 20}});
  BOOST_TEST(s.is_ok(), s.to_string());
}

BOOST_AUTO_TEST_CASE(pieces_read_back_as_the_pieces_of_another_layout) {
  temp_dir root;
  const auto whole = random_tensor({20}, 33).to_vector(), params = random_tensor({11}, 34).to_vector();
  capnp_codec c(8);
  BOOST_REQUIRE(write_pieces(c, root.path(), whole, two_ranks, params).is_ok());
  // Three ranks, buckets [0,9) and [9,20): chunks of 3 and of 4 elements,
  // each cutting across the pieces written and the chunks of their slices.
  const layout three_ranks = {{{0, 3}, {9, 13}}, {{3, 6}, {13, 17}}, {{6, 9}, {17, 20}}};
  for (size_t rank = 0; rank < three_ranks.size(); ++rank) {
    const status s = expect_pieces(c, root.path(), "optimizer/exp_avg", whole, three_ranks[rank]);
    BOOST_TEST(s.is_ok(), "rank " << rank << " of 3: " << s.to_string());
  }
  // A piece inside one slice, one over three slices of both shards, and
  // the parameters (written the old way) read as pieces.
  BOOST_TEST(expect_pieces(c, root.path(), "optimizer/exp_avg", whole, {{4, 6}}).is_ok());
  BOOST_TEST(expect_pieces(c, root.path(), "optimizer/exp_avg", whole, {{2, 15}}).is_ok());
  BOOST_TEST(expect_pieces(c, root.path(), "parameters", params, {{0, 1}, {4, 7}, {10, 11}}).is_ok());
  BOOST_TEST(expect_pieces(c, root.path(), "optimizer/exp_avg", whole, {}).is_ok());
}

BOOST_AUTO_TEST_CASE(whole_buffers_written_the_old_way_read_back_as_pieces) {
  temp_dir root;
  capnp_codec c(64);
  const auto state = model_state::make(35);
  const auto& params = state.buffers.at("parameters");
  BOOST_REQUIRE(write_checkpoint(c, root.path(), 3, state).is_ok());
  // Rank 0 of 3 writes [0,333), rank 1 [333,667), rank 2 [667,1001).
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 10}, {330, 700}, {990, 1001}};
  const status s = expect_pieces(c, root.path(), "parameters", params, ranges);
  BOOST_TEST(s.is_ok(), s.to_string());
  const status tiny = expect_pieces(c, root.path(), "tiny", state.buffers.at("tiny"), {{1, 2}});
  BOOST_TEST(tiny.is_ok(), tiny.to_string());
}

BOOST_AUTO_TEST_CASE(pieces_that_leave_a_gap_or_overlap_are_corrupt_data_naming_buffer_and_piece) {
  temp_dir root;
  capnp_codec c;
  const auto whole = random_tensor({20}, 36).to_vector(), params = random_tensor({4}, 37).to_vector();
  const layout gap = {{{0, 3}, {10, 14}}, {{3, 9}, {14, 20}}};      // 9 in no shard
  const layout overlap = {{{0, 3}, {10, 14}}, {{2, 10}, {14, 20}}};  // 2 in both
  const layout short_end = {{{0, 3}, {10, 14}}, {{3, 10}, {14, 19}}};  // 19 in none
  BOOST_REQUIRE(write_pieces(c, root.file("gap"), whole, gap, params).is_ok());
  BOOST_REQUIRE(write_pieces(c, root.file("overlap"), whole, overlap, params).is_ok());
  BOOST_REQUIRE(write_pieces(c, root.file("short"), whole, short_end, params).is_ok());
  auto whole_read = [&](const std::string& dir) {
    std::vector<float> into(20);
    return c.read_buffers(dir, *c.read_manifest(dir), {{"optimizer/exp_avg", into.data(), 20}});
  };
  check_error(whole_read(root.file("gap")), error_code::corrupt_data,
              "buffer 'optimizer/exp_avg': elements from 9 are in no shard");
  check_error(whole_read(root.file("overlap")), error_code::corrupt_data,
              "buffer 'optimizer/exp_avg': elements from 2 are in two shards");
  check_error(whole_read(root.file("short")), error_code::corrupt_data,
              "buffer 'optimizer/exp_avg': elements from 19 to 20 are in no shard");
  check_error(expect_pieces(c, root.file("gap"), "optimizer/exp_avg", whole, {{0, 2}, {8, 12}}),
              error_code::corrupt_data,
              "buffer 'optimizer/exp_avg' piece [8, 12): elements from 9 are in no shard");
  check_error(expect_pieces(c, root.file("overlap"), "optimizer/exp_avg", whole, {{1, 4}}),
              error_code::corrupt_data,
              "buffer 'optimizer/exp_avg' piece [1, 4): elements from 2 are in two shards");
  check_error(expect_pieces(c, root.file("short"), "optimizer/exp_avg", whole, {{15, 20}}),
              error_code::corrupt_data,
              "buffer 'optimizer/exp_avg' piece [15, 20): elements from 19 to 20 are in no shard");
  // Pieces clear of the damage read back: only what is read must be whole.
  BOOST_TEST(expect_pieces(c, root.file("gap"), "optimizer/exp_avg", whole, {{0, 9}}).is_ok());
}

BOOST_AUTO_TEST_CASE(pieces_out_of_range_overlapping_or_without_data_are_refused) {
  temp_dir root;
  capnp_codec c;
  std::vector<float> values(20, 1.0f);
  auto write = [&](std::vector<ckpt::piece> pieces) {
    ckpt::buffer_view b{"optimizer/exp_avg", nullptr, 20};
    b.pieces = std::move(pieces);
    return c.write_shard(root.path(), 0, 1, {b}).to_status();
  };
  const float* v = values.data();
  check_error(write({{15, 6, v}}), error_code::invalid_argument, "'optimizer/exp_avg': piece at 15");
  check_error(write({{-1, 2, v}}), error_code::invalid_argument, "'optimizer/exp_avg': piece at -1");
  check_error(write({{0, 2, nullptr}}), error_code::invalid_argument, "'optimizer/exp_avg'");
  check_error(write({{0, 5, v}, {4, 2, v}}), error_code::invalid_argument,
              "'optimizer/exp_avg': pieces overlap from element 4");
  BOOST_REQUIRE(write({{0, 20, v}}).is_ok());
  ckpt::manifest m;
  m.buffers = {{"optimizer/exp_avg", 20}};
  m.shards = {*c.write_shard(root.path(), 0, 1, {{"optimizer/exp_avg", v, 20}})};
  BOOST_REQUIRE(c.write_manifest(root.path(), m).is_ok());
  auto read = [&](std::vector<ckpt::target_piece> pieces) {
    ckpt::buffer_target t{"optimizer/exp_avg", nullptr, 20};
    t.pieces = std::move(pieces);
    return c.read_buffers(root.path(), m, {t});
  };
  check_error(read({{18, 3, values.data()}}), error_code::invalid_argument,
              "'optimizer/exp_avg': piece at 18");
  check_error(read({{0, 1, nullptr}}), error_code::invalid_argument, "'optimizer/exp_avg'");
  check_error(read({{3, 4, values.data()}, {0, 4, values.data() + 8}}),
              error_code::invalid_argument, "'optimizer/exp_avg': pieces overlap from element 3");
}

// [0, count) cut at random into runs of 1 to 40 elements dealt to `world`
// ranks at random (a rank may get none): ZeRO's buckets and chunks, and
// layouts stranger than those.
static layout random_layout(std::mt19937& rng, int64_t count, int world) {
  layout out(static_cast<size_t>(world));
  for (int64_t begin = 0; begin < count;) {
    const int64_t end = std::min<int64_t>(count, begin + 1 + rng() % 40);
    out[rng() % out.size()].push_back({begin, end});
    begin = end;
  }
  return out;
}

BOOST_AUTO_TEST_CASE(random_piece_layouts_read_back_in_any_other_layout) {
  temp_dir root;
  std::mt19937 rng(2029);
  const std::vector<size_t> chunks = {8, 24, 64, 4096};
  for (int round = 0; round < 40; ++round) {
    const int64_t count = 1 + rng() % 300, params = 1 + rng() % 50;
    const auto whole = random_tensor({count}, 100 + round).to_vector();
    const int written_by = 1 + rng() % 4, read_by = 1 + rng() % 4;
    capnp_codec c(chunks[rng() % chunks.size()]);
    const std::string dir = root.file("r" + std::to_string(round));
    BOOST_REQUIRE(write_pieces(c, dir, whole, random_layout(rng, count, written_by),
                               random_tensor({params}, 500 + round).to_vector())
                      .is_ok());
    for (const auto& own : random_layout(rng, count, read_by)) {
      const status s = expect_pieces(c, dir, "optimizer/exp_avg", whole, own);
      BOOST_TEST(s.is_ok(), "round " << round << ": " << s.to_string());
    }
    std::vector<float> got(static_cast<size_t>(count));
    const status s = c.read_buffers(dir, *c.read_manifest(dir),
                                    {{"optimizer/exp_avg", got.data(), count}});
    BOOST_TEST((s.is_ok() && got == whole), "round " << round << ": " << s.to_string());
  }
}

// Overwrites the first copy of `value`'s bytes in the file at `path`.
static void damage_value(const std::string& path, float value) {
  std::string bytes = read_file(path);
  const std::string pattern(reinterpret_cast<const char*>(&value), sizeof value);
  const size_t at = bytes.find(pattern);
  BOOST_REQUIRE(at != std::string::npos);
  bytes[at] ^= 0x01;
  write_file(path, bytes);
}

BOOST_AUTO_TEST_CASE(restoring_pieces_reads_only_the_shards_that_hold_them_and_verifies_those) {
  temp_dir root;
  capnp_codec c;
  const auto whole = random_tensor({20}, 38).to_vector();
  // Optimizer state alone: shard 1 holds [3,10) and [14,20) only.
  ckpt::manifest m;
  m.world_size = 2;
  m.buffers = {{"optimizer/exp_avg", 20}};
  for (int rank = 0; rank < 2; ++rank) {
    held_pieces held(whole, two_ranks[static_cast<size_t>(rank)]);
    ckpt::buffer_view b{"optimizer/exp_avg", nullptr, 20};
    b.pieces = held.pieces;
    m.shards.push_back(*c.write_shard(root.path(), rank, 2, {b}));
  }
  BOOST_REQUIRE(c.write_manifest(root.path(), m).is_ok());
  const std::string shard1 = root.file("shard-1-of-2.capnp");
  damage_value(shard1, whole[5]);
  BOOST_REQUIRE(!c.verify_shard(root.path(), m.shards[1]).is_ok());
  // Rank 0's own pieces come from shard 0 alone: the damage is not met.
  const status own = expect_pieces(c, root.path(), "optimizer/exp_avg", whole, {{0, 3}, {10, 14}});
  BOOST_TEST(own.is_ok(), own.to_string());
  // A piece reaching into shard 1 reads it, so its checksum is checked.
  check_error(expect_pieces(c, root.path(), "optimizer/exp_avg", whole, {{0, 4}}),
              error_code::corrupt_data, shard1);
  std::vector<float> into(20);
  check_error(c.read_buffers(root.path(), m, {{"optimizer/exp_avg", into.data(), 20}}),
              error_code::corrupt_data, shard1);
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
