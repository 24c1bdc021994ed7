// The NCCL backend. Every NCCL call goes to a non-blocking communicator
// (config.blocking = 0) and is followed by polling with a deadline, so that no
// call can hang for ever and abort() can always get in between two polls.
#include "dtrain/comm/nccl.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "dtrain/comm/nccl_check.hpp"
#include "dtrain/cuda/check.hpp"
#include "dtrain/cuda/runtime.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::comm {

namespace {

using steady = std::chrono::steady_clock;

const char* const unique_id_key = "nccl/unique_id";

/// How long a failed operation waits, after the abort, for its kernels to
/// leave the stream, so that in the common case its buffers are no longer in
/// use when the caller sees the error. Bounded: the error matters more.
constexpr milliseconds drain_limit{2000};

/// "nccl rank 1 of 4", the start of create()'s errors.
std::string rank_text(int rank, int size) {
  return "nccl rank " + std::to_string(rank) + " of " + std::to_string(size);
}

/// Restores the calling thread's current CUDA device at the end of a scope.
class device_guard {
public:
  device_guard() {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
    }
  }
  ~device_guard() {
    if (previous_ >= 0)
      (void)cudaSetDevice(previous_);
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

private:
  int previous_ = -1;
};

/// The pause between two polls: short at first, since a small collective
/// takes tens of microseconds, doubling up to 1 ms so that a long one costs
/// little CPU. Never sleeps past the deadline.
class backoff {
public:
  void wait(steady::time_point deadline) {
    steady::time_point until = std::min<steady::time_point>(steady::now() + step_, deadline);
    std::this_thread::sleep_until(until);
    step_ = std::min(step_ * 2, std::chrono::microseconds(1000));
  }

private:
  std::chrono::microseconds step_{5};
};

milliseconds remaining(steady::time_point deadline) {
  return std::max(std::chrono::ceil<milliseconds>(deadline - steady::now()), milliseconds(0));
}

/// Polls a non-blocking communicator until its pending work (init, finalize)
/// is done: ncclSuccess, the error it failed with, or ncclInProgress when the
/// deadline passed first.
ncclResult_t settle(ncclComm_t comm, steady::time_point deadline) {
  backoff pause;
  for (;;) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t err = ncclCommGetAsyncError(comm, &state);
    if (err != ncclSuccess)
      return err;
    if (state != ncclInProgress)
      return state;
    if (steady::now() >= deadline)
      return ncclInProgress;
    pause.wait(deadline);
  }
}

/// ncclCommAbort with `device` current. It runs on error paths and in
/// destructors, where the error that led there matters more, so a failure is
/// reported on stderr rather than returned.
void abort_quietly(ncclComm_t comm, int device) {
  device_guard guard;
  (void)cudaSetDevice(device);
  ncclResult_t err = ncclCommAbort(comm);
  if (detail::nccl_failed(err))
    std::fprintf(stderr, "dtrain: ncclCommAbort on cuda:%d failed: %s\n", device,
                 ncclGetErrorString(err));
}

/// Waits (bounded by drain_limit) until nothing runs on `stream` any more.
void drain(cudaStream_t stream) {
  const steady::time_point deadline = steady::now() + drain_limit;
  backoff pause;
  while (cudaStreamQuery(stream) == cudaErrorNotReady && steady::now() < deadline)
    pause.wait(deadline);
  (void)cudaGetLastError();  // the caller reports the error that matters
}

/// Owns the ncclComm_t of a non-blocking communicator. Destruction (and
/// finish()) finalizes and destroys a healthy one, waiting at most the close
/// timeout for the finalize, and aborts a broken one or one whose finalize
/// fails or runs late. Not thread-safe: the owner serializes every use
/// (nccl_communicator holds its mutex around each call).
class nccl_comm {
public:
  nccl_comm() = default;
  nccl_comm(ncclComm_t comm, int device, milliseconds close_timeout)
    : comm_(comm), device_(device), close_timeout_(close_timeout) {}
  ~nccl_comm() { finish(); }
  nccl_comm(nccl_comm&& other) noexcept { take(other); }
  nccl_comm& operator=(nccl_comm&& other) noexcept {
    if (this != &other) {
      finish();
      take(other);
    }
    return *this;
  }
  nccl_comm(const nccl_comm&) = delete;
  nccl_comm& operator=(const nccl_comm&) = delete;

  /// Null once closed or aborted.
  ncclComm_t get() const { return comm_; }
  void mark_broken() { broken_ = true; }

  void abort() {
    if (comm_ != nullptr)
      abort_quietly(std::exchange(comm_, nullptr), device_);
  }

  void finish() {
    if (broken_)
      abort();
    else
      close();
  }

private:
  void close() {
    if (comm_ == nullptr)
      return;
    device_guard guard;
    (void)cudaSetDevice(device_);
    ncclResult_t err = ncclCommFinalize(comm_);
    if (!detail::nccl_failed(err))
      err = settle(comm_, steady::now() + close_timeout_);
    if (err != ncclSuccess) {  // failed, or still flushing at the deadline
      abort();
      return;
    }
    // Finalized: the destroy only frees local resources and does not block.
    err = ncclCommDestroy(std::exchange(comm_, nullptr));
    if (detail::nccl_failed(err))
      std::fprintf(stderr, "dtrain: ncclCommDestroy on cuda:%d failed: %s\n", device_,
                   ncclGetErrorString(err));
  }

  void take(nccl_comm& other) {
    comm_ = std::exchange(other.comm_, nullptr);
    device_ = other.device_;
    close_timeout_ = other.close_timeout_;
    broken_ = other.broken_;
  }

  ncclComm_t comm_ = nullptr;
  int device_ = 0;
  milliseconds close_timeout_{0};
  bool broken_ = false;
};

/// Owns a CUDA stream or event; Destroy is cudaStreamDestroy or cudaEventDestroy.
template <class Handle, cudaError_t (*Destroy)(Handle)>
class cuda_handle {
public:
  cuda_handle() = default;
  ~cuda_handle() {
    if (handle_ != nullptr)
      (void)Destroy(handle_);
  }
  cuda_handle(const cuda_handle&) = delete;
  cuda_handle& operator=(const cuda_handle&) = delete;

  Handle* out() { return &handle_; }
  Handle get() const { return handle_; }

private:
  Handle handle_ = nullptr;
};

using cuda_stream = cuda_handle<cudaStream_t, cudaStreamDestroy>;
using cuda_event = cuda_handle<cudaEvent_t, cudaEventDestroy>;

status check_arguments(int rank, int size, int device, const rendezvous::store* rendezvous,
                       milliseconds timeout, const std::string& who) {
  if (size < 1 || rank < 0 || rank >= size)
    return invalid_argument("nccl: rank " + std::to_string(rank) +
                            " is not a rank of a group of " + std::to_string(size));
  if (rendezvous == nullptr)
    return invalid_argument(who + ": no rendezvous store");
  if (timeout <= milliseconds(0))
    return invalid_argument(who + ": the timeout must be positive, not " +
                            std::to_string(timeout.count()) + " ms");
  if (!cuda::available())
    return unavailable(who + ": no CUDA device: " + cuda::unavailable_reason());
  if (device < 0 || device >= cuda::device_count())
    return status(error_code::out_of_range,
                  who + ": there is no cuda:" + std::to_string(device) + " (" +
                      std::to_string(cuda::device_count()) + " CUDA devices)");
  return status::ok();
}

/// Rank 0 creates the id and publishes it; the others wait for it.
result<ncclUniqueId> exchange_unique_id(int rank, rendezvous::store& rendezvous,
                                        steady::time_point deadline, const std::string& who) {
  ncclUniqueId id{};
  if (rank == 0) {
    DTRAIN_NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id), who + ": ncclGetUniqueId");
    bytes value(id.internal, id.internal + sizeof id.internal);
    if (status s = rendezvous.set(unique_id_key, value); !s)
      return s.with_context(who + ": publishing the NCCL unique id");
    return id;
  }
  result<bytes> value = rendezvous.get(unique_id_key, remaining(deadline));
  if (!value)
    return value.error().with_context(who + ": waiting for rank 0's NCCL unique id");
  if (value->size() != sizeof id.internal)
    return corrupt_data(who + ": the NCCL unique id under \"" + unique_id_key + "\" has " +
                        std::to_string(value->size()) + " bytes, not " +
                        std::to_string(sizeof id.internal));
  std::memcpy(id.internal, value->data(), sizeof id.internal);
  return id;
}

/// ncclCommInitRankConfig without blocking, then polls until the group has
/// formed or the deadline has passed (the half-made communicator aborted).
result<nccl_comm> init_nccl(int rank, int size, int device, const ncclUniqueId& id,
                            steady::time_point deadline, milliseconds timeout,
                            const std::string& who) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t err = ncclCommInitRankConfig(&comm, size, id, rank, &config);
  if (!detail::nccl_failed(err) && comm != nullptr)
    err = settle(comm, deadline);
  if (err == ncclSuccess && comm != nullptr)
    return nccl_comm(comm, device, timeout);
  status failure =
      err == ncclInProgress
          ? status(error_code::timeout,
                   who + ": NCCL initialization did not finish within " +
                       std::to_string(timeout.count()) +
                       " ms (did every rank start, with the same unique id?); aborted")
          : detail::nccl_error_status(err == ncclSuccess ? ncclInternalError : err, comm,
                                      __FILE__, __LINE__, who + ": ncclCommInitRankConfig");
  if (comm != nullptr)
    abort_quietly(comm, device);
  return failure;
}

ncclRedOp_t to_nccl(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return ncclSum;
    case reduce_op::average: return ncclAvg;
    case reduce_op::min: return ncclMin;
    case reduce_op::max: return ncclMax;
  }
  return ncclSum;
}

/// gather as point-to-point calls, since NCCL has no gather: the root copies
/// its own input into its slot and receives every other rank's.
status enqueue_gather(tensor input, tensor output, int root, int rank, int size,
                      ncclComm_t comm, cudaStream_t stream, const std::string& what) {
  const size_t n = static_cast<size_t>(input.numel());
  if (rank == root)
    DTRAIN_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(output.data() + static_cast<size_t>(root) * n,
                                                input.data(), input.bytes(),
                                                cudaMemcpyDeviceToDevice, stream),
                                what + ": copying the root's own input");
  DTRAIN_NCCL_RETURN_IF_ERROR(ncclGroupStart(), what + ": ncclGroupStart");
  ncclResult_t first = ncclSuccess;
  if (rank == root) {
    for (int peer = 0; peer < size && !detail::nccl_failed(first); ++peer)
      if (peer != root)
        first = ncclRecv(output.data() + static_cast<size_t>(peer) * n, n, ncclFloat32, peer,
                         comm, stream);
  } else {
    first = ncclSend(input.data(), n, ncclFloat32, root, comm, stream);
  }
  // Close the group also after a failed call: the group is per-thread state.
  ncclResult_t end = ncclGroupEnd();
  DTRAIN_NCCL_RETURN_IF_ERROR(first, what + ": ncclSend/ncclRecv");
  DTRAIN_NCCL_RETURN_IF_ERROR(end, what + ": ncclGroupEnd");
  return status::ok();
}

} // namespace

struct nccl_communicator::resources {
  cuda_stream stream;
  cuda_event inputs_ready;   // recorded on the default stream before each op
  tensor scratch;            // one float, reduced by barrier()
  std::mutex comm_mutex;     // serializes every use of comm with abort()
  nccl_comm comm;            // last: goes first, while its stream still exists

  /// The stream, event and scratch buffer, on the current device.
  status init_cuda(int device, const std::string& who) {
    // Non-blocking: the default stream never waits for NCCL (see issue()).
    DTRAIN_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(stream.out(), cudaStreamNonBlocking),
                                who + ": creating the NCCL stream");
    DTRAIN_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(inputs_ready.out(),
                                                         cudaEventDisableTiming),
                                who + ": creating an event");
    scratch = tensor::zeros({1}, device::cuda(device));
    return status::ok();
  }
};

result<std::unique_ptr<nccl_communicator>> nccl_communicator::create(
    int rank, int size, int cuda_device, std::shared_ptr<rendezvous::store> store, milliseconds timeout) {
  const steady::time_point deadline = steady::now() + timeout;
  const std::string who = rank_text(rank, size);
  if (status s = check_arguments(rank, size, cuda_device, store.get(), timeout, who); !s)
    return s;
  device_guard guard;  // NCCL takes the device from the calling thread
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaSetDevice(cuda_device),
                              who + ": cudaSetDevice(" + std::to_string(cuda_device) + ")");
  auto res = std::make_unique<resources>();
  if (status s = res->init_cuda(cuda_device, who); !s)
    return s;
  result<ncclUniqueId> id = exchange_unique_id(rank, *store, deadline, who);
  if (!id)
    return id.error();
  result<nccl_comm> comm = init_nccl(rank, size, cuda_device, *id, deadline, timeout, who);
  if (!comm)
    return comm.error();
  res->comm = std::move(comm.value());
  return std::unique_ptr<nccl_communicator>(
      new nccl_communicator(rank, size, cuda_device, timeout, std::move(res)));
}

nccl_communicator::nccl_communicator(int rank, int size, int cuda_device, milliseconds timeout,
                                     std::unique_ptr<resources> res)
  : queued_communicator(rank, size, timeout), device_(cuda_device), res_(std::move(res)) {}

nccl_communicator::~nccl_communicator() {
  await_interrupt();  // an abort()'s ncclCommAbort finishes before closing_ hides it
  const bool was_broken = broken();  // shutdown() marks every communicator broken
  closing_ = true;
  shutdown();
  std::lock_guard<std::mutex> lock(res_->comm_mutex);
  if (was_broken)
    res_->comm.mark_broken();
  res_->comm.finish();
}

bool nccl_communicator::supports(device where) const {
  return where.is_cuda() && where.index == device_;
}

void nccl_communicator::interrupt() {
  // shutdown() calls this on every destruction. Idle, the communicator is
  // better closed by the destructor (finalize, destroy) than aborted; an
  // operation in progress must be aborted. run() checks closing_ after
  // setting running_, and the destructor sets closing_ before this reads
  // running_, so an operation either sees closing_ or is aborted here.
  if (closing_.load() && !running_.load())
    return;
  abort_nccl();
}

void nccl_communicator::abort_nccl() {
  std::lock_guard<std::mutex> lock(res_->comm_mutex);
  res_->comm.abort();
}

status nccl_communicator::run(const request& r) {
  running_ = true;
  struct clear_on_exit {
    std::atomic<bool>& flag;
    ~clear_on_exit() { flag = false; }
  } clear{running_};
  if (closing_)
    return status(error_code::aborted, describe(r) + ": the communicator was destroyed");
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), describe(r) + ": cudaSetDevice");
  if (status s = issue(r); !s) {
    abort_nccl();  // part of the op may have been enqueued; it must not run on alone
    drain(res_->stream.get());
    return s;
  }
  return wait_for(r);
}

status nccl_communicator::issue(const request& r) {
  std::lock_guard<std::mutex> lock(res_->comm_mutex);
  ncclComm_t comm = res_->comm.get();
  if (comm == nullptr)
    return status(error_code::aborted, describe(r) + ": the NCCL communicator was aborted");
  cudaStream_t stream = res_->stream.get();
  // Inputs come from kernels on the legacy default stream: wait for them.
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaEventRecord(res_->inputs_ready.get(), cudaStreamLegacy),
                              describe(r) + ": recording the default stream");
  DTRAIN_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(stream, res_->inputs_ready.get(), 0),
                              describe(r) + ": ordering after the default stream");
  tensor input = r.input, output = r.output;  // handles, for writable data()
  const size_t n = static_cast<size_t>(input.numel());
  // In a group of one the average is the sum, which is issued instead:
  // NCCL before 2.29.7 leaves the last `count % blocks` elements of a
  // one-rank ncclAvg unwritten (its one-rank reduction kernel splits the
  // range by floor division; NVIDIA/nccl issue 1950): 3 of 100003 on an
  // H100 with 2.28.3 and 2.28.9 (docs/gpu.md). One-rank ncclSum is a copy.
  const ncclRedOp_t op =
      size() == 1 && r.op == reduce_op::average ? ncclSum : to_nccl(r.op);
  switch (r.kind) {
    case op_kind::all_reduce:
      DTRAIN_NCCL_RETURN_IF_ERROR(ncclAllReduce(input.data(), input.data(), n, ncclFloat32,
                                                op, comm, stream),
                                  describe(r) + ": ncclAllReduce");
      break;
    case op_kind::broadcast:
      DTRAIN_NCCL_RETURN_IF_ERROR(ncclBroadcast(input.data(), input.data(), n, ncclFloat32,
                                                r.root, comm, stream),
                                  describe(r) + ": ncclBroadcast");
      break;
    case op_kind::all_gather:
      DTRAIN_NCCL_RETURN_IF_ERROR(
          ncclAllGather(input.data(), output.data(), n, ncclFloat32, comm, stream),
          describe(r) + ": ncclAllGather");
      break;
    case op_kind::gather:
      return enqueue_gather(input, output, r.root, rank(), size(), comm, stream, describe(r));
    case op_kind::reduce_scatter:
      DTRAIN_NCCL_RETURN_IF_ERROR(
          ncclReduceScatter(input.data(), output.data(), static_cast<size_t>(output.numel()),
                            ncclFloat32, op, comm, stream),
          describe(r) + ": ncclReduceScatter");
      break;
    case op_kind::barrier:
      DTRAIN_NCCL_RETURN_IF_ERROR(ncclAllReduce(res_->scratch.data(), res_->scratch.data(), 1,
                                                ncclFloat32, ncclSum, comm, stream),
                                  describe(r) + ": ncclAllReduce (barrier)");
      break;
  }
  return status::ok();
}

status nccl_communicator::wait_for(const request& r) {
  backoff pause;
  for (;;) {
    if (std::optional<status> outcome = poll_once(r)) {
      if (!outcome->is_ok())
        drain(res_->stream.get());
      return *outcome;
    }
    pause.wait(r.deadline);
  }
}

std::optional<status> nccl_communicator::poll_once(const request& r) {
  {
    std::lock_guard<std::mutex> lock(res_->comm_mutex);
    ncclComm_t comm = res_->comm.get();
    if (comm != nullptr) {
      auto give_up = [&](status why) {
        res_->comm.abort();
        return std::optional<status>(std::move(why));
      };
      // ncclInProgress: NCCL is still enqueueing (connecting, launching).
      ncclResult_t state = ncclInProgress;
      if (ncclResult_t err = ncclCommGetAsyncError(comm, &state); err != ncclSuccess)
        state = err;
      if (detail::nccl_failed(state))
        return give_up(detail::nccl_error_status(state, comm, __FILE__, __LINE__,
                                                 describe(r) + ": NCCL failed"));
      if (state == ncclSuccess) {
        cudaError_t query = cudaStreamQuery(res_->stream.get());
        if (query == cudaSuccess)
          return status::ok();
        if (query != cudaErrorNotReady) {
          (void)cudaGetLastError();
          return give_up(cuda::detail::cuda_error_status(query, __FILE__, __LINE__,
                                                         describe(r) + ": the NCCL stream failed"));
        }
      }
      if (steady::now() < r.deadline)
        return std::nullopt;
      return give_up(status(
          error_code::timeout,
          describe(r) + ": NCCL did not finish within " + std::to_string(timeout().count()) +
              " ms (" + (state == ncclInProgress ? "still launching" : "kernels still running") +
              "); the NCCL communicator was aborted"));
    }
  }
  // Aborted by another thread: broken_reason() says why (read outside the
  // lock, so that the two mutexes are never nested).
  return status(error_code::aborted,
                describe(r) + ": NCCL aborted while waiting: " + broken_reason().message());
}

} // namespace dtrain::comm
