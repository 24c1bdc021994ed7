#pragma once

#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/tune/importance.hpp"

/// The page `dtrain report` writes: one self-contained HTML file of an
/// experiment (its trial table, learning curves with the trials overlaid,
/// the best trial's hyperparameters and the configuration), made of the
/// dashboard's embedded files (web/report.html, common.js, uPlot) with the
/// data inlined as the dashboard API's JSON documents (api.hpp). It loads
/// nothing from anywhere: it opens offline from a file:// URL.
namespace dtrain::dashboard {

/// What a report shows: the experiment, its trials, and each trial's
/// metric rows (metrics[i] are trials[i]'s, by seq).
struct report_input {
  experiments::experiment_row experiment;
  std::vector<experiments::trial_row> trials;
  std::vector<std::vector<experiments::metric_row>> metrics;
  std::string source;         // where the data came from, for the footer
  double generated_at = 0;    // unix seconds
};

/// The hyperparameters' importance (experiments::importance_of) as JSON:
/// experiments::to_json's object, or {"error": "why there is none"} (not a
/// sweep, too few completed trials, ...), which the pages show as text.
std::string importance_json(const experiments::experiment_row& e,
                            const std::vector<experiments::trial_row>& trials,
                            tune::importance_method method = tune::importance_method::fanova);

/// The JSON embedded in the page: {"trials": GET .../trials's document,
/// "metrics": [GET .../metrics's document per trial], "best_trial": the
/// best trial's key or null, "importance": importance_json (fANOVA),
/// "configuration", "source", "generated_at"}.
std::string report_json(const report_input& in);

/// The whole page. Fails (internal) only if the embedded template or a
/// file it names is missing: a build that lost a web file.
result<std::string> report_html(const report_input& in);

} // namespace dtrain::dashboard
