#include "dtrain/cluster/experiment_protocol.hpp"

namespace dtrain::experiments {

void register_experiment_types(caf::actor_system_config& cfg) {
  // Each also announces std::vector of itself.
  cfg.add_message_type<experiments::experiment_row>("dtrain::experiments::experiment_row");
  cfg.add_message_type<experiments::trial_row>("dtrain::experiments::trial_row");
  cfg.add_message_type<experiments::metric_row>("dtrain::experiments::metric_row");
  cfg.add_message_type<experiments::checkpoint_row>("dtrain::experiments::checkpoint_row");
  cfg.add_message_type<experiments::lineage_row>("dtrain::experiments::lineage_row");
  cfg.add_message_type<experiments::event_row>("dtrain::experiments::event_row");
  cfg.add_message_type<experiment_service>("dtrain::experiment_service");
  // A flush names the experiments its client wrote.
  cfg.add_message_type<std::vector<int64_t>>("std::vector<int64_t>");
}

} // namespace dtrain::experiments
