#include "dtrain/actors/experiments/service.hpp"

#include <algorithm>
#include <cstdio>

#include "dtrain/actors/errors.hpp"
#include "dtrain/core/files.hpp"

namespace dtrain::actors::experiments {

namespace {

using self_ptr = experiment_service::stateful_pointer<service_state>;

// The open store, opening it first when needed; the error names the path.
result<store::experiment_store*> opened(service_state& s) {
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

// A request: runs `call` on the open store; its status as the reply.
template <class T, class Call>
caf::result<T> answer(service_state& s, const char* op, Call&& call) {
  auto store = opened(s);
  if (!store)
    return to_caf(store.error().with_context(op));
  result<T> out = call(**store);
  if (!out)
    return to_caf(out.error().with_context(op));
  return std::move(*out);
}

// A one-way write of rows of `experiments`: its error is kept for each of
// them, until a flush names it.
template <class Call>
void write(service_state& s, const std::vector<int64_t>& experiments, const char* op,
           Call&& call) {
  auto store = opened(s);
  status out = store ? call(**store) : store.error();
  if (!out)
    for (int64_t id : experiments)
      s.write_errors.keep(id, out.with_context(op));
}

// The experiments that `rows` write to, each once.
std::vector<int64_t> experiments_of(const std::vector<store::metric_row>& rows) {
  std::vector<int64_t> ids;
  for (const store::metric_row& m : rows)
    if (std::find(ids.begin(), ids.end(), m.experiment) == ids.end())
      ids.push_back(m.experiment);
  return ids;
}

// update_experiment, unless it changes the experiment's storage: that
// directory is what `dtrain experiments delete` removes. A new experiment
// gets it once its id is known (from "").
status update_keeping_storage(store::experiment_store& st, const store::experiment_row& e) {
  auto now = st.experiment(e.id);
  if (now && !now->storage.empty() && now->storage != e.storage)
    return invalid_argument("experiment " + std::to_string(e.id) +
                            ": its storage (the checkpoint directory) cannot change: it is '" +
                            now->storage + "', the update says '" + e.storage + "'");
  return st.update_experiment(e);
}

// ok when `session` may do `op` (service.hpp); a refusal is said on the
// head's stderr too, naming the process.
status permitted(self_ptr self, const std::string& session, const char* op) {
  const auto& sender = self->current_sender();
  const caf::node_id peer = sender ? sender->node() : caf::node_id{};
  status s = self->state.sessions
                 ? self->state.sessions->allowed(session, peer, self->node(),
                                                 security::role::client, op)
                 : status(error_code::internal, std::string(op) + ": the service has no sessions");
  if (!s) {
    std::fprintf(stderr, "dtrain head: experiment service refused process %s: %s\n",
                 caf::to_string(peer).c_str(), s.message().c_str());
    std::fflush(stderr);
  }
  return s;
}

} // namespace

std::string default_store_path() { return dtrain_home() + "/experiments.db"; }

store_opener sqlite_opener(const std::string& path) {
  return [path] { return store::open_sqlite_store(path); };
}

experiment_service::behavior_type service_impl(self_ptr self, store_opener open, std::string path,
                                               std::shared_ptr<const session_directory> sessions) {
  self->state.open = std::move(open);
  self->state.path = std::move(path);
  self->state.sessions = std::move(sessions);
  using namespace store;
  auto& s = self->state;
  return {
      [=, &s](create_atom, const std::string& session,
              const experiment_row& e) -> caf::result<int64_t> {
        if (auto no = permitted(self, session, "create_experiment"); !no)
          return to_caf(no);
        return answer<int64_t>(s, "create_experiment",
                               [&](experiment_store& st) { return st.create_experiment(e); });
      },
      [=, &s](update_atom, const std::string& session, const experiment_row& e) {
        if (!permitted(self, session, "update_experiment"))
          return;
        write(s, {e.id}, "update_experiment",
              [&](experiment_store& st) { return update_keeping_storage(st, e); });
      },
      [=, &s](read_atom, const std::string& session, int64_t id) -> caf::result<experiment_row> {
        if (auto no = permitted(self, session, "experiment"); !no)
          return to_caf(no);
        return answer<experiment_row>(s, "experiment",
                                      [&](experiment_store& st) { return st.experiment(id); });
      },
      [=, &s](list_atom, const std::string& session) -> caf::result<std::vector<experiment_row>> {
        if (auto no = permitted(self, session, "experiments"); !no)
          return to_caf(no);
        return answer<std::vector<experiment_row>>(
            s, "experiments", [&](experiment_store& st) { return st.experiments(); });
      },
      [=, &s](delete_atom, const std::string& session, int64_t id) -> caf::result<caf::ok_atom> {
        if (auto no = permitted(self, session, "delete_experiment"); !no)
          return to_caf(no);
        return answer<caf::ok_atom>(s, "delete_experiment", [&](experiment_store& st) {
          status d = st.delete_experiment(id);
          return d ? result<caf::ok_atom>(caf::ok_atom::value) : result<caf::ok_atom>(d);
        });
      },
      [=, &s](put_trial_atom, const std::string& session, const trial_row& t) {
        if (!permitted(self, session, "put_trial"))
          return;
        write(s, {t.experiment}, "put_trial", [&](experiment_store& st) { return st.put_trial(t); });
      },
      [=, &s](trials_atom, const std::string& session,
              int64_t experiment) -> caf::result<std::vector<trial_row>> {
        if (auto no = permitted(self, session, "trials"); !no)
          return to_caf(no);
        return answer<std::vector<trial_row>>(
            s, "trials", [&](experiment_store& st) { return st.trials(experiment); });
      },
      [=, &s](add_metrics_atom, const std::string& session, const std::vector<metric_row>& rows) {
        if (!permitted(self, session, "add_metrics"))
          return;
        write(s, experiments_of(rows), "add_metrics", [&](experiment_store& st) { return st.add_metrics(rows); });
      },
      [=, &s](metrics_atom, const std::string& session, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<metric_row>> {
        if (auto no = permitted(self, session, "metrics"); !no)
          return to_caf(no);
        return answer<std::vector<metric_row>>(
            s, "metrics", [&](experiment_store& st) { return st.metrics(experiment, trial); });
      },
      [=, &s](put_ckpt_atom, const std::string& session, const checkpoint_row& c) {
        if (!permitted(self, session, "put_checkpoint"))
          return;
        write(s, {c.experiment}, "put_checkpoint",
              [&](experiment_store& st) { return st.put_checkpoint(c); });
      },
      [=, &s](ckpts_atom, const std::string& session, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<checkpoint_row>> {
        if (auto no = permitted(self, session, "checkpoints"); !no)
          return to_caf(no);
        return answer<std::vector<checkpoint_row>>(
            s, "checkpoints",
            [&](experiment_store& st) { return st.checkpoints(experiment, trial); });
      },
      [=, &s](add_lineage_atom, const std::string& session, const lineage_row& l) {
        if (!permitted(self, session, "add_lineage"))
          return;
        write(s, {l.experiment}, "add_lineage", [&](experiment_store& st) { return st.add_lineage(l); });
      },
      [=, &s](lineage_atom, const std::string& session,
              int64_t experiment) -> caf::result<std::vector<lineage_row>> {
        if (auto no = permitted(self, session, "lineage"); !no)
          return to_caf(no);
        return answer<std::vector<lineage_row>>(
            s, "lineage", [&](experiment_store& st) { return st.lineage(experiment); });
      },
      [=, &s](add_event_atom, const std::string& session, const event_row& e) {
        if (!permitted(self, session, "add_event"))
          return;
        write(s, {e.experiment}, "add_event", [&](experiment_store& st) { return st.add_event(e); });
      },
      [=, &s](events_atom, const std::string& session, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<event_row>> {
        if (auto no = permitted(self, session, "events"); !no)
          return to_caf(no);
        return answer<std::vector<event_row>>(
            s, "events", [&](experiment_store& st) { return st.events(experiment, trial); });
      },
      [=, &s](flush_atom, const std::string& session,
              const std::vector<int64_t>& experiments) -> caf::result<caf::ok_atom> {
        if (auto no = permitted(self, session, "flush"); !no)
          return to_caf(no);
        // The store is flushed whatever the service kept: its durability
        // and its own errors of these experiments.
        const status kept = s.write_errors.take(experiments);
        auto flushed = answer<caf::ok_atom>(s, "flush", [&](experiment_store& st) {
          status f = st.flush_experiments(experiments);
          return f ? result<caf::ok_atom>(caf::ok_atom::value) : result<caf::ok_atom>(f);
        });
        if (!kept)
          return to_caf(kept);
        return flushed;
      },
      [=, &s](where_atom, const std::string& session) -> caf::result<std::string> {
        if (auto no = permitted(self, session, "where"); !no)
          return to_caf(no);
        return s.path;
      },
  };
}

experiment_service spawn_experiment_service(caf::actor_system& sys, store_opener open,
                                            std::string path,
                                            std::shared_ptr<const session_directory> sessions) {
  return sys.spawn(service_impl, std::move(open), std::move(path), std::move(sessions));
}

} // namespace dtrain::actors::experiments
