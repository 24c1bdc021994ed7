#pragma once

#include <signal.h>

#include <ctime>

namespace dtrain::comm {

/// Blocks SIGPIPE in the calling thread for its lifetime, so that a write
/// to a socket whose peer has gone fails with EPIPE instead of killing the
/// process (Gloo writes with writev, which raises SIGPIPE on Linux). Threads
/// started meanwhile inherit the mask: create Gloo's device loop under one.
/// The destructor drops a SIGPIPE left pending, then restores the mask.
/// Touches only this thread's mask, never the process's disposition.
class sigpipe_blocker {
public:
  sigpipe_blocker() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
  }
  ~sigpipe_blocker() {
    if (sigismember(&previous_, SIGPIPE))
      return;  // it was blocked before: leave it as it was
    timespec now{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  sigpipe_blocker(const sigpipe_blocker&) = delete;
  sigpipe_blocker& operator=(const sigpipe_blocker&) = delete;

private:
  sigset_t pipe_;
  sigset_t previous_;
};

} // namespace dtrain::comm
