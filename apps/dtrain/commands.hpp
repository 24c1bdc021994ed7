#pragma once

#include <cstdint>
#include <string>

#include "dashboard_serving.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::cli {

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
  std::string action;    // list | show | trials | best | delete
  int64_t id = 0;        // every action but list
  std::string address;   // through this head; empty: $DTRAIN_ADDRESS, else the local file
  std::string store;     // a local store file (default: $DTRAIN_HOME/experiments.db)
  bool json = false;     // JSON instead of tables
  std::string metric;    // best: rank by this metric's rows instead of the experiment's
  bool yes = false;      // delete: without asking
  security::tls_files tls;  // --tls-*: empty: $DTRAIN_HOME/tls, else plain (loopback only)
};

int run_status(const std::string& address, const security::tls_files& tls);
int run_experiments(const experiments_options& o);
int run_train(const train_options& o);
int run_tune(const tune_options& o);

} // namespace dtrain::cli
