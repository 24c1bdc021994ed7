#pragma once

#include <cstdint>
#include <string>

#include "dtrain/cluster/messages.hpp"

/// Progress as text: the bar `dtrain train` draws for its group and
/// `dtrain tune` under each running trial of its table.
namespace dtrain::actors {

/// One bar line for the chief's progress, `width` columns at most:
/// "epoch 3/8 [=====>    ] 120/469  loss 0.4312  2345 samples/s  ETA 1:02".
/// samples/s is the group's: the chief's rate times `replicas` (every
/// replica trains an equal share). ETA counts the rest of this epoch and
/// the `epochs` after it at the epoch's pace so far; "--" before a rate is
/// known. Too narrow for a bar of 10 cells: the numbers alone, cut to
/// `width`.
std::string format_progress(const progress_msg& p, int replicas, int64_t epochs, int width);

/// "1:02", "12:03:07": h:mm:ss from an hour on, m:ss below.
std::string format_duration(double seconds);

} // namespace dtrain::actors
