#include "dtrain/actors/experiments/service.hpp"

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

// A one-way write: its error is kept for the client's next flush.
template <class Call>
void write(service_state& s, const std::string& client, const char* op, Call&& call) {
  auto store = opened(s);
  status out = store ? call(**store) : store.error();
  if (!out && !s.write_errors.count(client))
    s.write_errors.emplace(client, out.with_context(op));
}

} // namespace

std::string default_store_path() { return dtrain_home() + "/experiments.db"; }

store_opener sqlite_opener(const std::string& path) {
  return [path] { return store::open_sqlite_store(path); };
}

experiment_service::behavior_type service_impl(self_ptr self, store_opener open, std::string path) {
  self->state.open = std::move(open);
  self->state.path = std::move(path);
  using namespace store;
  auto& s = self->state;
  return {
      [=, &s](create_atom, const experiment_row& e) -> caf::result<int64_t> {
        return answer<int64_t>(s, "create_experiment",
                               [&](experiment_store& st) { return st.create_experiment(e); });
      },
      [=, &s](update_atom, const std::string& client, const experiment_row& e) {
        write(s, client, "update_experiment",
              [&](experiment_store& st) { return st.update_experiment(e); });
      },
      [=, &s](read_atom, int64_t id) -> caf::result<experiment_row> {
        return answer<experiment_row>(s, "experiment",
                                      [&](experiment_store& st) { return st.experiment(id); });
      },
      [=, &s](list_atom) -> caf::result<std::vector<experiment_row>> {
        return answer<std::vector<experiment_row>>(
            s, "experiments", [&](experiment_store& st) { return st.experiments(); });
      },
      [=, &s](delete_atom, int64_t id) -> caf::result<caf::ok_atom> {
        return answer<caf::ok_atom>(s, "delete_experiment", [&](experiment_store& st) {
          status d = st.delete_experiment(id);
          return d ? result<caf::ok_atom>(caf::ok_atom::value) : result<caf::ok_atom>(d);
        });
      },
      [=, &s](put_trial_atom, const std::string& client, const trial_row& t) {
        write(s, client, "put_trial", [&](experiment_store& st) { return st.put_trial(t); });
      },
      [=, &s](trials_atom, int64_t experiment) -> caf::result<std::vector<trial_row>> {
        return answer<std::vector<trial_row>>(
            s, "trials", [&](experiment_store& st) { return st.trials(experiment); });
      },
      [=, &s](add_metrics_atom, const std::string& client, const std::vector<metric_row>& rows) {
        write(s, client, "add_metrics", [&](experiment_store& st) { return st.add_metrics(rows); });
      },
      [=, &s](metrics_atom, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<metric_row>> {
        return answer<std::vector<metric_row>>(
            s, "metrics", [&](experiment_store& st) { return st.metrics(experiment, trial); });
      },
      [=, &s](put_ckpt_atom, const std::string& client, const checkpoint_row& c) {
        write(s, client, "put_checkpoint",
              [&](experiment_store& st) { return st.put_checkpoint(c); });
      },
      [=, &s](ckpts_atom, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<checkpoint_row>> {
        return answer<std::vector<checkpoint_row>>(
            s, "checkpoints",
            [&](experiment_store& st) { return st.checkpoints(experiment, trial); });
      },
      [=, &s](add_lineage_atom, const std::string& client, const lineage_row& l) {
        write(s, client, "add_lineage", [&](experiment_store& st) { return st.add_lineage(l); });
      },
      [=, &s](lineage_atom, int64_t experiment) -> caf::result<std::vector<lineage_row>> {
        return answer<std::vector<lineage_row>>(
            s, "lineage", [&](experiment_store& st) { return st.lineage(experiment); });
      },
      [=, &s](add_event_atom, const std::string& client, const event_row& e) {
        write(s, client, "add_event", [&](experiment_store& st) { return st.add_event(e); });
      },
      [=, &s](events_atom, int64_t experiment,
              const std::string& trial) -> caf::result<std::vector<event_row>> {
        return answer<std::vector<event_row>>(
            s, "events", [&](experiment_store& st) { return st.events(experiment, trial); });
      },
      [=, &s](flush_atom, const std::string& client) -> caf::result<caf::ok_atom> {
        auto kept = s.write_errors.find(client);
        if (kept != s.write_errors.end()) {
          status first = kept->second;
          s.write_errors.erase(kept);
          return to_caf(first);
        }
        return answer<caf::ok_atom>(s, "flush", [&](experiment_store& st) {
          status f = st.flush();
          return f ? result<caf::ok_atom>(caf::ok_atom::value) : result<caf::ok_atom>(f);
        });
      },
      [=, &s](where_atom) -> std::string { return s.path; },
  };
}

experiment_service spawn_experiment_service(caf::actor_system& sys, store_opener open,
                                            std::string path) {
  return sys.spawn(service_impl, std::move(open), std::move(path));
}

} // namespace dtrain::actors::experiments
