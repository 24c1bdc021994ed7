// `dtrain experiments list | show | trials | best | compare | delete | importance`: the experiment
// store read (and pruned) from the command line, through the head of a
// cluster or from the local store file.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include "command_line.hpp"
#include "experiments_compare.hpp"
#include "experiments_text.hpp"
#include "dtrain/driver/runs/experiment_delete.hpp"
#include "dtrain/driver/runs/store_access.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/driver/cluster.hpp"
#include "dtrain/cluster/experiment_service.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/core/json.hpp"
#include "dtrain/dashboard/api.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/experiments/pareto_rows.hpp"
#include "dtrain/experiments/store.hpp"

namespace dtrain::cli {

using namespace dtrain::runs;

namespace {

using experiments::checkpoint_row;
using experiments::experiment_row;
using experiments::trial_row;

// Without --store: the cluster find_cluster names, else the local file.
// `elsewhere`: the store is read through a head that --address or
// $DTRAIN_ADDRESS named (not the one started on this host), whose
// experiments' drivers may run on hosts this one cannot see.
result<opened_store> open_store(const experiments_options& o, bool& elsewhere) {
  std::string address = o.address;
  elsewhere = !address.empty();
  if (o.store.empty()) {
    DTRAIN_ASSIGN_OR_RETURN(auto found, find_cluster(o.address));
    address = found.address;
    elsewhere = !address.empty() && found.source != actors::address_source::local_head;
  }
  return open_experiment_store(address, o.store, o.tls, o.action != "delete");
}

// ---- what the commands compute -------------------------------------------

bool better(double a, double b, bool minimize) {
  if (std::isnan(a))
    return false;
  if (std::isnan(b))
    return true;
  return minimize ? a < b : a > b;
}

// The trial with the best `best` by the experiment's direction; null if none has one.
using dashboard::best_trial;

std::string experiment_json(const experiment_row& e, const std::vector<trial_row>& trials) {
  const trial_row* best = best_trial(e, trials);
  return "{\"id\": " + std::to_string(e.id) + ", \"name\": " + json_string(e.name) +
         ", \"kind\": " + json_string(e.kind) + ", \"state\": " + json_string(e.state) +
         ", \"trials\": " + std::to_string(trials.size()) + ", \"metric\": " +
         json_string(e.metric) + ", \"minimize\": " + (e.minimize ? "true" : "false") +
         ", \"best\": " + json_number(best ? best->best : experiments::no_value) +
         ", \"best_trial\": " + (best ? json_string(best->id) : "null") +
         ", \"created_at\": " + json_number(e.created_at) + ", \"updated_at\": " +
         json_number(e.updated_at) + ", \"ended_at\": " + json_number(e.ended_at) +
         ", \"storage\": " + json_string(e.storage) + ", \"config_hash\": " +
         json_string(e.config_hash) + ", \"owner\": " + json_string(e.owner) +
         ", \"message\": " + json_string(e.message) + "}";
}

std::string trial_json(const trial_row& t) {
  return "{\"id\": " + json_string(t.id) + ", \"state\": " + json_string(t.state) +
         ", \"epochs\": " + std::to_string(t.epochs) + ", \"best\": " + json_number(t.best) +
         ", \"last\": " + json_number(t.last) + ", \"restarts\": " + std::to_string(t.restarts) +
         ", \"hyperparameters\": " + json_raw_or_string(t.hyperparameters) +
         ", \"error\": " + json_string(t.error) + ", \"checkpoint_dir\": " +
         json_string(t.checkpoint_dir) + ", \"end_how\": " + json_string(t.end_how) + "}";
}

// ---- the subcommands: each returns the exit code ------------------------

int list(experiments::experiment_store& s, const experiments_options& o) {
  auto all = s.experiments();
  if (!all)
    return fail(all.error());
  std::vector<std::vector<trial_row>> trials;
  for (auto& e : *all) {
    auto t = s.trials(e.id);
    if (!t)
      return fail(t.error());
    trials.push_back(std::move(*t));
  }
  if (o.json) {
    std::string out = "[";
    for (size_t i = 0; i < all->size(); ++i)
      out += (i ? ",\n " : "") + experiment_json((*all)[i], trials[i]);
    std::printf("%s]\n", out.c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < all->size(); ++i) {
    auto& e = (*all)[i];
    const trial_row* best = best_trial(e, trials[i]);
    rows.push_back({std::to_string(e.id), e.name, e.kind, e.state,
                    std::to_string(trials[i].size()),
                    best ? number_text(best->best) + " (" + e.metric + ")" : "-",
                    time_text(e.created_at)});
  }
  print_table({"ID", "NAME", "KIND", "STATE", "TRIALS", "BEST", "CREATED"}, rows);
  return 0;
}

int show(experiments::experiment_store& s, const experiments_options& o) {
  auto e = s.experiment(o.id);
  if (!e)
    return fail(e.error());
  auto trials = s.trials(o.id);
  if (!trials)
    return fail(trials.error());
  std::map<std::string, int> by_state;
  for (auto& t : *trials)
    ++by_state[t.state];
  const trial_row* best = best_trial(*e, *trials);
  auto lineage = s.lineage(o.id);
  if (!lineage)
    return fail(lineage.error());
  auto events = s.events(o.id);
  if (!events)
    return fail(events.error());
  if (o.json) {
    std::string happened = "[";
    for (const auto& ev : *events)
      happened += (happened.size() > 1 ? ", " : "") + std::string("{\"trial\": ") +
                  json_string(ev.trial) + ", \"seq\": " + std::to_string(ev.seq) +
                  ", \"epoch\": " + std::to_string(ev.epoch) + ", \"kind\": " +
                  json_string(ev.kind) + ", \"message\": " + json_string(ev.message) +
                  ", \"time\": " + json_number(ev.time) + "}";
    happened += "]";
    std::string exploits = "[";
    for (const auto& l : *lineage)
      exploits += (exploits.size() > 1 ? ", " : "") + std::string("{\"trial\": ") + json_string(l.trial) +
                  ", \"epoch\": " + std::to_string(l.epoch) + ", \"source\": " + json_string(l.source) +
                  ", \"source_epoch\": " + std::to_string(l.source_epoch) +
                  ", \"before\": " + json_raw_or_string(l.before) +
                  ", \"after\": " + (l.after.empty() ? std::string("null") : json_raw_or_string(l.after)) +
                  ", \"time\": " + json_number(l.time) + "}";
    exploits += "]";
    std::string counts = "{";
    for (auto& [state, n] : by_state)
      counts += (counts.size() > 1 ? ", " : "") + json_string(state) + ": " + std::to_string(n);
    std::string out = experiment_json(*e, *trials);
    out.pop_back();  // the closing brace: the fields below join it
    out += ", \"configuration\": " + json_string(e->configuration) +
           ", \"trial_states\": " + counts + "}, \"lineage\": " + exploits +
           ", \"events\": " + happened + ", \"best_trial_row\": " +
           (best ? trial_json(*best) : "null") + "}";
    std::printf("%s\n", out.c_str());
    return 0;
  }
  std::printf("experiment %lld: %s\n", static_cast<long long>(e->id), e->name.c_str());
  std::printf("  kind       %s\n  state      %s%s\n", e->kind.c_str(), e->state.c_str(),
              e->message.empty() ? "" : (" (" + e->message + ")").c_str());
  std::printf("  metric     %s (%s)\n", e->metric.c_str(), e->minimize ? "min" : "max");
  std::printf("  created    %s\n  updated    %s\n  ended      %s\n", time_text(e->created_at).c_str(),
              time_text(e->updated_at).c_str(), time_text(e->ended_at).c_str());
  std::printf("  storage    %s\n  hash       %s\n", e->storage.empty() ? "-" : e->storage.c_str(),
              e->config_hash.c_str());
  if (!e->owner.empty())
    std::printf("  owner      %s\n", e->owner.c_str());
  std::printf("  trials     %zu", trials->size());
  for (auto& [state, n] : by_state)
    std::printf("%s%d %s", &state == &by_state.begin()->first ? " (" : ", ", n, state.c_str());
  std::printf("%s\n", by_state.empty() ? "" : ")");
  if (best)
    std::printf("  best       trial %s: %s %s %s\n", best->id.c_str(), e->metric.c_str(),
                number_text(best->best).c_str(), best->hyperparameters.c_str());
  if (!lineage->empty()) {
    // PBT's exploits: who copied whom, when, and the values it went on with.
    std::printf("lineage (PBT exploits):\n");
    for (const auto& l : *lineage)
      if (l.after.empty())
        std::printf("  trial %s at epoch %lld could not copy trial %s; it went on unchanged\n",
                    l.trial.c_str(), static_cast<long long>(l.epoch), l.source.c_str());
      else
        std::printf("  trial %s at epoch %lld copied trial %s's epoch %lld: %s -> %s\n", l.trial.c_str(),
                    static_cast<long long>(l.epoch), l.source.c_str(),
                    static_cast<long long>(l.source_epoch), l.before.c_str(), l.after.c_str());
  }
  if (!events->empty()) {
    // What the trainers went through: failures with their causes, recoveries.
    std::printf("events (failures and recoveries):\n");
    for (const auto& ev : *events)
      std::printf("  trial %s epoch %lld %s: %s\n", ev.trial.c_str(),
                  static_cast<long long>(ev.epoch), ev.kind.c_str(), ev.message.c_str());
  }
  std::printf("configuration:\n");
  std::string config = e->configuration;
  if (!config.empty() && config.back() != '\n')
    config += '\n';
  std::printf("%s", config.c_str());
  return 0;
}

int trials(experiments::experiment_store& s, const experiments_options& o) {
  if (auto e = s.experiment(o.id); !e)
    return fail(e.error());
  auto trials = s.trials(o.id);
  if (!trials)
    return fail(trials.error());
  if (o.json) {
    std::string out = "[";
    for (size_t i = 0; i < trials->size(); ++i)
      out += (i ? ",\n " : "") + trial_json((*trials)[i]);
    std::printf("%s]\n", out.c_str());
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (auto& t : *trials)
    rows.push_back({t.id, t.state, std::to_string(t.epochs), number_text(t.best),
                    number_text(t.last), std::to_string(t.restarts),
                    shortened(t.hyperparameters, 60), shortened(t.error, 40)});
  print_table({"TRIAL", "STATE", "EPOCHS", "BEST", "LAST", "RESTARTS", "HYPERPARAMETERS", "ERROR"},
              rows);
  return 0;
}

// The best trial by `metric`'s best value over its metrics rows.
const trial_row* best_by_metric(experiments::experiment_store& s, const std::vector<trial_row>& trials,
                                int64_t id, const std::string& metric, bool minimize,
                                double& value, status& error) {
  auto rows = s.metrics(id, "");
  if (!rows) {
    error = rows.error();
    return nullptr;
  }
  std::map<std::string, double> best;
  for (auto& m : *rows)
    if (m.name == metric && !std::isnan(m.value) &&
        (!best.count(m.trial) || better(m.value, best[m.trial], minimize)))
      best[m.trial] = m.value;
  const trial_row* out = nullptr;
  value = experiments::no_value;
  for (auto& t : trials)
    if (auto it = best.find(t.id); it != best.end() && (!out || better(it->second, value, minimize))) {
      out = &t;
      value = it->second;
    }
  return out;
}

// mo: a multi-objective experiment's best is its Pareto set
// (experiments::pareto_trials); true when `e`'s stored configuration names
// several objectives (the set is then printed, or the error told).
bool best_pareto(experiments::experiment_store& s, const experiments_options& o,
                 const experiments::experiment_row& e, int& code) {
  auto config = experiments::parse_experiment(e.configuration, e.name);
  if (!config || !tune::multi_objective(config->sweep))
    return false;
  auto front = experiments::pareto_trials(s, o.id);
  if (!front) {
    code = fail(front.error());
    return true;
  }
  std::string metrics;
  for (const auto& m : config->sweep.objectives)
    metrics += (metrics.empty() ? "" : ", ") + m.metric +
               (m.direction == tune::mode::min ? " (min)" : " (max)");
  code = 0;
  if (o.json) {
    std::string trials;
    for (size_t i = 0; i < front->size(); ++i)
      trials += (i ? ", " : "") + trial_json((*front)[i]);
    std::printf("{\"experiment\": %lld, \"pareto\": [%s]}\n", static_cast<long long>(o.id),
                trials.c_str());
    return true;
  }
  std::printf("Pareto set of experiment %lld by %s%s: %zu trial(s)\n",
              static_cast<long long>(o.id), metrics.c_str(),
              config->sweep.constraints.empty() ? "" : ", feasible first", front->size());
  for (const auto& t : *front)
    std::printf("  %s  %s\n", t.id.c_str(), t.hyperparameters.c_str());
  return true;
}

int best(experiments::experiment_store& s, const experiments_options& o) {
  auto e = s.experiment(o.id);
  if (!e)
    return fail(e.error());
  if (int code = 0; o.metric.empty() && best_pareto(s, o, *e, code))
    return code;
  auto trials = s.trials(o.id);
  if (!trials)
    return fail(trials.error());
  std::string metric = o.metric.empty() ? e->metric : o.metric;
  bool minimize = o.metric.empty() ? e->minimize : o.metric.find("loss") != std::string::npos;
  std::string how = o.metric.empty()
                        ? "by the experiment's metric " + metric + " (" +
                              (minimize ? "min" : "max") + ")"
                        : "by " + metric + "'s best value over its metrics (" +
                              (minimize ? "min" : "max") + (minimize ? ": the name has \"loss\"" : "") +
                              ")";
  const trial_row* t = nullptr;
  double value = experiments::no_value;
  if (o.metric.empty()) {
    t = best_trial(*e, *trials);
    value = t ? t->best : value;
  } else {
    status error;
    t = best_by_metric(s, *trials, o.id, metric, minimize, value, error);
    if (!error)
      return fail(error);
  }
  if (!t)
    return fail(not_found("experiment " + std::to_string(o.id) + " has no trial with a value of " +
                          metric + " in " + s.where()));
  std::string checkpoint;
  auto checkpoints = s.checkpoints(o.id, t->id);
  if (!checkpoints)
    return fail(checkpoints.error());
  for (auto& c : *checkpoints)  // by seq: the last valid one is the newest
    if (c.valid)
      checkpoint = c.path;
  if (o.json) {
    std::printf("{\"experiment\": %lld, \"metric\": %s, \"minimize\": %s, \"value\": %s, "
                "\"checkpoint\": %s, \"trial\": %s}\n",
                static_cast<long long>(o.id), json_string(metric).c_str(),
                minimize ? "true" : "false", json_number(value).c_str(),
                checkpoint.empty() ? "null" : json_string(checkpoint).c_str(),
                trial_json(*t).c_str());
    return 0;
  }
  std::printf("best trial of experiment %lld %s: %s\n", static_cast<long long>(o.id), how.c_str(),
              t->id.c_str());
  std::printf("  %s          %s\n", metric.c_str(), number_text(value).c_str());
  std::printf("  state           %s, %lld epochs\n", t->state.c_str(),
              static_cast<long long>(t->epochs));
  std::printf("  hyperparameters %s\n", t->hyperparameters.c_str());
  std::printf("  checkpoint      %s\n", checkpoint.empty() ? "(none valid)" : checkpoint.c_str());
  return 0;
}

// The --yes flag, else a "y" typed at a terminal (refused without one).
result<bool> confirmed(const std::string& what, const experiments_options& o) {
  if (o.yes)
    return true;
  if (!isatty(STDIN_FILENO))
    return invalid_argument("refusing to delete " + what +
                            " without confirmation: stdin is not a terminal; pass --yes");
  std::printf("delete %s? [y/N] ", what.c_str());
  std::fflush(stdout);
  std::string answer;
  std::getline(std::cin, answer);
  if (answer == "y" || answer == "Y" || answer == "yes")
    return true;
  std::printf("not deleted\n");
  return false;
}

// `delete ID`: runs::delete_experiment, asking first.
int run_delete(experiments::experiment_store& s, const experiments_options& o, bool remote) {
  delete_request r;
  r.id = o.id;
  r.force = o.force;
  r.remote = remote;
  r.confirm = [&o](const std::string& what) { return confirmed(what, o); };
  auto gone = delete_experiment(s, r);
  if (!gone) {
    std::fprintf(stderr, "error: %s\n", gone.error().message().c_str());
    return 1;
  }
  if (gone->empty())
    return 1;  // not confirmed
  std::printf("deleted %s\n", gone->c_str());
  return 0;
}

} // namespace

int run_experiments(const experiments_options& o) {
  bool elsewhere = false;
  auto opened = open_store(o, elsewhere);
  if (!opened)
    return fail(opened.error());
  experiments::experiment_store& s = *opened->store;
  if (o.action == "list")
    return list(s, o);
  if (o.action == "show")
    return show(s, o);
  if (o.action == "trials")
    return trials(s, o);
  if (o.action == "best")
    return best(s, o);
  if (o.action == "delete")
    return run_delete(s, o, elsewhere);
  if (o.action == "compare")
    return compare_experiments(s, o);
  if (o.action == "importance")
    return print_importance(s, o);
  return fail(invalid_argument("dtrain experiments: unknown action " + o.action));
}

void add_experiments_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<experiments_options>();
  auto* experiments = app.add_subcommand("experiments", "list and inspect the experiment store");
  experiments->require_subcommand(1);
  add_address_option(experiments, o->address, "the local store");
  experiments->add_option("--store", o->store,
                          "a local store file (default: $DTRAIN_HOME/experiments.db)");
  experiments->add_flag("--json", o->json, "JSON instead of tables");
  add_tls_options(experiments, o->tls);
  auto action = [&](const char* name, const char* what, bool with_id) {
    auto* sub = experiments->add_subcommand(name, what);
    sub->fallthrough();  // --address, --store and --json after the action too
    if (with_id)
      sub->add_option("id", o->id, "the experiment's id")->required();
    sub->callback([o, name] { o->action = name; });
    return sub;
  };
  action("list", "every experiment: id, name, kind, state, trials, best, created", false);
  action("show", "an experiment's fields, configuration, trial counts and best trial", true);
  action("trials", "an experiment's trials", true);
  action("best", "an experiment's best trial, its hyperparameters and newest checkpoint", true)
      ->add_option("--metric", o->metric,
                   "rank by this metric's best value (min if its name has \"loss\", else max)");
  action("compare", "experiments side by side: best configurations and metrics, what their "
                    "sweeps ran, where their files differ", false)
      ->add_option("ids", o->ids, "two or more experiment ids")
      ->required()
      ->expected(2, -1);
  action("importance", "which hyperparameters matter: fANOVA over the completed trials, ranked",
         true)
      ->add_option("--method", o->method, "fanova (Optuna's FanovaImportanceEvaluator) or fast")
      ->check(CLI::IsMember({"fanova", "fast"}));
  auto* deleting = action("delete", "delete an experiment's rows and its checkpoint directory "
                                    "(only one that carries the experiment's owner marker)", true);
  deleting->add_flag("--yes", o->yes, "do not ask");
  deleting->add_flag("--force", o->force,
                     "also a running experiment: its driver on this host is stopped first (SIGTERM: "
                     "it checkpoints and exits); one elsewhere is not waited for");
  out.push_back({experiments, [o] { return run_experiments(*o); }});
}

} // namespace dtrain::cli
