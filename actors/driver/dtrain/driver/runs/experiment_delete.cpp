// `dtrain experiments delete`: an experiment's rows and the checkpoint
// directory it owns; never a live run, nor another experiment's directory.
#include "dtrain/driver/runs/experiment_delete.hpp"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "dtrain/driver/runs/experiment_runs.hpp"
#include "dtrain/checkpoint/ownership.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"

namespace dtrain::runs {

namespace {

using experiments::experiment_row;

// How long --force waits for a live driver to checkpoint and exit.
constexpr auto stop_wait = std::chrono::seconds(60);

void say(const delete_request& r, const std::string& line) {
  if (r.note)
    r.note(line);
  else
    std::fprintf(stderr, "%s\n", line.c_str());
}

// Why `dir` must not be removed recursively ("" if it may be).
std::string unsafe_to_remove(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (p == p.root_path())
    return "it is the root directory";
  for (const char* home : {std::getenv("HOME")})
    if (home != nullptr && p == fs::weakly_canonical(home, ec))
      return "it is the home directory";
  if (p == fs::weakly_canonical(dtrain_home(), ec))
    return "it is dtrain's own directory";
  return "";
}

// Sends SIGTERM to the driver `pid` of experiment `e` and waits for it to
// exit (stop_wait at most).
status stop_driver(const experiment_row& e, int pid, const delete_request& r) {
  const std::string id = std::to_string(e.id), p = std::to_string(pid);
  say(r, "dtrain: --force: asking the driver of experiment " + id + " (process " + p +
             ") to checkpoint and stop");
  if (::kill(pid, SIGTERM) != 0 && live_driver_here(e.owner) != 0)
    return io_error("experiment " + id + ": cannot signal its driver, process " + p +
                    " (another user's?); nothing was deleted");
  const auto deadline = std::chrono::steady_clock::now() + stop_wait;
  while (live_driver_here(e.owner) != 0) {
    if (std::chrono::steady_clock::now() >= deadline)
      return status(error_code::timeout,
                    "experiment " + id + ": its driver, process " + p + ", did not stop within " +
                        std::to_string(stop_wait.count()) + " s of SIGTERM; nothing was deleted: "
                        "stop it (kill -9 " + p + ") and delete again");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return status::ok();
}

// ok when experiment `e` may be deleted now (see delete_experiment); with
// --force, stops its live driver on this host first.
status not_running(const experiment_row& e, const delete_request& r) {
  if (e.state != "running" || e.owner.empty())
    return status::ok();
  const int pid = live_driver_here(e.owner);
  if (pid == 0 && !r.remote && owner_is_this_host(e.owner))
    return status::ok();  // its driver died without recording the end
  const std::string id = std::to_string(e.id), p = std::to_string(pid);
  if (!r.force) {
    const std::string who =
        pid != 0 ? "its driver, process " + p + " on this host, is alive"
        : r.remote ? "the store is read through a head, so its driver (" + e.owner +
                       ") may be alive"
                 : "its driver (" + e.owner + ") runs on another host";
    return invalid_argument(
        "experiment " + id + " is running: " + who + "; nothing was deleted. Stop it first (Ctrl-C "
        "in its terminal" + (pid != 0 ? ", or kill " + p : std::string()) + ") and delete "
        "again, or pass --force to " +
        (pid != 0 ? "stop it and delete" : "delete it while it may still run"));
  }
  if (pid != 0)
    return stop_driver(e, pid, r);
  say(r, "dtrain: --force: experiment " + id + " is marked running by " + e.owner +
             ", which cannot be stopped from here; deleting it anyway (that driver's later "
             "writes fail)");
  return status::ok();
}

// Why `e`'s directory stays ("" when it goes: it carries e's own marker).
std::string why_kept(const experiment_row& e, const checkpoint::owner& me) {
  std::error_code ec;
  if (!std::filesystem::exists(e.storage, ec))
    return "it does not exist";
  if (std::string why = unsafe_to_remove(e.storage); !why.empty())
    return why;
  status own = checkpoint::check_owner(e.storage, me, "delete");
  return own ? "" : own.message();
}

} // namespace

result<std::string> delete_experiment(experiments::experiment_store& s, const delete_request& r) {
  DTRAIN_ASSIGN_OR_RETURN(auto e, s.experiment(r.id));
  DTRAIN_ASSIGN_OR_RETURN(auto trials, s.trials(r.id));
  const checkpoint::owner me = storage_owner(e, s.where());
  const std::string kept = e.storage.empty() ? "" : why_kept(e, me);
  const bool removes = !e.storage.empty() && kept.empty();
  const std::string what =
      "experiment " + std::to_string(r.id) + " (" + e.name + ") with " +
      std::to_string(trials.size()) + " trials and " +
      (e.storage.empty() ? "no checkpoint directory"
       : removes         ? "its checkpoints under " + e.storage
                         : "not its directory " + e.storage + " (left in place: " + kept + ")");
  // Refused before asking; stopped (force) only once confirmed.
  if (!r.force)
    DTRAIN_RETURN_IF_ERROR(not_running(e, r));
  if (r.confirm) {
    DTRAIN_ASSIGN_OR_RETURN(bool yes, r.confirm(what));
    if (!yes)
      return std::string();
  }
  if (r.force)
    DTRAIN_RETURN_IF_ERROR(not_running(e, r));
  DTRAIN_RETURN_IF_ERROR(s.delete_experiment(r.id));
  DTRAIN_RETURN_IF_ERROR(s.flush());
  if (removes)
    if (status gone = checkpoint::remove_owned(e.storage, me, e.storage); !gone)
      return gone.with_context("experiment " + std::to_string(r.id) + " is deleted from " +
                               s.where() + " but its directory was not removed");
  if (!e.storage.empty() && !removes)
    say(r, "dtrain: left " + e.storage + " in place: " + kept);
  return what;
}

} // namespace dtrain::runs
