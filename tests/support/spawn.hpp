#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"

/// Runs N ranks of a collective test, as threads of this process or as
/// separate processes (fork), under a deadline.
namespace dtrain::testing {

enum class rank_mode { threads, processes };
const char* to_string(rank_mode mode);

/// The outcome of one rank: its status (ok, or what failed), and for
/// processes whether it had to be killed at the deadline.
struct rank_outcome {
  dtrain::status result;
  bool killed = false;
};

/// Runs body(rank) for rank = 0..n-1 at once and returns each rank's
/// outcome. Processes: forked children report through their exit code and
/// a pipe carrying the status text; any still running at the deadline are
/// killed with SIGKILL by pid and reaped (none is left behind). Threads:
/// joined (a thread cannot be killed: a body must honour its own timeouts;
/// CTest's timeout is the backstop). A body must not use Boost.Test
/// assertions (they do not cross a fork); it returns a status instead.
std::vector<rank_outcome> run_ranks(int n, rank_mode mode, std::chrono::milliseconds deadline,
                                    const std::function<dtrain::status(int rank)>& body);

/// "rank 2: timeout: ..." for every failed rank, or "" if all are ok.
std::string failures(const std::vector<rank_outcome>& outcomes);

/// A status that says `what` failed when cond is false (for rank bodies).
dtrain::status expect(bool cond, const std::string& what);

} // namespace dtrain::testing
