#pragma once

#include <yaml-cpp/yaml.h>

#include "dtrain/core/status.hpp"

namespace dtrain::experiments {

struct experiment;

/// An experiment file's data: section into exp.hyperparameters as data.KEY
/// (nested keys joined with '.'), checked (train/file_data.hpp) without
/// opening a file: the files may exist on the nodes only.
status read_data_section(const YAML::Node& node, experiment& exp);

} // namespace dtrain::experiments
