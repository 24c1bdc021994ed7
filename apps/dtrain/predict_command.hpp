#pragma once

#include <cstdint>
#include <string>

#include "dtrain/security/certificates.hpp"

namespace dtrain::cli {

/// `dtrain predict EXPERIMENT.yaml --checkpoint PATH --output FILE`: the
/// experiment's replicas on a cluster (as `dtrain train` finds one),
/// restored from a checkpoint, run batch inference over an input set of
/// the operator's and write the outputs in input order
/// (actors/prediction.hpp has the file's format), then print the rows,
/// the throughput and, for a classifier, the accuracy.
struct predict_command_options {
  std::string experiment;
  std::string checkpoint;
  std::string input = "validation";
  std::string output;
  std::string address;
  bool embedded = false;
  int replicas = 0;          // 0: the experiment's slots_per_trial
  int64_t chunk_rows = 1000;
  int chunk_timeout_s = 60;
  security::tls_files tls;
};

int run_predict(const predict_command_options& o);

} // namespace dtrain::cli
