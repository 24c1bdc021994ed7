// `dtrain experiments importance ID`: which hyperparameters of a sweep
// matter, from the store's completed trials (experiments::importance_of).
#include "commands.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

#include "command_line.hpp"
#include "dtrain/experiments/trial_importance.hpp"

namespace dtrain::cli {

int print_importance(experiments::experiment_store& s, const experiments_options& o) {
  auto method = tune::parse_importance_method(o.method);
  if (!method)
    return fail(method.error());
  auto e = s.experiment(o.id);
  if (!e)
    return fail(e.error());
  auto trials = s.trials(o.id);
  if (!trials)
    return fail(trials.error());
  tune::importance_options options;
  options.method = *method;
  auto found = experiments::importance_of(*e, *trials, options);
  if (!found)
    return fail(found.error());
  if (o.json) {
    std::printf("%s\n", experiments::to_json(*found).c_str());
    return 0;
  }
  std::printf("importance of experiment %lld's hyperparameters for %s (%s over %zu completed "
              "trials of %zu)\n",
              static_cast<long long>(o.id), found->metric.c_str(), tune::to_string(*method),
              found->trials_used, found->trials_total);
  size_t width = 9;  // "PARAMETER"
  for (const auto& p : found->parameters)
    width = std::max(width, p.name.size());
  std::printf("RANK  %-*s  IMPORTANCE\n", static_cast<int>(width), "PARAMETER");
  int rank = 0;
  for (const auto& p : found->parameters) {
    const std::string bar(static_cast<size_t>(p.importance * 40 + 0.5), '#');
    std::printf("%-4d  %-*s  %10.4f  %s\n", ++rank, static_cast<int>(width), p.name.c_str(),
                p.importance, bar.c_str());
  }
  return 0;
}

} // namespace dtrain::cli
