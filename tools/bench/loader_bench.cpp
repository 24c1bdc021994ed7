// The dtrain loader alone over the files tools/bench/data/prepare.py writes,
// the peer of tools/bench/data/torch_loader.py (issue 27):
//
//   dtrain-bench-loader DATADIR [--workers 2] [--nranks 1 2]
//       [--formats csv png npy shards] [--epochs 5] [--batch 128]
//       [--resume-trials 20] [--shard-mb 16]
//   dtrain-bench-loader --evict DIR   (drop DIR's files from the page cache)
//
// Every case reads the Fashion-MNIST train split (60,000 samples) as the
// peer does: csv = fmnist/train.csv through read_csv (784 raw 0..255
// floats, target column `label`); png = the fmnist/png/train tree through
// read_image_folder (1x28x28 in [0, 1], decoded in the loader's workers);
// npy = fmnist/train_{x,y}.npy through read_npy (memory-mapped, uint8 ->
// float on gather); shards = the CSV set packed once by write_shards into
// fmnist/shards-train (raw float32 records, --shard-mb per shard), read
// through open_shards with the sampler's block layout (the shard starts and
// the shuffle window an experiment gets by default: min(size, 65536)).
//
// N ranks are N threads of this process, each with its own loader (batch
// 128 per rank, W worker threads, prefetch 2 W batches: DataLoader's
// default prefetch_factor 2 per worker) over shard_sampler(num_ranks N,
// rank r, shuffle, seed 0). The peer's ranks are processes; a loader's
// workers are threads either way. As in the peer, every epoch starts all
// ranks at once (begin_epoch starts the workers, as a non-persistent
// DataLoader forks its workers, inside the timing) and lasts from the start
// to the last rank's end; samples/s = samples of all ranks / that time. An
// epoch must deliver the whole split (dtrain neither pads nor drops).
//
// Also printed: the time to open each source; "resume": the time from
// begin_epoch(e, a random step's position) to the first batch (median of
// --resume-trials, N=1); and for shards a cold epoch after each shard file
// is dropped from the page cache with posix_fadvise(POSIX_FADV_DONTNEED)
// (the set closed first, as a mapped page is not dropped; mincore() checks
// what stays resident) beside the warm figure.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_util.hpp"
#include "dtrain/data/loader.hpp"
#include "dtrain/datasets/csv.hpp"
#include "dtrain/datasets/image_folder.hpp"
#include "dtrain/datasets/npy.hpp"
#include "dtrain/datasets/shards.hpp"

namespace {

using namespace dtrain;
using clock_type = std::chrono::steady_clock;
using dataset_ptr = std::shared_ptr<const data::dataset>;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string load_average() {
  double l[3] = {0, 0, 0};
  if (getloadavg(l, 3) != 3)
    return "?";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f/%.1f/%.1f", l[0], l[1], l[2]);
  return buf;
}

[[noreturn]] void fail(const std::string& what, const status& error) {
  std::fprintf(stderr, "dtrain-bench-loader: %s: %s\n", what.c_str(), error.to_string().c_str());
  std::exit(1);
}

/// "60,000"-style thousands separators, as the peer's {:,.0f}.
std::string with_commas(double v) {
  std::string digits = std::to_string(static_cast<long long>(v + 0.5));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

// ------------------------------------------------------------ page cache
std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.')
        out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  return out;
}

/// Drops `path` from the page cache; the fraction of its pages still
/// resident afterwards (mincore on a fresh mapping), or -1 on failure.
double evict(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0)
    return -1;
  struct stat st {};
  double resident = -1;
  if (fstat(fd, &st) == 0 && st.st_size > 0 &&
      posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0) {
    void* p = mmap(nullptr, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      const long page = sysconf(_SC_PAGESIZE);
      std::vector<unsigned char> vec((st.st_size + page - 1) / page);
      if (mincore(p, st.st_size, vec.data()) == 0) {
        size_t in = 0;
        for (unsigned char v : vec)
          in += v & 1;
        resident = double(in) / double(vec.size());
      }
      munmap(p, st.st_size);
    }
  }
  ::close(fd);
  return resident;
}

/// Evicts every file of `dir`; the largest resident fraction left, or -1
/// when `dir` has no file or one could not be evicted.
double evict_dir(const std::string& dir) {
  const auto files = files_in(dir);
  double worst = files.empty() ? -1 : 0;
  for (const auto& f : files) {
    const double left = evict(f);
    if (left < 0)
      return -1;
    worst = std::max(worst, left);
  }
  return worst;
}

// --------------------------------------------------------------- sources
struct source {
  dataset_ptr data;
  std::string note;                    // how it was opened, and how long it took
  std::vector<int64_t> block_starts;   // shards: where each shard begins
  std::function<dataset_ptr()> reopen; // shards: a fresh open (cold epochs)
};

dataset_ptr open_shard_set(const std::string& dir) {
  auto r = data::open_shards(dir);
  if (!r)
    fail("open_shards " + dir, r.error());
  return *r;
}

source open_csv(const std::string& fm) {
  data::csv_options o;
  o.path = fm + "/train.csv";
  o.targets = {"label"};
  auto t0 = clock_type::now();
  auto r = data::read_csv(o);
  if (!r)
    fail("read_csv", r.error());
  char note[160];
  std::snprintf(note, sizeof note, "read_csv of train.csv (%lld x %lld features): %.2f s",
                (long long)(*r)->size(), (long long)(*r)->feature_count(), seconds_since(t0));
  return {*r, note, {}, nullptr};
}

source open_shards_from_csv(const std::string& fm, int shard_mb) {
  const std::string dir = fm + "/shards-train";
  char note[256];
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    source csv = open_csv(fm);
    data::shard_write_options w;
    w.dir = dir;
    w.shard_bytes = int64_t(shard_mb) << 20;
    auto t0 = clock_type::now();
    status s = data::write_shards(*csv.data, w);
    if (!s.is_ok())
      fail("write_shards " + dir, s);
    std::printf("dtrain shards: write_shards of the CSV set into %s (%d MiB shards): %.2f s\n",
                dir.c_str(), shard_mb, seconds_since(t0));
  }
  auto t0 = clock_type::now();
  dataset_ptr d = open_shard_set(dir);
  auto shards = std::dynamic_pointer_cast<const data::shard_dataset>(d);
  std::snprintf(note, sizeof note, "open_shards of %s (%zu shards): %.3f s", dir.c_str(),
                shards->shards().size(), seconds_since(t0));
  return {d, note, shards->shard_starts(), [dir] { return open_shard_set(dir); }};
}

source open_format(const std::string& fmt, const std::string& datadir, int shard_mb) {
  const std::string fm = datadir + "/fmnist";
  char note[200];
  auto t0 = clock_type::now();
  if (fmt == "csv")
    return open_csv(fm);
  if (fmt == "shards")
    return open_shards_from_csv(fm, shard_mb);
  result<dataset_ptr> r = invalid_argument("unknown format '" + fmt + "'");
  if (fmt == "png") {
    data::image_folder_options o;
    o.path = fm + "/png/train";
    o.channels = 1;
    r = data::read_image_folder(o);
  } else if (fmt == "npy") {
    data::npy_options o;
    o.features = fm + "/train_x.npy";
    o.targets = fm + "/train_y.npy";
    r = data::read_npy(o);
  }
  if (!r)
    fail("open " + fmt, r.error());
  std::snprintf(note, sizeof note, "%s opened (%lld samples, %lld features): %.3f s",
                fmt == "png" ? "read_image_folder of png/train" : "read_npy of train_x/y.npy",
                (long long)(*r)->size(), (long long)(*r)->feature_count(), seconds_since(t0));
  return {*r, note, {}, nullptr};
}

// ---------------------------------------------------------------- running
struct case_options {
  int nranks = 1, workers = 2;
  int64_t batch = 128;
  std::vector<int64_t> block_starts;
};

std::unique_ptr<data::loader> make_loader(const dataset_ptr& d, const case_options& c, int rank) {
  data::shard_options so;
  so.size = d->size();
  so.num_ranks = c.nranks;
  so.rank = rank;
  so.seed = 0;
  so.block_starts = c.block_starts;
  if (!c.block_starts.empty())
    so.window = std::min<int64_t>(d->size(), 65536);  // file_data's default
  auto sampler = data::shard_sampler::create(so);
  if (!sampler)
    fail("shard_sampler", sampler.error());
  data::loader_options lo;
  lo.batch_size = c.batch;
  lo.workers = c.workers;
  lo.prefetch = 2 * c.workers;
  auto l = data::loader::create(d, *sampler, lo);
  if (!l)
    fail("loader", l.error());
  return std::move(*l);
}

/// One epoch of all ranks, started together: (seconds, samples delivered).
std::pair<double, int64_t> run_epoch(std::vector<std::unique_ptr<data::loader>>& loaders,
                                     int64_t epoch) {
  std::atomic<bool> go{false};
  std::vector<int64_t> counts(loaders.size(), 0);
  std::vector<clock_type::time_point> ends(loaders.size());
  std::vector<std::thread> ranks;
  for (size_t r = 0; r < loaders.size(); ++r)
    ranks.emplace_back([&, r] {
      while (!go.load())
        std::this_thread::yield();
      loaders[r]->begin_epoch(epoch, 0);
      while (const data::batch* b = loaders[r]->next())
        counts[r] += b->size();
      ends[r] = clock_type::now();
    });
  auto t0 = clock_type::now();
  go = true;
  for (auto& t : ranks)
    t.join();
  for (auto& l : loaders)
    if (!l->error().is_ok())
      fail("epoch " + std::to_string(epoch), l->error());
  double secs = 0;
  int64_t total = 0;
  for (size_t r = 0; r < loaders.size(); ++r) {
    secs = std::max(secs, std::chrono::duration<double>(ends[r] - t0).count());
    total += counts[r];
  }
  return {secs, total};
}

/// `epochs` epochs; before each, `provide` gives the dataset (the same one,
/// or a fresh open after a cache drop). Prints the case's line.
void run_case(const std::string& label, const std::function<dataset_ptr()>& provide,
              const case_options& c, int epochs) {
  std::vector<double> rates, times;
  for (int e = 0; e < epochs; ++e) {
    dataset_ptr d = provide();
    std::vector<std::unique_ptr<data::loader>> loaders;
    for (int r = 0; r < c.nranks; ++r)
      loaders.push_back(make_loader(d, c, r));
    auto [secs, n] = run_epoch(loaders, e);
    if (n != d->size())
      fail(label, corrupt_data("epoch " + std::to_string(e) + " delivered " +
                               std::to_string(n) + " samples of " +
                               std::to_string(d->size())));
    rates.push_back(double(n) / secs);
    times.push_back(secs);
  }
  std::printf("%s N=%d workers=%d: %s samples/s (median of %d)\n    epoch s:", label.c_str(),
              c.nranks, c.workers, with_commas(bench::median(rates)).c_str(), epochs);
  for (double t : times)
    std::printf(" %.2f", t);
  std::printf("\n");
  std::fflush(stdout);
}

/// begin_epoch(e, a random step's position) to the first batch, N=1.
void run_resume(const std::string& fmt, const dataset_ptr& d, const case_options& c, int trials) {
  auto l = make_loader(d, c, 0);
  std::mt19937_64 gen(27);
  const int64_t steps = l->batches_per_epoch();
  std::vector<double> ms;
  for (int t = 0; t < trials; ++t) {
    const int64_t position = int64_t(gen() % uint64_t(steps)) * l->global_batch();
    auto t0 = clock_type::now();
    l->begin_epoch(t, position);
    const data::batch* b = l->next();
    ms.push_back(1e3 * seconds_since(t0));
    if (b == nullptr)
      fail(fmt + " resume at " + std::to_string(position), l->error());
  }
  std::printf("dtrain %s resume: %.2f ms to the first batch from begin_epoch(e, random step) "
              "(median of %d; max %.2f ms; goal < 50 ms)\n",
              fmt.c_str(), bench::median(ms), trials, *std::max_element(ms.begin(), ms.end()));
}

struct bench_args {
  std::string datadir, evict_dir;
  int workers = 2, epochs = 5, resume_trials = 20, shard_mb = 16;
  int64_t batch = 128;
  std::vector<int> nranks{1, 2};
  std::vector<std::string> formats{"csv", "png", "npy", "shards"};
};

void run_format(const std::string& fmt, const bench_args& a) {
  source s = open_format(fmt, a.datadir, a.shard_mb);
  std::printf("dtrain %s: %s\n", fmt.c_str(), s.note.c_str());
  std::fflush(stdout);
  case_options c;
  c.workers = a.workers;
  c.batch = a.batch;
  c.block_starts = s.block_starts;
  for (int n : a.nranks) {
    c.nranks = n;
    run_case("dtrain " + fmt, [&] { return s.data; }, c, a.epochs);
    if (!s.reopen)
      continue;
    const std::string dir = a.datadir + "/fmnist/shards-train";
    double resident = 0;
    auto cold = [&] {
      s.data.reset();  // unmaps: a mapped page stays in the cache
      const double left = evict_dir(dir);
      if (left < 0)
        fail("evict " + dir, io_error("posix_fadvise or mincore failed"));
      resident = std::max(resident, left);
      return s.data = s.reopen();
    };
    run_case("dtrain shards-cold", cold, c, a.epochs);
    std::printf("    cold: posix_fadvise(DONTNEED) on every shard file before each epoch; "
                "at most %.1f%% of a file still resident after it\n", 100 * resident);
  }
  c.nranks = 1;
  run_resume(fmt, s.data, c, a.resume_trials);
}

} // namespace

int main(int argc, char** argv) {
  bench_args a;
  CLI::App app{"The dtrain loader alone over prepare.py's files (peer: torch_loader.py)"};
  app.add_option("datadir", a.datadir, "prepare.py's OUTDIR");
  app.add_option("--workers", a.workers, "loader worker threads per rank");
  app.add_option("--nranks", a.nranks, "rank counts to run");
  app.add_option("--formats", a.formats, "csv png npy shards");
  app.add_option("--epochs", a.epochs, "epochs per case (the median is printed)");
  app.add_option("--batch", a.batch, "samples per rank per step");
  app.add_option("--resume-trials", a.resume_trials, "random resumes timed");
  app.add_option("--shard-mb", a.shard_mb, "shard size when packing fmnist/shards-train");
  app.add_option("--evict", a.evict_dir, "only drop DIR's files from the page cache");
  CLI11_PARSE(app, argc, argv);
  if (!a.evict_dir.empty()) {
    double left = evict_dir(a.evict_dir);
    std::printf("evicted %s: at most %.1f%% of a file still resident\n", a.evict_dir.c_str(),
                100 * left);
    return left < 0 ? 1 : 0;
  }
  if (a.datadir.empty() || a.workers < 1 || a.epochs < 1 || a.batch < 1) {
    std::fprintf(stderr, "usage: dtrain-bench-loader DATADIR [--workers W >= 1] ...\n");
    return 2;
  }
  std::printf("dtrain loader: %u CPUs, batch %lld, split train, load average %s\n",
              std::thread::hardware_concurrency(), (long long)a.batch, load_average().c_str());
  for (const auto& fmt : a.formats)
    run_format(fmt, a);
  std::printf("dtrain loader: done, load average %s\n", load_average().c_str());
  return 0;
}
