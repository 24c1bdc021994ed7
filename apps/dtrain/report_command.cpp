// `dtrain report EXPERIMENT`: one self-contained HTML file of an
// experiment, read from the local store or through a head.
#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <ctime>
#include <map>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/dashboard/report.hpp"
#include "command_line.hpp"
#include "dtrain/driver/runs/store_access.hpp"

namespace dtrain::cli {

using namespace dtrain::runs;

namespace {

// The experiment's rows as report_html takes them: every trial's metrics
// read at once, then handed to their trials.
result<dashboard::report_input> read_experiment(experiments::experiment_store& s, int64_t id) {
  dashboard::report_input in;
  DTRAIN_ASSIGN_OR_RETURN(in.experiment, s.experiment(id));
  DTRAIN_ASSIGN_OR_RETURN(in.trials, s.trials(id));
  DTRAIN_ASSIGN_OR_RETURN(auto rows, s.metrics(id, ""));
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < in.trials.size(); ++i)
    index[in.trials[i].id] = i;
  in.metrics.resize(in.trials.size());
  for (auto& row : rows)  // by seq: each trial's stay in report order
    if (auto it = index.find(row.trial); it != index.end())
      in.metrics[it->second].push_back(std::move(row));
  in.source = s.where();
  in.generated_at = static_cast<double>(std::time(nullptr));
  return in;
}

} // namespace

int run_report(const report_options& o) {
  // Without --store: the cluster find_cluster names, else the local file.
  auto found = o.store.empty() ? find_cluster(o.address)
                               : actors::cluster_address{o.address, actors::address_source::flag};
  if (!found)
    return fail(found.error());
  auto opened = open_experiment_store(found->address, o.store, o.tls, true);
  if (!opened)
    return fail(opened.error());
  auto in = read_experiment(*opened->store, o.id);
  if (!in)
    return fail(in.error().with_context("dtrain report " + std::to_string(o.id)));
  auto html = dashboard::report_html(*in);
  if (!html)
    return fail(html.error());
  const std::string path = o.output.empty() ? "report-" + std::to_string(o.id) + ".html" : o.output;
  if (status w = write_file_atomically(path, html->data(), html->size(), durability::file); !w)
    return fail(w);
  std::printf("wrote the report of experiment %lld (%s, %zu trials) to %s\n",
              static_cast<long long>(o.id), in->experiment.name.c_str(), in->trials.size(),
              path.c_str());
  return 0;
}

void add_report_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<report_options>();
  auto* report = app.add_subcommand(
      "report", "write an experiment's learning curves, trial table and best trial as one "
                "self-contained HTML file");
  report->add_option("id", o->id, "the experiment's id (`dtrain experiments list`)")->required();
  report->add_option("-o,--output", o->output, "the file to write (default: report-<id>.html)");
  add_address_option(report, o->address, "the local store");
  report->add_option("--store", o->store,
                     "a local store file (default: $DTRAIN_HOME/experiments.db)");
  add_tls_options(report, o->tls);
  out.push_back({report, [o] { return run_report(*o); }});
}

} // namespace dtrain::cli
