#include "dtrain/comm/communicator.hpp"

#include <algorithm>
#include <system_error>

#include "dtrain/comm/sigpipe.hpp"

namespace dtrain::comm {

const char* to_string(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::average: return "average";
    case reduce_op::min: return "min";
    case reduce_op::max: return "max";
  }
  return "unknown";
}

work::work(std::string what, std::chrono::steady_clock::time_point deadline)
  : what_(std::move(what)), deadline_(deadline) {}

status work::wait() {
  auto until = deadline_ + wait_grace;
  auto waited = std::chrono::duration_cast<milliseconds>(until - std::chrono::steady_clock::now());
  return wait_until(until, std::max(waited, milliseconds(0)));
}

status work::wait(milliseconds timeout) {
  auto until = std::min(std::chrono::steady_clock::now() + timeout, deadline_ + wait_grace);
  return wait_until(until, timeout);
}

status work::wait_until(std::chrono::steady_clock::time_point until, milliseconds waited) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (cv_.wait_until(lock, until, [this] { return done_; }))
    return outcome_;
  return status(error_code::timeout,
                what_ + ": not finished after waiting " + std::to_string(waited.count()) +
                    " ms; the operation may still be running and using its buffers");
}

bool work::completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void work::finish(status outcome) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_)
      return;
    done_ = true;
    outcome_ = std::move(outcome);
  }
  cv_.notify_all();
}

queued_communicator::queued_communicator(int rank, int size, milliseconds timeout)
  : rank_(rank), size_(size), timeout_(timeout) {
  worker_ = std::thread([this] { worker_loop(); });
}

queued_communicator::~queued_communicator() { shutdown(); }

void queued_communicator::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !worker_.joinable())
      return;
    stopping_ = true;  // from here on, abort() starts no interrupter
    if (broken_.is_ok())
      broken_ = status(error_code::aborted, "the communicator was destroyed");
    for (auto& [req, w] : queue_)
      w->finish(status(error_code::aborted, describe(req) + ": communicator destroyed"));
    queue_.clear();
  }
  cv_.notify_all();
  await_interrupt();
  interrupt();
  if (worker_.joinable())
    worker_.join();
}

void queued_communicator::await_interrupt() {
  std::thread interrupter;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupter = std::move(interrupter_);
  }
  if (interrupter.joinable())
    interrupter.join();
}

const char* queued_communicator::to_string(op_kind kind) {
  switch (kind) {
    case op_kind::all_reduce: return "all_reduce";
    case op_kind::broadcast: return "broadcast";
    case op_kind::all_gather: return "all_gather";
    case op_kind::gather: return "gather";
    case op_kind::reduce_scatter: return "reduce_scatter";
    case op_kind::barrier: return "barrier";
  }
  return "unknown";
}

std::string queued_communicator::describe(const request& r) const {
  return std::string(to_string(r.kind)) + " #" + std::to_string(r.sequence) + " on rank " +
         std::to_string(rank_) + " of " + std::to_string(size_) + " (" + backend() + ")";
}

work_ptr queued_communicator::fail_now(const status& why) {
  auto w = std::make_shared<work>("an operation refused at issue", std::chrono::steady_clock::now());
  w->finish(why);
  return w;
}

work_ptr queued_communicator::submit(request r) {
  work_ptr w;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    r.sequence = issued_++;
    r.deadline = std::chrono::steady_clock::now() + timeout_;
    w = std::make_shared<work>(describe(r), r.deadline);
    if (!broken_.is_ok()) {
      w->finish(status(error_code::aborted,
                       describe(r) + ": the communicator is broken: " + broken_.to_string()));
      return w;
    }
    queue_.emplace_back(std::move(r), w);
  }
  cv_.notify_all();
  return w;
}

namespace {

status check_buffer(const communicator& c, const char* op, const char* name, const tensor& t) {
  if (!t.defined())
    return invalid_argument(std::string(op) + ": " + name + " is undefined");
  if (!c.supports(t.where()))
    return invalid_argument(std::string(op) + ": the " + c.backend() +
                            " backend does not take buffers on " + t.where().to_string());
  return status::ok();
}

status check_root(const communicator& c, const char* op, int root) {
  if (root < 0 || root >= c.size())
    return invalid_argument(std::string(op) + ": root " + std::to_string(root) +
                            " is not a rank of a group of " + std::to_string(c.size()));
  return status::ok();
}

status check_sizes(const char* op, int64_t big, int64_t small, int size, const char* what) {
  if (big != small * size)
    return shape_mismatch(std::string(op) + ": " + what + " must hold " +
                          std::to_string(size) + " x " + std::to_string(small) +
                          " values, it holds " + std::to_string(big));
  return status::ok();
}

} // namespace

work_ptr queued_communicator::all_reduce(tensor buffer, reduce_op op) {
  if (auto s = check_buffer(*this, "all_reduce", "buffer", buffer); !s)
    return fail_now(s);
  request r;
  r.kind = op_kind::all_reduce;
  r.input = std::move(buffer);
  r.op = op;
  return submit(std::move(r));
}

work_ptr queued_communicator::broadcast(tensor buffer, int root) {
  if (auto s = check_buffer(*this, "broadcast", "buffer", buffer); !s)
    return fail_now(s);
  if (auto s = check_root(*this, "broadcast", root); !s)
    return fail_now(s);
  request r;
  r.kind = op_kind::broadcast;
  r.input = std::move(buffer);
  r.root = root;
  return submit(std::move(r));
}

work_ptr queued_communicator::all_gather(tensor input, tensor output) {
  for (auto* t : {&input, &output})
    if (auto s = check_buffer(*this, "all_gather", t == &input ? "input" : "output", *t); !s)
      return fail_now(s);
  if (auto s = check_sizes("all_gather", output.numel(), input.numel(), size(), "output"); !s)
    return fail_now(s);
  request r;
  r.kind = op_kind::all_gather;
  r.input = std::move(input);
  r.output = std::move(output);
  return submit(std::move(r));
}

work_ptr queued_communicator::gather(tensor input, tensor output, int root) {
  if (auto s = check_buffer(*this, "gather", "input", input); !s)
    return fail_now(s);
  if (auto s = check_root(*this, "gather", root); !s)
    return fail_now(s);
  if (rank() == root) {
    if (auto s = check_buffer(*this, "gather", "output", output); !s)
      return fail_now(s);
    if (auto s = check_sizes("gather", output.numel(), input.numel(), size(), "output"); !s)
      return fail_now(s);
  }
  request r;
  r.kind = op_kind::gather;
  r.input = std::move(input);
  r.output = std::move(output);
  r.root = root;
  return submit(std::move(r));
}

work_ptr queued_communicator::reduce_scatter(tensor input, tensor output, reduce_op op) {
  for (auto* t : {&input, &output})
    if (auto s = check_buffer(*this, "reduce_scatter", t == &input ? "input" : "output", *t);
        !s)
      return fail_now(s);
  if (auto s = check_sizes("reduce_scatter", input.numel(), output.numel(), size(), "input");
      !s)
    return fail_now(s);
  request r;
  r.kind = op_kind::reduce_scatter;
  r.input = std::move(input);
  r.output = std::move(output);
  r.op = op;
  return submit(std::move(r));
}

work_ptr queued_communicator::barrier() {
  request r;
  r.kind = op_kind::barrier;
  return submit(std::move(r));
}

void queued_communicator::abort(const std::string& why) {
  bool interrupt_here = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_.is_ok())
      broken_ = status(error_code::aborted, "aborted on rank " + std::to_string(rank_) + ": " + why);
    for (auto& [req, w] : queue_)
      w->finish(status(error_code::aborted, describe(req) + ": " + broken_.message()));
    queue_.clear();
    // Interrupt once; shutdown() interrupts by itself once it has begun.
    if (!interrupting_ && !stopping_) {
      interrupting_ = true;
      // interrupt() may block (sockets, the store, ncclCommAbort): never on
      // the caller's thread, which may be one of an actor system's few.
      try {
        interrupter_ = std::thread([this] { interrupt(); });
      } catch (const std::system_error&) {
        interrupt_here = true;  // no thread to be had: better late than never
      }
    }
  }
  if (interrupt_here)
    interrupt();
}

bool queued_communicator::broken() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !broken_.is_ok();
}

status queued_communicator::broken_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return broken_;
}

void queued_communicator::worker_loop() {
  sigpipe_blocker no_sigpipe;  // a peer gone mid-write is an error, not a death
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty())
      return;  // stopping, nothing left
    auto [req, w] = std::move(queue_.front());
    queue_.pop_front();
    if (!broken_.is_ok()) {
      w->finish(status(error_code::aborted,
                       describe(req) + ": the communicator is broken: " + broken_.to_string()));
      continue;
    }
    lock.unlock();
    status outcome = run(req);
    lock.lock();
    if (!outcome.is_ok() && broken_.is_ok())
      broken_ = outcome;
    w->finish(outcome);
  }
}

} // namespace dtrain::comm
