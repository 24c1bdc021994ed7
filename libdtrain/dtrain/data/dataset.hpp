#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/tensor/tensor.hpp"

namespace dtrain::data {

/// A finite, indexable set of (features, targets) samples with fixed
/// widths: each sample is `feature_count()` floats of input and
/// `target_count()` floats of target (a class index stored as one float, or
/// a regression target). Implementations are immutable after construction,
/// so gather() may be called from several threads at once (a loader's
/// worker threads do). A file reader may read or decode lazily in gather():
/// its failure (a truncated image, a shard whose checksum is wrong) is
/// gather's status, naming the file and the record, never a crash.
class dataset {
public:
  virtual ~dataset() = default;

  virtual int64_t size() const = 0;
  virtual int64_t feature_count() const = 0;
  virtual int64_t target_count() const = 0;
  /// A short description for logs and errors ("fashion-mnist train (60000)").
  virtual std::string name() const = 0;

  /// The shape of one sample's features, whose product is feature_count():
  /// {channels, height, width} for images, {feature_count()} for flat rows.
  virtual std::vector<int64_t> sample_shape() const { return {feature_count()}; }
  /// The number of classes when targets are class indices 0..count-1 (one
  /// target per sample); 0 when targets are regression values or unknown.
  virtual int64_t class_count() const { return 0; }

  /// Copies samples indices[0..n) into features [n, feature_count] and
  /// targets [n, target_count], row by row. Indices must be in [0, size()).
  /// Fails (naming the file and record) when a lazily read sample cannot be
  /// read; rows before the failing one may have been written.
  virtual status gather(const int64_t* indices, int64_t n, float* features,
                        float* targets) const = 0;
};

/// A dataset held in two host tensors: features [N, F] and targets [N, T]
/// (or [N] for one target per sample; any further axes are flattened, so
/// images [N, 28, 28] have F = 784). It shares the tensors' storage, which
/// must not be written afterwards; gather() is then safe from any thread.
class tensor_dataset final : public dataset {
public:
  /// Fails with shape_mismatch, naming the dataset and the shapes, when a
  /// tensor is undefined or has no sample axis, the row counts differ, or a
  /// tensor is not on the host.
  /// `class_count`: the classes of class-index targets (0: regression or
  /// unknown), as class_count() reports it.
  static result<std::shared_ptr<tensor_dataset>> create(tensor features, tensor targets,
                                                        std::string name,
                                                        int64_t class_count = 0);

  int64_t size() const override { return features_.size(0); }
  int64_t feature_count() const override { return feature_count_; }
  int64_t target_count() const override { return target_count_; }
  std::string name() const override { return name_; }
  int64_t class_count() const override { return class_count_; }
  status gather(const int64_t* indices, int64_t n, float* features,
                float* targets) const override;

  const tensor& features() const { return features_; }
  const tensor& targets() const { return targets_; }

private:
  tensor_dataset(tensor features, tensor targets, std::string name, int64_t class_count);

  tensor features_;
  tensor targets_;
  int64_t feature_count_;
  int64_t target_count_;
  std::string name_;
  int64_t class_count_;
};

} // namespace dtrain::data
