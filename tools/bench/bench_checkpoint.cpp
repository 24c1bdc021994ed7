// Benchmark: save and restore of a 1 GiB model (parameters only,
// 268,435,456 floats) as a sharded Cap'n Proto checkpoint written by 2
// ranks (threads, each writing its half in parallel, then the chief's
// manifest), against the same disk's raw bandwidth measured in the same
// invocation: a sequential write + fsync of 1 GiB, and a read of a 1 GiB
// file that is not in the page cache (posix_fadvise DONTNEED after fsync).
// Restores also start from cold files, and fill pre-faulted buffers (as a
// replica's model is). Every write starts from a quiet disk (sync and a
// pause first). Writes go out in 8 MiB calls, as the codec's do; a raw
// write of two half files in parallel is shown too, since the save writes
// its two shards in parallel. Medians of 3.
//
//   build/bin/dtrain-bench-checkpoint [--floats N] [--dir /tmp] [--repeats 3]
//
// Without 3 GiB free under --dir the model shrinks to a quarter of the
// free space, and the program says so.
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "dtrain/checkpoint/checkpoint.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"

using namespace dtrain;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

using dtrain::bench::median;

namespace {

constexpr size_t io_piece = size_t{8} << 20;  // what the codec writes per call
constexpr double gib = 1024.0 * 1024.0 * 1024.0;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

void die(const status& s) {
  if (!s.is_ok()) {
    std::fprintf(stderr, "dtrain-bench-checkpoint: %s\n", s.to_string().c_str());
    std::exit(1);
  }
}

// Evicts a file's (clean) pages from the page cache.
void drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

void drop_cache_tree(const std::string& dir) {
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      drop_cache(e.path().string());
}

// Raw sequential write + fsync of `bytes` from `data`; seconds.
double raw_write(const std::string& path, const char* data, size_t bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  DTRAIN_CHECK(fd >= 0, "cannot create the raw file");
  const auto start = clock_type::now();
  for (size_t at = 0; at < bytes;) {
    const ssize_t n = ::write(fd, data + at, std::min(io_piece, bytes - at));
    DTRAIN_CHECK(n > 0, "raw write failed");
    at += static_cast<size_t>(n);
  }
  DTRAIN_CHECK(::fsync(fd) == 0, "raw fsync failed");
  const double s = seconds_since(start);
  ::close(fd);
  return s;
}

// Two raw files of half the bytes each, written and fsynced in parallel.
double raw_write_2(const std::string& path, const char* data, size_t bytes) {
  const auto start = clock_type::now();
  std::thread other([&] { raw_write(path + ".1", data + bytes / 2, bytes - bytes / 2); });
  raw_write(path + ".0", data, bytes / 2);
  other.join();
  const double s = seconds_since(start);
  fs::remove(path + ".0");
  fs::remove(path + ".1");
  return s;
}

// Lets writeback and deferred work (ext4 discards of deleted files) of the
// previous step finish, so that each timed step starts from a quiet disk.
void settle() {
  ::sync();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
}

// Raw sequential read of a cold file into `into`; seconds.
double raw_read(const std::string& path, char* into, size_t bytes) {
  drop_cache(path);
  const auto start = clock_type::now();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DTRAIN_CHECK(fd >= 0, "cannot open the raw file");
  for (size_t at = 0; at < bytes;) {
    const ssize_t n = ::read(fd, into + at, std::min(io_piece, bytes - at));
    DTRAIN_CHECK(n > 0, "raw read failed");
    at += static_cast<size_t>(n);
  }
  ::close(fd);
  return seconds_since(start);
}

// Runs body(rank) on `n` threads at once.
void on_threads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back(body, r);
  for (auto& t : threads)
    t.join();
}

// A 2-rank save: both shards in parallel, then the manifest; seconds.
double save(checkpoint::codec& c, const std::string& dir, const float* model, int64_t count) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  const auto start = clock_type::now();
  std::vector<result<checkpoint::shard_info>> shards(2, status(error_code::internal, "not run"));
  on_threads(2, [&](int rank) {
    shards[static_cast<size_t>(rank)] = c.write_shard(dir, rank, 2, {{"parameters", model, count}});
  });
  checkpoint::manifest m;
  m.trial = "bench";
  m.world_size = 2;
  m.buffers = {{"parameters", count}};
  for (auto& s : shards) {
    die(s.to_status());
    m.shards.push_back(*s);
  }
  die(c.write_manifest(dir, m));
  return seconds_since(start);
}

// `ranks` replicas restoring the whole model at once from cold files.
double restore(checkpoint::codec& c, const std::string& dir, std::vector<std::vector<float>>& into,
               int ranks) {
  for (int r = 0; r < ranks; ++r)  // so that a restore that does nothing shows
    std::fill(into[static_cast<size_t>(r)].begin(), into[static_cast<size_t>(r)].end(), -1.0f);
  drop_cache_tree(dir);
  const auto start = clock_type::now();
  std::vector<status> outcomes(static_cast<size_t>(ranks));
  on_threads(ranks, [&](int rank) {
    auto& target = into[static_cast<size_t>(rank)];
    auto m = c.read_manifest(dir);
    outcomes[static_cast<size_t>(rank)] =
        m.is_ok() ? c.read_buffers(dir, *m, {{"parameters", target.data(),
                                              static_cast<int64_t>(target.size())}})
                  : m.error();
  });
  const double s = seconds_since(start);
  for (auto& o : outcomes)
    die(o);
  return s;
}

struct row {
  std::string name;
  std::vector<double> seconds;
};

// The measurements, in the order of the table.
enum : size_t { raw_write_1, raw_write_par, raw_read_1, save_2, restore_1, restore_2, row_count };

// One invocation's model, buffers and files.
struct bench_state {
  std::vector<float> model;
  std::vector<std::vector<float>> into;  // two replicas' (pre-faulted) buffers
  std::string raw, ckpt;
  serialization::capnp_codec codec;
  std::vector<row> rows{{"raw write + fsync (1 file)", {}},
                        {"raw write + fsync (2 half files in parallel)", {}},
                        {"raw read, cold (1 file)", {}},
                        {"save: 2 ranks' shards in parallel + manifest", {}},
                        {"restore: 1 replica reads both shards", {}},
                        {"restore: 2 replicas read both shards at once", {}}};

  size_t bytes() const { return model.size() * sizeof(float); }

  void raw_steps() {
    const char* data = reinterpret_cast<const char*>(model.data());
    settle();
    rows[raw_write_1].seconds.push_back(raw_write(raw, data, bytes()));
    rows[raw_read_1].seconds.push_back(
        raw_read(raw, reinterpret_cast<char*>(into[0].data()), bytes()));
    fs::remove(raw);
    settle();
    rows[raw_write_par].seconds.push_back(raw_write_2(raw, data, bytes()));
  }

  void checkpoint_steps() {
    settle();
    const auto count = static_cast<int64_t>(model.size());
    rows[save_2].seconds.push_back(save(codec, ckpt, model.data(), count));
    rows[restore_1].seconds.push_back(restore(codec, ckpt, into, 1));
    DTRAIN_CHECK(into[0] == model, "restored bytes differ");
    rows[restore_2].seconds.push_back(restore(codec, ckpt, into, 2));
    DTRAIN_CHECK(into[1] == model, "restored bytes differ");
    fs::remove_all(ckpt);
  }

  void run(int repeats) {
    for (int rep = 0; rep < repeats; ++rep) {
      // Alternating which goes first spreads the disk's drift over both.
      if (rep % 2 == 0) {
        raw_steps();
        checkpoint_steps();
      } else {
        checkpoint_steps();
        raw_steps();
      }
      std::printf("repeat %d done\n", rep + 1);
      std::fflush(stdout);
    }
  }

  void report(int repeats) const {
    std::printf("\nmodel: %zu floats (%.2f GiB), 2 shards, medians of %d\n", model.size(),
                static_cast<double>(bytes()) / gib, repeats);
    std::printf("\n%-46s %10s %9s   %s\n", "operation", "median s", "GiB/s", "every run (s)");
    for (auto& r : rows) {
      std::printf("%-46s %10.3f %9.2f  ", r.name.c_str(), median(r.seconds),
                  static_cast<double>(bytes()) / gib / median(r.seconds));
      for (double s : r.seconds)
        std::printf(" %.3f", s);
      std::printf("\n");
    }
    auto pct = [&](size_t raw_row, size_t ours) {
      return 100 * median(rows[raw_row].seconds) / median(rows[ours].seconds);
    };
    std::printf("\nsave against 2 raw half files written in parallel: %.0f%%\n",
                pct(raw_write_par, save_2));
    std::printf("restore by 2 replicas at once: %.0f%% of raw read (each reads the whole model)\n",
                pct(raw_read_1, restore_2));
    std::printf("summary: save at %.0f%% of raw write, restore at %.0f%% of raw read "
                "(goal >= 70%%)\n", pct(raw_write_1, save_2), pct(raw_read_1, restore_1));
  }
};

// The model size that fits under `base`: 3 model sizes must be free.
int64_t fitting_floats(const std::string& base, int64_t floats) {
  struct statvfs vfs {};
  DTRAIN_CHECK(::statvfs(base.c_str(), &vfs) == 0, "cannot statvfs --dir");
  const double free_bytes = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
  std::printf("free space under %s: %.1f GiB\n", base.c_str(), free_bytes / gib);
  if (free_bytes >= 3 * gib)
    return floats;
  floats = std::min<int64_t>(floats, static_cast<int64_t>(free_bytes / 4 / sizeof(float)));
  std::printf("NOTE: under 3 GiB free: the model shrinks to %lld floats\n",
              static_cast<long long>(floats));
  return floats;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain checkpoint save/restore against raw disk bandwidth"};
  int64_t floats = 268435456;
  std::string base = "/tmp";
  int repeats = 3;
  app.add_option("--floats", floats, "model size in floats (1 GiB by default)");
  app.add_option("--dir", base, "where the temporary files go");
  app.add_option("--repeats", repeats, "repetitions; medians are reported");
  CLI11_PARSE(app, argc, argv);

  floats = fitting_floats(base, floats);
  std::string dir = base + "/dtrain-bench-ckpt-XXXXXX";
  DTRAIN_CHECK(::mkdtemp(dir.data()) != nullptr, "mkdtemp failed");
  bench_state b;
  b.model.resize(static_cast<size_t>(floats));
  for (size_t i = 0; i < b.model.size(); ++i)
    b.model[i] = static_cast<float>(i % 1000003) * 0.001f;
  b.into.assign(2, std::vector<float>(b.model.size(), -1.0f));
  b.raw = dir + "/raw.bin";
  b.ckpt = dir + "/ckpt";
  b.run(repeats);
  std::error_code ec;
  fs::remove_all(dir, ec);
  b.report(repeats);
  return 0;
}
