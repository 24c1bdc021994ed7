#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

namespace dtrain::train {

/// A training operator's configuration: string keys and string values, as
/// they come from a YAML experiment, a command line or a tuner's sample
/// (Ray's `config` dict). Typed getters parse on access; a missing key
/// takes the default, a value that does not parse is an error naming the
/// key and the value. Cheap to copy; crosses process boundaries as is.
class hyperparameters {
public:
  hyperparameters() = default;
  explicit hyperparameters(std::map<std::string, std::string> values)
    : values_(std::move(values)) {}

  void set(const std::string& key, std::string value) { values_[key] = std::move(value); }
  bool contains(const std::string& key) const { return values_.count(key) > 0; }
  const std::map<std::string, std::string>& values() const { return values_; }

  result<std::string> get_string(const std::string& key, const std::string& fallback) const;
  result<int64_t> get_int(const std::string& key, int64_t fallback) const;
  result<double> get_double(const std::string& key, double fallback) const;
  result<bool> get_bool(const std::string& key, bool fallback) const;
  /// "256,128,100" or "[256, 128, 100]".
  result<std::vector<int64_t>> get_int_list(const std::string& key,
                                            std::vector<int64_t> fallback) const;

  /// Keys not in `known`: an error naming the first unknown one and the
  /// accepted keys (operators call it so a typo never passes silently). An
  /// entry ending in ".*" accepts every key with that prefix ("data.*").
  status check_known(const std::vector<std::string>& known, const std::string& owner) const;

private:
  std::map<std::string, std::string> values_;
};

} // namespace dtrain::train
