// dtrain: the command line.
//
//   dtrain --version                                print the version
//   dtrain start --head [--port P] [--detach]       run a head (127.0.0.1)
//   dtrain start --address HOST:PORT [--slots N]    run a node joining it
//         [--plugin LIB.so ...]                    (operator libraries it preloads)
//         [--bind ADDR] [--advertise ADDR]         (where it listens; what peers use)
//   every command that listens or connects: [--tls-cert PEM --tls-key PEM --tls-ca PEM]
//         (default: $DTRAIN_HOME/tls; required for anything but loopback)
//         [--dashboard-port P] [--dashboard-file F] (head: the web dashboard, docs/dashboard.md)
//         [--dashboard-bind ADDR] [--dashboard-tls] (off loopback: HTTPS with the head's certificate)
//   dtrain status --address HOST:PORT               nodes, slots, trainers
//   dtrain stop                                     stop what this host started
//   dtrain train EXPERIMENT.yaml [--address ...] [--resume ID [--force]]
//                                                   run an experiment
//   dtrain tune EXPERIMENT.yaml [--address ...] [--resume ID [--force]]
//                                                   run its hyperparameter sweep
//   dtrain experiments list | show ID | trials ID | best ID [--metric NAME]
//         | delete ID [--yes] [--force]  [--address HOST:PORT | --store PATH] [--json]
//   dtrain report ID [-o FILE.html] [--address HOST:PORT | --store PATH]
//                                                   one self-contained HTML file
//   dtrain logs [--node N | --trial T] [--follow] [--tail K] [--grep TEXT]
//         [--address HOST:PORT]                    node logs, through the cluster
//   dtrain dashboard-token                          the dashboard's bearer token
//   dtrain cert ca create [--dir DIR] [--name NAME] [--days N] [--force]
//   dtrain cert create --head|--node|--client [--name NAME] [--host H ...]
//         [--days N] [--dir DIR] [--out DIR] [--force]  a key and certificate
//   dtrain cert check [FILE ...] [--dir DIR] [--ca FILE]
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "cert_command.hpp"
#include "launch_command.hpp"
#include "predict_command.hpp"
#include "commands.hpp"
#include "dtrain/core/threads.hpp"
#include "dtrain/build_config.hpp"
#include "dtrain/dashboard/token.hpp"
#include "output_tee.hpp"
#include "processes.hpp"
#include "servers.hpp"

using namespace dtrain::cli;

namespace {

// --tls-cert/--tls-key/--tls-ca on every command that listens or connects.
void add_tls_options(CLI::App* cmd, dtrain::security::tls_files& tls) {
  cmd->add_option("--tls-cert", tls.certificate,
                  "this process's certificate (PEM; default: $DTRAIN_HOME/tls/<role>.pem)");
  cmd->add_option("--tls-key", tls.key, "its private key (default: $DTRAIN_HOME/tls/<role>-key.pem)");
  cmd->add_option("--tls-ca", tls.ca, "the cluster CA's certificate (default: $DTRAIN_HOME/tls/ca.pem)");
}

// --dashboard-port/--dashboard-bind/--dashboard-file, and for a driver
// --dashboard (any free port).
void add_dashboard_options(CLI::App* cmd, dashboard_flags& d, bool driver) {
  if (driver)
    cmd->add_flag_callback("--dashboard", [&d] { d.port = d.port < 0 ? 0 : d.port; },
                           "serve the web dashboard of the cluster this runs on (any free port)");
  cmd->add_option("--dashboard-port", d.port,
                  "serve the web dashboard on this port (0: any free port; default: none)");
  cmd->add_option("--dashboard-bind", d.bind,
                  "the dashboard's address: off loopback HTTPS only, with the head's certificate")
      ->capture_default_str();
  cmd->add_option("--dashboard-file", d.url_file, "write the dashboard's URL here once it listens");
  cmd->add_flag("--dashboard-tls", d.tls,
                "serve the dashboard over HTTPS on loopback too (with the head's certificate; "
                "off loopback it always is)");
}

int run_start(bool head, bool detach, server_options o) {
  if (head == !o.address.empty()) {
    std::fprintf(stderr, "error: dtrain start needs exactly one of --head or --address\n");
    return 2;
  }
  if (!head && o.dashboard.port >= 0) {
    std::fprintf(stderr, "error: --dashboard-port is for the head (nodes serve no dashboard)\n");
    return 2;
  }
  const pid_t detached_from = getpid();  // names the detached process's log
  if (detach) {
    std::string role = head ? "head" : "node";
    std::string log = cluster_dir() + "/" + role + "-" + std::to_string(getpid()) + ".log";
    if (o.port_file.empty())
      o.port_file = cluster_dir() + "/" + role + "-" + std::to_string(getpid()) + ".address";
    if (o.dashboard.port >= 0 && o.dashboard.url_file.empty())
      o.dashboard.url_file = cluster_dir() + "/dashboard-" + std::to_string(getpid()) + ".url";
    auto child = daemonize(log, o.port_file);
    if (!child) {
      std::fprintf(stderr, "error: %s\n", child.error().message().c_str());
      return 1;
    }
    if (!*child) {
      std::ifstream in(o.port_file);
      std::string address;
      if (!(in >> address)) {
        std::fprintf(stderr, "error: the %s did not start; see %s\n", role.c_str(), log.c_str());
        return 1;
      }
      std::printf("dtrain %s started at %s (log %s)\n", role.c_str(), address.c_str(), log.c_str());
      // The head writes the dashboard's URL before its address.
      std::ifstream url_in(o.dashboard.url_file);
      std::string url;
      if (o.dashboard.port >= 0 && url_in >> url)
        std::printf("dashboard at %s (token: `dtrain dashboard-token`)\n", url.c_str());
      return 0;
    }
  }
  install_signal_handlers();
  if (head)
    return run_head(o);
  // A node's output goes to a log file it serves to `dtrain logs`: the
  // detached process's own, else a copy of what the terminal shows.
  std::unique_ptr<output_tee> tee;
  if (detach) {
    o.log_file = cluster_dir() + "/node-" + std::to_string(detached_from) + ".log";
  } else {
    o.log_file = cluster_dir() + "/node-" + std::to_string(getpid()) + ".log";
    std::error_code ec;
    std::filesystem::create_directories(cluster_dir(), ec);
    auto started = output_tee::start(o.log_file);
    if (started) {
      tee = std::move(*started);
    } else {
      std::fprintf(stderr, "dtrain node: %s; `dtrain logs` will find no log of this node\n",
                   started.error().message().c_str());
      o.log_file.clear();
    }
  }
  return run_node(o);
}

// The command line parsed and run: main's body, inside its safety net.
int run_command_line(int argc, char** argv) {
  CLI::App app{"dtrain: data-parallel training on actors"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "dtrain " DTRAIN_VERSION);

  server_options so;
  bool head = false, detach = false;
  auto* start = app.add_subcommand("start", "start a head or a node on this host");
  start->add_flag("--head", head, "run the head (node registry, placement)");
  start->add_option("--address", so.address, "join the head at HOST:PORT as a node");
  start->add_option("--port", so.port, "port to listen on (0: any)")->capture_default_str();
  start->add_option("--bind", so.bind,
                    "address to listen on (default: loopback, or for a node the interface "
                    "that routes to the head; 0.0.0.0: all)");
  start->add_option("--advertise", so.advertise,
                    "address peers reach this process at (default: the bind address)");
  start->add_option("--slots", so.slots, "CPU slots this node offers")->capture_default_str();
  start->add_option("--cpus", so.cpus,
                    "cores this node's replicas may use together (default: the host's, shared "
                    "with every replica on the host)");
  start->add_option("--gpus", so.gpus, "GPUs this node offers")->capture_default_str();
  start->add_option("--port-file", so.port_file, "write HOST:PORT here once listening");
  start->add_option("--store", so.store_path,
                    "head: its experiment store file (default: $DTRAIN_HOME/experiments.db)");
  start->add_option("--plugin", so.plugins,
                    "node: load this plugin library at start (repeatable); drivers that name "
                    "it need not ship it");
  add_dashboard_options(start, so.dashboard, false);
  start->add_flag("--detach", detach, "run in the background (log and pid in $DTRAIN_HOME)");
  add_tls_options(start, so.tls);

  std::string status_address;
  auto* status_cmd = app.add_subcommand("status", "show the cluster's nodes and trainers");
  status_cmd->add_option("--address", status_address,
                         "the head's HOST:PORT (default: $DTRAIN_ADDRESS, else the head "
                         "started on this host)");
  dtrain::security::tls_files status_tls;
  add_tls_options(status_cmd, status_tls);

  int grace_ms = 5000;
  auto* stop = app.add_subcommand("stop", "stop the dtrain processes started on this host");
  stop->add_option("--grace-ms", grace_ms, "wait this long before SIGKILL")->capture_default_str();

  train_options to;
  auto* train = app.add_subcommand("train", "run an experiment file");
  train->add_option("experiment", to.experiment, "EXPERIMENT.yaml")->required();
  train->add_option("--address", to.address,
                    "a running cluster (default: $DTRAIN_ADDRESS, the one started on this host, "
                    "else embedded)");
  train->add_flag("--embedded", to.embedded,
                  "run an embedded cluster even when one was started on this host");
  train->add_option("--local-slots", to.local_slots, "embedded cluster slots");
  train->add_option("--resume", to.resume, "continue experiment ID (see `dtrain experiments list`)");
  train->add_flag("--force", to.force, "with --resume: continue even if the file changed");
  train->add_flag("--verbose", to.verbose,
                  "every replica's progress as lines (default: one bar for the group on a "
                  "terminal, only epoch lines elsewhere)");
  add_tls_options(train, to.tls);
  add_dashboard_options(train, to.dashboard, true);

  tune_options tuo;
  auto* tune = app.add_subcommand("tune", "run an experiment file's hyperparameter sweep");
  tune->add_option("experiment", tuo.experiment, "EXPERIMENT.yaml")->required();
  tune->add_option("--address", tuo.address,
                   "a running cluster (default: $DTRAIN_ADDRESS, the one started on this host, "
                   "else embedded)");
  tune->add_flag("--embedded", tuo.embedded,
                 "run an embedded cluster even when one was started on this host");
  tune->add_option("--local-slots", tuo.local_slots, "embedded cluster slots (default: cores)");
  tune->add_option("--resume", tuo.resume, "continue experiment ID after its driver died or stopped");
  tune->add_flag("--force", tuo.force, "with --resume: continue even if the file changed");
  tune->add_option("--verbosity", tuo.verbosity,
                   "0 quiet, 1 trial starts and ends, 2 also every epoch")
      ->capture_default_str();
  add_tls_options(tune, tuo.tls);
  add_dashboard_options(tune, tuo.dashboard, true);

  experiments_options eo;
  auto* experiments = app.add_subcommand("experiments", "list and inspect the experiment store");
  experiments->require_subcommand(1);
  experiments->add_option("--address", eo.address,
                          "read through the head at HOST:PORT (default: $DTRAIN_ADDRESS, else "
                          "the local store)");
  experiments->add_option("--store", eo.store,
                          "a local store file (default: $DTRAIN_HOME/experiments.db)");
  experiments->add_flag("--json", eo.json, "JSON instead of tables");
  add_tls_options(experiments, eo.tls);
  auto action = [&](const char* name, const char* what, bool with_id) {
    auto* sub = experiments->add_subcommand(name, what);
    sub->fallthrough();  // --address, --store and --json after the action too
    if (with_id)
      sub->add_option("id", eo.id, "the experiment's id")->required();
    sub->callback([&eo, name] { eo.action = name; });
    return sub;
  };
  action("list", "every experiment: id, name, kind, state, trials, best, created", false);
  action("show", "an experiment's fields, configuration, trial counts and best trial", true);
  action("trials", "an experiment's trials", true);
  action("best", "an experiment's best trial, its hyperparameters and newest checkpoint", true)
      ->add_option("--metric", eo.metric,
                   "rank by this metric's best value (min if its name has \"loss\", else max)");
  auto* deleting = action("delete", "delete an experiment's rows and its checkpoint directory "
                                    "(only one that carries the experiment's owner marker)", true);
  deleting->add_flag("--yes", eo.yes, "do not ask");
  deleting->add_flag("--force", eo.force,
                     "also a running experiment: its driver on this host is stopped first (SIGTERM: "
                     "it checkpoints and exits); one elsewhere is not waited for");

  report_options ro;
  auto* report = app.add_subcommand(
      "report", "write an experiment's learning curves, trial table and best trial as one "
                "self-contained HTML file");
  report->add_option("id", ro.id, "the experiment's id (`dtrain experiments list`)")->required();
  report->add_option("-o,--output", ro.output, "the file to write (default: report-<id>.html)");
  report->add_option("--address", ro.address,
                     "read through the head at HOST:PORT (default: $DTRAIN_ADDRESS, else the "
                     "local store)");
  report->add_option("--store", ro.store,
                     "a local store file (default: $DTRAIN_HOME/experiments.db)");
  add_tls_options(report, ro.tls);

  logs_options lo;
  auto* logs = app.add_subcommand("logs", "show the log of a node, or of the nodes holding a "
                                          "trial's replicas, read through the cluster");
  auto* node_opt = logs->add_option("--node", lo.node, "the node's index (`dtrain status`)");
  logs->add_option("--trial", lo.trial,
                   "the nodes holding this sweep trial's replicas (its id, as in 00003), or a "
                   "trainer's as `dtrain status` lists it")
      ->excludes(node_opt);
  logs->add_flag("--follow,-f", lo.follow, "keep printing what is added, until Ctrl-C");
  logs->add_option("--tail", lo.tail, "only the last K lines (default: the whole log)");
  logs->add_option("--grep", lo.grep, "only the lines containing TEXT");
  logs->add_option("--address", lo.address,
                   "the head's HOST:PORT (default: $DTRAIN_ADDRESS, else the head started on "
                   "this host)");
  add_tls_options(logs, lo.tls);

  cert_options co;
  auto* cert = add_cert_command(app, co);

  auto* token_cmd = app.add_subcommand(
      "dashboard-token", "print the web dashboard's bearer token ($DTRAIN_HOME/dashboard-token, "
                         "made if missing)");

  predict_command_options po;
  auto* predict_cmd = app.add_subcommand(
      "predict", "batch inference: an experiment's replicas, restored from a checkpoint, run "
                 "their model over an input set and write the outputs in order");
  predict_cmd->add_option("experiment", po.experiment, "EXPERIMENT.yaml")->required();
  predict_cmd->add_option("--checkpoint", po.checkpoint,
                          "a checkpoint directory, or a root whose newest valid one is taken")
      ->required();
  predict_cmd->add_option("--input", po.input, "the operator's set: validation or train")
      ->capture_default_str();
  predict_cmd->add_option("--output", po.output, "the CSV file to write")->required();
  predict_cmd->add_option("--address", po.address,
                          "a running cluster (default: $DTRAIN_ADDRESS, the one started on this "
                          "host, else embedded)");
  predict_cmd->add_flag("--embedded", po.embedded, "run an embedded cluster");
  predict_cmd->add_option("--replicas", po.replicas, "replicas (default: the experiment's slots)");
  predict_cmd->add_option("--chunk-rows", po.chunk_rows, "rows per chunk")->capture_default_str();
  predict_cmd->add_option("--chunk-timeout", po.chunk_timeout_s,
                          "seconds a chunk may take before another replica redoes it")
      ->capture_default_str();
  add_tls_options(predict_cmd, po.tls);

  launch_options lao;
  auto* launch = app.add_subcommand(
      "launch", "run inside a Slurm or torchrun allocation, once per task: form a cluster of "
                "the tasks (rank 0 holds the head) and run an experiment or a driver program on it");
  launch->add_option("--join-timeout", lao.join_timeout_s,
                     "seconds to wait for the head and for every task to join")
      ->capture_default_str();
  launch->add_option("--bind", lao.bind,
                     "address the head and nodes listen on (default: the head host's)");
  // EXPERIMENT.yaml, or PROGRAM and its arguments, which may look like
  // options: everything from the first positional on is the command.
  launch->prefix_command();
  launch->allow_extras();

  // `dtrain launch [OPTIONS] [--] COMMAND...`: CLI11 refuses what follows a
  // "--" in a prefix command, which takes everything from its first
  // positional on anyway. A "--" right after launch's own options is
  // dropped here (one inside COMMAND is COMMAND's).
  std::vector<char*> args(argv, argv + argc);
  bool explicit_command = false;
  if (argc > 1 && std::string(argv[1]) == "launch")
    for (size_t i = 2; i < args.size(); ++i) {
      std::string a = args[i];
      if (a == "--") {
        args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
        explicit_command = true;
        break;
      }
      if (a == "--join-timeout" || a == "--bind")
        ++i;  // its value
      else if (a.rfind("--join-timeout=", 0) != 0 && a.rfind("--bind=", 0) != 0)
        break;  // COMMAND starts here
    }
  CLI11_PARSE(app, static_cast<int>(args.size()), args.data());
  if (predict_cmd->parsed())
    return run_predict(po);
  if (launch->parsed()) {
    lao.command = launch->remaining();
    if (!explicit_command && !lao.command.empty() && lao.command.front().rfind("-", 0) == 0) {
      std::fprintf(stderr, "error: dtrain launch: unknown option %s (a COMMAND starting with '-' "
                           "goes after --)\n", lao.command.front().c_str());
      return 2;
    }
    return run_launch(lao);
  }
  if (token_cmd->parsed()) {
    auto t = dtrain::dashboard::load_or_create_token(dtrain::dashboard::default_token_path());
    if (!t) {
      std::fprintf(stderr, "error: %s\n", t.error().message().c_str());
      return 1;
    }
    std::printf("%s\n", t->c_str());
    return 0;
  }
  if (cert->parsed())
    return run_cert(co);
  if (report->parsed())
    return run_report(ro);
  if (logs->parsed())
    return run_logs(lo);
  if (experiments->parsed())
    return run_experiments(eo);
  if (tune->parsed())
    return run_tune(tuo);
  if (start->parsed())
    return run_start(head, detach, so);
  if (status_cmd->parsed())
    return run_status(status_address, status_tls);
  if (stop->parsed()) {
    int n = stop_recorded_processes(grace_ms);
    std::printf("stopped %d dtrain processes\n", n);
    return 0;
  }
  return run_train(to);  // Ctrl-C ends it; its replicas follow (they monitor it)
}

} // namespace

int main(int argc, char** argv) {
  // Before any other thread starts: OpenBLAS's pool is all there is yet.
  dtrain::name_blas_pool_threads();
  // A safety net, not the way errors travel: every failure the commands
  // know of is a status where it happens. An exception that still reaches
  // here (a library that throws where we did not expect it) ends the
  // command with a message and an exit code instead of std::terminate.
  try {
    return run_command_line(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "dtrain: internal error: an exception of unknown type\n");
  }
  return 70;  // EX_SOFTWARE
}
