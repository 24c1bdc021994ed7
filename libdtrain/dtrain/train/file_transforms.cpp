#include "dtrain/train/file_transforms.hpp"

#include <map>
#include <mutex>

#include "dtrain/core/check.hpp"
#include "dtrain/data/transforms.hpp"

namespace dtrain::train {

namespace {

// data.horizontal_flip: true (0.5), false (0) or a probability. A number
// is a probability first, so that 1 means 1 as 1.0 does.
result<double> flip_probability(const hyperparameters& hp) {
  auto number = hp.get_double("data.horizontal_flip", 0.0);
  if (!number) {
    auto on = hp.get_bool("data.horizontal_flip", false);
    if (on)
      return *on ? 0.5 : 0.0;
    return invalid_argument("data.horizontal_flip: '" + hp.values().at("data.horizontal_flip") +
                            "' is not true, false or a probability in [0, 1]");
  }
  const double p = *number;
  if (!(p >= 0.0 && p <= 1.0))
    return invalid_argument("data.horizontal_flip: " + std::to_string(p) +
                            " is not true, false or a probability in [0, 1]");
  return p;
}

// The train set's statistics, once per set and kind while the set lives:
// replicas that are threads of one process share the one pass. An entry
// holds a weak reference to its set, so a set freed and another allocated
// at its address never gets the old numbers.
result<data::moments> shared_moments(const std::shared_ptr<const data::dataset>& owner,
                                     bool per_feature, bool per_channel) {
  struct entry {
    std::weak_ptr<const data::dataset> set;
    data::moments values;
  };
  static std::mutex mutex;
  static std::map<std::tuple<const data::dataset*, bool, bool>, entry> cache;
  std::lock_guard<std::mutex> lock(mutex);
  for (auto it = cache.begin(); it != cache.end();)
    it = it->second.set.expired() ? cache.erase(it) : std::next(it);
  const data::dataset& set = *owner;
  auto key = std::make_tuple(&set, per_feature, per_channel);
  if (auto it = cache.find(key); it != cache.end() && it->second.set.lock() == owner)
    return it->second.values;
  auto computed = per_feature ? data::compute_standardization(set)
                              : data::compute_normalization(set, per_channel);
  if (!computed)
    return computed.error().with_context("data.train statistics for " +
                                         std::string(per_feature ? "standardize" : "normalize"));
  cache[key] = entry{owner, *computed};
  return computed;
}

template <class Transform>
status add_checked(const std::shared_ptr<const Transform>& t, const std::vector<int64_t>& shape,
                   data::transform_list& out) {
  DTRAIN_RETURN_IF_ERROR(t->check_shape(shape).with_context("data: " + t->name()));
  out.push_back(t);
  return status::ok();
}

} // namespace

status check_transform_keys(const hyperparameters& hp) {
  DTRAIN_ASSIGN_OR_RETURN(bool normalize, hp.get_bool("data.normalize", false));
  DTRAIN_ASSIGN_OR_RETURN(bool standardize, hp.get_bool("data.standardize", false));
  if (normalize && standardize)
    return invalid_argument("data: normalize and standardize both given (choose one: "
                            "normalize per channel for images, standardize per feature for "
                            "tables)");
  DTRAIN_ASSIGN_OR_RETURN(int64_t padding, hp.get_int("data.random_crop", 0));
  if (padding < 0)
    return invalid_argument("data.random_crop: padding " + std::to_string(padding) +
                            " is not >= 0");
  return flip_probability(hp).to_status();
}

status add_file_transforms(const hyperparameters& hp, operator_parts& parts) {
  DTRAIN_RETURN_IF_ERROR(check_transform_keys(hp));
  const data::dataset& train = *parts.train_data;
  const std::vector<int64_t> shape = train.sample_shape();
  parts.train_transforms.clear();
  parts.validation_transforms.clear();
  if (int64_t padding = hp.get_int("data.random_crop", 0).value(); padding > 0) {
    DTRAIN_ASSIGN_OR_RETURN(auto crop, data::random_crop::create(padding));
    DTRAIN_RETURN_IF_ERROR(add_checked(crop, shape, parts.train_transforms));
  }
  if (double p = flip_probability(hp).value(); p > 0) {
    DTRAIN_ASSIGN_OR_RETURN(auto flip, data::horizontal_flip::create(static_cast<float>(p)));
    DTRAIN_RETURN_IF_ERROR(add_checked(flip, shape, parts.train_transforms));
  }
  const bool normalize = hp.get_bool("data.normalize", false).value();
  const bool standardize = hp.get_bool("data.standardize", false).value();
  if (!normalize && !standardize)
    return status::ok();
  DTRAIN_ASSIGN_OR_RETURN(auto m, shared_moments(parts.train_data, standardize,
                                                 shape.size() == 3));
  std::shared_ptr<const data::transform> scaling;
  if (standardize) {
    DTRAIN_ASSIGN_OR_RETURN(auto s, data::standardize::create(m.mean, m.std));
    DTRAIN_RETURN_IF_ERROR(s->check_shape(shape).with_context("data: standardize"));
    scaling = s;
  } else {
    DTRAIN_ASSIGN_OR_RETURN(auto n, data::normalize::create(m.mean, m.std));
    DTRAIN_RETURN_IF_ERROR(n->check_shape(shape).with_context("data: normalize"));
    scaling = n;
  }
  parts.train_transforms.push_back(scaling);
  parts.validation_transforms.push_back(scaling);
  return status::ok();
}

} // namespace dtrain::train
