#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "caf/all.hpp"
#include "dtrain/experiments/store.hpp"

/// The wire form of the experiment store (store/experiment_store.hpp):
/// inspect() for every row type, the atoms, and the typed interface of the
/// experiment service (service.hpp). register_experiment_types() announces
/// them; actors::register_types() calls it, so every dtrain process agrees.
namespace dtrain::experiments {

/// A double as its 64 bits on the wire. CAF 0.17 packs doubles with
/// pack754, which loops forever on +-infinity and mangles NaN; the store's
/// contract is that every value reads back as it was written.
struct wire_double {
  double& value;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wire_double& x) {
  if constexpr (std::is_base_of<caf::deserializer, Inspector>::value) {
    uint64_t bits = 0;
    return caf::error::eval([&] { return f(bits); },
                            [&] {
                              std::memcpy(&x.value, &bits, sizeof bits);
                              return caf::error{};
                            });
  } else if constexpr (std::is_base_of<caf::serializer, Inspector>::value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &x.value, sizeof bits);
    return f(bits);
  } else {
    return f(x.value);  // printing (deep_to_string)
  }
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, experiment_row& x) {
  wire_double created{x.created_at}, updated{x.updated_at}, ended{x.ended_at};
  return f(caf::meta::type_name("experiment_row"), x.id, x.name, x.kind, x.configuration,
           x.config_hash, x.state, x.storage, x.metric, x.minimize, created, updated, ended,
           x.owner, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trial_row& x) {
  wire_double best{x.best}, last{x.last}, started{x.started_at}, ended{x.ended_at};
  return f(caf::meta::type_name("trial_row"), x.experiment, x.id, x.seq_created,
           x.hyperparameters, x.state, x.restarts, x.error, best, last, x.epochs,
           x.checkpoint_dir, x.seq_ended, x.end_how, started, ended);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_row& x) {
  wire_double value{x.value}, time{x.time};
  return f(caf::meta::type_name("metric_row"), x.experiment, x.trial, x.epoch, x.name, value,
           x.seq, time);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_row& x) {
  wire_double metric{x.metric}, time{x.time};
  return f(caf::meta::type_name("checkpoint_row"), x.experiment, x.trial, x.epoch, x.path,
           metric, x.valid, x.seq, time);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lineage_row& x) {
  wire_double time{x.time};
  return f(caf::meta::type_name("lineage_row"), x.experiment, x.trial, x.seq, x.epoch, x.source,
           x.source_epoch, x.before, x.after, time);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_row& x) {
  wire_double time{x.time};
  return f(caf::meta::type_name("event_row"), x.experiment, x.trial, x.seq, x.epoch, time, x.kind,
           x.message);
}

} // namespace dtrain::experiments

namespace dtrain::experiments {

// Atoms: at most 10 characters (CAF 0.17); one per store operation.
using create_atom = caf::atom_constant<caf::atom("xcreate")>;
using update_atom = caf::atom_constant<caf::atom("xupdate")>;
using read_atom = caf::atom_constant<caf::atom("xread")>;
using list_atom = caf::atom_constant<caf::atom("xlist")>;
using delete_atom = caf::atom_constant<caf::atom("xdelete")>;
using put_trial_atom = caf::atom_constant<caf::atom("xputtrial")>;
using trials_atom = caf::atom_constant<caf::atom("xtrials")>;
using add_metrics_atom = caf::atom_constant<caf::atom("xaddmetric")>;
using metrics_atom = caf::atom_constant<caf::atom("xmetrics")>;
using put_ckpt_atom = caf::atom_constant<caf::atom("xputckpt")>;
using ckpts_atom = caf::atom_constant<caf::atom("xckpts")>;
using add_lineage_atom = caf::atom_constant<caf::atom("xaddlin")>;
using lineage_atom = caf::atom_constant<caf::atom("xlineage")>;
using add_event_atom = caf::atom_constant<caf::atom("xaddevent")>;
using events_atom = caf::atom_constant<caf::atom("xevents")>;
using flush_atom = caf::atom_constant<caf::atom("xflush")>;
using where_atom = caf::atom_constant<caf::atom("xwhere")>;

/// The experiment service (service.hpp): one message per
/// experiments::experiment_store call, each with the sender's session token
/// first (head_auth.hpp: the token its process got when it proved a
/// certificate to the head; "" on a plain cluster), which the service
/// checks. Reads and create/delete are requests; the writes are one-way.
/// The service keeps a write's error for the experiment it wrote until a
/// flush (a request) names that experiment; a client's flush names every
/// experiment it wrote. `where` answers the store's path.
using experiment_service = caf::typed_actor<
    caf::replies_to<create_atom, std::string, experiments::experiment_row>::with<int64_t>,
    caf::reacts_to<update_atom, std::string, experiments::experiment_row>,
    caf::replies_to<read_atom, std::string, int64_t>::with<experiments::experiment_row>,
    caf::replies_to<list_atom, std::string>::with<std::vector<experiments::experiment_row>>,
    caf::replies_to<delete_atom, std::string, int64_t>::with<caf::ok_atom>,
    caf::reacts_to<put_trial_atom, std::string, experiments::trial_row>,
    caf::replies_to<trials_atom, std::string, int64_t>::with<std::vector<experiments::trial_row>>,
    caf::reacts_to<add_metrics_atom, std::string, std::vector<experiments::metric_row>>,
    caf::replies_to<metrics_atom, std::string, int64_t, std::string>::with<
        std::vector<experiments::metric_row>>,
    caf::reacts_to<put_ckpt_atom, std::string, experiments::checkpoint_row>,
    caf::replies_to<ckpts_atom, std::string, int64_t, std::string>::with<
        std::vector<experiments::checkpoint_row>>,
    caf::reacts_to<add_lineage_atom, std::string, experiments::lineage_row>,
    caf::replies_to<lineage_atom, std::string, int64_t>::with<std::vector<experiments::lineage_row>>,
    caf::reacts_to<add_event_atom, std::string, experiments::event_row>,
    caf::replies_to<events_atom, std::string, int64_t, std::string>::with<
        std::vector<experiments::event_row>>,
    caf::replies_to<flush_atom, std::string, std::vector<int64_t>>::with<caf::ok_atom>,
    caf::replies_to<where_atom, std::string>::with<std::string>>;

/// Announces the row types (and their vectors) and the service's handle
/// type; every process, before its actor_system.
void register_experiment_types(caf::actor_system_config& cfg);

} // namespace dtrain::experiments
