#pragma once

#include <cstdint>
#include <memory>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// `base` with every sample kept in memory, as floats, once it has been
/// read: the first epoch reads and decodes (images, mapped arrays, shards),
/// the later ones copy (tf.data's cache()). Fills as it is read, from any
/// number of threads: a sample is read from `base` by the first thread
/// that claims it; another thread asking for it meanwhile reads it from
/// `base` itself rather than waiting. Errors: resource_exhausted when the
/// set would take more than `limit_bytes`, naming the set and both sizes;
/// the base's gather status otherwise (nothing of a failed read is kept).
result<std::shared_ptr<const dataset>> cache_in_memory(std::shared_ptr<const dataset> base,
                                                       int64_t limit_bytes);

} // namespace dtrain::data
