#include "dtrain/tune/journal_check.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include "dtrain/core/check.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::tune {

namespace {

// The greatest seq a row may carry: the journal numbers on from one past it.
constexpr int64_t max_seq = std::numeric_limits<int64_t>::max() - 1;
// Trial numbers as the tuner writes them ("%05lld"), at most 18 digits so
// that one past the greatest still fits in an int64_t.
constexpr size_t max_id_digits = 18;

bool is_trial_number(const std::string& id) {
  return !id.empty() && id.size() <= max_id_digits &&
         std::all_of(id.begin(), id.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// The row, the field and what is wrong with it, after `where`.
status bad(const std::string& where, const std::string& row, const std::string& field,
           const std::string& what) {
  return status(error_code::corrupt_data, where + ": " + row + ": " + field + " " + what);
}

status check_seq(const std::string& where, const std::string& row, const char* field, int64_t seq) {
  if (seq < 1 || seq > max_seq)
    return bad(where, row, field, std::to_string(seq) + " is not a sequence number (1 to " +
                                      std::to_string(max_seq) + ")");
  return status::ok();
}

status check_not_negative(const std::string& where, const std::string& row, const char* field,
                          int64_t n) {
  if (n < 0)
    return bad(where, row, field, std::to_string(n) + " is negative");
  return status::ok();
}

status check_json(const std::string& where, const std::string& row, const char* field,
                  const std::string& text) {
  auto parsed = config_from_json(text);
  if (!parsed)
    return bad(where, row, field, "does not parse: " + parsed.error().message());
  return status::ok();
}

status check_trial(const std::string& where, const experiments::trial_row& t) {
  const std::string row = "trials row '" + t.id + "'";
  if (!is_trial_number(t.id))
    return bad(where, row, "id", "'" + t.id + "' is not a trial number (up to " +
                                     std::to_string(max_id_digits) + " digits)");
  DTRAIN_RETURN_IF_ERROR(check_seq(where, row, "seq_created", t.seq_created));
  if (t.seq_ended != 0) {
    DTRAIN_RETURN_IF_ERROR(check_seq(where, row, "seq_ended", t.seq_ended));
    if (t.seq_ended <= t.seq_created)
      return bad(where, row, "seq_ended", std::to_string(t.seq_ended) +
                                              " is not after its seq_created " +
                                              std::to_string(t.seq_created));
  }
  static const std::set<std::string> states = {"PENDING", "RUNNING",  "STOPPED",
                                               "TERMINATED", "ERROR", "INTERRUPTED"};
  if (states.count(t.state) == 0)
    return bad(where, row, "state", "'" + t.state + "' is none of PENDING, RUNNING, STOPPED, "
                                    "TERMINATED, ERROR, INTERRUPTED");
  // "" also for an ended trial: stores of version 1 kept no end kind.
  if (!t.end_how.empty() && t.end_how != "completed" && t.end_how != "stopped" &&
      t.end_how != "failed")
    return bad(where, row, "end_how", "'" + t.end_how + "' is none of completed, stopped, failed");
  DTRAIN_RETURN_IF_ERROR(check_not_negative(where, row, "restarts", t.restarts));
  DTRAIN_RETURN_IF_ERROR(check_not_negative(where, row, "epochs", t.epochs));
  return check_json(where, row, "hyperparameters", t.hyperparameters);
}

status check_trial_named(const std::string& where, const std::string& row, const char* field,
                         const std::string& trial, const std::set<std::string>& known) {
  if (known.count(trial) == 0)
    return bad(where, row, field, "'" + trial + "' names no stored trial");
  return status::ok();
}

status check_metrics(const std::string& where, const std::vector<experiments::metric_row>& metrics,
                     const std::set<std::string>& known) {
  for (const auto& m : metrics) {
    const std::string row = "metrics row (trial '" + m.trial + "', seq " + std::to_string(m.seq) +
                            ", name '" + m.name + "')";
    DTRAIN_RETURN_IF_ERROR(check_trial_named(where, row, "trial", m.trial, known));
    DTRAIN_RETURN_IF_ERROR(check_seq(where, row, "seq", m.seq));
    if (m.epoch < 1)
      return bad(where, row, "epoch", std::to_string(m.epoch) + " is not an epoch (from 1)");
    if (m.name.empty())
      return bad(where, row, "name", "is empty");
  }
  return status::ok();
}

status check_lineage(const std::string& where, const std::vector<experiments::lineage_row>& lineage,
                     const std::set<std::string>& known) {
  for (const auto& l : lineage) {
    const std::string row =
        "lineage row (trial '" + l.trial + "', seq " + std::to_string(l.seq) + ")";
    DTRAIN_RETURN_IF_ERROR(check_trial_named(where, row, "trial", l.trial, known));
    DTRAIN_RETURN_IF_ERROR(check_trial_named(where, row, "source", l.source, known));
    DTRAIN_RETURN_IF_ERROR(check_seq(where, row, "seq", l.seq));
    DTRAIN_RETURN_IF_ERROR(check_not_negative(where, row, "source_epoch", l.source_epoch));
    DTRAIN_RETURN_IF_ERROR(check_json(where, row, "hyperparameters_before", l.before));
    if (!l.after.empty())  // empty: the exploit failed
      DTRAIN_RETURN_IF_ERROR(check_json(where, row, "hyperparameters_after", l.after));
  }
  return status::ok();
}

} // namespace

status check_stored_rows(const std::string& where, const stored_rows& rows) {
  std::set<std::string> known;
  for (const auto& t : rows.trials) {
    DTRAIN_RETURN_IF_ERROR(check_trial(where, t));
    if (!known.insert(t.id).second)
      return bad(where, "trials row '" + t.id + "'", "id", "is stored twice");
  }
  DTRAIN_RETURN_IF_ERROR(check_metrics(where, rows.metrics, known));
  for (const auto& c : rows.checkpoints) {
    const std::string row = "checkpoints row (path '" + c.path + "')";
    DTRAIN_RETURN_IF_ERROR(check_trial_named(where, row, "trial", c.trial, known));
    DTRAIN_RETURN_IF_ERROR(check_seq(where, row, "seq", c.seq));
    DTRAIN_RETURN_IF_ERROR(check_not_negative(where, row, "epoch", c.epoch));
  }
  DTRAIN_RETURN_IF_ERROR(check_lineage(where, rows.lineage, known));
  // Events are for people and name any trial (or none); only their seq
  // counts, where the resumed journal numbers on.
  for (const auto& e : rows.events)
    DTRAIN_RETURN_IF_ERROR(check_seq(
        where, "events row (trial '" + e.trial + "', seq " + std::to_string(e.seq) + ")", "seq",
        e.seq));
  return status::ok();
}

int64_t next_trial_number(const std::vector<experiments::trial_row>& trials) {
  int64_t next = 0;
  for (const auto& t : trials)
    if (is_trial_number(t.id))
      next = std::max<int64_t>(next, std::stoll(t.id) + 1);
  return next;
}

} // namespace dtrain::tune
