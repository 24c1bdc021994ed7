#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tune/scheduler.hpp"

namespace dtrain::tune {

/// Hyperband in its asynchronous stopping form (Li et al. 2018 with ASHA's
/// brackets), equal to Optuna 3.1's HyperbandPruner(min_resource,
/// max_resource, reduction_factor, bootstrap_count = 0) with in-memory
/// storage, report for report (tests/tune/scheduler_sequences holds the
/// hyperband_* sequences replayed through Optuna by
/// tools/reference/make_scheduler_sequences.py).
///
/// Brackets: n = floor(log(max_resource / min_resource) / log(rf)) + 1,
/// computed in doubles with libm's log as Python's math.log(x, base) does,
/// quirks included: (1, 243, 3) gives 5 brackets, not 6, and (1, 1000, 10)
/// gives 3. Bracket b is ASHA's top-k rule (make_asha, unbounded rungs) with
/// its first rung at min_resource * rf^b: rungs at min_resource *
/// rf^(b + k), k = 0, 1, ... Its budget, with s = n - 1 - b, is
/// ceil(n * rf^s / (s + 1)) (bracket 0, the most aggressive, gets the
/// most trials). A trial's bracket: crc32("<study_name>_<number>") modulo
/// the budgets' sum, walked through the budgets from bracket 0. Each
/// bracket judges its own trials against its own trials only (Optuna's
/// _BracketStudy filters the study's trials by bracket). One difference
/// outside the pruner: Optuna also hands its sampler the bracket's trials
/// only (pruners._filter_study, so TPE models each bracket apart); dtrain's
/// searchers see every trial of the sweep.
///
/// How a dtrain sweep maps onto an Optuna study: `study_name` is the
/// experiment's name (tune_config::experiment; the YAML's `name`), and a
/// trial's number is its 0-based creation index: the order in which
/// on_add introduced it (a trial that reports without on_add gets the next
/// number then). In a sweep that is the number in its id ("00007" is 7),
/// also when a resumed sweep replays its journal, which adds the trials in
/// their creation order.
///
/// max_resource = auto_max_resource is Optuna's "auto": until some trial
/// has completed (trial_end::completed, Optuna's COMPLETE) after reporting,
/// nothing is judged or recorded and every report goes on; at the first
/// report after that, max_resource = 1 + the largest epoch any completed
/// trial reported (Optuna's last_step + 1, a step count for 0-based steps,
/// kept for equality with 1-based epochs), and the brackets are made then.
/// If that gives fewer than one bracket (max_resource < min_resource),
/// nothing is ever stopped, as in Optuna. Rung values are recorded only
/// from then on, so a trial already past a rung is judged there at its
/// next report, with that report's value.
///
/// Called from one thread (the scheduler contract). State grows with the
/// trials (a number each) and their rung values.
struct hyperband_options {
  /// max_resource's value for Optuna's "auto".
  static constexpr int64_t auto_max_resource = -1;
  mode direction = mode::max;
  int64_t min_resource = 1;      // epochs; bracket 0's first rung (>= 1)
  int64_t max_resource = 0;      // epochs (>= min_resource), or auto_max_resource;
                                 // 0 in a sweep_config: the sweep's max_epochs
  int64_t reduction_factor = 3;  // (>= 2)
  std::string study_name;        // Optuna's study_name (see above)
};

/// Errors (invalid_argument) name the field: min_resource >= 1,
/// reduction_factor >= 2, max_resource >= min_resource (or auto), and
/// max_resource / min_resource <= 2^31 (so that budgets stay exact
/// integers). `max_epochs` stands in for a max_resource of 0 (a
/// sweep_config's "the sweep's"); 0: no stand-in, a max_resource of 0 is
/// an error.
status check_hyperband(const hyperband_options& o, int64_t max_epochs = 0);
/// Errors as check_hyperband with no stand-in.
result<std::unique_ptr<scheduler>> make_hyperband(const hyperband_options& o);

/// One bracket: its first rung (min_resource * rf^b) and its budget.
struct hyperband_bracket {
  int64_t first_rung = 0;
  int64_t budget = 0;
};
/// The brackets for a known max_resource (an addition to the interface,
/// for describe() and the tests); empty when max_resource < min_resource.
/// A max_resource / min_resource ratio past 2^31 is taken as 2^31.
/// Precondition: min_resource >= 1, reduction_factor >= 2.
std::vector<hyperband_bracket> hyperband_brackets(int64_t min_resource, int64_t max_resource,
                                                  int64_t reduction_factor);
/// The bracket of trial `number` of study `study_name` (Optuna's
/// _get_bracket_id). Precondition: `brackets` is not empty.
size_t hyperband_bracket_of(const std::string& study_name, int64_t number,
                            const std::vector<hyperband_bracket>& brackets);

} // namespace dtrain::tune
