#pragma once

#include <string>

#include "dtrain/experiments/store.hpp"
#include "dtrain/experiments/sqlite.hpp"

/// The row structs of experiment_store.hpp to and from SQL (private to
/// experiments/). One table per row type in sqlite_rows.cpp (column name, data
/// member) drives everything here: the statement that stores a row, the
/// columns that read one back, and the binding and reading, so a column is
/// named once. Thread-safe (constants and pure functions).
namespace dtrain::experiments::rows {

// INSERT statements: a row's fields bound in order by bind().
extern const std::string insert_experiment;   // without id: AUTOINCREMENT assigns it
extern const std::string update_experiment;   // the fields, then id last (bind_update)
extern const std::string put_trial;           // insert or replace
extern const std::string add_metric;          // insert or replace (a report written twice)
extern const std::string put_checkpoint;      // insert or replace
extern const std::string add_lineage;         // insert or replace
extern const std::string add_event;           // insert or replace

// SELECT column lists, in the order read_*() reads them.
extern const std::string experiment_columns;
extern const std::string trial_columns;
extern const std::string metric_columns;
extern const std::string checkpoint_columns;
extern const std::string lineage_columns;
extern const std::string event_columns;

/// Binds the fields in the order of the INSERT above (an experiment: every
/// field but the id, to parameters 1..13).
void bind(sqlite::statement& s, const experiment_row& e);
/// For update_experiment: bind(), then the id to the last parameter.
void bind_update(sqlite::statement& s, const experiment_row& e);
void bind(sqlite::statement& s, const trial_row& t);
void bind(sqlite::statement& s, const metric_row& m);
void bind(sqlite::statement& s, const checkpoint_row& c);
void bind(sqlite::statement& s, const lineage_row& l);
void bind(sqlite::statement& s, const event_row& e);

experiment_row read_experiment(const sqlite::statement& s);
trial_row read_trial(const sqlite::statement& s);
metric_row read_metric(const sqlite::statement& s);
checkpoint_row read_checkpoint(const sqlite::statement& s);
lineage_row read_lineage(const sqlite::statement& s);
event_row read_event(const sqlite::statement& s);

} // namespace dtrain::experiments::rows
