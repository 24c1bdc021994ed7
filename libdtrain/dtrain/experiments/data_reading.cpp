// The data: section of an experiment file: its sources and loader settings
// travel among the operator's hyperparameters as data.KEY (nested maps'
// keys joined with '.'), where train/file_data.hpp reads them.
#include "dtrain/experiments/data_reading.hpp"

#include "dtrain/core/check.hpp"
#include "dtrain/experiments/experiment.hpp"
#include "dtrain/experiments/yaml_reading.hpp"
#include "dtrain/train/file_data.hpp"

namespace dtrain::experiments {

namespace {

using detail::hyperparameter_text;
using detail::join_path;
using detail::wrong_type;

status flatten(const YAML::Node& node, const std::string& path, experiment& exp) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      if (!entry.first.IsScalar())
        return wrong_type(path + " key", "a name", entry.first);
      DTRAIN_RETURN_IF_ERROR(flatten(entry.second, join_path(path, entry.first.Scalar()), exp));
    }
    return status::ok();
  }
  DTRAIN_ASSIGN_OR_RETURN(std::string text, hyperparameter_text(path, node));
  if (exp.hyperparameters.count(path))
    return invalid_argument(path + ": given twice (under data: and under hyperparameters:)");
  exp.hyperparameters.emplace(path, std::move(text));
  return status::ok();
}

} // namespace

status read_data_section(const YAML::Node& node, experiment& exp) {
  if (!node.IsMap())
    return wrong_type("data", "a map with train: and validation: sources", node);
  DTRAIN_RETURN_IF_ERROR(flatten(node, "data", exp));
  return train::check_file_data(train::hyperparameters(exp.hyperparameters));
}

} // namespace dtrain::experiments
