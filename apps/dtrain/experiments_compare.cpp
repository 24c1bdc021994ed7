// `dtrain experiments compare A B ...`: experiments side by side: their
// best trials' configurations and metrics, what their sweeps did, and
// where their experiment files differ.
#include "experiments_compare.hpp"

#include "command_line.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "dtrain/core/check.hpp"
#include "dtrain/dashboard/api.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/tune/space.hpp"
#include "experiments_text.hpp"

namespace dtrain::cli {

namespace {

using experiments::experiment_row;
using experiments::trial_row;

// One experiment as compared: its row, trials and best trial's values.
struct compared {
  experiment_row row;
  std::vector<trial_row> trials;
  const trial_row* best = nullptr;  // into `trials` (a moved vector keeps its elements)
  std::map<std::string, std::string> best_values;  // hyperparameter -> its text
  std::map<std::string, int> states;               // state -> trials in it
  int64_t epochs = 0;                              // run by all its trials
};

result<compared> read_one(experiments::experiment_store& s, int64_t id) {
  compared out;
  DTRAIN_ASSIGN_OR_RETURN(out.row, s.experiment(id));
  DTRAIN_ASSIGN_OR_RETURN(out.trials, s.trials(id));
  for (const auto& t : out.trials) {
    ++out.states[t.state];
    out.epochs += t.epochs;
  }
  out.best = dashboard::best_trial(out.row, out.trials);
  if (out.best != nullptr) {
    // Stored by the tuner as typed JSON; a row written otherwise shows as
    // one text.
    auto values = tune::config_from_json(out.best->hyperparameters);
    if (values)
      for (const auto& [name, v] : *values)
        out.best_values[name] = tune::to_string(v);
    else
      out.best_values["(hyperparameters)"] = out.best->hyperparameters;
  }
  return out;
}

std::string states_text(const compared& c) {
  std::string out = std::to_string(c.trials.size());
  std::string parts;
  for (const auto& [state, n] : c.states)
    parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + state;
  return parts.empty() ? out : out + " (" + parts + ")";
}

// Every configuration against the first one's (experiments::config_differences).
std::vector<std::vector<std::string>> differences(const std::vector<compared>& all) {
  std::vector<std::vector<std::string>> out(all.size());
  for (size_t i = 1; i < all.size(); ++i)
    out[i] = experiments::config_differences(all[0].row.configuration, all[i].row.configuration);
  return out;
}

int print_json(const std::vector<compared>& all) {
  const auto diffs = differences(all);
  std::string out = "{\"experiments\": [";
  for (size_t i = 0; i < all.size(); ++i) {
    const compared& c = all[i];
    std::string values = "{";
    for (const auto& [name, text] : c.best_values)
      values += (values.size() > 1 ? ", " : "") + json_string(name) + ": " + json_string(text);
    values += "}";
    std::string states = "{";
    for (const auto& [state, n] : c.states)
      states += (states.size() > 1 ? ", " : "") + json_string(state) + ": " + std::to_string(n);
    states += "}";
    std::string changed = "[";
    for (const auto& d : diffs[i])
      changed += (changed.size() > 1 ? ", " : "") + json_string(d);
    changed += "]";
    out += std::string(i ? ",\n " : "") + "{\"id\": " + std::to_string(c.row.id) +
           ", \"name\": " + json_string(c.row.name) + ", \"kind\": " + json_string(c.row.kind) +
           ", \"state\": " + json_string(c.row.state) + ", \"metric\": " +
           json_string(c.row.metric) + ", \"minimize\": " + (c.row.minimize ? "true" : "false") +
           ", \"trials\": " + std::to_string(c.trials.size()) + ", \"trial_states\": " + states +
           ", \"epochs\": " + std::to_string(c.epochs) + ", \"best\": " +
           json_number(c.best ? c.best->best : experiments::no_value) + ", \"best_trial\": " +
           (c.best ? json_string(c.best->id) : "null") + ", \"best_hyperparameters\": " + values +
           ", \"differences_from_first\": " + changed + "}";
  }
  std::printf("%s]}\n", out.c_str());
  return 0;
}

int print_text(const std::vector<compared>& all) {
  std::vector<std::string> header = {""};
  for (const auto& c : all)
    header.push_back(std::to_string(c.row.id) + " " + c.row.name);
  std::vector<std::vector<std::string>> rows;
  auto add = [&](const std::string& label, auto cell) {
    std::vector<std::string> r = {label};
    for (const auto& c : all)
      r.push_back(cell(c));
    rows.push_back(std::move(r));
  };
  add("kind", [](const compared& c) { return c.row.kind; });
  add("state", [](const compared& c) { return c.row.state; });
  add("metric", [](const compared& c) {
    return c.row.metric + (c.row.minimize ? " (min)" : " (max)");
  });
  add("trials", states_text);
  add("epochs run", [](const compared& c) { return std::to_string(c.epochs); });
  add("best", [](const compared& c) { return c.best ? number_text(c.best->best) : "-"; });
  add("best trial", [](const compared& c) {
    return c.best ? c.best->id + " (" + std::to_string(c.best->epochs) + " epochs)" : "-";
  });
  std::set<std::string> names;
  for (const auto& c : all)
    for (const auto& [name, text] : c.best_values)
      names.insert(name);
  for (const auto& name : names)
    add("  " + name, [&](const compared& c) {
      auto it = c.best_values.find(name);
      return it == c.best_values.end() ? std::string("-") : shortened(it->second, 40);
    });
  print_table(header, rows);
  std::set<std::string> metrics;
  for (const auto& c : all)
    metrics.insert(c.row.metric + (c.row.minimize ? "min" : "max"));
  if (metrics.size() > 1)
    std::printf("note: the experiments rank by different metrics or directions; their best "
                "values are not comparable\n");
  const auto diffs = differences(all);
  for (size_t i = 1; i < all.size(); ++i) {
    std::printf("%s against %s: %s\n", header[i + 1].c_str(), header[1].c_str(),
                diffs[i].empty() ? "the same experiment file" : "");
    for (const auto& d : diffs[i])
      std::printf("  %s\n", d.c_str());
  }
  return 0;
}

} // namespace

int compare_experiments(experiments::experiment_store& s, const experiments_options& o) {
  if (o.ids.size() < 2)
    return fail(invalid_argument("dtrain experiments compare: give at least two experiment ids, "
                                 "got " + std::to_string(o.ids.size())));
  std::vector<compared> all;
  for (int64_t id : o.ids) {
    auto one = read_one(s, id);
    if (!one)
      return fail(one.error());
    all.push_back(std::move(*one));
  }
  return o.json ? print_json(all) : print_text(all);
}

} // namespace dtrain::cli
