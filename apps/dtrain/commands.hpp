#pragma once

#include <cstdint>
#include <string>

namespace dtrain::cli {

struct train_options {
  std::string experiment;
  std::string address;   // empty: $DTRAIN_ADDRESS, else an embedded cluster
  int local_slots = 0;   // embedded cluster size (0: the experiment's slots)
  int64_t resume = 0;    // continue this experiment (0: a new one)
  bool force = false;    // resume even when the file's configuration changed
};

struct tune_options {
  std::string experiment;
  std::string address;   // empty: $DTRAIN_ADDRESS, else an embedded cluster
  int local_slots = 0;   // embedded cluster size (0: the cores, at least a trial's slots)
  int verbosity = 2;     // 0 quiet, 1 trial starts and ends, 2 every epoch
  int64_t resume = 0;    // continue this experiment (0: a new one)
  bool force = false;    // resume even when the file's configuration changed
};

int run_status(const std::string& address);
int run_train(const train_options& o);
int run_tune(const tune_options& o);

} // namespace dtrain::cli
