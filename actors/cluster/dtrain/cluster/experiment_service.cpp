#include "dtrain/cluster/experiment_service.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <utility>
#include <vector>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/cluster/job_thread.hpp"
#include "dtrain/core/files.hpp"

namespace dtrain::experiments {

using actors::job_thread;
using actors::to_caf;

namespace {

// The service's own message: jobs are done, their replies wait (sent by
// the worker; not in the typed interface, so the default handler takes it).
using replies_atom = caf::atom_constant<caf::atom("xreplies")>;

// How long the service's end lets queued jobs run (service.hpp).
constexpr std::chrono::seconds shutdown_bound{5};

} // namespace

// A reply, made on the worker and delivered on the service.
using reply = std::function<void(caf::response_promise&)>;

struct service_jobs : std::enable_shared_from_this<service_jobs> {
  job_thread thread{"dtrain-xstore"};
  store_side side;               // jobs only
  caf::weak_actor_ptr service;   // weak: no cycle through the state
  // The actor's: promises by job, and the next job's number.
  std::map<uint64_t, caf::response_promise> waiting;
  uint64_t next = 0;
  // The worker's finished replies, until the service delivers them.
  std::mutex mutex;
  std::vector<std::pair<uint64_t, reply>> done;

  // On the worker (or stop()'s caller, for a dropped job).
  void finish(uint64_t id, reply r) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      done.emplace_back(id, std::move(r));
    }
    if (auto strong = service.lock())
      caf::anon_send(caf::actor_cast<caf::actor>(strong), replies_atom::value);
  }
  // On the actor: queues `job`, whose reply goes to `rp`.
  void ask(caf::response_promise rp, std::function<reply(store_side&)> job);
  // On the actor: delivers the finished replies.
  void deliver_done();
  // On the actor's cleanup: stops the worker (bounded), delivers what
  // finished and fails the rest at once.
  void stop(const caf::error& reason);
};

namespace {

reply error_reply(const status& e) {
  return [err = to_caf(e)](caf::response_promise& rp) { rp.deliver(err); };
}

template <class T>
reply value_reply(result<T> out) {
  if (!out)
    return error_reply(out.error());
  return [v = std::move(*out)](caf::response_promise& rp) mutable { rp.deliver(std::move(v)); };
}

} // namespace

void service_jobs::ask(caf::response_promise rp, std::function<reply(store_side&)> job) {
  const uint64_t id = next++;
  waiting.emplace(id, std::move(rp));
  auto self = shared_from_this();
  const bool queued = thread.post([self, id, job] { self->finish(id, job(self->side)); },
                                  [self, id] {
                                    self->finish(id, error_reply(status(
                                        error_code::unavailable,
                                        "the experiment service stopped before the request ran")));
                                  });
  if (!queued)
    finish(id, error_reply(status(error_code::unavailable, "the experiment service is stopping")));
}

void service_jobs::deliver_done() {
  std::vector<std::pair<uint64_t, reply>> ready;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ready.swap(done);
  }
  for (auto& [id, r] : ready)
    if (auto it = waiting.find(id); it != waiting.end()) {
      r(it->second);
      waiting.erase(it);
    }
}

void service_jobs::stop(const caf::error& reason) {
  // The store closes on the worker too, after the queued jobs (its
  // destructor may wait for its own writer).
  thread.post([self = shared_from_this()] { self->side.store.reset(); });
  thread.stop(shutdown_bound);
  deliver_done();
  const caf::error gone = reason ? reason : caf::make_error(caf::sec::request_receiver_down);
  for (auto& [id, rp] : waiting)
    rp.deliver(gone);
  waiting.clear();
}

namespace {

using self_ptr = experiment_service::stateful_pointer<service_state>;

// The open store, opening it first when needed; the error names the path.
// On the worker.
result<experiments::experiment_store*> opened(store_side& s) {
  if (s.store)
    return s.store.get();
  if (!s.open)
    return status(error_code::unavailable, "no experiment store is configured for this head");
  auto store = s.open();
  if (!store) {
    const status& e = store.error();
    if (e.message().find(s.path) != std::string::npos)
      return e;
    return e.with_context("experiment store " + s.path);
  }
  s.store = std::move(*store);
  return s.store.get();
}

// ok when `session` may do `op` (service.hpp); a refusal is said on the
// head's stderr too, naming the process.
status permitted(service_state& s, const std::string& session, const char* op) {
  const auto& sender = s.self->current_sender();
  const caf::node_id peer = sender ? sender->node() : caf::node_id{};
  status out = s.sessions ? s.sessions->allowed(session, peer, s.self->node(),
                                                security::role::client, op)
                          : status(error_code::internal,
                                   std::string(op) + ": the service has no sessions");
  if (!out) {
    std::fprintf(stderr, "dtrain head: experiment service refused process %s: %s\n",
                 caf::to_string(peer).c_str(), out.message().c_str());
    std::fflush(stderr);
  }
  return out;
}

// A request answered by a job on the worker: `job`'s result as the reply,
// delivered by the service once the job is done.
template <class T>
caf::result<T> reply_later(service_state& s, std::function<result<T>(store_side&)> job) {
  auto rp = s.self->make_response_promise<T>();
  s.jobs->ask(rp, [job = std::move(job)](store_side& side) { return value_reply(job(side)); });
  return rp;
}

// A request of `session`, when it may (permitted): runs `call` on the open
// store (on the worker); its status as the reply. `call` is run later: it
// must own what it uses.
template <class T, class Call>
caf::result<T> answer(service_state& s, const std::string& session, const char* op, Call&& call) {
  if (status no = permitted(s, session, op); !no)
    return to_caf(no);
  return reply_later<T>(s, [op, call = std::forward<Call>(call)](store_side& side) -> result<T> {
    auto store = opened(side);
    if (!store)
      return store.error().with_context(op);
    result<T> out = call(**store);
    if (!out)
      return out.error().with_context(op);
    return out;
  });
}

// A one-way write of rows of `experiments`, run on the worker: its error is
// kept for each of them, until a flush names it. `call` must own what it uses.
// A refused write (permitted) is dropped: its error is kept for no
// experiment, so that a forger cannot fail another client's flush.
template <class Call>
void write(service_state& s, const std::string& session, const std::vector<int64_t>& experiments,
           const char* op, Call&& call) {
  if (!permitted(s, session, op))
    return;
  s.jobs->thread.post([jobs = s.jobs, experiments, op, call = std::forward<Call>(call)] {
    store_side& side = jobs->side;
    auto store = opened(side);
    status out = store ? call(**store) : store.error();
    if (!out)
      for (int64_t id : experiments)
        side.write_errors.keep(id, out.with_context(op));
  });
}

// The experiments that `rows` write to, each once.
std::vector<int64_t> experiments_of(const std::vector<experiments::metric_row>& rows) {
  std::vector<int64_t> ids;
  for (const experiments::metric_row& m : rows)
    if (std::find(ids.begin(), ids.end(), m.experiment) == ids.end())
      ids.push_back(m.experiment);
  return ids;
}

// update_experiment, unless it changes the experiment's storage: that
// directory is what `dtrain experiments delete` removes. A new experiment
// gets it once its id is known (from "").
status update_keeping_storage(experiments::experiment_store& st, const experiments::experiment_row& e) {
  auto now = st.experiment(e.id);
  if (now && !now->storage.empty() && now->storage != e.storage)
    return invalid_argument("experiment " + std::to_string(e.id) +
                            ": its storage (the checkpoint directory) cannot change: it is '" +
                            now->storage + "', the update says '" + e.storage + "'");
  return st.update_experiment(e);
}

} // namespace

std::string default_store_path() { return dtrain_home() + "/experiments.db"; }

store_opener sqlite_opener(const std::string& path) {
  return [path] { return experiments::open_sqlite_store(path); };
}

experiment_service::behavior_type service_impl(self_ptr self, store_opener open, std::string path,
                                               std::shared_ptr<const actors::session_directory> sessions) {
  self->state.sessions = std::move(sessions);
  auto jobs = std::make_shared<service_jobs>();
  jobs->side.open = std::move(open);
  jobs->side.path = path;
  self->state.path = std::move(path);
  jobs->service = self->ctrl();
  self->state.self = self;
  self->state.jobs = jobs;
  // Outside the state, which is gone when attached functors run.
  self->attach_functor([jobs](const caf::error& reason) { jobs->stop(reason); });
  self->set_default_handler([jobs](caf::scheduled_actor* me,
                                   caf::message_view& x) -> caf::result<caf::message> {
    if (x.content().match_elements<replies_atom>()) {
      jobs->deliver_done();
      return caf::message{};
    }
    // Not printed: a message of another dtrain version would carry its
    // session token into the head's log.
    const auto& sender = me->current_sender();
    std::fprintf(stderr, "dtrain head: the experiment service dropped a message it does not "
                 "know from process %s (a client of another dtrain version?)\n",
                 sender ? caf::to_string(sender->node()).c_str() : "unknown");
    return caf::drop(me, x);
  });
  auto& s = self->state;
  return {
      [=, &s](create_atom, const std::string& session,
              const experiment_row& e) -> caf::result<int64_t> {
        return answer<int64_t>(s, session, "create_experiment",
                               [=](experiment_store& st) { return st.create_experiment(e); });
      },
      [=, &s](update_atom, const std::string& session, const experiment_row& e) {
        write(s, session, {e.id}, "update_experiment",
              [=](experiment_store& st) { return update_keeping_storage(st, e); });
      },
      [=, &s](read_atom, const std::string& session, int64_t id) -> caf::result<experiment_row> {
        return answer<experiment_row>(s, session, "experiment",
                                      [=](experiment_store& st) { return st.experiment(id); });
      },
      [=, &s](list_atom, const std::string& session) -> caf::result<std::vector<experiment_row>> {
        return answer<std::vector<experiment_row>>(s, session, "experiments",
            [=](experiment_store& st) { return st.experiments(); });
      },
      [=, &s](delete_atom, const std::string& session, int64_t id) -> caf::result<caf::ok_atom> {
        return answer<caf::ok_atom>(s, session, "delete_experiment", [=](experiment_store& st) {
          status d = st.delete_experiment(id);
          return d ? result<caf::ok_atom>(caf::ok_atom::value) : result<caf::ok_atom>(d);
        });
      },
      [=, &s](put_trial_atom, const std::string& session, const trial_row& t) {
        write(s, session, {t.experiment}, "put_trial",
            [=](experiment_store& st) { return st.put_trial(t); });
      },
      [=, &s](trials_atom, const std::string& session,
              int64_t experiment) -> caf::result<std::vector<trial_row>> {
        return answer<std::vector<trial_row>>(s, session, "trials",
            [=](experiment_store& st) { return st.trials(experiment); });
      },
      [=, &s](add_metrics_atom, const std::string& session, const std::vector<metric_row>& rows) {
        write(s, session, experiments_of(rows), "add_metrics",
            [=](experiment_store& st) { return st.add_metrics(rows); });
      },
      [=, &s](metrics_atom, const std::string& session, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<metric_row>> {
        return answer<std::vector<metric_row>>(s, session, "metrics",
            [=](experiment_store& st) { return st.metrics(experiment, trial); });
      },
      [=, &s](put_ckpt_atom, const std::string& session, const checkpoint_row& c) {
        write(s, session, {c.experiment}, "put_checkpoint",
              [=](experiment_store& st) { return st.put_checkpoint(c); });
      },
      [=, &s](ckpts_atom, const std::string& session, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<checkpoint_row>> {
        return answer<std::vector<checkpoint_row>>(s, session, "checkpoints",
            [=](experiment_store& st) { return st.checkpoints(experiment, trial); });
      },
      [=, &s](add_lineage_atom, const std::string& session, const lineage_row& l) {
        write(s, session, {l.experiment}, "add_lineage",
            [=](experiment_store& st) { return st.add_lineage(l); });
      },
      [=, &s](lineage_atom, const std::string& session,
              int64_t experiment) -> caf::result<std::vector<lineage_row>> {
        return answer<std::vector<lineage_row>>(s, session, "lineage",
            [=](experiment_store& st) { return st.lineage(experiment); });
      },
      [=, &s](add_event_atom, const std::string& session, const event_row& e) {
        write(s, session, {e.experiment}, "add_event",
            [=](experiment_store& st) { return st.add_event(e); });
      },
      [=, &s](events_atom, const std::string& session, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<event_row>> {
        return answer<std::vector<event_row>>(s, session, "events",
            [=](experiment_store& st) { return st.events(experiment, trial); });
      },
      [=, &s](flush_atom, const std::string& session,
              const std::vector<int64_t>& experiments) -> caf::result<caf::ok_atom> {
        if (auto no = permitted(s, session, "flush"); !no)
          return to_caf(no);
        // The store is flushed whatever the service kept: its durability
        // and its own errors of these experiments. On the worker, after
        // every write that came before the flush.
        return reply_later<caf::ok_atom>(s, [experiments](store_side& side) -> result<caf::ok_atom> {
          const status kept = side.write_errors.take(experiments);
          auto store = opened(side);
          status flushed = store ? (*store)->flush_experiments(experiments) : store.error();
          if (!kept)
            return kept;
          if (!flushed)
            return flushed.with_context("flush");
          return caf::ok_atom::value;
        });
      },
      [=, &s](where_atom, const std::string& session) -> caf::result<std::string> {
        if (auto no = permitted(s, session, "where"); !no)
          return to_caf(no);
        return s.path;
      },
  };
}

experiment_service spawn_experiment_service(caf::actor_system& sys, store_opener open,
                                            std::string path,
                                            std::shared_ptr<const actors::session_directory> sessions) {
  return sys.spawn(service_impl, std::move(open), std::move(path), std::move(sessions));
}

} // namespace dtrain::experiments
