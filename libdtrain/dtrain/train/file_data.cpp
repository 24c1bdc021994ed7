#include "dtrain/train/file_data.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "dtrain/core/check.hpp"
#include "dtrain/datasets/shards.hpp"
#include "dtrain/datasets/source.hpp"
#include "dtrain/train/file_transforms.hpp"

namespace dtrain::train {

namespace {

const char* const prefix = "data.";

// The data.KEY keys that are not a source's.
const std::vector<std::string> loader_keys = {"workers",     "normalize",       "standardize",
                                              "random_crop", "horizontal_flip", "shuffle_window"};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text;
  for (int64_t d : shape)
    text += (text.empty() ? "" : ", ") + std::to_string(d);
  return "[" + text + "]";
}

} // namespace

// The cache holds weak references: a set lives while a replica of this
// process uses it, and the next trainer after it reads the file again (a
// long-lived node neither keeps every set it ever read nor misses a changed
// file). The lock is held while opening, so that concurrent first calls
// wait for one read instead of all reading.
result<std::shared_ptr<const data::dataset>> shared_source(const data::source_spec& spec,
                                                           const std::string& what,
                                                           bool classification) {
  static std::mutex mutex;
  static std::map<std::pair<data::source_spec, bool>, std::weak_ptr<const data::dataset>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = cache.begin(); it != cache.end();)  // forget the sets no one uses
    it = it->second.expired() ? cache.erase(it) : std::next(it);
  auto key = std::make_pair(spec, classification);
  auto it = cache.find(key);
  if (it != cache.end())
    if (auto live = it->second.lock())
      return live;
  DTRAIN_ASSIGN_OR_RETURN(auto set, data::open_source(spec, what, classification));
  cache[std::move(key)] = set;
  return set;
}

namespace {

// The validation set must fit the model the train set shaped.
status check_alike(const data::dataset& train, const data::dataset& validation) {
  if (train.sample_shape() != validation.sample_shape())
    return shape_mismatch("data.validation (" + validation.name() + ") has samples of shape " +
                          shape_text(validation.sample_shape()) + " but data.train (" +
                          train.name() + ") has " + shape_text(train.sample_shape()));
  if (train.target_count() != validation.target_count())
    return shape_mismatch("data.validation (" + validation.name() + ") has " +
                          std::to_string(validation.target_count()) +
                          " targets per sample but data.train (" + train.name() + ") has " +
                          std::to_string(train.target_count()));
  if (validation.class_count() > train.class_count())
    return shape_mismatch("data.validation (" + validation.name() + ") has " +
                          std::to_string(validation.class_count()) + " classes but data.train (" +
                          train.name() + ") has " + std::to_string(train.class_count()));
  return status::ok();
}

} // namespace

bool has_file_data(const hyperparameters& hp) {
  return std::any_of(hp.values().begin(), hp.values().end(),
                     [](const auto& kv) { return kv.first.rfind(prefix, 0) == 0; });
}

status check_file_data(const hyperparameters& hp) {
  if (!has_file_data(hp))
    return status::ok();
  for (const auto& [key, value] : hp.values()) {
    if (key.rfind(prefix, 0) != 0)
      continue;
    const std::string rest = key.substr(5);
    if (rest.rfind("train.", 0) == 0 || rest.rfind("validation.", 0) == 0)
      continue;
    if (std::find(loader_keys.begin(), loader_keys.end(), rest) == loader_keys.end())
      return invalid_argument("data: unknown key '" + rest +
                              "' (known: train, validation, workers, normalize, standardize, "
                              "random_crop, horizontal_flip, shuffle_window)");
  }
  const data::source_spec train = data::sub_spec(hp.values(), "data.train");
  if (train.empty())
    return invalid_argument("data: no train source (data.train: {format: ..., path: ...})");
  DTRAIN_RETURN_IF_ERROR(data::check_source(train, "data.train"));
  const data::source_spec validation = data::sub_spec(hp.values(), "data.validation");
  if (!validation.empty())
    DTRAIN_RETURN_IF_ERROR(data::check_source(validation, "data.validation"));
  DTRAIN_ASSIGN_OR_RETURN(int64_t workers, hp.get_int("data.workers", 1));
  if (workers < 1 || workers > 64)
    return invalid_argument("data.workers: " + std::to_string(workers) + " is not in [1, 64]");
  DTRAIN_ASSIGN_OR_RETURN(int64_t window, hp.get_int("data.shuffle_window", 0));
  if (window < 0)
    return invalid_argument("data.shuffle_window: " + std::to_string(window) + " is not >= 0");
  return check_transform_keys(hp);
}

status use_file_data(const hyperparameters& hp, bool classification, const std::string& owner,
                     operator_parts& parts) {
  DTRAIN_RETURN_IF_ERROR(check_file_data(hp).with_context(owner));
  DTRAIN_ASSIGN_OR_RETURN(parts.train_data,
                          shared_source(data::sub_spec(hp.values(), "data.train"), "data.train",
                                        classification));
  const data::source_spec validation = data::sub_spec(hp.values(), "data.validation");
  if (!validation.empty()) {
    DTRAIN_ASSIGN_OR_RETURN(parts.validation_data,
                            shared_source(validation, "data.validation", classification));
    DTRAIN_RETURN_IF_ERROR(check_alike(*parts.train_data, *parts.validation_data));
  }
  if (classification && parts.train_data->class_count() < 2)
    return invalid_argument(owner + " classifies, but data.train (" + parts.train_data->name() +
                            ") has no class labels (class_count " +
                            std::to_string(parts.train_data->class_count()) + ")");
  DTRAIN_ASSIGN_OR_RETURN(int64_t workers, hp.get_int("data.workers", 1));
  parts.loader_workers = static_cast<int>(workers);
  DTRAIN_ASSIGN_OR_RETURN(parts.shuffle_window, hp.get_int("data.shuffle_window", 0));
  if (auto* shards = dynamic_cast<const data::shard_dataset*>(parts.train_data.get())) {
    parts.train_block_starts = shards->shard_starts();
    if (parts.shuffle_window == 0)  // a bounded buffer by default: a few shards' worth
      parts.shuffle_window = std::min<int64_t>(parts.train_data->size(), 65536);
  }
  return add_file_transforms(hp, parts);
}

result<std::shared_ptr<const data::dataset>> prediction_input(const operator_parts& parts,
                                                              const std::string& input,
                                                              const std::string& owner) {
  const std::string head = "source:";
  if (input.compare(0, head.size(), head) != 0) {
    const auto& set = input == "validation" ? parts.validation_data
                    : input == "train"      ? parts.train_data
                                            : nullptr;
    if (input != "validation" && input != "train")
      return invalid_argument("predict: input '" + input +
                              "' is not 'validation', 'train' or a file");
    if (set == nullptr)
      return not_found("predict: " + owner + " set no " + input + " data");
    return set;
  }
  DTRAIN_ASSIGN_OR_RETURN(auto spec, data::parse_source_text(input.substr(head.size())));
  DTRAIN_ASSIGN_OR_RETURN(auto set, shared_source(spec, "predict --input", parts.classification));
  if (parts.train_data && set->sample_shape() != parts.train_data->sample_shape())
    return shape_mismatch("predict --input (" + set->name() + ") has samples of shape " +
                          shape_text(set->sample_shape()) + " but the model of " + owner +
                          " takes " + shape_text(parts.train_data->sample_shape()) + " (" +
                          parts.train_data->name() + ")");
  return set;
}

} // namespace dtrain::train
