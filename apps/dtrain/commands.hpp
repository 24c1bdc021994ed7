#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dtrain/dashboard/dashboard.hpp"
#include "dtrain/driver/cluster.hpp"
#include "dtrain/experiments/store.hpp"
#include "dtrain/roles/dashboard_serving.hpp"
#include "dtrain/roles/processes.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::cli {

// The roles' helpers the driver commands use as they are.
using roles::check_dashboard_flags;
using roles::dashboard_flags;
using roles::serve_dashboard;
using roles::signal_watch;

struct train_options {
  std::string experiment;
  std::string address;   // empty: $DTRAIN_ADDRESS, the head started on this host, else embedded
  int local_slots = 0;   // embedded cluster size (0: the experiment's slots)
  bool embedded = false; // an embedded cluster even when one runs on this host
  int64_t resume = 0;    // continue this experiment (0: a new one)
  bool force = false;    // resume even when the file's configuration changed
  bool verbose = false;  // every rank's progress lines instead of the group's bar
  security::tls_files tls;  // --tls-*: empty: $DTRAIN_HOME/tls, else plain (loopback only)
  dashboard_flags dashboard;  // --dashboard[-port|-bind|-file]: one for the cluster it runs on
};

struct tune_options {
  std::string experiment;
  std::string address;   // empty: $DTRAIN_ADDRESS, the head started on this host, else embedded
  int local_slots = 0;   // embedded cluster size (0: the cores, at least a trial's slots)
  bool embedded = false; // an embedded cluster even when one runs on this host
  int verbosity = 2;     // 0 quiet, 1 trial starts and ends, 2 every epoch
  int64_t resume = 0;    // continue this experiment (0: a new one)
  bool force = false;    // resume even when the file's configuration changed
  security::tls_files tls;  // --tls-*: empty: $DTRAIN_HOME/tls, else plain (loopback only)
  dashboard_flags dashboard;  // --dashboard[-port|-bind|-file]: one for the cluster it runs on
};

/// `dtrain experiments ACTION [ID]` (experiments_command.cpp).
struct experiments_options {
  std::string action;    // list | show | trials | best | delete | compare | importance
  int64_t id = 0;        // every action but list and compare
  std::vector<int64_t> ids;  // compare: the experiments, in order
  std::string address;   // through this head; empty: $DTRAIN_ADDRESS, else the local file
  std::string store;     // a local store file (default: $DTRAIN_HOME/experiments.db)
  bool json = false;     // JSON instead of tables
  std::string metric;    // best: rank by this metric's rows instead of the experiment's
  bool yes = false;      // delete: without asking
  bool force = false;    // delete: a running experiment too (its live driver asked to stop first)
  std::string method = "fanova";  // importance: fanova | fast
  security::tls_files tls;  // --tls-*: empty: $DTRAIN_HOME/tls, else plain (loopback only)
};

/// `dtrain report ID` (report_command.cpp): one self-contained HTML file.
struct report_options {
  int64_t id = 0;
  std::string output;    // empty: report-<id>.html in the current directory
  std::string address;   // through this head; empty: $DTRAIN_ADDRESS, else the local file
  std::string store;     // a local store file (default: $DTRAIN_HOME/experiments.db)
  security::tls_files tls;
};

/// `dtrain logs` (logs_command.cpp): a node's log, read through the cluster.
struct logs_options {
  int node = -1;         // the node's index as `dtrain status` lists it
  std::string trial;     // or the nodes holding this trial's replicas
  bool follow = false;   // poll for more until SIGINT/SIGTERM
  int tail = -1;         // only the last K lines (-1: the whole log)
  std::string grep;      // only lines containing this text
  std::string address;   // empty: $DTRAIN_ADDRESS, else the head started on this host
  security::tls_files tls;
};

int run_experiments(const experiments_options& o);
/// `dtrain experiments importance ID` (experiments_importance.cpp): the
/// experiment's hyperparameters ranked by importance; the exit code.
int print_importance(experiments::experiment_store& s, const experiments_options& o);
int run_train(const train_options& o);
/// The cluster options of `dtrain train/tune/predict`: the cluster
/// find_cluster names (command_line.hpp; said on stderr when it is the head
/// started on this host), else an embedded cluster; `embedded` skips the
/// search.
result<actors::cluster::options> attach_options(const std::string& given, bool embedded,
                                                const security::tls_files& tls,
                                                const char* command);
int run_tune(const tune_options& o);
int run_report(const report_options& o);
int run_logs(const logs_options& o);

} // namespace dtrain::cli
