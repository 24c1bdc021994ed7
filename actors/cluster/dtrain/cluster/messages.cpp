#include "dtrain/cluster/messages.hpp"

#include "dtrain/cluster/errors.hpp"

namespace dtrain::actors {

namespace {
const caf::atom_value dtrain_category = caf::atom("dtrain");
} // namespace

void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<node_info>("dtrain::node_info");
  cfg.add_message_type<assignment>("dtrain::assignment");
  cfg.add_message_type<hosted_replica>("dtrain::hosted_replica");
  cfg.add_message_type<std::vector<hosted_replica>>("std::vector<dtrain::hosted_replica>");
  cfg.add_message_type<replica_spec>("dtrain::replica_spec");
  cfg.add_message_type<train::epoch_metrics>("dtrain::epoch_metrics");
  cfg.add_message_type<predict_chunk>("dtrain::predict_chunk");
  cfg.add_message_type<train::step_progress>("dtrain::step_progress");
  cfg.add_message_type<lost_node>("dtrain::lost_node");
  cfg.add_message_type<cluster_status>("dtrain::cluster_status");
  cfg.add_message_type<log_chunk>("dtrain::log_chunk");
  cfg.add_message_type<identity_msg>("dtrain::identity_msg");
  cfg.add_message_type<head_hello>("dtrain::head_hello");
  cfg.add_message_type<std::vector<int32_t>>("std::vector<int32_t>");
  cfg.add_message_type<plugin_credential>("dtrain::plugin_credential");
  cfg.add_message_type<rendezvous_actor>("dtrain::rendezvous_actor");
  cfg.add_message_type<replica_actor>("dtrain::replica_actor");
  cfg.add_message_type<node_actor>("dtrain::node_actor");
  experiments::register_experiment_types(cfg);  // before head_actor, whose interface has them
  cfg.add_message_type<head_actor>("dtrain::head_actor");
  cfg.add_error_category(dtrain_category, [](uint8_t code, caf::atom_value, const caf::message& ctx) {
    std::string text = to_string(static_cast<error_code>(code));
    if (ctx.match_elements<std::string>())
      text += ": " + ctx.get_as<std::string>(0);
    return text;
  });
}

caf::error to_caf(const status& s) {
  if (s.is_ok())
    return caf::error{};
  return caf::error(static_cast<uint8_t>(s.code()), dtrain_category, caf::make_message(s.message()));
}

status from_caf(const caf::error& err, const std::string& context) {
  if (!err)
    return status::ok();
  if (err.category() == dtrain_category) {
    std::string text = err.context().match_elements<std::string>()
                           ? err.context().get_as<std::string>(0)
                           : std::string("(no message)");
    return status(static_cast<error_code>(err.code()), context + ": " + text);
  }
  if (err == caf::sec::request_timeout)
    return status(error_code::timeout, context + ": no answer within the timeout");
  if (err == caf::sec::request_receiver_down)
    return status(error_code::aborted, context + ": the actor is gone");
  return status(error_code::unavailable, context + ": " + caf::to_string(err));
}

namespace {
const char* const epoch_prefix = "epoch.";
const char* const epoch_extra_prefix = "epoch.extra.";
} // namespace

std::map<std::string, double> epoch_manifest_entries(const metrics_msg& m) {
  std::map<std::string, double> out{{"epoch.epoch", static_cast<double>(m.epoch)},
                                    {"epoch.steps", static_cast<double>(m.steps)},
                                    {"epoch.samples", static_cast<double>(m.samples)},
                                    {"epoch.loss", m.loss},
                                    {"epoch.accuracy", m.accuracy},
                                    {"epoch.seconds", m.seconds},
                                    {"epoch.samples_per_second", m.samples_per_second},
                                    {"epoch.lr", static_cast<double>(m.lr)},
                                    {"epoch.allreduce_seconds", m.allreduce_seconds}};
  for (const auto& [name, value] : m.extra)
    out[epoch_extra_prefix + name] = value;
  return out;
}

std::optional<metrics_msg> epoch_from_manifest(const std::map<std::string, double>& entries,
                                               int64_t epoch) {
  auto get = [&](const char* name) -> std::optional<double> {
    auto it = entries.find(std::string(epoch_prefix) + name);
    if (it == entries.end())
      return std::nullopt;
    return it->second;
  };
  auto at = get("epoch");
  if (!at || static_cast<int64_t>(*at) != epoch)
    return std::nullopt;
  metrics_msg m;
  m.epoch = epoch;
  m.steps = static_cast<int64_t>(get("steps").value_or(0));
  m.samples = static_cast<int64_t>(get("samples").value_or(0));
  m.loss = get("loss").value_or(0);
  m.accuracy = get("accuracy").value_or(0);
  m.seconds = get("seconds").value_or(0);
  m.samples_per_second = get("samples_per_second").value_or(0);
  m.lr = static_cast<float>(get("lr").value_or(0));
  m.allreduce_seconds = get("allreduce_seconds").value_or(0);
  const std::string extra = epoch_extra_prefix;
  for (auto it = entries.lower_bound(extra); it != entries.end() && it->first.rfind(extra, 0) == 0; ++it)
    m.extra[it->first.substr(extra.size())] = it->second;
  return m;
}


} // namespace dtrain::actors
