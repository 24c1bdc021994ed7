#pragma once

#include <string>

namespace dtrain {

/// Where a tensor's memory lives: host memory, or one CUDA device.
struct device {
  enum class kind { cpu, cuda };

  kind type = kind::cpu;
  int index = 0;

  static device cpu() { return {}; }
  static device cuda(int index = 0) { return {kind::cuda, index}; }

  bool is_cpu() const { return type == kind::cpu; }
  bool is_cuda() const { return type == kind::cuda; }
  std::string to_string() const {
    return is_cpu() ? "cpu" : "cuda:" + std::to_string(index);
  }
  friend bool operator==(device a, device b) {
    return a.type == b.type && (a.is_cpu() || a.index == b.index);
  }
  friend bool operator!=(device a, device b) { return !(a == b); }
};

} // namespace dtrain
