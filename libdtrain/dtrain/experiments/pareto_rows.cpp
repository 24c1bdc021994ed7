// The Pareto set of a stored experiment (pareto_rows.hpp).
#include "dtrain/experiments/pareto_rows.hpp"

#include <cmath>
#include <map>
#include <string>

#include "dtrain/core/check.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/tune/trial.hpp"

namespace dtrain::experiments {

namespace {

// The store's state names as trial statuses, for what pareto() asks of
// them (an error is left out).
tune::trial_status status_of(const std::string& state) {
  return state == "error" || state == "ERROR" ? tune::trial_status::error
                                              : tune::trial_status::terminated;
}

} // namespace

result<pareto_view> pareto_of(experiment_store& s, int64_t experiment) {
  DTRAIN_ASSIGN_OR_RETURN(experiment_row e, s.experiment(experiment));
  tune::result_grid grid;
  grid.metric = e.metric;
  grid.direction = e.minimize ? tune::mode::min : tune::mode::max;
  if (!e.configuration.empty()) {
    auto config = parse_experiment(e.configuration, "experiment " + std::to_string(experiment));
    if (!config)
      return status(error_code::corrupt_data,
                    "the stored configuration of experiment " + std::to_string(experiment) +
                        " in " + s.where() + " does not parse: " + config.error().message());
    grid.objectives = config->sweep.objectives;
    grid.constraints = config->sweep.constraints;
  }
  DTRAIN_ASSIGN_OR_RETURN(std::vector<trial_row> rows, s.trials(experiment));
  DTRAIN_ASSIGN_OR_RETURN(std::vector<metric_row> metrics, s.metrics(experiment));
  // Each trial's metrics of its newest epoch (rows come by seq).
  std::map<std::string, tune::report> last;
  for (const auto& m : metrics) {
    tune::report& r = last[m.trial];
    if (m.epoch > r.epoch) {
      r.epoch = m.epoch;
      r.metrics.clear();
    }
    if (m.epoch == r.epoch)
      r.metrics[m.name] = m.value;
  }
  pareto_view out;
  out.objectives = grid.objectives.empty()
                       ? std::vector<tune::objective>{{grid.metric, grid.direction}}
                       : grid.objectives;
  for (const auto& row : rows) {
    tune::trial_record t;
    t.id = row.id;
    t.status = status_of(row.state);
    pareto_view::point p{row, {}, false};
    if (auto it = last.find(row.id); it != last.end())
      t.history.push_back(it->second);
    for (const auto& o : out.objectives)
      p.values.push_back(t.history.empty() || !t.history.back().metrics.count(o.metric)
                             ? std::nan("")
                             : t.history.back().metrics.at(o.metric));
    grid.trials.push_back(std::move(t));
    out.trials.push_back(std::move(p));
  }
  for (const tune::trial_record* t : grid.pareto())
    for (auto& p : out.trials)
      if (p.row.id == t->id)
        p.pareto = true;
  return out;
}

result<std::vector<trial_row>> pareto_trials(experiment_store& s, int64_t experiment) {
  DTRAIN_ASSIGN_OR_RETURN(pareto_view view, pareto_of(s, experiment));
  std::vector<trial_row> out;
  for (const auto& p : view.trials)
    if (p.pareto)
      out.push_back(p.row);
  return out;
}

} // namespace dtrain::experiments
