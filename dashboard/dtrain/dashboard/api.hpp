#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dtrain/cluster/messages.hpp"
#include "dtrain/experiments/pareto_rows.hpp"
#include "dtrain/experiments/store.hpp"

/// The JSON documents of the dashboard's API (docs/dashboard.md), built
/// from the head's status and the experiment store's rows. Pure functions:
/// thread-safe, nothing throws. Doubles that are not finite (a metric not
/// reported yet) are written as null, so that a browser's JSON.parse reads
/// every document.
namespace dtrain::dashboard {

/// `d` as a JSON number, or null when it is NaN or infinite.
std::string json_number(double d);

/// The trial with the best `best` by the experiment's direction (the first
/// of equals); nullptr when none has a value. Points into `trials`.
const experiments::trial_row* best_trial(const experiments::experiment_row& e,
                                   const std::vector<experiments::trial_row>& trials);

/// A trainer of cluster_status ("h: 2 replicas", head_actor.cpp) split into
/// its id and replica count; `text` and -1 when it has another shape.
void parse_trainer(const std::string& text, std::string& id, int64_t& replicas);

/// GET /api/v1/cluster.
std::string cluster_json(const actors::cluster_status& s);

/// GET /api/v1/experiments: each experiment with its trial count and best
/// value (trials[i] are experiments[i]'s trials).
std::string experiments_json(const std::vector<experiments::experiment_row>& experiments,
                             const std::vector<std::vector<experiments::trial_row>>& trials);

/// GET /api/v1/experiments/{id}/trials.
std::string trials_json(const experiments::experiment_row& e, const std::vector<experiments::trial_row>& trials);
/// GET /api/v1/experiments/{id}/pareto: {"objectives": [{"metric",
/// "minimize"}], "trials": [{"id" (the trial's key), "trial", "state",
/// "pareto", "values": one per objective, null where it has none}]}.
std::string pareto_json(const experiments::pareto_view& v);

/// The API's name of a trial: "EXPERIMENT-TRIAL" ("3-00000"), since a
/// trial's id is unique only within its experiment.
std::string trial_key(int64_t experiment, const std::string& trial);
/// Splits a trial_key; false when `key` is not one.
bool parse_trial_key(const std::string& key, int64_t& experiment, std::string& trial);

/// GET /api/v1/trials/{key}/metrics: one entry per report (a seq) whose
/// epoch is above `since` and, when given, whose seq is above `after_seq`,
/// in report order, with every metric of it. `rows` are the trial's, by
/// seq (experiment_store::metrics).
std::string metrics_json(int64_t experiment, const std::string& trial,
                         const std::vector<experiments::metric_row>& rows, int64_t since,
                         std::optional<int64_t> after_seq = std::nullopt);

/// GET /api/v1/nodes/{index}/log: a chunk of node `node`'s log. The text
/// is the file's bytes with each invalid UTF-8 sequence (binary output, a
/// character cut where the chunk begins, or at the end of a file still
/// being written) replaced by U+FFFD, so the document is always valid
/// UTF-8; a chunk may cut a line at either end.
std::string log_json(int32_t node, const actors::log_chunk& c);

/// GET /api/v1/trials/{key}/checkpoints: the trial's checkpoints, by seq
/// (experiment_store::checkpoints), each with its epoch, path, metric (null
/// when none), valid, seq and time.
std::string checkpoints_json(int64_t experiment, const std::string& trial,
                             const std::vector<experiments::checkpoint_row>& rows);

/// GET /api/v1/trials/{key}/events: the trial's failures, recoveries and
/// the like, by seq (experiment_store::events).
std::string events_json(int64_t experiment, const std::string& trial,
                        const std::vector<experiments::event_row>& rows);

} // namespace dtrain::dashboard
