#pragma once

#include <string>

#include "caf/all.hpp"
#include "dtrain/core/status.hpp"

/// Between dtrain::status (libdtrain) and caf::error (the wire). A status
/// travels as category "dtrain", its code, and its message as context, so
/// the driver sees the replica's own words.
namespace dtrain::actors {

caf::error to_caf(const status& s);

/// A caf::error as a status: dtrain errors come back as they were sent;
/// CAF's own say what happened (no answer within the timeout, the actor is
/// gone, ...), with `context` (what was being done, to whom) in front.
status from_caf(const caf::error& err, const std::string& context);

} // namespace dtrain::actors
