// Creating and continuing experiments in the store for `dtrain train` and
// `dtrain tune`: ids, checkpoint directories, and the refusal of a resume
// whose configuration changed.
#include "experiment_runs.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <unistd.h>

#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"

namespace dtrain::cli {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string this_host() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0)
    return "localhost";
  return name;
}

std::string owner_of_this_process() { return this_host() + " " + std::to_string(getpid()); }

// The pid of `owner` when it names a live process on this host, else 0.
pid_t live_owner_here(const std::string& owner) {
  auto space = owner.rfind(' ');
  if (space == std::string::npos || owner.substr(0, space) != this_host())
    return 0;
  pid_t pid = static_cast<pid_t>(std::atol(owner.c_str() + space + 1));
  if (pid <= 0 || pid == getpid())
    return 0;
  return ::kill(pid, 0) == 0 ? pid : 0;
}

// A non-empty directory at `dir` that belongs to no experiment the store
// knows (the store was deleted or replaced): moved aside, so a new
// experiment with a reused id never restores another's checkpoints.
status clear_stale_directory(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec) || std::filesystem::is_empty(dir, ec))
    return status::ok();
  std::string aside = dir + ".stale-" + std::to_string(static_cast<long long>(std::time(nullptr)));
  std::filesystem::rename(dir, aside, ec);
  if (ec)
    return io_error("the checkpoint directory " + dir + " of the new experiment holds files of "
                    "an experiment the store does not know, and moving them to " + aside +
                    " failed: " + ec.message());
  std::fprintf(stderr, "dtrain: %s held checkpoints of an experiment the store does not know; "
                       "moved to %s\n", dir.c_str(), aside.c_str());
  return status::ok();
}

} // namespace

result<experiment_run> begin_experiment(std::shared_ptr<store::experiment_store> s,
                                        const config::experiment& e, const std::string& kind,
                                        int64_t resume_id, bool force) {
  experiment_run run;
  run.store = s;
  const std::string yaml = config::to_yaml(e);
  const std::string hash = config::config_hash(yaml);
  if (resume_id <= 0) {
    store::experiment_row row;
    row.name = e.name;
    row.kind = kind;
    row.configuration = yaml;
    row.config_hash = hash;
    row.state = "running";
    row.metric = e.sweep.metric;
    row.minimize = e.sweep.direction == tune::mode::min;
    row.created_at = row.updated_at = unix_now();
    row.owner = owner_of_this_process();
    DTRAIN_ASSIGN_OR_RETURN(row.id, s->create_experiment(row));
    run.row = row;
    if (!e.checkpoint_dir.empty()) {
      run.row.storage = e.checkpoint_dir + "/" + std::to_string(row.id);
      status ready = clear_stale_directory(run.row.storage);
      if (ready)
        ready = s->update_experiment(run.row);
      if (!ready) {  // the experiment exists now: never left running
        end_experiment(run, "failed", ready.to_string());
        return ready;
      }
    }
    return run;
  }
  DTRAIN_ASSIGN_OR_RETURN(store::experiment_row row, s->experiment(resume_id));
  const std::string id = std::to_string(resume_id);
  if (row.kind != kind)
    return invalid_argument("experiment " + id + " (" + row.name + ") is a `dtrain " + row.kind +
                            "` experiment: resume it with `dtrain " + row.kind +
                            " EXPERIMENT.yaml --resume " + id + "`");
  if (row.state == "running")
    if (pid_t pid = live_owner_here(row.owner); pid != 0)
      return invalid_argument("experiment " + id + " is running now in process " +
                              std::to_string(pid) + " on this host: stop it first (Ctrl-C or "
                              "kill " + std::to_string(pid) + ")");
  if (row.config_hash != hash) {
    std::string listed;
    for (const std::string& d : config::config_differences(row.configuration, yaml))
      listed += "\n  " + d;
    // Texts that differ with every key equal (another dtrain's spelling of
    // the same YAML) are the same experiment.
    if (listed.empty())
      force = true;
    else if (!force)
      return invalid_argument("experiment " + id + " (" + row.name + ") was run with another "
                              "configuration; these keys differ (stored -> now):" + listed +
                              "\nrun the file as a new experiment (without --resume), or pass "
                              "--force to continue experiment " + id + " with the new configuration");
    if (!listed.empty())
      std::fprintf(stderr, "dtrain: --force: experiment %s continues with the new configuration; "
                           "changed:%s\n", id.c_str(), listed.c_str());
    row.configuration = yaml;
    row.config_hash = hash;
  }
  run.previous_state = row.state;
  row.state = "running";
  row.message.clear();
  row.ended_at = 0;
  row.updated_at = unix_now();
  row.owner = owner_of_this_process();
  DTRAIN_RETURN_IF_ERROR(s->update_experiment(row));
  run.row = row;
  run.resumed = true;
  return run;
}

void end_experiment(experiment_run& run, const std::string& state, const std::string& message) {
  run.row.state = state;
  run.row.message = message;
  run.row.updated_at = run.row.ended_at = unix_now();
  run.row.owner.clear();
  status s = run.store->update_experiment(run.row);
  if (s)
    s = run.store->flush();
  if (!s)
    std::fprintf(stderr, "dtrain: recording the end of experiment %lld in %s: %s\n",
                 static_cast<long long>(run.row.id), run.store->where().c_str(),
                 s.to_string().c_str());
}

} // namespace dtrain::cli
