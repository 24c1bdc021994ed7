#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "dtrain/cluster/messages.hpp"
#include "dtrain/driver/progress_text.hpp"

/// `dtrain train`'s view of a running group: one progress bar for the whole
/// group, redrawn in place on a terminal, and whole lines (epoch results,
/// messages) that clear the bar, print, and let it be drawn again.
namespace dtrain::runs {

/// Whether stdout is a terminal that draws in place (a tty whose TERM is
/// not "dumb"), and its width in columns (`fallback` when unknown).
bool stdout_is_terminal();
int terminal_width(int fallback = 80);

/// Where progress and result lines go. On a terminal (stdout a tty whose
/// TERM is not "dumb") the chief's progress is a bar redrawn in place;
/// elsewhere (a log file, CI) there is no bar, only the lines, so logs stay
/// readable. With `verbose`, every rank's progress is a line of its own
/// ("[rank R] epoch E step S/T ...") instead of the bar. Thread-safe: the
/// trainer's progress arrives on an actor thread while the driver prints
/// from its own.
class progress_display {
public:
  progress_display(int replicas, int64_t epochs, bool verbose);
  /// Whether stdout is such a terminal (decided at construction).
  bool terminal() const { return terminal_; }
  void update(const actors::progress_msg& p);
  /// Prints text (a whole line, without its newline) above the bar.
  void line(const std::string& text);
  /// The same on stderr (the trainer's notes: failures, recoveries).
  void note(const std::string& text);
  /// Epoch `epoch` ended (train() returned it): the bar goes, and progress
  /// of that epoch arriving late (messages race the reply) is not drawn.
  void finished_epoch(int64_t epoch);
  /// Removes the bar (before the program prints on its own).
  void clear();

private:
  void erase_locked();

  std::mutex mutex_;
  const int replicas_;
  const int64_t epochs_;
  const bool verbose_;
  const bool terminal_;
  int width_ = 80;
  std::string bar_;  // what is drawn now ("" when nothing is)
  int64_t finished_ = 0;
};

} // namespace dtrain::runs
