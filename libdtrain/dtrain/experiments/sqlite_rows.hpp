#pragma once

#include "dtrain/experiments/store.hpp"
#include "dtrain/experiments/sqlite.hpp"

/// The row structs of experiment_store.hpp to and from SQL (private to
/// store/): for each table, the statement that stores a row, the columns
/// that read one back, and the functions that bind and read them, so that
/// the column order is written in one place.
namespace dtrain::experiments::rows {

// INSERT statements: a row's fields bound in order by bind().
extern const char* const insert_experiment;   // without id: AUTOINCREMENT assigns it
extern const char* const update_experiment;   // the fields, then ?14 = id
extern const char* const put_trial;           // insert or replace
extern const char* const add_metric;          // insert or replace (a report written twice)
extern const char* const put_checkpoint;      // insert or replace
extern const char* const add_lineage;         // insert or replace
extern const char* const add_event;           // insert or replace

// SELECT column lists, in the order read_*() reads them.
extern const char* const experiment_columns;
extern const char* const trial_columns;
extern const char* const metric_columns;
extern const char* const checkpoint_columns;
extern const char* const lineage_columns;
extern const char* const event_columns;

/// Binds the fields in the order of the INSERT above (an experiment: every
/// field but the id, to parameters 1..13).
void bind(sqlite::statement& s, const experiment_row& e);
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
