#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "dtrain/cluster/node_actor.hpp"
#include "dtrain/driver/node_logs.hpp"

namespace dtrain::actors {

/// One node's log read as lines through the cluster (`dtrain logs`): the
/// whole log, its last K lines, or what was added since the last read (to
/// follow it). Complete lines that contain `grep` (every line when empty)
/// go to the sink without their newline; an unfinished last line waits for
/// its newline (flush() hands it out). Each chunk is read with
/// read_log_chunk and blocks at most `timeout`; errors are its, naming the
/// source. Not thread-safe; use from the thread of the scoped actor.
class log_lines {
public:
  using sink = std::function<void(const std::string& line)>;
  /// --tail reads back at most this much of a log to find its K lines.
  static constexpr int64_t max_tail_bytes = 16 << 20;

  log_lines(log_source source, std::string grep, sink out, std::chrono::milliseconds timeout);

  /// The whole log from its start.
  status read_all(caf::scoped_actor& self);
  /// The last `k` lines: chunks read backwards from the end until they
  /// hold k of them, the start, or max_tail_bytes.
  status read_tail(caf::scoped_actor& self, int k);
  /// What was added since the last read; a log that shrank (truncated or
  /// replaced) is read anew from its start at the next call.
  status read_new(caf::scoped_actor& self);
  /// The unfinished last line, if any and if it contains `grep`.
  void flush();

private:
  void emit(const std::string& text);
  bool wanted(const std::string& line) const;

  log_source source_;
  std::string grep_;
  sink out_;
  std::chrono::milliseconds timeout_;
  int64_t next_ = 0;     // where to ask next
  std::string partial_;  // the line begun
};

} // namespace dtrain::actors
