#include "dtrain/experiments/trial_importance.hpp"

#include <cmath>

#include "dtrain/core/check.hpp"
#include "dtrain/core/json.hpp"
#include "dtrain/experiments/experiment.hpp"

namespace dtrain::experiments {

result<experiment_importance> importance_of(const experiment_row& e,
                                            const std::vector<trial_row>& trials,
                                            const tune::importance_options& o) {
  const std::string which = "experiment " + std::to_string(e.id);
  if (e.kind != "tune")
    return invalid_argument(which + " is a `dtrain " + e.kind +
                            "` run, not a hyperparameter search: importance needs a sweep's trials");
  auto parsed = parse_experiment(e.configuration, which);
  if (!parsed)
    return invalid_argument(which + ": its stored configuration does not parse: " +
                            parsed.error().message());
  if (parsed->space.varying().empty())
    return invalid_argument(which + " searches no hyperparameter: nothing to assess");
  experiment_importance out;
  out.method = o.method;
  out.metric = e.metric;
  out.trials_total = trials.size();
  std::vector<tune::importance_trial> completed;
  for (const auto& t : trials) {
    if (t.end_how != "completed" || !std::isfinite(t.last))
      continue;
    auto configuration = tune::config_from_json(t.hyperparameters);
    if (!configuration)
      return invalid_argument(which + ": trial " + t.id + "'s hyperparameters do not parse: " +
                              configuration.error().message());
    completed.push_back({t.id, std::move(*configuration), t.last});
  }
  out.trials_used = completed.size();
  if (completed.size() < tune::min_importance_trials)
    return invalid_argument(which + " has " + std::to_string(completed.size()) +
                            " completed trials with a value of " + e.metric + " (of " +
                            std::to_string(trials.size()) + "); importance needs at least " +
                            std::to_string(tune::min_importance_trials));
  auto ranked = tune::evaluate_importance(parsed->space, completed, o);
  if (!ranked)
    return invalid_argument(which + ": " + ranked.error().message());
  out.parameters = std::move(*ranked);
  return out;
}

std::string to_json(const experiment_importance& i) {
  std::string out = "{\"method\": " + json::quoted(tune::to_string(i.method)) +
                    ", \"metric\": " + json::quoted(i.metric) +
                    ", \"trials_used\": " + std::to_string(i.trials_used) +
                    ", \"trials_total\": " + std::to_string(i.trials_total) + ", \"parameters\": [";
  for (size_t k = 0; k < i.parameters.size(); ++k)
    out += (k ? ", " : "") + std::string("{\"name\": ") + json::quoted(i.parameters[k].name) +
           ", \"importance\": " + json::number(i.parameters[k].importance) + "}";
  return out + "]}";
}

} // namespace dtrain::experiments
