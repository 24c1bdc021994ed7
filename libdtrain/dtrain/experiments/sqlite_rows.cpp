#include "dtrain/experiments/sqlite_rows.hpp"

#include <array>
#include <cstddef>

namespace dtrain::experiments::rows {

namespace {

// ---- one table per row type ---------------------------------------------------

// A column of a row type: its SQL name and how a statement binds it from a
// row (parameter numbers from 1) and reads it into one (columns from 0).
template <class Row>
struct column {
  const char* name;
  void (*bind)(sqlite::statement& s, int parameter, const Row& row);
  void (*read)(const sqlite::statement& s, int index, Row& row);
};

// A column's value as its member's type; SQLite keeps every integer as 64
// bits and a bool as 0 or 1.
template <class T>
T value_at(const sqlite::statement& s, int index);
template <>
int64_t value_at<int64_t>(const sqlite::statement& s, int index) { return s.integer(index); }
template <>
int value_at<int>(const sqlite::statement& s, int index) {
  return static_cast<int>(s.integer(index));
}
template <>
bool value_at<bool>(const sqlite::statement& s, int index) { return s.boolean(index); }
template <>
double value_at<double>(const sqlite::statement& s, int index) { return s.real(index); }
template <>
std::string value_at<std::string>(const sqlite::statement& s, int index) {
  return s.text(index);
}

template <class Member>
struct member_of;
template <class Row, class Value>
struct member_of<Value Row::*> {
  using row = Row;
  using value = Value;
};

// The column `name` held by data member `Member` (&trial_row::state).
template <auto Member>
constexpr column<typename member_of<decltype(Member)>::row> col(const char* name) {
  using row = typename member_of<decltype(Member)>::row;
  using value = typename member_of<decltype(Member)>::value;
  return {name,
          [](sqlite::statement& s, int parameter, const row& r) { s.bind(parameter, r.*Member); },
          [](const sqlite::statement& s, int index, row& r) {
            r.*Member = value_at<value>(s, index);
          }};
}

// The tables' columns in their schema order (sqlite_schema.cpp): the order
// of every INSERT, SELECT and read below.
constexpr std::array experiment_table{
    col<&experiment_row::id>("id"),  // the first column: AUTOINCREMENT assigns it
    col<&experiment_row::name>("name"),
    col<&experiment_row::kind>("kind"),
    col<&experiment_row::configuration>("configuration"),
    col<&experiment_row::config_hash>("config_hash"),
    col<&experiment_row::state>("state"),
    col<&experiment_row::storage>("storage"),
    col<&experiment_row::metric>("metric"),
    col<&experiment_row::minimize>("minimize"),
    col<&experiment_row::created_at>("created_at"),
    col<&experiment_row::updated_at>("updated_at"),
    col<&experiment_row::ended_at>("ended_at"),
    col<&experiment_row::owner>("owner"),
    col<&experiment_row::message>("message"),
};

constexpr std::array trial_table{
    col<&trial_row::experiment>("experiment"),
    col<&trial_row::id>("id"),
    col<&trial_row::seq_created>("seq_created"),
    col<&trial_row::hyperparameters>("hyperparameters"),
    col<&trial_row::state>("state"),
    col<&trial_row::restarts>("restarts"),
    col<&trial_row::error>("error"),
    col<&trial_row::best>("best"),
    col<&trial_row::last>("last"),
    col<&trial_row::epochs>("epochs"),
    col<&trial_row::checkpoint_dir>("checkpoint_dir"),
    col<&trial_row::seq_ended>("seq_ended"),
    col<&trial_row::end_how>("end_how"),
    col<&trial_row::started_at>("started_at"),
    col<&trial_row::ended_at>("ended_at"),
};

constexpr std::array metric_table{
    col<&metric_row::experiment>("experiment"),
    col<&metric_row::trial>("trial"),
    col<&metric_row::seq>("seq"),
    col<&metric_row::name>("name"),
    col<&metric_row::epoch>("epoch"),
    col<&metric_row::value>("value"),
    col<&metric_row::time>("time"),
};

constexpr std::array checkpoint_table{
    col<&checkpoint_row::experiment>("experiment"),
    col<&checkpoint_row::path>("path"),
    col<&checkpoint_row::trial>("trial"),
    col<&checkpoint_row::epoch>("epoch"),
    col<&checkpoint_row::metric>("metric"),
    col<&checkpoint_row::valid>("valid"),
    col<&checkpoint_row::seq>("seq"),
    col<&checkpoint_row::time>("time"),
};

constexpr std::array lineage_table{
    col<&lineage_row::experiment>("experiment"),
    col<&lineage_row::seq>("seq"),
    col<&lineage_row::trial>("trial"),
    col<&lineage_row::epoch>("epoch"),
    col<&lineage_row::source>("source"),
    col<&lineage_row::source_epoch>("source_epoch"),
    col<&lineage_row::before>("hyperparameters_before"),
    col<&lineage_row::after>("hyperparameters_after"),
    col<&lineage_row::time>("time"),
};

constexpr std::array event_table{
    col<&event_row::experiment>("experiment"),
    col<&event_row::seq>("seq"),
    col<&event_row::trial>("trial"),
    col<&event_row::epoch>("epoch"),
    col<&event_row::time>("time"),
    col<&event_row::kind>("kind"),
    col<&event_row::message>("message"),
};

// ---- what the tables drive ----------------------------------------------------

// "a, b, c": the names of columns [first, end).
template <class Table>
std::string names(const Table& table, size_t first = 0) {
  std::string out;
  for (size_t i = first; i < table.size(); ++i)
    out += (i == first ? "" : ", ") + std::string(table[i].name);
  return out;
}

// "?1, ?2, ... ?n".
std::string parameters(size_t n) {
  std::string out;
  for (size_t i = 1; i <= n; ++i)
    out += (i == 1 ? "?" : ", ?") + std::to_string(i);
  return out;
}

// `verb` INTO `name` (columns [first, end)) VALUES (?1, ...).
template <class Table>
std::string insert(const char* verb, const char* name, const Table& table, size_t first = 0) {
  return std::string(verb) + " INTO " + name + " (" + names(table, first) + ") VALUES (" +
         parameters(table.size() - first) + ")";
}

// UPDATE `name` SET column = ?k, ... for columns [1, end), WHERE (column
// 0) = ?n: the key last.
template <class Table>
std::string update(const char* name, const Table& table) {
  std::string out = std::string("UPDATE ") + name + " SET ";
  for (size_t i = 1; i < table.size(); ++i)
    out += (i == 1 ? "" : ", ") + std::string(table[i].name) + " = ?" + std::to_string(i);
  return out + " WHERE " + table[0].name + " = ?" + std::to_string(table.size());
}

// Binds columns [first, end) of `row` to parameters 1, 2, ...
template <class Table, class Row>
void bind_columns(sqlite::statement& s, const Table& table, const Row& row, size_t first = 0) {
  for (size_t i = first; i < table.size(); ++i)
    table[i].bind(s, static_cast<int>(i - first + 1), row);
}

template <class Row, class Table>
Row read_columns(const sqlite::statement& s, const Table& table) {
  Row row;
  for (size_t i = 0; i < table.size(); ++i)
    table[i].read(s, static_cast<int>(i), row);
  return row;
}

} // namespace

const std::string insert_experiment = insert("INSERT", "experiments", experiment_table, 1);
const std::string update_experiment = update("experiments", experiment_table);
const std::string put_trial = insert("INSERT OR REPLACE", "trials", trial_table);
const std::string add_metric = insert("INSERT OR REPLACE", "metrics", metric_table);
const std::string put_checkpoint = insert("INSERT OR REPLACE", "checkpoints", checkpoint_table);
const std::string add_lineage = insert("INSERT OR REPLACE", "lineage", lineage_table);
const std::string add_event = insert("INSERT OR REPLACE", "events", event_table);

const std::string experiment_columns = names(experiment_table);
const std::string trial_columns = names(trial_table);
const std::string metric_columns = names(metric_table);
const std::string checkpoint_columns = names(checkpoint_table);
const std::string lineage_columns = names(lineage_table);
const std::string event_columns = names(event_table);

void bind(sqlite::statement& s, const experiment_row& e) {
  bind_columns(s, experiment_table, e, 1);
}
void bind_update(sqlite::statement& s, const experiment_row& e) {
  bind_columns(s, experiment_table, e, 1);
  experiment_table[0].bind(s, static_cast<int>(experiment_table.size()), e);
}
void bind(sqlite::statement& s, const trial_row& t) { bind_columns(s, trial_table, t); }
void bind(sqlite::statement& s, const metric_row& m) { bind_columns(s, metric_table, m); }
void bind(sqlite::statement& s, const checkpoint_row& c) { bind_columns(s, checkpoint_table, c); }
void bind(sqlite::statement& s, const lineage_row& l) { bind_columns(s, lineage_table, l); }
void bind(sqlite::statement& s, const event_row& e) { bind_columns(s, event_table, e); }

experiment_row read_experiment(const sqlite::statement& s) {
  return read_columns<experiment_row>(s, experiment_table);
}
trial_row read_trial(const sqlite::statement& s) { return read_columns<trial_row>(s, trial_table); }
metric_row read_metric(const sqlite::statement& s) {
  return read_columns<metric_row>(s, metric_table);
}
checkpoint_row read_checkpoint(const sqlite::statement& s) {
  return read_columns<checkpoint_row>(s, checkpoint_table);
}
lineage_row read_lineage(const sqlite::statement& s) {
  return read_columns<lineage_row>(s, lineage_table);
}
event_row read_event(const sqlite::statement& s) { return read_columns<event_row>(s, event_table); }

} // namespace dtrain::experiments::rows
