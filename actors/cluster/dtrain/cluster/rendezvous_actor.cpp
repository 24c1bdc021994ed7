#include "dtrain/cluster/rendezvous_actor.hpp"

#include <algorithm>
#include <map>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/core/check.hpp"

namespace dtrain::actors {

namespace {

using clock_type = std::chrono::steady_clock;

struct parked_get {
  std::string key;
  caf::typed_response_promise<std::vector<char>> promise;
  clock_type::time_point deadline;
};

struct parked_wait {
  std::vector<std::string> keys;
  caf::typed_response_promise<caf::ok_atom> promise;
  clock_type::time_point deadline;
};

struct store_state {
  std::map<std::string, std::vector<char>> values;
  std::vector<parked_get> gets;
  std::vector<parked_wait> waits;
  bool sweep_pending = false;
};

bool has_all(const store_state& s, const std::vector<std::string>& keys) {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return s.values.count(k) > 0; });
}

void wake(store_state& s, const std::string& key) {
  for (auto it = s.gets.begin(); it != s.gets.end();) {
    if (it->key == key) {
      it->promise.deliver(s.values[key]);
      it = s.gets.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = s.waits.begin(); it != s.waits.end();) {
    if (has_all(s, it->keys)) {
      it->promise.deliver(caf::ok_atom::value);
      it = s.waits.erase(it);
    } else {
      ++it;
    }
  }
}

caf::error make_not_yet(const std::string& what) {
  return to_caf(status(error_code::timeout, what + ": not set yet (asked again)"));
}

// Answers every entry past its deadline with "not yet" and drops it.
template <class Entry, class Describe>
void expire(std::vector<Entry>& entries, clock_type::time_point now, Describe describe) {
  for (auto it = entries.begin(); it != entries.end();) {
    if (it->deadline <= now) {
      it->promise.deliver(make_not_yet(describe(*it)));
      it = entries.erase(it);
    } else {
      ++it;
    }
  }
}

std::string keys_text(const std::vector<std::string>& keys) {
  std::string out;
  for (auto& k : keys)
    out += (out.empty() ? "'" : ", '") + k + "'";
  return out;
}

using store_pointer = rendezvous_actor::stateful_pointer<store_state>;

// One timer at a time, due when the oldest entry may be past its deadline.
void arm_sweep(store_pointer self) {
  if (self->state.sweep_pending || (self->state.gets.empty() && self->state.waits.empty()))
    return;
  self->state.sweep_pending = true;
  self->delayed_send(self, store_park_limit, sweep_atom::value);
}

void sweep(store_pointer self) {
  auto& s = self->state;
  s.sweep_pending = false;
  auto now = clock_type::now();
  expire(s.gets, now, [](const parked_get& g) { return "store get of '" + g.key + "'"; });
  expire(s.waits, now, [](const parked_wait& w) { return "store wait for " + keys_text(w.keys); });
  arm_sweep(self);
}

caf::result<int64_t> add_to(store_state& s, const std::string& key, int64_t delta) {
  auto& slot = s.values[key];
  int64_t current = 0;
  if (!slot.empty()) {
    std::string text(slot.begin(), slot.end());
    char* end = nullptr;
    current = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != 0)
      return to_caf(invalid_argument("store key '" + key + "' is not a counter"));
  }
  std::string next = std::to_string(current + delta);
  slot.assign(next.begin(), next.end());
  wake(s, key);
  return current + delta;
}

rendezvous_actor::behavior_type store_fn(store_pointer self) {
  return {
    [=](set_atom, const std::string& key, std::vector<char>& value) {
      self->state.values[key] = std::move(value);
      wake(self->state, key);
      return caf::ok_atom::value;
    },
    [=](caf::get_atom, const std::string& key) -> caf::result<std::vector<char>> {
      auto it = self->state.values.find(key);
      if (it != self->state.values.end())
        return it->second;
      auto promise = self->make_response_promise<std::vector<char>>();
      self->state.gets.push_back({key, promise, clock_type::now() + store_park_limit});
      arm_sweep(self);
      return promise;
    },
    [=](add_atom, const std::string& key, int64_t delta) -> caf::result<int64_t> {
      return add_to(self->state, key, delta);
    },
    [=](wait_atom, std::vector<std::string>& keys) -> caf::result<caf::ok_atom> {
      if (has_all(self->state, keys))
        return caf::ok_atom::value;
      auto promise = self->make_response_promise<caf::ok_atom>();
      self->state.waits.push_back({std::move(keys), promise,
                                   clock_type::now() + store_park_limit});
      arm_sweep(self);
      return promise;
    },
    [=](check_atom, const std::string& key) { return self->state.values.count(key) > 0; },
    [=](status_atom) {
      return static_cast<int32_t>(self->state.gets.size() + self->state.waits.size());
    },
    [=](sweep_atom) { sweep(self); },
  };
}

// A slice that ended without an answer: CAF's request timeout, or the
// store's own "not yet" (error_code::timeout). Decided by codes only.
// (from_caf turns sec::request_timeout into error_code::timeout.)
bool is_not_yet(const caf::error& e) { return from_caf(e, "").code() == error_code::timeout; }

// The error handler of one slice: "not yet" leaves `out` for another try.
template <class Reply>
auto answer_error(const std::string& what, result<Reply>& out, bool& answered) {
  return [&what, &out, &answered](caf::error& e) {
    if (is_not_yet(e))
      return;
    out = from_caf(e, what);
    answered = true;
  };
}

} // namespace

rendezvous_actor spawn_store(caf::actor_system& sys) {
  // The askers' slices (park limit + 300 ms) are cut to this one limit.
  return sys.spawn(store_fn);
}

template <class Reply>
result<Reply> actor_store::ask(rendezvous::milliseconds timeout, const std::string& what,
                               const std::function<void(caf::scoped_actor&, rendezvous::milliseconds,
                                                        result<Reply>&, bool&)>& once) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  caf::scoped_actor self{sys_};
  for (;;) {
    if (cancelled_ && cancelled_->load())
      return status(error_code::aborted, what + ": the replica is being torn down");
    auto left = std::chrono::duration_cast<rendezvous::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return status(error_code::timeout, what + ": no answer within " +
                                             std::to_string(timeout.count()) + " ms");
    result<Reply> out{status(error_code::internal, "no reply")};
    bool answered = false;
    once(self, std::min(left, store_park_limit + rendezvous::milliseconds(300)), out, answered);
    if (answered)
      return out;
  }
}

status actor_store::set(const std::string& key, const rendezvous::bytes& value, rendezvous::milliseconds timeout) {
  const std::string what = "store set of '" + key + "'";
  return ask<bool>(timeout, what, [&](caf::scoped_actor& self, rendezvous::milliseconds slice,
                                      result<bool>& out, bool& answered) {
           self->request(handle_, slice, set_atom::value, key, value)
               .receive([&](caf::ok_atom) { out = true; answered = true; },
                        answer_error(what, out, answered));
         }).to_status();
}

result<rendezvous::bytes> actor_store::get(const std::string& key, rendezvous::milliseconds timeout) {
  const std::string what = "store get of '" + key + "'";
  return ask<rendezvous::bytes>(timeout, what, [&](caf::scoped_actor& self, rendezvous::milliseconds slice,
                                             result<rendezvous::bytes>& out, bool& answered) {
    self->request(handle_, slice, caf::get_atom::value, key)
        .receive([&](std::vector<char>& v) { out = std::move(v); answered = true; },
                 answer_error(what, out, answered));
  });
}

result<int64_t> actor_store::add(const std::string& key, int64_t delta, rendezvous::milliseconds timeout) {
  // Not re-sent: a lost answer must not add twice; one request, whole timeout.
  caf::scoped_actor self{sys_};
  result<int64_t> out{status(error_code::internal, "no reply")};
  self->request(handle_, timeout, add_atom::value, key, delta)
      .receive([&](int64_t v) { out = v; },
               [&](caf::error& e) { out = from_caf(e, "store add to '" + key + "'"); });
  return out;
}

status actor_store::wait(const std::vector<std::string>& keys, rendezvous::milliseconds timeout) {
  const std::string what = "store wait for " + keys_text(keys);
  return ask<bool>(timeout, what, [&](caf::scoped_actor& self, rendezvous::milliseconds slice,
                                      result<bool>& out, bool& answered) {
           self->request(handle_, slice, wait_atom::value, keys)
               .receive([&](caf::ok_atom) { out = true; answered = true; },
                        answer_error(what, out, answered));
         }).to_status();
}

result<bool> actor_store::check(const std::string& key) {
  const std::string what = "store check of '" + key + "'";
  return ask<bool>(rendezvous::store::default_timeout, what,
                   [&](caf::scoped_actor& self, rendezvous::milliseconds slice, result<bool>& out,
                       bool& answered) {
                     self->request(handle_, slice, check_atom::value, key)
                         .receive([&](bool v) { out = v; answered = true; },
                                  answer_error(what, out, answered));
                   });
}

} // namespace dtrain::actors
