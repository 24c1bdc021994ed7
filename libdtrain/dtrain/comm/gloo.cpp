#include "dtrain/comm/gloo.hpp"

#include "dtrain/core/net.hpp"
#include "dtrain/comm/sigpipe.hpp"

#include <dlfcn.h>
#include <sys/socket.h>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <typeinfo>
#include <vector>


namespace dtrain::comm {

namespace {

using steady = std::chrono::steady_clock;

// Gloo's own per-wait timeout is set this much past the request's deadline:
// the watchdog ends an operation at the deadline itself and says why; Gloo's
// timeout only matters should the watchdog thread be starved.
constexpr milliseconds kGlooBackstop{250};

std::string address_key(int rank) { return std::to_string(rank); }  // Gloo's own key
std::string failure_key(int rank) { return "gloo/failed/" + std::to_string(rank); }

std::string ms_text(milliseconds t) { return std::to_string(t.count()) + " ms"; }

bool looks_like_timeout(const std::string& what) {
  std::string lower(what);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("timeout") != std::string::npos ||
         lower.find("timed out") != std::string::npos;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

/// Thrown by store_adapter when the rendezvous deadline passes.
struct rendezvous_timeout : gloo::IoException {
  using gloo::IoException::IoException;
};

/// Gloo's rendezvous store over a dtrain store, every key under "gloo/".
/// Every wait ends at the rendezvous deadline at the latest. Gloo expects
/// its store to throw, so failures become gloo exceptions here; create()
/// catches them. Used by one thread, during create() only.
class store_adapter final : public gloo::rendezvous::Store {
public:
  store_adapter(std::shared_ptr<rendezvous::store> base, steady::time_point deadline)
    : base_(std::move(base)), deadline_(deadline) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    raise_if_error(base_->set("gloo/" + key, data));
  }

  std::vector<char> get(const std::string& key) override {
    auto value = base_->get("gloo/" + key, remaining());
    raise_if_error(value.to_status());
    return std::move(value).value();
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, remaining()); }

  void wait(const std::vector<std::string>& keys, const milliseconds& timeout) override {
    std::vector<std::string> full;
    for (const auto& key : keys)
      full.push_back("gloo/" + key);
    raise_if_error(base_->wait(full, std::min(timeout, remaining())));
  }

private:
  milliseconds remaining() const {
    auto left = std::chrono::duration_cast<milliseconds>(deadline_ - steady::now());
    if (left <= milliseconds(0))
      throw rendezvous_timeout("the rendezvous deadline passed");
    return left;
  }

  static void raise_if_error(const status& s) {
    if (s.is_ok())
      return;
    if (s.code() == error_code::timeout)
      throw rendezvous_timeout(s.to_string());
    throw gloo::IoException(s.to_string());
  }

  std::shared_ptr<rendezvous::store> base_;
  steady::time_point deadline_;
};

// Failing a whole mesh from another thread. tcp::Context::signalException
// is what Gloo itself calls when a wait times out: it puts every pair into
// the error state, wakes every buffer waiting on one with an IoException and
// closes the sockets. It is protected, and Debian's libgloo-dev ships
// gloo/transport/tcp/context.h without the gloo/common/memory.h it includes,
// so the class cannot even be named here. It is found by its (Itanium)
// mangled name and called with the context as `this`, once the dynamic type
// is checked to be tcp::Context, whose first base is transport::Context (the
// pointers coincide). Without the symbol, the pairs are only closed: peers
// then fail at once, and a local wait ends at Gloo's timeout.
using signal_fn = void (*)(gloo::transport::Context*, const std::string&);

signal_fn tcp_signal_exception() {
  static const signal_fn fn = [] {
    void* symbol = dlsym(RTLD_DEFAULT,
                         "_ZN4gloo9transport3tcp7Context15signalExceptionERKNSt7__cxx1112"
                         "basic_stringIcSt11char_traitsIcESaIcEEE");
    signal_fn f = nullptr;
    static_assert(sizeof f == sizeof symbol, "function and data pointers differ in size");
    std::memcpy(&f, &symbol, sizeof f);
    return f;
  }();
  return fn;
}

bool is_tcp_context(const gloo::transport::Context& context) {
  return std::strcmp(typeid(context).name(), "N4gloo9transport3tcp7ContextE") == 0;
}

/// A Gloo rendezvous context whose mesh can be failed from any thread.
class mesh_context final : public gloo::rendezvous::Context {
public:
  using gloo::rendezvous::Context::Context;

  void fail_all_pairs(const std::string& why) {
    gloo::transport::Context* transport = transportContext_.get();
    if (!transport)
      return;
    if (signal_fn signal = tcp_signal_exception(); signal && is_tcp_context(*transport))
      signal(transport, why);
    else
      closeConnections();
  }
};

/// The error of a rendezvous that Gloo ended with `what`, naming the ranks
/// whose addresses never reached the store.
status rendezvous_failure(int rank, int size, rendezvous::store& s, milliseconds timeout,
                          const std::string& what, bool timed_out) {
  std::vector<int> missing;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank)
      continue;
    auto present = s.check("gloo/" + address_key(peer));
    if (present.is_ok() && !present.value())
      missing.push_back(peer);
  }
  std::string where = "gloo rendezvous of rank " + std::to_string(rank) + " of " +
                      std::to_string(size) + ": ";
  timed_out = timed_out || looks_like_timeout(what);
  if (timed_out && !missing.empty())
    return status(error_code::timeout, where + rank_list(missing) + " did not join within " +
                                           ms_text(timeout) + " (" + what + ")");
  std::string text = where + what;
  if (!missing.empty())
    text += "; not joined yet: " + rank_list(missing);
  return status(timed_out ? error_code::timeout : error_code::io_error, text);
}

/// Binds a TCP device to `bind_address` and connects the full mesh.
result<std::shared_ptr<mesh_context>> connect_mesh(
    int rank, int size, const std::shared_ptr<rendezvous::store>& s, milliseconds timeout,
    const std::string& bind_address, std::shared_ptr<gloo::transport::Device>& device) {
  const auto deadline = steady::now() + timeout;
  // Gloo dereferences a null result when the name does not resolve, and
  // may abort on an address it cannot bind (Debian's libgloo): resolve and
  // bind here first, and refuse the address by name.
  auto address = net::bindable_ipv4(net::resolve_bind_address(bind_address), bind_address);
  if (!address)
    return address.error().with_context("gloo: rank " + std::to_string(rank));
  // Gloo's device loop thread, started here, inherits the blocked SIGPIPE;
  // so does every write of the rendezvous below.
  sigpipe_blocker no_sigpipe;
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = *address;  // what was checked, not a second lookup
    attr.ai_family = AF_INET;
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return io_error("gloo: cannot bind rank " + std::to_string(rank) + " to '" + bind_address +
                    "' (" + *address + "): " + e.what());
  }
  auto mesh = std::make_shared<mesh_context>(rank, size);
  mesh->setTimeout(timeout);
  store_adapter adapter(s, deadline);
  try {
    mesh->connectFullMesh(adapter, device);
    return mesh;
  } catch (const rendezvous_timeout& e) {
    return rendezvous_failure(rank, size, *s, timeout, e.what(), true);
  } catch (const std::exception& e) {
    return rendezvous_failure(rank, size, *s, timeout, e.what(), false);
  } catch (...) {
    return rendezvous_failure(rank, size, *s, timeout, "an unknown exception", false);
  }
}

using reduce_fn = void (*)(void*, const void*, const void*, size_t);

reduce_fn reduction_of(reduce_op op) {
  switch (op) {
    case reduce_op::min: return &gloo::min<float>;
    case reduce_op::max: return &gloo::max<float>;
    case reduce_op::sum:
    case reduce_op::average: break;
  }
  return &gloo::sum<float>;
}

/// What the Gloo call of one request needs besides its buffers.
struct op_settings {
  std::shared_ptr<gloo::Context> context;
  uint32_t tag;  // distinct per operation, so that operations never mix
  milliseconds timeout;
};

template <class Options>
Options options_for(const op_settings& s) {
  Options opts(s.context);
  opts.setTag(s.tag);
  opts.setTimeout(s.timeout);
  return opts;
}

void all_reduce_in_place(const op_settings& s, float* data, size_t count, reduce_op op) {
  auto opts = options_for<gloo::AllreduceOptions>(s);
  opts.setOutput(data, count);
  opts.setReduceFunction(reduction_of(op));
  gloo::allreduce(opts);
  if (op == reduce_op::average) {
    const float scale = 1.0f / static_cast<float>(s.context->size);
    for (size_t i = 0; i < count; ++i)
      data[i] *= scale;
  }
}

// No options-based reduce_scatter in this Gloo: reduce a scratch copy of the
// whole input and keep this rank's chunk (twice the traffic of a ring
// reduce-scatter, but only the options API touches the mesh).
void reduce_scatter_via_all_reduce(const op_settings& s, const float* input, float* output,
                                   size_t chunk, reduce_op op) {
  std::vector<float> scratch(input, input + chunk * static_cast<size_t>(s.context->size));
  all_reduce_in_place(s, scratch.data(), scratch.size(), op);
  std::copy_n(scratch.begin() + static_cast<ptrdiff_t>(chunk * s.context->rank), chunk, output);
}

size_t count_of(const tensor& t) { return static_cast<size_t>(t.numel()); }

} // namespace

/// What a gloo_communicator owns besides the base. The mutex guards every
/// field below it; the worker, the watchdog and interrupt() share them.
struct gloo_communicator::state {
  std::shared_ptr<rendezvous::store> group_store;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<mesh_context> mesh;  // null for a group of one
  std::thread watchdog;

  std::mutex mutex;
  std::condition_variable cv;
  bool running = false;  // an operation is inside Gloo now
  std::string running_op;
  steady::time_point deadline;
  bool mesh_broken = false;
  error_code broken_code = error_code::ok;
  std::string broken_why;
  bool destroying = false;
  bool stopping = false;
};

result<std::unique_ptr<gloo_communicator>> gloo_communicator::create(
    int rank, int size, std::shared_ptr<rendezvous::store> store, milliseconds timeout,
    const std::string& bind_address) {
  if (size < 1)
    return invalid_argument("gloo_communicator: size " + std::to_string(size) +
                            " must be at least 1");
  if (rank < 0 || rank >= size)
    return invalid_argument("gloo_communicator: rank " + std::to_string(rank) +
                            " is not a rank of a group of " + std::to_string(size));
  if (!store)
    return invalid_argument("gloo_communicator: store is null");
  if (timeout <= milliseconds(0))
    return invalid_argument("gloo_communicator: timeout " + ms_text(timeout) +
                            " must be positive");
  auto s = std::make_unique<state>();
  s->group_store = store;
  if (size > 1) {
    auto mesh = connect_mesh(rank, size, store, timeout, bind_address, s->device);
    if (!mesh)
      return mesh.error();
    s->mesh = std::move(mesh).value();
  }
  return std::unique_ptr<gloo_communicator>(
      new gloo_communicator(rank, size, timeout, std::move(s)));
}

gloo_communicator::gloo_communicator(int rank, int size, milliseconds timeout,
                                     std::unique_ptr<state> s)
  : queued_communicator(rank, size, timeout), state_(std::move(s)) {
  if (state_->mesh)
    state_->watchdog = std::thread([this] { watchdog_loop(); });
}

gloo_communicator::~gloo_communicator() {
  // An abort() just before: its interrupt publishes the reason and fails
  // the mesh, which an interrupt for destruction alone would skip.
  await_interrupt();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->destroying = true;
  }
  shutdown();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  if (state_->watchdog.joinable())
    state_->watchdog.join();
  // The context's pairs refer to the device: close them first.
  state_->mesh.reset();
  state_->device.reset();
}

status gloo_communicator::run(const request& r) {
  if (size() == 1) {
    run_local(r);
    return status::ok();
  }
  // Every rank holds the same sizes, so every rank skips an empty buffer.
  if (r.kind != op_kind::barrier && r.input.numel() == 0)
    return status::ok();
  const auto left = std::chrono::duration_cast<milliseconds>(r.deadline - steady::now());
  const auto budget = std::max(left, milliseconds(1));
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->mesh_broken)
      return status(state_->broken_code,
                    describe(r) + ": the mesh is broken: " + state_->broken_why);
    state_->running = true;
    state_->running_op = describe(r);
    state_->deadline = steady::now() + budget;
  }
  state_->cv.notify_all();
  std::string what;
  try {
    run_collective(r, budget + kGlooBackstop);
  } catch (const std::exception& e) {
    what = *e.what() ? e.what() : "an exception without a message";
  } catch (...) {
    what = "an unknown exception";
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->running = false;
  }
  state_->cv.notify_all();
  // Gloo returning normally means every transfer completed, even if the
  // watchdog fired in the last instant (the next operation then fails).
  return what.empty() ? status::ok() : failure(r, what);
}

void gloo_communicator::run_collective(const request& r, milliseconds timeout) {
  const op_settings settings{state_->mesh, static_cast<uint32_t>(r.sequence), timeout};
  tensor input = r.input;  // handles, for non-const data pointers
  tensor output = r.output;
  switch (r.kind) {
    case op_kind::all_reduce:
      all_reduce_in_place(settings, input.data(), count_of(input), r.op);
      return;
    case op_kind::broadcast: {
      auto opts = options_for<gloo::BroadcastOptions>(settings);
      opts.setOutput(input.data(), count_of(input));
      opts.setRoot(r.root);
      gloo::broadcast(opts);
      return;
    }
    case op_kind::all_gather: {
      auto opts = options_for<gloo::AllgatherOptions>(settings);
      // In place (the input is this rank's part of the output), Gloo gets a
      // copy: it would copy the input onto itself.
      std::vector<float> own;
      if (input.data() == output.data() + count_of(input) * static_cast<size_t>(rank())) {
        own.assign(input.data(), input.data() + input.numel());
        opts.setInput(own.data(), own.size());
      } else {
        opts.setInput(input.data(), count_of(input));
      }
      opts.setOutput(output.data(), count_of(output));
      gloo::allgather(opts);
      return;
    }
    case op_kind::gather: {
      auto opts = options_for<gloo::GatherOptions>(settings);
      opts.setInput(input.data(), count_of(input));
      if (rank() == r.root)
        opts.setOutput(output.data(), count_of(output));
      opts.setRoot(r.root);
      gloo::gather(opts);
      return;
    }
    case op_kind::reduce_scatter:
      reduce_scatter_via_all_reduce(settings, input.data(), output.data(), count_of(output), r.op);
      return;
    case op_kind::barrier: {
      auto opts = options_for<gloo::BarrierOptions>(settings);
      gloo::barrier(opts);
      return;
    }
  }
}

void gloo_communicator::run_local(const request& r) {
  tensor input = r.input;
  tensor output = r.output;
  switch (r.kind) {
    case op_kind::all_gather:
    case op_kind::gather:
    case op_kind::reduce_scatter:
      // Output and input hold the same count in a group of one.
      std::copy_n(input.data(), input.numel(), output.data());
      return;
    case op_kind::all_reduce:  // sum, min, max, average of one value: itself
    case op_kind::broadcast:
    case op_kind::barrier:
      return;
  }
}

status gloo_communicator::failure(const request& r, const std::string& what) {
  const bool timed_out = looks_like_timeout(what);
  // A peer that failed first published why; name it.
  const std::string why = timed_out ? what : what + peer_reports();
  std::lock_guard<std::mutex> lock(state_->mutex);
  // Close every other connection too, so that ranks waiting on this one do
  // not wait for their deadlines. A no-op when abort() or the watchdog broke
  // the mesh first; their reason is then the cause, not Gloo's echo of it.
  break_mesh_locked(timed_out ? error_code::timeout : error_code::io_error, why);
  return status(state_->broken_code, describe(r) + ": " + state_->broken_why);
}

void gloo_communicator::break_mesh_locked(error_code code, const std::string& why) {
  if (state_->mesh_broken)
    return;
  state_->mesh_broken = true;
  state_->broken_code = code;
  state_->broken_why = why;
  // Publish before closing the sockets, so that peers woken by the closed
  // connections find the reason. Best effort: a failing store changes
  // nothing here.
  std::string report = state_->running ? state_->running_op + ": " + why : why;
  (void)state_->group_store->set(failure_key(rank()), to_bytes(report));
  if (state_->mesh)
    state_->mesh->fail_all_pairs("dtrain: rank " + std::to_string(rank()) + ": " + why);
}

void gloo_communicator::interrupt() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  // Destroying an idle communicator just closes the mesh in the destructor.
  if (state_->destroying && !state_->running)
    return;
  break_mesh_locked(error_code::aborted, broken_reason().message());
}

void gloo_communicator::watchdog_loop() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  while (!state_->stopping) {
    if (!state_->running || state_->mesh_broken) {
      state_->cv.wait(lock);
      continue;
    }
    if (steady::now() < state_->deadline) {
      state_->cv.wait_until(lock, state_->deadline);
      continue;
    }
    break_mesh_locked(error_code::timeout,
                      "not finished within the timeout of " + ms_text(timeout()) +
                          " (a peer did not take part in time, or is stuck)");
  }
}

std::string gloo_communicator::peer_reports() {
  std::string text;
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank())
      continue;
    auto present = state_->group_store->check(failure_key(peer));
    if (!present.is_ok() || !present.value())
      continue;
    auto report = state_->group_store->get(failure_key(peer), milliseconds(100));
    if (report.is_ok())
      text += "; rank " + std::to_string(peer) + " reported: " + comm::to_string(report.value());
  }
  return text;
}

} // namespace dtrain::comm
