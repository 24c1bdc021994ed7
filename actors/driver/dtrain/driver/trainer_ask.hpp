#pragma once

// The trainer's private part (not part of the public API): how a request
// goes to every replica of the group at once (ask_all), and how a failed
// one is handled (ask_with_recovery). trainer.cpp holds the handle's life,
// notes and events; trainer_placement.cpp places and spawns the group;
// trainer_recovery.cpp forms it again after a failure, or to grow;
// trainer_calls.cpp holds the calls a driver makes each epoch.

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/core/check.hpp"
#include "dtrain/driver/trainer.hpp"

namespace dtrain::actors {

namespace trainer_detail {

// What a failed request to the group calls for.
enum class handling {
  recover,    // the group failed (a replica or node gone, a hung peer, a
              // collective or request timeout): form a new one
  return_it,  // the request cannot be done (a path without a checkpoint, a
              // corrupt one): the caller's error, the group is fine
  stop,       // it would come back the same (a non-finite loss, a model that
              // does not fit): the trainer stops with this cause
};

handling handling_of(const status& s);

template <class Reply>
struct gathering {
  std::vector<Reply> replies;
  std::vector<bool> have;
  size_t left = 0;
  bool done = false;
};

// The collector of ask_all and ask_each: sends every replica its request
// (`send(self, rank)` returns the response handle), monitors them, and sets
// `promise` once, with every reply in rank order or the first failure.
// `who(rank)` names a replica in errors.
template <class Reply, class Send>
caf::behavior gather_replies(caf::event_based_actor* self,
                             std::shared_ptr<std::promise<result<std::vector<Reply>>>> promise,
                             const std::vector<replica_actor>& replicas,
                             std::function<std::string(size_t)> who, const std::string& what,
                             Send send) {
  using outcome = result<std::vector<Reply>>;
  auto st = std::make_shared<gathering<Reply>>();
  st->replies.resize(replicas.size());
  st->have.assign(replicas.size(), false);
  st->left = replicas.size();
  auto finish = [=](outcome o) {
    if (st->done)
      return;
    st->done = true;
    promise->set_value(std::move(o));
    self->quit();
  };
  self->set_down_handler([=](caf::down_msg& dm) {
    for (size_t rank = 0; rank < replicas.size(); ++rank)
      if (replicas[rank].address() == dm.source && !st->have[rank])
        finish(status(error_code::aborted, what + ": " + who(rank) + " is gone (" +
                                               caf::to_string(dm.reason) + ")"));
  });
  for (size_t rank = 0; rank < replicas.size(); ++rank) {
    self->monitor(replicas[rank]);
    send(self, rank).then(
        [=](Reply& reply) {
          st->replies[rank] = std::move(reply);
          st->have[rank] = true;
          if (--st->left == 0)
            finish(std::move(st->replies));
        },
        [=](caf::error& e) { finish(from_caf(e, what + " on " + who(rank))); });
  }
  if (replicas.empty())
    finish(std::vector<Reply>{});
  return {[](int32_t) {}};
}

} // namespace trainer_detail

// Asks every replica at once from a collector actor that also monitors
// them: a replica that dies fails the whole request at once (CAF would
// leave it waiting for its timeout), naming the replica, its node and why.
// Replica i gets `atom`, its own capability, then `args`.
template <class Reply, class Atom, class... Ts>
result<std::vector<Reply>> trainer::ask_all(std::chrono::milliseconds timeout,
                                            const std::string& what, Atom atom, Ts... args) {
  auto replicas = replicas_;
  auto capabilities = capabilities_;
  return gather<Reply>(timeout, what, [=](caf::event_based_actor* self, size_t rank) {
    return self->request(replicas[rank], timeout, atom, capabilities[rank], args...);
  });
}

// The collector of ask_all over the group as it is now, with `send`
// making each replica's request; bounded by `timeout` (+ 5 s), or by
// `poll` returning false when given (it is called every second while
// the group works: live growth asks the head between steps).
template <class Reply, class Send>
result<std::vector<Reply>> trainer::gather(std::chrono::milliseconds timeout,
                                           const std::string& what, Send send,
                                           const std::function<void()>& poll) {
  if (stopped_)
    return status(error_code::aborted, what + ": the trainer has been shut down");
  if (replicas_.empty())
    return status(error_code::aborted,
                  what + ": the trainer has no replicas (re-forming its group failed" +
                      (failures_.empty() ? std::string(")") : "; last failure: " + failures_.back().cause + ")"));
  using outcome = result<std::vector<Reply>>;
  auto promise = std::make_shared<std::promise<outcome>>();
  auto future = promise->get_future();
  auto replicas = replicas_;
  auto placement = placement_;
  auto who = [placement](size_t rank) {
    return "replica " + std::to_string(rank) + " (node " + std::to_string(placement[rank].node) +
           ", " + placement[rank].info.host + ")";
  };
  cluster_.system().spawn([=](caf::event_based_actor* self) -> caf::behavior {
    return trainer_detail::gather_replies<Reply>(self, promise, replicas, who, what, send);
  });
  const auto deadline = std::chrono::steady_clock::now() + timeout + std::chrono::seconds(5);
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline)
      return status(error_code::timeout, what + ": no answer within " +
                                             std::to_string(timeout.count()) + " ms");
    const auto slice = poll ? std::min<std::chrono::steady_clock::duration>(
                                  std::chrono::seconds(1), deadline - now)
                            : deadline - now;
    if (future.wait_for(slice) == std::future_status::ready)
      return future.get();
    if (poll)
      poll();
  }
}

// ask_all, and after a failure of the group, recovery and the same request
// again (on the new group), until it succeeds or recovery gives up. A bad
// request (a path without a checkpoint, a corrupt one) is the caller's
// error, not a failure of the group: it is returned as it is.
template <class Reply, class Atom, class... Ts>
result<std::vector<Reply>> trainer::ask_with_recovery(std::chrono::milliseconds timeout,
                                                      const std::string& what, Atom atom,
                                                      Ts... args) {
  for (;;) {
    auto all = ask_all<Reply>(timeout, what, atom, args...);
    if (all || stopped_ ||
        trainer_detail::handling_of(all.error()) == trainer_detail::handling::return_it)
      return all;
    DTRAIN_RETURN_IF_ERROR(recover(all.error()));
  }
}

} // namespace dtrain::actors
