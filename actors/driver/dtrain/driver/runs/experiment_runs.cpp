// Creating and continuing experiments in the store for `dtrain train` and
// `dtrain tune`: ids, checkpoint directories (named and marked with a token
// unique across stores), and the refusal of a resume whose configuration
// changed or whose directory is another experiment's.
#include "dtrain/driver/runs/experiment_runs.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unistd.h>

#include "dtrain/core/check.hpp"
#include "dtrain/core/net.hpp"

namespace dtrain::runs {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string owner_of_this_process() { return net::host_name() + " " + std::to_string(getpid()); }

// The checkpoint directory of new experiment `row` under `root` (made
// absolute against the working directory if the experiment was not read
// from a file, which does that), with a fresh token, marked as its own.
result<std::string> new_storage(const std::string& root, const experiments::experiment_row& row,
                                const std::string& where) {
  std::error_code ec;
  const std::string base = std::filesystem::absolute(root, ec).lexically_normal().string();
  if (ec)
    return io_error("checkpoint_storage.host_path " + root + ": cannot make it absolute: " +
                    ec.message());
  DTRAIN_ASSIGN_OR_RETURN(std::string token, checkpoint::new_owner_token());
  experiments::experiment_row named = row;
  named.storage = (base.size() > 1 && base.back() == '/' ? base.substr(0, base.size() - 1) : base) +
                  "/" + std::to_string(row.id) + "-" + token;
  DTRAIN_RETURN_IF_ERROR(checkpoint::claim(named.storage, storage_owner(named, where)));
  return named.storage;
}

// A resumed experiment's directory: its own (marked), or adopted when it
// carries no marker; another's marker refuses the resume.
status claim_storage(const experiments::experiment_row& row, const std::string& where) {
  if (row.storage.empty())
    return status::ok();
  bool adopted = false;
  status mine = checkpoint::claim(row.storage, storage_owner(row, where), &adopted);
  if (!mine)
    return mine.with_context("experiment " + std::to_string(row.id) + " cannot resume");
  if (adopted)
    std::fprintf(stderr, "dtrain: %s carried no owner marker (a directory from before markers): "
                         "experiment %lld adopts it and its checkpoints, and marks it as its own\n",
                 row.storage.c_str(), static_cast<long long>(row.id));
  return status::ok();
}

} // namespace

checkpoint::owner storage_owner(const experiments::experiment_row& row, const std::string& where) {
  checkpoint::owner o;
  o.experiment = row.id;
  o.created = checkpoint::created_text(row.created_at);
  o.store = where;
  o.name = row.name;
  const std::string base = std::filesystem::path(row.storage).filename().string();
  const std::string prefix = std::to_string(row.id) + "-";
  const std::string token = base.compare(0, prefix.size(), prefix) == 0 ? base.substr(prefix.size()) : "";
  const bool named = token.size() == 32 && token.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (named) {
    o.token = token;
    return o;
  }
  o.token = "legacy-" + experiments::config_hash(std::to_string(row.id) + "\n" + o.created + "\n" + row.name);
  return o;
}

bool owner_is_this_host(const std::string& owner) {
  auto space = owner.rfind(' ');
  return space != std::string::npos && owner.substr(0, space) == net::host_name();
}

int live_driver_here(const std::string& owner) {
  auto space = owner.rfind(' ');
  if (space == std::string::npos || owner.substr(0, space) != net::host_name())
    return 0;
  pid_t pid = static_cast<pid_t>(std::atol(owner.c_str() + space + 1));
  if (pid <= 0 || pid == getpid())
    return 0;
  if (::kill(pid, 0) != 0)
    return 0;
  // A driver that died but was not yet reaped (a zombie) is not alive.
  std::FILE* stat = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (stat == nullptr)
    return pid;
  char text[512] = {0};
  const size_t n = std::fread(text, 1, sizeof text - 1, stat);
  std::fclose(stat);
  const char* paren = std::strrchr(text, ')');  // after the command's name
  const bool zombie = n > 0 && paren != nullptr && paren[1] == ' ' && paren[2] == 'Z';
  return zombie ? 0 : pid;
}

result<experiment_run> begin_experiment(std::shared_ptr<experiments::experiment_store> s,
                                        const experiments::experiment& e, const std::string& kind,
                                        int64_t resume_id, bool force) {
  experiment_run run;
  run.store = s;
  const std::string yaml = experiments::to_yaml(e);
  const std::string hash = experiments::config_hash(yaml);
  if (resume_id <= 0) {
    experiments::experiment_row row;
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
      auto storage = new_storage(e.checkpoint_dir, row, s->where());
      status ready = storage ? status::ok() : storage.error();
      if (ready) {
        run.row.storage = *storage;
        ready = s->update_experiment(run.row);
      }
      if (!ready) {  // the experiment exists now: never left running
        end_experiment(run, "failed", ready.to_string());
        return ready;
      }
    }
    return run;
  }
  DTRAIN_ASSIGN_OR_RETURN(experiments::experiment_row row, s->experiment(resume_id));
  const std::string id = std::to_string(resume_id);
  if (row.kind != kind)
    return invalid_argument("experiment " + id + " (" + row.name + ") is a `dtrain " + row.kind +
                            "` experiment: resume it with `dtrain " + row.kind +
                            " EXPERIMENT.yaml --resume " + id + "`");
  if (row.state == "running")
    if (pid_t pid = live_driver_here(row.owner); pid != 0)
      return invalid_argument("experiment " + id + " is running now in process " +
                              std::to_string(pid) + " on this host: stop it first (Ctrl-C or "
                              "kill " + std::to_string(pid) + ")");
  if (row.config_hash != hash) {
    std::string listed;
    for (const std::string& d : experiments::config_differences(row.configuration, yaml))
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
  DTRAIN_RETURN_IF_ERROR(claim_storage(row, s->where()));
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

} // namespace dtrain::runs
