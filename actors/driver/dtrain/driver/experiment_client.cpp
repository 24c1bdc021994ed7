#include "dtrain/driver/experiment_client.hpp"

#include "dtrain/cluster/errors.hpp"

namespace dtrain::experiments {

using actors::from_caf;

service_client::service_client(caf::actor_system& sys, experiment_service service,
                               std::string session, std::string where,
                               std::chrono::milliseconds timeout)
  // Hidden: a client someone forgot must not hold up the system's shutdown.
  : self_(sys, true), service_(std::move(service)), where_(std::move(where)),
    timeout_(timeout), session_(std::move(session)) {}

std::string service_client::context(const char* op) const {
  return "experiment store at " + where_ + ": " + op;
}

std::string service_client::error_context(const caf::error& e, const char* op) const {
  // The service's own errors name the operation already (for a write's
  // error returned by flush, the write's); CAF's (a timeout) do not.
  if (e.category() == caf::atom("dtrain"))
    return "experiment store at " + where_;
  return context(op);
}

template <class T, class... Ts>
result<T> service_client::ask(const char* op, const Ts&... xs) {
  std::lock_guard<std::mutex> lock(mutex_);
  result<T> out{status(error_code::internal, context(op) + ": no reply")};
  self_->request(service_, timeout_, xs...)
      .receive([&](T& value) { out = std::move(value); },
               [&](caf::error& e) { out = from_caf(e, error_context(e, op)); });
  return out;
}

template <class... Ts>
status service_client::tell(const std::vector<int64_t>& experiments, const Ts&... xs) {
  std::lock_guard<std::mutex> lock(mutex_);
  written_.insert(experiments.begin(), experiments.end());
  self_->send(service_, xs...);
  return status::ok();
}

result<int64_t> service_client::create_experiment(const experiments::experiment_row& e) {
  return ask<int64_t>("create_experiment", create_atom::value, session_, e);
}

status service_client::update_experiment(const experiments::experiment_row& e) {
  return tell({e.id}, update_atom::value, session_, e);
}

result<experiments::experiment_row> service_client::experiment(int64_t id) {
  return ask<experiments::experiment_row>("experiment", read_atom::value, session_, id);
}

result<std::vector<experiments::experiment_row>> service_client::experiments() {
  return ask<std::vector<experiments::experiment_row>>("experiments", list_atom::value, session_);
}

status service_client::delete_experiment(int64_t id) {
  return ask<caf::ok_atom>("delete_experiment", delete_atom::value, session_, id).to_status();
}

status service_client::put_trial(const experiments::trial_row& t) {
  return tell({t.experiment}, put_trial_atom::value, session_, t);
}

result<std::vector<experiments::trial_row>> service_client::trials(int64_t experiment) {
  return ask<std::vector<experiments::trial_row>>("trials", trials_atom::value, session_, experiment);
}

status service_client::add_metrics(const std::vector<experiments::metric_row>& rows) {
  std::vector<int64_t> experiments;
  for (const experiments::metric_row& m : rows)
    if (experiments.empty() || experiments.back() != m.experiment)
      experiments.push_back(m.experiment);
  return tell(experiments, add_metrics_atom::value, session_, rows);
}

result<std::vector<experiments::metric_row>> service_client::metrics(int64_t experiment,
                                                               const std::string& trial) {
  return ask<std::vector<experiments::metric_row>>("metrics", metrics_atom::value, session_, experiment,
                                             trial);
}

status service_client::put_checkpoint(const experiments::checkpoint_row& c) {
  return tell({c.experiment}, put_ckpt_atom::value, session_, c);
}

result<std::vector<experiments::checkpoint_row>> service_client::checkpoints(int64_t experiment,
                                                                       const std::string& trial) {
  return ask<std::vector<experiments::checkpoint_row>>("checkpoints", ckpts_atom::value, session_,
                                                 experiment, trial);
}

status service_client::add_lineage(const experiments::lineage_row& l) {
  return tell({l.experiment}, add_lineage_atom::value, session_, l);
}

result<std::vector<experiments::lineage_row>> service_client::lineage(int64_t experiment) {
  return ask<std::vector<experiments::lineage_row>>("lineage", lineage_atom::value, session_, experiment);
}

status service_client::add_event(const experiments::event_row& e) {
  return tell({e.experiment}, add_event_atom::value, session_, e);
}

result<std::vector<experiments::event_row>> service_client::events(int64_t experiment,
                                                             const std::string& trial) {
  return ask<std::vector<experiments::event_row>>("events", events_atom::value, session_, experiment,
                                            trial);
}

status service_client::flush() {
  std::lock_guard<std::mutex> lock(mutex_);
  status out = status(error_code::internal, context("flush") + ": no reply");
  const std::vector<int64_t> experiments(written_.begin(), written_.end());
  self_->request(service_, timeout_, flush_atom::value, session_, experiments)
      .receive([&](caf::ok_atom) { out = status::ok(); },
               [&](caf::error& e) { out = from_caf(e, error_context(e, "flush")); });
  return out;
}

} // namespace dtrain::experiments
