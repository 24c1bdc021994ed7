#include "dtrain/actors/experiments/protocol.hpp"

namespace dtrain::actors::experiments {

void register_experiment_types(caf::actor_system_config& cfg) {
  // Each also announces std::vector of itself.
  cfg.add_message_type<store::experiment_row>("dtrain::store::experiment_row");
  cfg.add_message_type<store::trial_row>("dtrain::store::trial_row");
  cfg.add_message_type<store::metric_row>("dtrain::store::metric_row");
  cfg.add_message_type<store::checkpoint_row>("dtrain::store::checkpoint_row");
  cfg.add_message_type<store::lineage_row>("dtrain::store::lineage_row");
  cfg.add_message_type<store::event_row>("dtrain::store::event_row");
  cfg.add_message_type<experiment_service>("dtrain::experiment_service");
  // A flush names the experiments its client wrote.
  cfg.add_message_type<std::vector<int64_t>>("std::vector<int64_t>");
}

} // namespace dtrain::actors::experiments
