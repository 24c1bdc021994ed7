#pragma once

// The searcher section and the typed hyperparameters of an experiment
// file (dtrain tune). Internal to config/; experiment.cpp calls these.

#include <cstdint>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "dtrain/experiments/experiment.hpp"

namespace dtrain::experiments::detail {

/// The `searcher:` section into exp.sweep and exp.has_search; its
/// max_length.epochs into `epochs` (merged with the top-level key by the
/// caller). Errors name the key path.
status read_searcher(const YAML::Node& node, experiment& exp, std::optional<int64_t>& epochs);

/// With `scheduler: pbt`, every name in searcher.mutations must be a
/// searched (not constant) hyperparameter, and there must be one; the
/// error names the list entry. Call after the hyperparameters are read.
status check_pbt_mutations(const experiment& exp);

/// One typed hyperparameter (a map with `type:`) into exp.space; the
/// searcher must have been read first (it decides what is allowed).
status read_typed(const std::string& name, const YAML::Node& node, experiment& exp);

/// A categorical value with its type, as the parser reads it (to_yaml
/// uses it to quote text that would read back as something else).
result<tune::value> typed_scalar(const std::string& path, const YAML::Node& node);

} // namespace dtrain::experiments::detail
