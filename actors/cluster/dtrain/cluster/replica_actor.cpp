#include "dtrain/cluster/replica_actor.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <vector>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/cluster/rendezvous_actor.hpp"
#include "dtrain/comm/factory.hpp"
#include "dtrain/core/hash.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/security/certificates.hpp"
#include "dtrain/serialization/capnp_checkpoint.hpp"
#include "dtrain/train/replica.hpp"

namespace dtrain::actors {

namespace {

// The process's hosted fronts (weak references), for node shutdown.
struct hosted_set {
  std::mutex mutex;
  std::vector<caf::actor_addr> fronts;
};

hosted_set& hosted() {
  static hosted_set h;
  return h;
}

std::atomic<int> g_live_workers{0};

// FOR TESTS ONLY (async_checkpoint_options::test_write_delay): the
// environment's DTRAIN_TEST_CHECKPOINT_WRITE_DELAY_MS, so that a test can
// hold an asynchronous save in flight in node processes; 0 without it.
std::chrono::milliseconds test_checkpoint_write_delay() {
  const char* env = std::getenv("DTRAIN_TEST_CHECKPOINT_WRITE_DELAY_MS");
  const long ms = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
  return std::chrono::milliseconds(ms > 0 ? ms : 0);
}

// Lets the front abort the worker's communicator from another thread.
// Shares the runner between the worker (which uses it) and the front
// (which may abort its communicator from another thread), so neither can
// see it destroyed under it.
struct abort_handle {
  std::mutex mutex;
  std::shared_ptr<train::replica_runner> runner;
  bool aborted = false;
  std::string why;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);

  // Aborts the collectives of the runner's communicator in flight, keeping
  // the replica (live recovery: its epoch fails, its state stays). The
  // communicator's own thread does the breaking (communicator.hpp).
  void interrupt(const std::string& reason) {
    std::shared_ptr<train::replica_runner> r;
    {
      std::lock_guard<std::mutex> lock(mutex);
      r = runner;
    }
    if (r)
      r->context().communicator().abort(reason);
  }

  void abort(const std::string& reason) {
    std::shared_ptr<train::replica_runner> r;
    {
      std::lock_guard<std::mutex> lock(mutex);
      aborted = true;
      cancelled->store(true);
      why = reason;
      r = runner;
    }
    if (r)
      r->context().communicator().abort(reason);
  }

  // Asks the group to stop at its next check (meaningful on the chief).
  caf::result<caf::ok_atom> preempt() {
    std::lock_guard<std::mutex> lock(mutex);
    if (!runner)
      return to_caf(invalid_argument("preempt: the replica is not set up"));
    runner->request_preemption();
    return caf::ok_atom::value;
  }

  // Publishes a new runner unless an abort came first.
  status adopt(std::shared_ptr<train::replica_runner> r) {
    std::lock_guard<std::mutex> lock(mutex);
    if (aborted)
      return status(error_code::aborted, "replica aborted during setup: " + why);
    runner = std::move(r);
    return status::ok();
  }
};

struct worker_state {
  // The replica's spec: its group (generation, rank, world) changes when
  // it is moved into a new one (reform).
  replica_spec spec;
  std::shared_ptr<train::replica_runner> runner;
  // A CPU replica's share of the host's cores, refreshed before each
  // epoch (concurrent trials come and go).
  std::unique_ptr<blas_share> cores;
  // The last epoch trained: a checkpoint saved right after it carries its
  // metrics (epoch_manifest_entries).
  std::optional<metrics_msg> last_epoch;
};

// The communicator of spec's group (its generation's rendezvous prefix).
result<std::unique_ptr<comm::communicator>> make_group_communicator(
    caf::actor_system& sys, const replica_spec& spec, const rendezvous_actor& store,
    abort_handle& handle) {
  comm::group_options go;
  go.rank = spec.rank;
  go.size = spec.world_size;
  go.store = std::make_shared<rendezvous::prefix_store>(
      spec.trainer + "/gen" + std::to_string(spec.generation),
      std::make_shared<actor_store>(sys, store, handle.cancelled));
  go.backend = spec.backend;
  go.where = spec.gpu >= 0 ? device::cuda(spec.gpu) : device::cpu();
  go.host = spec.host;
  go.bind_address = spec.bind_address;
  go.timeout = std::chrono::milliseconds(spec.timeout_ms);
  return comm::make_communicator(go);
}

result<std::unique_ptr<train::replica_runner>> make_runner(caf::actor_system& sys,
                                                           const replica_spec& spec,
                                                           const rendezvous_actor& store,
                                                           abort_handle& handle) {
  DTRAIN_ASSIGN_OR_RETURN(auto comm, make_group_communicator(sys, spec, store, handle));
  const device where_to = spec.gpu >= 0 ? device::cuda(spec.gpu) : device::cpu();
  train::comm_replica_context::placement where{spec.local_rank, spec.node_rank, where_to, spec.seed};
  auto ctx = std::make_unique<train::comm_replica_context>(std::move(comm), where, nullptr);
  train::replica_options ro;
  ro.operator_name = spec.operator_name;
  ro.plugins = spec.plugins;
  ro.config = train::hyperparameters(spec.config);
  ro.global_batch_size = spec.global_batch_size;
  ro.aggregation_frequency = spec.aggregation_frequency;
  ro.bucket_bytes = spec.bucket_bytes;
  ro.zero_stage = spec.zero_stage;
  ro.clip_grad_norm = static_cast<float>(spec.clip_grad_norm);
  ro.average_training_metrics = spec.average_training_metrics;
  DTRAIN_ASSIGN_OR_RETURN(ro.compress, comm::parse_compression(spec.compression));
  DTRAIN_ASSIGN_OR_RETURN(ro.compute, parse_precision(spec.precision));
  ro.seed = spec.seed;
  ro.progress_seconds = spec.progress_seconds;
  if (spec.progress_sink)
    ro.on_progress = [sink = spec.progress_sink](const train::step_progress& p) {
      caf::anon_send(sink, progress_atom::value, p);
    };
  ro.codec = serialization::default_checkpoint_codec();
  ro.async_checkpoint.root = spec.checkpoint_root;
  ro.async_checkpoint.keep_last = spec.checkpoint_keep;
  ro.async_checkpoint.every_steps = spec.checkpoint_every_steps;
  ro.async_checkpoint.every_seconds = spec.checkpoint_every_seconds;
  ro.async_checkpoint.test_write_delay = test_checkpoint_write_delay();
  return train::replica_runner::create(ro, std::move(ctx));
}

// Whether `capability` is this replica's (replica_spec::capability),
// compared in constant time; else invalid_argument naming `operation`.
status check_owner(const replica_spec& spec, const std::string& capability,
                   const char* operation) {
  if (!spec.capability.empty() && security::constant_time_equal(capability, spec.capability))
    return status::ok();
  return invalid_argument(std::string(operation) + " refused by replica " +
                          std::to_string(spec.rank) + " of trainer " + spec.trainer +
                          ": not this replica's owner (the message lacks its capability)");
}

// Runs f() on the worker's runner, or fails if setup has not succeeded.
template <class F>
auto with_runner(replica_actor::stateful_pointer<worker_state> self, int rank, F f)
    -> decltype(f(*self->state.runner)) {
  if (!self->state.runner)
    return to_caf(invalid_argument("replica " + std::to_string(rank) + " is not set up"));
  return f(*self->state.runner);
}

replica_actor::behavior_type replica_worker(replica_actor::stateful_pointer<worker_state> self,
                                            replica_spec spec, rendezvous_actor store,
                                            std::shared_ptr<abort_handle> handle) {
  const int rank = spec.rank;  // at spawn, for errors
  self->state.spec = spec;
  return {
    [=](setup_atom, const std::string& capability) -> caf::result<caf::ok_atom> {
      if (status s = check_owner(spec, capability, "setup"); !s)
        return to_caf(s);
      auto runner = make_runner(self->system(), spec, store, *handle);
      if (!runner)
        return to_caf(runner.error());
      std::shared_ptr<train::replica_runner> shared = std::move(*runner);
      if (auto s = handle->adopt(shared); !s)
        return to_caf(s);
      self->state.runner = std::move(shared);
      if (spec.gpu < 0) {
        self->state.cores = std::make_unique<blas_share>(spec.cpus);
        self->state.cores->refresh();
      }
      return caf::ok_atom::value;
    },
    [=](train_atom, const std::string& capability) -> caf::result<metrics_msg> {
      if (status s = check_owner(spec, capability, "train"); !s)
        return to_caf(s);
      if (self->state.cores)
        self->state.cores->refresh();
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<metrics_msg> {
        auto m = r.train_epoch();
        if (!m)
          return to_caf(m.error());
        self->state.last_epoch = *m;
        return *self->state.last_epoch;
      });
    },
    [=](valid_atom, const std::string& capability) -> caf::result<metrics_msg> {
      if (status s = check_owner(spec, capability, "validate"); !s)
        return to_caf(s);
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<metrics_msg> {
        auto m = r.validate();
        if (!m)
          return to_caf(m.error());
        return *m;
      });
    },
    [=](predict_atom, const std::string& capability, const std::string& input, int64_t begin,
        int64_t end) -> caf::result<predict_chunk> {
      if (status s = check_owner(spec, capability, "predict"); !s)
        return to_caf(s);
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<predict_chunk> {
        auto p = r.predict(input, begin, end);
        if (!p)
          return to_caf(p.error());
        return predict_chunk{begin, p->width, p->target_width, p->classification,
                             std::move(p->outputs), std::move(p->targets)};
      });
    },
    [=](predict_atom, const std::string& capability,
        const std::string& input) -> caf::result<int64_t> {
      if (status s = check_owner(spec, capability, "predict"); !s)
        return to_caf(s);
      // The start of a batch inference: the thread share is set once here,
      // with every replica of the group live, not per chunk, so that a
      // chunk redone after a failure computes with the same threads.
      if (self->state.cores)
        self->state.cores->refresh();
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<int64_t> {
        auto n = r.input_rows(input);
        if (!n)
          return to_caf(n.error());
        return *n;
      });
    },
    [=](save_atom, const std::string& capability, const std::string& path,
        int32_t keep) -> caf::result<caf::ok_atom> {
      if (status s = check_owner(spec, capability, "save"); !s)
        return to_caf(s);
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<caf::ok_atom> {
        const auto& last = self->state.last_epoch;
        const bool after_epoch = last && !last->preempted && last->epoch == r.epochs_done();
        if (auto s = r.save(path, after_epoch ? epoch_manifest_entries(*last) : std::map<std::string, double>{},
                            keep, "");
            !s)
          return to_caf(s);
        return caf::ok_atom::value;
      });
    },
    [=](restore_atom, const std::string& capability,
        const std::string& path) -> caf::result<caf::ok_atom> {
      if (status s = check_owner(spec, capability, "restore"); !s)
        return to_caf(s);
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<caf::ok_atom> {
        if (auto s = r.restore(path); !s)
          return to_caf(s);
        return caf::ok_atom::value;
      });
    },
    [=](params_atom, const std::string& capability) -> caf::result<std::vector<char>> {
      if (status s = check_owner(spec, capability, "params"); !s)
        return to_caf(s);
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<std::vector<char>> {
        auto values = r.parameter_values();
        if (!values)
          return to_caf(values.error());
        const std::vector<float>& v = *values;
        const char* p = reinterpret_cast<const char*>(v.data());
        return std::vector<char>(p, p + v.size() * sizeof(float));
      });
    },
    [=](hash_atom, const std::string& capability) -> caf::result<uint64_t> {
      if (status s = check_owner(spec, capability, "hash"); !s)
        return to_caf(s);
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<uint64_t> {
        auto values = r.parameter_values();
        if (!values)
          return to_caf(values.error());
        const std::vector<float>& v = *values;
        return hash::fnv1a(v.data(), v.size() * sizeof(float));
      });
    },
    [=](preempt_atom, const std::string& capability) -> caf::result<caf::ok_atom> {
      if (status s = check_owner(spec, capability, "preempt"); !s)
        return to_caf(s);
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<caf::ok_atom> {
        r.request_preemption();
        return caf::ok_atom::value;
      });
    },
    [=](reform_atom, const std::string& capability,
        replica_spec& next) -> caf::result<caf::ok_atom> {
      if (status s = check_owner(spec, capability, "reform"); !s)
        return to_caf(s);
      if (next.trainer != spec.trainer || next.capability != spec.capability)
        return to_caf(invalid_argument("reform: replica " + std::to_string(rank) + " of trainer " +
                                       spec.trainer + " cannot move into another trainer's group"));
      return with_runner(self, rank, [&](train::replica_runner& r) -> caf::result<caf::ok_atom> {
        auto comm = make_group_communicator(self->system(), next, store, *handle);
        if (!comm)
          return to_caf(comm.error().with_context("reform (generation " +
                                                  std::to_string(next.generation) + ")"));
        if (status s = r.reform(std::move(*comm), next.local_rank, next.node_rank); !s)
          return to_caf(s);
        self->state.spec = std::move(next);
        return caf::ok_atom::value;
      });
    },
    // The front answers these itself; the worker would only when idle.
    [=](status_atom, const std::string& capability) -> caf::result<int32_t> {
      if (status s = check_owner(spec, capability, "status"); !s)
        return to_caf(s);
      return self->state.spec.rank;
    },
    [=](interrupt_atom, const std::string& capability,
        const std::string& why) -> caf::result<caf::ok_atom> {
      if (status s = check_owner(spec, capability, "interrupt"); !s)
        return to_caf(s);
      handle->interrupt(why);
      return caf::ok_atom::value;
    },
    [=](sync_atom, const std::string& capability) -> caf::result<std::vector<int64_t>> {
      if (status s = check_owner(spec, capability, "sync"); !s)
        return to_caf(s);
      return with_runner(self, rank,
                         [&](train::replica_runner& r) -> caf::result<std::vector<int64_t>> {
        auto done = r.synchronize_state();
        if (!done)
          return to_caf(done.error());
        return std::vector<int64_t>{done->source, done->bytes,
                                    static_cast<int64_t>(done->seconds * 1e6)};
      });
    },
  };
}

} // namespace

replica_actor::behavior_type replica_front(replica_actor::pointer self, replica_spec spec,
                                           caf::actor owner, rendezvous_actor store) {
  auto handle = std::make_shared<abort_handle>();
  auto worker = self->system().spawn<caf::detached>(replica_worker, spec, store, handle);
  ++g_live_workers;
  worker->attach_functor([](const caf::error&) { --g_live_workers; });
  {
    std::lock_guard<std::mutex> lock(hosted().mutex);
    hosted().fronts.push_back(self->address());
  }
  // Leaving for any reason: abort the collectives, then end the worker.
  self->attach_functor([handle, worker](const caf::error& reason) {
    handle->abort("replica stopped: " + caf::to_string(reason));
    caf::anon_send_exit(worker, caf::exit_reason::user_shutdown);
  });
  if (owner) {
    self->monitor(owner);
    self->set_down_handler([=](caf::down_msg& dm) {
      handle->abort("the trainer that owns this replica is gone (" + caf::to_string(dm.reason) + ")");
      self->quit(dm.reason);
    });
  }
  // The worker checks each message's capability (check_owner) itself: its
  // id is known to whoever got an answer from it, so it must not take the
  // front's word.
  return {
    [=](setup_atom a, std::string& c) { return self->delegate(worker, a, std::move(c)); },
    [=](train_atom a, std::string& c) { return self->delegate(worker, a, std::move(c)); },
    [=](valid_atom a, std::string& c) { return self->delegate(worker, a, std::move(c)); },
    [=](save_atom a, std::string& c, std::string& path, int32_t keep) {
      return self->delegate(worker, a, std::move(c), std::move(path), keep);
    },
    [=](restore_atom a, std::string& c, std::string& path) {
      return self->delegate(worker, a, std::move(c), std::move(path));
    },
    [=](params_atom a, std::string& c) { return self->delegate(worker, a, std::move(c)); },
    [=](hash_atom a, std::string& c) { return self->delegate(worker, a, std::move(c)); },
    [=](predict_atom a, std::string& c, std::string& input, int64_t begin, int64_t end) {
      return self->delegate(worker, a, std::move(c), std::move(input), begin, end);
    },
    [=](predict_atom a, std::string& c, std::string& input) {
      return self->delegate(worker, a, std::move(c), std::move(input));
    },
    [=](reform_atom a, std::string& c, replica_spec& next) {
      return self->delegate(worker, a, std::move(c), std::move(next));
    },
    [=](sync_atom a, std::string& c) { return self->delegate(worker, a, std::move(c)); },
    // Not delegated (the worker is busy in its epoch): whether the replica
    // is there, and breaking its collectives.
    [=](status_atom, const std::string& c) -> caf::result<int32_t> {
      if (status s = check_owner(spec, c, "status"); !s)
        return to_caf(s);
      return spec.rank;
    },
    [=](interrupt_atom, const std::string& c, const std::string& why) -> caf::result<caf::ok_atom> {
      if (status s = check_owner(spec, c, "interrupt"); !s)
        return to_caf(s);
      handle->interrupt(why);
      return caf::ok_atom::value;
    },
    // Not delegated: the worker is busy in its epoch; the flag is atomic.
    [=](preempt_atom, const std::string& c) -> caf::result<caf::ok_atom> {
      if (status s = check_owner(spec, c, "preempt"); !s)
        return to_caf(s);
      return handle->preempt();
    },
  };
}

int stop_hosted_replicas() {
  std::lock_guard<std::mutex> lock(hosted().mutex);
  int running = 0;
  for (auto& addr : hosted().fronts)
    if (auto front = caf::actor_cast<caf::actor>(addr)) {
      caf::anon_send_exit(front, caf::exit_reason::user_shutdown);
      ++running;
    }
  hosted().fronts.clear();
  return running;
}

int live_replica_workers() { return g_live_workers.load(); }

int hosted_replica_count() {
  std::lock_guard<std::mutex> lock(hosted().mutex);
  int running = 0;
  for (auto& addr : hosted().fronts)
    running += caf::actor_cast<caf::actor>(addr) ? 1 : 0;
  return running;
}

} // namespace dtrain::actors
