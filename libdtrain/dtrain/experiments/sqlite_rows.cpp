#include "dtrain/experiments/sqlite_rows.hpp"

namespace dtrain::experiments::rows {

const char* const insert_experiment =
    "INSERT INTO experiments (name, kind, configuration, config_hash, state, storage, metric, "
    "minimize, created_at, updated_at, ended_at, owner, message) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
const char* const update_experiment =
    "UPDATE experiments SET name = ?1, kind = ?2, configuration = ?3, config_hash = ?4, "
    "state = ?5, storage = ?6, metric = ?7, minimize = ?8, created_at = ?9, updated_at = ?10, "
    "ended_at = ?11, owner = ?12, message = ?13 WHERE id = ?14";
const char* const experiment_columns =
    "id, name, kind, configuration, config_hash, state, storage, metric, minimize, created_at, "
    "updated_at, ended_at, owner, message";

void bind(sqlite::statement& s, const experiment_row& e) {
  s.bind(1, e.name).bind(2, e.kind).bind(3, e.configuration).bind(4, e.config_hash);
  s.bind(5, e.state).bind(6, e.storage).bind(7, e.metric).bind(8, e.minimize);
  s.bind(9, e.created_at).bind(10, e.updated_at).bind(11, e.ended_at);
  s.bind(12, e.owner).bind(13, e.message);
}

experiment_row read_experiment(const sqlite::statement& s) {
  experiment_row e;
  e.id = s.integer(0);
  e.name = s.text(1);
  e.kind = s.text(2);
  e.configuration = s.text(3);
  e.config_hash = s.text(4);
  e.state = s.text(5);
  e.storage = s.text(6);
  e.metric = s.text(7);
  e.minimize = s.boolean(8);
  e.created_at = s.real(9);
  e.updated_at = s.real(10);
  e.ended_at = s.real(11);
  e.owner = s.text(12);
  e.message = s.text(13);
  return e;
}

const char* const put_trial =
    "INSERT OR REPLACE INTO trials (experiment, id, seq_created, hyperparameters, state, "
    "restarts, error, best, last, epochs, checkpoint_dir, seq_ended, end_how, started_at, "
    "ended_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";
const char* const trial_columns =
    "experiment, id, seq_created, hyperparameters, state, restarts, error, best, last, epochs, "
    "checkpoint_dir, seq_ended, end_how, started_at, ended_at";

void bind(sqlite::statement& s, const trial_row& t) {
  s.bind(1, t.experiment).bind(2, t.id).bind(3, t.seq_created).bind(4, t.hyperparameters);
  s.bind(5, t.state).bind(6, t.restarts).bind(7, t.error).bind(8, t.best).bind(9, t.last);
  s.bind(10, t.epochs).bind(11, t.checkpoint_dir).bind(12, t.seq_ended).bind(13, t.end_how);
  s.bind(14, t.started_at).bind(15, t.ended_at);
}

trial_row read_trial(const sqlite::statement& s) {
  trial_row t;
  t.experiment = s.integer(0);
  t.id = s.text(1);
  t.seq_created = s.integer(2);
  t.hyperparameters = s.text(3);
  t.state = s.text(4);
  t.restarts = static_cast<int>(s.integer(5));
  t.error = s.text(6);
  t.best = s.real(7);
  t.last = s.real(8);
  t.epochs = s.integer(9);
  t.checkpoint_dir = s.text(10);
  t.seq_ended = s.integer(11);
  t.end_how = s.text(12);
  t.started_at = s.real(13);
  t.ended_at = s.real(14);
  return t;
}

const char* const add_metric =
    "INSERT OR REPLACE INTO metrics (experiment, trial, seq, name, epoch, value, time) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const char* const metric_columns = "experiment, trial, seq, name, epoch, value, time";

void bind(sqlite::statement& s, const metric_row& m) {
  s.bind(1, m.experiment).bind(2, m.trial).bind(3, m.seq).bind(4, m.name);
  s.bind(5, m.epoch).bind(6, m.value).bind(7, m.time);
}

metric_row read_metric(const sqlite::statement& s) {
  metric_row m;
  m.experiment = s.integer(0);
  m.trial = s.text(1);
  m.seq = s.integer(2);
  m.name = s.text(3);
  m.epoch = s.integer(4);
  m.value = s.real(5);
  m.time = s.real(6);
  return m;
}

const char* const put_checkpoint =
    "INSERT OR REPLACE INTO checkpoints (experiment, path, trial, epoch, metric, valid, seq, "
    "time) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
const char* const checkpoint_columns = "experiment, path, trial, epoch, metric, valid, seq, time";

void bind(sqlite::statement& s, const checkpoint_row& c) {
  s.bind(1, c.experiment).bind(2, c.path).bind(3, c.trial).bind(4, c.epoch);
  s.bind(5, c.metric).bind(6, c.valid).bind(7, c.seq).bind(8, c.time);
}

checkpoint_row read_checkpoint(const sqlite::statement& s) {
  checkpoint_row c;
  c.experiment = s.integer(0);
  c.path = s.text(1);
  c.trial = s.text(2);
  c.epoch = s.integer(3);
  c.metric = s.real(4);
  c.valid = s.boolean(5);
  c.seq = s.integer(6);
  c.time = s.real(7);
  return c;
}

const char* const add_lineage =
    "INSERT OR REPLACE INTO lineage (experiment, seq, trial, epoch, source, source_epoch, "
    "hyperparameters_before, hyperparameters_after, time) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
const char* const lineage_columns =
    "experiment, seq, trial, epoch, source, source_epoch, hyperparameters_before, "
    "hyperparameters_after, time";

void bind(sqlite::statement& s, const lineage_row& l) {
  s.bind(1, l.experiment).bind(2, l.seq).bind(3, l.trial).bind(4, l.epoch);
  s.bind(5, l.source).bind(6, l.source_epoch).bind(7, l.before).bind(8, l.after);
  s.bind(9, l.time);
}

lineage_row read_lineage(const sqlite::statement& s) {
  lineage_row l;
  l.experiment = s.integer(0);
  l.seq = s.integer(1);
  l.trial = s.text(2);
  l.epoch = s.integer(3);
  l.source = s.text(4);
  l.source_epoch = s.integer(5);
  l.before = s.text(6);
  l.after = s.text(7);
  l.time = s.real(8);
  return l;
}

const char* const add_event =
    "INSERT OR REPLACE INTO events (experiment, seq, trial, epoch, time, kind, message) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
const char* const event_columns = "experiment, seq, trial, epoch, time, kind, message";

void bind(sqlite::statement& s, const event_row& e) {
  s.bind(1, e.experiment).bind(2, e.seq).bind(3, e.trial).bind(4, e.epoch);
  s.bind(5, e.time).bind(6, e.kind).bind(7, e.message);
}

event_row read_event(const sqlite::statement& s) {
  event_row e;
  e.experiment = s.integer(0);
  e.seq = s.integer(1);
  e.trial = s.text(2);
  e.epoch = s.integer(3);
  e.time = s.real(4);
  e.kind = s.text(5);
  e.message = s.text(6);
  return e;
}

} // namespace dtrain::experiments::rows
