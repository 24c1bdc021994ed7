#include "dtrain/comm/shm.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <functional>
#include <cstring>
#include <random>
#include <thread>

#include "dtrain/core/check.hpp"

namespace dtrain::comm {

namespace {

constexpr uint64_t segment_magic = 0x31686d736e727464ULL;  // "dtrnshm1"
constexpr int max_ranks = 256;
using clock_type = std::chrono::steady_clock;

struct alignas(64) rank_state {
  std::atomic<uint64_t> arrived;  // barriers this rank has entered
  std::atomic<int32_t> pid;
};

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, clock_type::duration limit) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(limit).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

constexpr const char* shm_dir = "/dev/shm";  // where glibc's shm_open puts segments
constexpr int64_t max_slot_floats = int64_t{1} << 28;  // 1 GiB slots

std::string unique_segment_name(const std::string& prefix) {
  std::random_device rd;
  return "/" + prefix + "-" + std::to_string(getpid()) + "-" + std::to_string(rd()) +
         std::to_string(rd());
}

// Segments "<prefix>-<pid>-..." whose creating process is gone: it died
// between creating the segment and the moment every rank had mapped it
// (when the name is unlinked), e.g. a node killed during a group's
// rendezvous. Nothing else can ever use them; they only hold memory.
void remove_orphaned_segments(const std::string& prefix) {
  DIR* dir = opendir(shm_dir);
  if (dir == nullptr)
    return;
  const std::string lead = prefix + "-";
  while (dirent* e = readdir(dir)) {
    const std::string entry = e->d_name;
    if (entry.rfind(lead, 0) != 0)
      continue;
    char* end = nullptr;
    long pid = std::strtol(entry.c_str() + lead.size(), &end, 10);
    if (pid > 0 && *end == '-' && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      shm_unlink(("/" + entry).c_str());
  }
  closedir(dir);
}

result<uint64_t> free_bytes_in(const char* dir) {
  struct statvfs fs {};
  if (statvfs(dir, &fs) != 0)
    return io_error(std::string("statvfs(") + dir + "): " + std::strerror(errno));
  return static_cast<uint64_t>(fs.f_bavail) * static_cast<uint64_t>(fs.f_frsize);
}

// Allocates the pages of [0, bytes) now. False when they do not fit;
// true also where the file system cannot reserve (nothing better to do).
bool reserve(int fd, size_t bytes) {
  int rc;
  do {
    rc = fallocate(fd, 0, 0, static_cast<off_t>(bytes));
  } while (rc != 0 && errno == EINTR);
  return rc == 0 || errno == EOPNOTSUPP || errno == ENOSYS;
}

std::string os_error(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

// [begin, end) of part `j` when n values are split `parts` ways.
int64_t part_begin(int64_t n, int parts, int j) { return n * j / parts; }

} // namespace

struct shm_communicator::header {
  uint64_t magic;
  int32_t size;
  int64_t slot_floats;
  alignas(64) std::atomic<uint32_t> futex;
  rank_state ranks[max_ranks];
};

namespace {
constexpr size_t data_offset = (sizeof(shm_communicator::header) + 4095) / 4096 * 4096;
} // namespace

shm_communicator::shm_communicator(int rank, int size, milliseconds timeout,
                                   shm_options options)
  : queued_communicator(rank, size, timeout),
    options_(std::move(options)),
    slot_floats_(options_.slot_floats) {}

shm_communicator::~shm_communicator() {
  shutdown();
  if (base_ != nullptr)
    munmap(base_, bytes_);
}

result<std::unique_ptr<shm_communicator>> shm_communicator::create(
    int rank, int size, std::shared_ptr<rendezvous::store> store, milliseconds timeout,
    shm_options options) {
  if (size < 1 || size > max_ranks || rank < 0 || rank >= size)
    return invalid_argument("shm communicator: rank " + std::to_string(rank) + " of " +
                            std::to_string(size) + " (at most " +
                            std::to_string(max_ranks) + " ranks per host)");
  options.min_slot_floats = std::max<int64_t>(options.min_slot_floats, size);
  if (options.slot_floats < options.min_slot_floats || options.slot_floats > max_slot_floats)
    return invalid_argument("shm communicator: slot_floats " +
                            std::to_string(options.slot_floats) + " must lie in [" +
                            std::to_string(options.min_slot_floats) +
                            " (min_slot_floats, at least the group size), " +
                            std::to_string(max_slot_floats) + "]");
  if (!options.free_space)
    options.free_space = [] { return free_bytes_in(shm_dir); };
  std::unique_ptr<shm_communicator> c(new shm_communicator(rank, size, timeout, std::move(options)));
  c->store_ = store;
  DTRAIN_RETURN_IF_ERROR(c->attach(*store, timeout));
  return c;
}

size_t shm_communicator::segment_bytes(int64_t slot_floats) const {
  return data_offset + 2 * static_cast<size_t>(size() + 1) * static_cast<size_t>(slot_floats) *
                           sizeof(float);
}

result<int> shm_communicator::create_segment(const std::string& name) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    return io_error(os_error("shm_open(" + name + ")"));
  // Unknown free space (statvfs failed): try every size, fallocate decides.
  auto free_space = options_.free_space();
  const uint64_t available = free_space ? *free_space : UINT64_MAX;
  for (int64_t slot = options_.slot_floats;; slot = std::max(slot / 2, options_.min_slot_floats)) {
    const size_t need = segment_bytes(slot);
    // Reserve the pages now: tmpfs refuses with ENOSPC here rather than
    // raising SIGBUS at the first touch of a page that does not fit.
    if (need <= available && ftruncate(fd, static_cast<off_t>(need)) == 0 &&
        reserve(fd, need)) {
      slot_floats_ = slot;
      bytes_ = need;
      return fd;
    }
    if (slot == options_.min_slot_floats)
      break;
  }
  close(fd);
  shm_unlink(name.c_str());
  const size_t least = segment_bytes(options_.min_slot_floats);
  return io_error("shm communicator: " + std::string(shm_dir) + " is too small for a group of " +
                  std::to_string(size()) + " ranks: it needs at least " + std::to_string(least) +
                  " bytes (slots of " + std::to_string(options_.min_slot_floats * 4 / 1024) +
                  " KiB), " + std::string(shm_dir) + " has " +
                  (free_space ? std::to_string(available) + " bytes free"
                              : "an unknown amount free (" + free_space.error().message() + ")") +
                  "; enlarge it (docker run --shm-size=1g) or use backend gloo");
}

result<int> shm_communicator::open_segment(const std::string& name) {
  const std::string who = "shm rendezvous on rank " + std::to_string(rank());
  int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0)
    return io_error(os_error(who + ": shm_open(" + name + ")"));
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(data_offset)) {
    close(fd);
    return invalid_argument(who + ": segment " + name + " is not a dtrain segment");
  }
  bytes_ = static_cast<size_t>(st.st_size);
  return fd;
}

status shm_communicator::attach(rendezvous::store& s, milliseconds timeout) {
  auto deadline = clock_type::now() + timeout;
  std::string name;
  result<int> fd = -1;
  if (rank() == 0) {
    remove_orphaned_segments(options_.name_prefix);
    name = unique_segment_name(options_.name_prefix);
    fd = create_segment(name);
    // Names start with '/'; "!why" tells the others at once that it failed.
    if (!fd) {
      (void)s.set("shm/name", to_bytes("!" + fd.error().message()));
      return fd.error();
    }
  } else {
    auto published = s.get("shm/name", timeout);
    if (!published)
      return published.error().with_context("shm rendezvous on rank " + std::to_string(rank()) +
                                            ": waiting for rank 0 to publish the segment");
    name = comm::to_string(*published);
    if (!name.empty() && name[0] == '!')
      return io_error("shm rendezvous on rank " + std::to_string(rank()) +
                      ": rank 0 could not create the segment: " + name.substr(1));
    fd = open_segment(name);
    if (!fd)
      return fd.error();
  }
  // MAP_POPULATE: fault every page in now, not during the first collective.
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, *fd, 0);
  close(*fd);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    if (rank() == 0)
      shm_unlink(name.c_str());
    return io_error(os_error("mmap of " + std::to_string(bytes_) + " bytes of " + name));
  }
  header_ = static_cast<header*>(base_);
  if (rank() == 0) {
    header_->size = size();
    header_->slot_floats = slot_floats_;
    header_->magic = segment_magic;  // the segment is zero-filled by ftruncate
    if (status published = s.set("shm/name", to_bytes(name)); !published) {
      shm_unlink(name.c_str());  // nobody will map it: the group is being torn down
      return published;
    }
  } else {
    slot_floats_ = header_->slot_floats;  // rank 0's choice
    if (header_->magic != segment_magic || header_->size != size() || slot_floats_ < size() ||
        bytes_ != segment_bytes(slot_floats_))
      return invalid_argument("shm rendezvous on rank " + std::to_string(rank()) + ": segment " +
                              name + " belongs to a different group (size " +
                              std::to_string(header_->size) + ")");
  }
  header_->ranks[rank()].pid.store(static_cast<int32_t>(getpid()));
  // Every rank maps, then meets the others; only then may the name go.
  status met = barrier_wait(nullptr, deadline);
  if (rank() == 0)
    shm_unlink(name.c_str());
  return met;
}

float* shm_communicator::slot(int half, int r) const {
  auto* data = reinterpret_cast<float*>(static_cast<char*>(base_) + data_offset);
  return data + (static_cast<int64_t>(half) * (size() + 1) + r) * slot_floats_;
}

float* shm_communicator::result_area(int half) const { return slot(half, size()); }

void shm_communicator::interrupt() {
  interrupted_.store(true);
  if (header_ != nullptr)
    futex_wake_all(&header_->futex);
}

status shm_communicator::barrier_wait(const request* r, clock_type::time_point deadline) {
  const uint64_t seq = ++barriers_;
  header_->ranks[rank()].arrived.store(seq, std::memory_order_release);
  header_->futex.fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(&header_->futex);
  auto what = [&] { return r != nullptr ? describe(*r) : "shm rendezvous on rank " + std::to_string(rank()); };
  auto missing = [&] {
    std::vector<int> out;
    for (int q = 0; q < size(); ++q)
      if (header_->ranks[q].arrived.load(std::memory_order_acquire) < seq)
        out.push_back(q);
    return out;
  };
  auto last_liveness = clock_type::now();
  for (int spins = 0;; ++spins) {
    uint32_t observed = header_->futex.load(std::memory_order_acquire);
    std::vector<int> late = missing();
    if (late.empty())
      return status::ok();
    if (interrupted_.load())
      return status(error_code::aborted, what() + ": aborted while waiting for rank " +
                                             std::to_string(late.front()));
    auto now = clock_type::now();
    if (now >= deadline) {
      std::string names;
      for (int q : late)
        names += (names.empty() ? "" : ", ") + std::to_string(q);
      return status(error_code::timeout, what() + ": timed out after " +
                                             std::to_string(timeout().count()) +
                                             " ms waiting for rank " + names);
    }
    if (now - last_liveness > milliseconds(50)) {
      last_liveness = now;
      for (int q : late) {
        int32_t pid = header_->ranks[q].pid.load();
        if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
          return status(error_code::aborted, what() + ": rank " + std::to_string(q) +
                                                 " (pid " + std::to_string(pid) + ") died");
      }
    }
    if (spins < 100) {
      cpu_relax();
      continue;
    }
    futex_wait(&header_->futex, observed, std::min<clock_type::duration>(deadline - now,
                                                                        milliseconds(20)));
  }
}

namespace {

// One element of a reduction.
template <reduce_op Op>
inline float combine(float a, float b) {
  if constexpr (Op == reduce_op::min)
    return std::min(a, b);
  else if constexpr (Op == reduce_op::max)
    return std::max(a, b);
  else
    return a + b;
}

// acc = acc (op) x.
template <reduce_op Op>
void reduce_into(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    acc[i] = combine<Op>(acc[i], x[i]);
}

// The last pass of a reduction: v = a (op) b (a alone when b is null),
// times `scale` for an average; written to out, and to also when not null.
// Each element is read before it is written, so out or also may be a or b.
template <reduce_op Op>
void reduce_last(float* out, float* also, const float* a, const float* b, int64_t n, float scale) {
  for (int64_t i = 0; i < n; ++i) {
    float v = b != nullptr ? combine<Op>(a[i], b[i]) : a[i];
    if constexpr (Op == reduce_op::average)
      v *= scale;
    out[i] = v;
    if (also != nullptr)
      also[i] = v;
  }
}

// out = reduction over q of part(q), in rank order; an average is the sum
// times 1 / size. The last pass also writes `also` when it is not null, so
// a rank's own copy of its result costs no pass of its own.
template <reduce_op Op>
void reduce_parts_as(float* out, float* also, int size, int64_t n,
                     const std::function<const float*(int)>& part) {
  const float scale = 1.0f / static_cast<float>(size);
  if (size <= 2) {
    reduce_last<Op>(out, also, part(0), size == 2 ? part(1) : nullptr, n, scale);
    return;
  }
  constexpr reduce_op sum_first = Op == reduce_op::average ? reduce_op::sum : Op;
  reduce_last<sum_first>(out, nullptr, part(0), part(1), n, 1.0f);
  for (int q = 2; q + 1 < size; ++q)
    reduce_into<Op>(out, part(q), n);
  reduce_last<Op>(out, also, out, part(size - 1), n, scale);
}

void reduce_parts(float* out, float* also, int size, int64_t n, reduce_op op,
                  const std::function<const float*(int)>& part) {
  switch (op) {
    case reduce_op::sum: return reduce_parts_as<reduce_op::sum>(out, also, size, n, part);
    case reduce_op::average: return reduce_parts_as<reduce_op::average>(out, also, size, n, part);
    case reduce_op::min: return reduce_parts_as<reduce_op::min>(out, also, size, n, part);
    case reduce_op::max: return reduce_parts_as<reduce_op::max>(out, also, size, n, part);
  }
}

void copy_floats(float* dst, const float* src, int64_t n) {
  if (n > 0)
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

} // namespace

status shm_communicator::run(const request& r) {
  switch (r.kind) {
    case op_kind::all_reduce: return run_all_reduce(r);
    case op_kind::broadcast: return run_broadcast(r);
    case op_kind::all_gather: return run_gather(r, true);
    case op_kind::gather: return run_gather(r, false);
    case op_kind::reduce_scatter: return run_reduce_scatter(r);
    case op_kind::barrier: return barrier_wait(&r, r.deadline);
  }
  return status(error_code::internal, "unknown operation");
}

struct shm_communicator::shared_region {
  std::shared_ptr<void> mapping;
  size_t stride = 0;  // bytes from one rank's buffer to the next
  int64_t count = 0;  // floats in each
  float* of(int rank) const {
    return reinterpret_cast<float*>(static_cast<char*>(mapping.get()) + stride * static_cast<size_t>(rank));
  }
};

result<tensor> shm_communicator::shared_buffer(int64_t count) {
  if (count < 0)
    return invalid_argument("shared_buffer: negative count " + std::to_string(count));
  if (size() == 1 || count == 0)
    return communicator::shared_buffer(count);
  const std::string key = "shm/shared/" + std::to_string(shared_calls_++);
  const std::string who = "shm shared buffer on rank " + std::to_string(rank());
  const size_t stride = (static_cast<size_t>(count) * sizeof(float) + 4095) / 4096 * 4096;
  const size_t bytes = stride * static_cast<size_t>(size());
  std::string name, failed;
  int fd = -1;
  if (rank() == 0) {
    name = unique_segment_name(options_.name_prefix);
    auto free_space = options_.free_space();
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
      failed = os_error("shm_open(" + name + ")");
    } else if ((free_space && *free_space < bytes) || ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
               !reserve(fd, bytes)) {
      failed = std::string(shm_dir) + " has no room for " + std::to_string(bytes) + " bytes";
      close(fd);
      fd = -1;
      shm_unlink(name.c_str());
    }
    DTRAIN_RETURN_IF_ERROR(store_->set(key, to_bytes(failed.empty() ? name : "!" + failed)));
  } else {
    auto published = store_->get(key, timeout());
    if (!published)
      return published.error().with_context(who + ": waiting for rank 0 to publish the segment");
    name = comm::to_string(*published);
    if (!name.empty() && name[0] == '!') {
      failed = name.substr(1);
    } else {
      fd = shm_open(name.c_str(), O_RDWR, 0600);
      if (fd < 0)
        failed = os_error("shm_open(" + name + ")");
    }
  }
  void* base = nullptr;
  if (fd >= 0) {
    base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
      base = nullptr;
      failed = os_error("mmap of " + std::to_string(bytes) + " bytes of " + name);
    }
  }
  std::shared_ptr<void> mapping;
  if (base != nullptr)
    mapping = std::shared_ptr<void>(base, [bytes](void* p) { munmap(p, bytes); });
  // Every rank says whether it mapped: all use the segment, or none does.
  DTRAIN_RETURN_IF_ERROR(store_->set(key + "/" + std::to_string(rank()), to_bytes(mapping ? "1" : "0")));
  bool everyone = true;
  for (int q = 0; q < size(); ++q) {
    auto answer = store_->get(key + "/" + std::to_string(q), timeout());
    if (!answer) {
      if (rank() == 0 && failed.empty())
        shm_unlink(name.c_str());
      return answer.error().with_context(who + ": waiting for rank " + std::to_string(q) +
                                         " to map the segment");
    }
    everyone = everyone && comm::to_string(*answer) == "1";
  }
  if (rank() == 0 && failed.empty())
    shm_unlink(name.c_str());  // every rank has mapped it or given up
  if (!everyone)
    return communicator::shared_buffer(count);
  auto region = std::make_shared<shared_region>();
  region->mapping = mapping;
  region->stride = stride;
  region->count = count;
  std::atomic_store(&shared_, std::shared_ptr<const shared_region>(region));
  return tensor::over(region->of(rank()), {count}, mapping);
}

// The in-place path: every rank's values at `at` floats into its shared
// buffer. Each rank reduces its part of the range straight from the
// ranks' buffers and writes the result into all of them.
status shm_communicator::all_reduce_shared(const request& r, const shared_region& g, int64_t at) {
  const int64_t total = r.input.numel();
  const int n_ranks = size(), me = rank();
  // Every rank has its values in place (its backward is done with them).
  DTRAIN_RETURN_IF_ERROR(barrier_wait(&r, r.deadline));
  const int64_t b = part_begin(total, n_ranks, me), len = part_begin(total, n_ranks, me + 1) - b;
  auto part = [&](int q) -> const float* { return g.of(q) + at + b; };
  if (n_ranks == 2) {
    // Read both, write both, in one pass.
    reduce_parts(g.of(0) + at + b, g.of(1) + at + b, 2, len, r.op, part);
  } else {
    // Summed in this rank's slot (a part it reads may be the one written
    // first), then written to every rank.
    float* scratch = slot(next_half(), me);
    for (int64_t off = 0; off < len; off += slot_floats_) {
      const int64_t n = std::min(slot_floats_, len - off);
      reduce_parts(scratch, nullptr, n_ranks, n, r.op, [&](int q) { return part(q) + off; });
      for (int q = 0; q < n_ranks; ++q)
        copy_floats(g.of(q) + at + b + off, scratch, n);
    }
  }
  // Nobody reads its result before every part is written.
  return barrier_wait(&r, r.deadline);
}

status shm_communicator::run_all_reduce(const request& r) {
  float* buf = const_cast<float*>(r.input.data());
  const int64_t total = r.input.numel();
  const int n_ranks = size(), me = rank();
  if (auto g = std::atomic_load(&shared_); g && total > 0) {
    const float* mine = g->of(me);
    if (buf >= mine && buf + total <= mine + g->count)
      return all_reduce_shared(r, *g, buf - mine);
  }
  for (int64_t off = 0; off < total || (total == 0 && off == 0); off += slot_floats_) {
    const int64_t n = std::min(slot_floats_, total - off);
    const int h = next_half();
    float* mine = slot(h, me);
    for (int j = 0; j < n_ranks; ++j)  // publish the parts the others reduce
      if (j != me)
        copy_floats(mine + part_begin(n, n_ranks, j), buf + off + part_begin(n, n_ranks, j),
                    part_begin(n, n_ranks, j + 1) - part_begin(n, n_ranks, j));
    DTRAIN_RETURN_IF_ERROR(barrier_wait(&r, r.deadline));
    const int64_t b = part_begin(n, n_ranks, me), len = part_begin(n, n_ranks, me + 1) - b;
    float* result = result_area(h) + b;
    if (len > 0) {
      // The result goes to the shared area (for the others) and to this
      // rank's own buffer in the same pass.
      reduce_parts(result, buf + off + b, n_ranks, len, r.op, [&](int q) -> const float* {
        return q == me ? buf + off + b : slot(h, q) + b;
      });
    }
    DTRAIN_RETURN_IF_ERROR(barrier_wait(&r, r.deadline));
    for (int j = 0; j < n_ranks; ++j)
      if (j != me)
        copy_floats(buf + off + part_begin(n, n_ranks, j),
                    result_area(h) + part_begin(n, n_ranks, j),
                    part_begin(n, n_ranks, j + 1) - part_begin(n, n_ranks, j));
    if (total == 0)
      break;
  }
  return status::ok();
}

status shm_communicator::run_broadcast(const request& r) {
  float* buf = const_cast<float*>(r.input.data());
  const int64_t total = r.input.numel();
  for (int64_t off = 0; off < total || (total == 0 && off == 0); off += slot_floats_) {
    const int64_t n = std::min(slot_floats_, total - off);
    const int h = next_half();
    if (rank() == r.root)
      copy_floats(result_area(h), buf + off, n);
    DTRAIN_RETURN_IF_ERROR(barrier_wait(&r, r.deadline));
    if (rank() != r.root)
      copy_floats(buf + off, result_area(h), n);
    if (total == 0)
      break;
  }
  return status::ok();
}

status shm_communicator::run_gather(const request& r, bool everyone) {
  const float* in = r.input.data();
  float* out = r.output.defined() ? const_cast<float*>(r.output.data()) : nullptr;
  const int64_t count = r.input.numel();
  for (int64_t off = 0; off < count || (count == 0 && off == 0); off += slot_floats_) {
    const int64_t n = std::min(slot_floats_, count - off);
    const int h = next_half();
    copy_floats(slot(h, rank()), in + off, n);
    DTRAIN_RETURN_IF_ERROR(barrier_wait(&r, r.deadline));
    if (everyone || rank() == r.root)
      for (int q = 0; q < size(); ++q)
        if (out + q * count != in)  // in place: this rank's part is there already
          copy_floats(out + q * count + off, slot(h, q), n);
    if (count == 0)
      break;
  }
  return status::ok();
}

// The in-place path of reduce_scatter: every rank's input at `at` floats
// into its shared buffer and its output its own chunk there. Each rank
// reduces its chunk straight from the ranks' buffers, as all_reduce_shared
// reduces its part (the same sums in the same order, so the same bits).
status shm_communicator::reduce_scatter_shared(const request& r, const shared_region& g,
                                               int64_t at) {
  const int64_t count = r.output.numel();
  const int n_ranks = size(), me = rank();
  float* out = const_cast<float*>(r.output.data());
  DTRAIN_RETURN_IF_ERROR(barrier_wait(&r, r.deadline));
  auto part = [&](int q) -> const float* { return g.of(q) + at + me * count; };
  if (n_ranks == 2) {
    reduce_parts(out, nullptr, 2, count, r.op, part);  // reads both before it writes
  } else {
    // Summed in this rank's slot (the output is one of the parts read).
    float* scratch = slot(next_half(), me);
    for (int64_t off = 0; off < count; off += slot_floats_) {
      const int64_t n = std::min(slot_floats_, count - off);
      reduce_parts(scratch, nullptr, n_ranks, n, r.op, [&](int q) { return part(q) + off; });
      copy_floats(out + off, scratch, n);
    }
  }
  // Nobody writes its buffer again before every rank has read its chunk.
  return barrier_wait(&r, r.deadline);
}

status shm_communicator::run_reduce_scatter(const request& r) {
  const float* in = r.input.data();
  float* out = const_cast<float*>(r.output.data());
  const int64_t count = r.output.numel();
  const int n_ranks = size(), me = rank();
  if (auto g = std::atomic_load(&shared_); g && count > 0) {
    const float* mine = g->of(me);
    if (in >= mine && in + count * n_ranks <= mine + g->count && out == in + me * count)
      return reduce_scatter_shared(r, *g, in - mine);
  }
  // In place (the output is this rank's chunk of the input), the chunk is
  // staged like the others': the sum over more than two ranks writes the
  // output before it has read every part.
  const bool in_place = out == in + me * count;
  const int64_t piece = slot_floats_ / n_ranks;  // a slot holds one piece per destination
  for (int64_t off = 0; off < count || (count == 0 && off == 0); off += piece) {
    const int64_t n = std::min(piece, count - off);
    const int h = next_half();
    for (int j = 0; j < n_ranks; ++j)
      if (j != me || in_place)
        copy_floats(slot(h, me) + j * piece, in + j * count + off, n);
    DTRAIN_RETURN_IF_ERROR(barrier_wait(&r, r.deadline));
    if (n > 0)
      reduce_parts(out + off, nullptr, n_ranks, n, r.op, [&](int q) -> const float* {
        return q == me && !in_place ? in + me * count + off : slot(h, q) + me * piece;
      });
    if (count == 0)
      break;
  }
  return status::ok();
}

} // namespace dtrain::comm
