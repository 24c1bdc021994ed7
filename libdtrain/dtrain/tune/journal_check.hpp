#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::tune {

/// An experiment's stored rows, as replay() reads them.
struct stored_rows {
  std::vector<experiments::trial_row> trials;
  std::vector<experiments::metric_row> metrics;
  std::vector<experiments::checkpoint_row> checkpoints;
  std::vector<experiments::lineage_row> lineage;
  std::vector<experiments::event_row> events;
};

/// Checks every value of `rows` that replay() relies on before it trusts
/// any: a store written by another program, edited by hand or damaged gives
/// corrupt_data naming `where` (the experiment and its store), the row and
/// the field ("trials row '00003': seq_ended 2 is not after its seq_created
/// 7"), never an exception or a wrong replay. Checked: trial ids are trial
/// numbers (digits) and unique; every seq is in [1, 2^63 - 2] and a trial
/// ends after it was created; states and end kinds are the journal's
/// names; counts and epochs are not negative; hyperparameters parse
/// (config_from_json); metrics, checkpoints and exploits name a stored
/// trial (an exploit's source too). Pure; never blocks.
status check_stored_rows(const std::string& where, const stored_rows& rows);

/// One past the greatest trial number of `trials` (0 for none): the number
/// of a resumed sweep's next new trial, never one a stored trial has.
/// Precondition: check_stored_rows passed.
int64_t next_trial_number(const std::vector<experiments::trial_row>& trials);

} // namespace dtrain::tune
