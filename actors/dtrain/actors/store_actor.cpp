#include "dtrain/actors/store_actor.hpp"

#include <algorithm>
#include <map>

#include "dtrain/actors/errors.hpp"
#include "dtrain/core/check.hpp"

namespace dtrain::actors {

namespace {

struct parked_wait {
  std::vector<std::string> keys;
  caf::typed_response_promise<caf::ok_atom> promise;
};

struct store_state {
  std::map<std::string, std::vector<char>> values;
  std::multimap<std::string, caf::typed_response_promise<std::vector<char>>> gets;
  std::vector<parked_wait> waits;
};

bool has_all(const store_state& s, const std::vector<std::string>& keys) {
  return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return s.values.count(k) > 0; });
}

void wake(store_state& s, const std::string& key) {
  auto range = s.gets.equal_range(key);
  for (auto it = range.first; it != range.second; ++it)
    it->second.deliver(s.values[key]);
  s.gets.erase(range.first, range.second);
  for (auto it = s.waits.begin(); it != s.waits.end();) {
    if (has_all(s, it->keys)) {
      it->promise.deliver(caf::ok_atom::value);
      it = s.waits.erase(it);
    } else {
      ++it;
    }
  }
}

store_actor::behavior_type store_fn(store_actor::stateful_pointer<store_state> self) {
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
      self->state.gets.emplace(key, promise);
      return promise;
    },
    [=](add_atom, const std::string& key, int64_t delta) -> caf::result<int64_t> {
      auto& slot = self->state.values[key];
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
      wake(self->state, key);
      return current + delta;
    },
    [=](wait_atom, std::vector<std::string>& keys) -> caf::result<caf::ok_atom> {
      if (has_all(self->state, keys))
        return caf::ok_atom::value;
      auto promise = self->make_response_promise<caf::ok_atom>();
      self->state.waits.push_back({std::move(keys), promise});
      return promise;
    },
    [=](check_atom, const std::string& key) { return self->state.values.count(key) > 0; },
  };
}

std::string keys_text(const std::vector<std::string>& keys) {
  std::string out;
  for (auto& k : keys)
    out += (out.empty() ? "'" : ", '") + k + "'";
  return out;
}

} // namespace

store_actor spawn_store(caf::actor_system& sys) { return sys.spawn(store_fn); }

template <class Reply>
result<Reply> actor_store::ask(comm::milliseconds timeout, const std::string& what,
                               const std::function<void(caf::scoped_actor&, comm::milliseconds,
                                                        result<Reply>&)>& once) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  caf::scoped_actor self{sys_};
  for (;;) {
    if (cancelled_ && cancelled_->load())
      return status(error_code::aborted, what + ": the replica is being torn down");
    auto left = std::chrono::duration_cast<comm::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return status(error_code::timeout, what + ": no answer within " +
                                             std::to_string(timeout.count()) + " ms");
    result<Reply> out{status(error_code::timeout, "slice")};
    once(self, std::min(left, comm::milliseconds(200)), out);
    if (out.is_ok() || out.error().code() != error_code::timeout ||
        out.error().message() != what + ": no answer within the timeout")
      return out;
  }
}

status actor_store::set(const std::string& key, const comm::bytes& value, comm::milliseconds timeout) {
  const std::string what = "store set of '" + key + "'";
  return ask<bool>(timeout, what, [&](caf::scoped_actor& self, comm::milliseconds slice, result<bool>& out) {
           self->request(handle_, slice, set_atom::value, key, value)
               .receive([&](caf::ok_atom) { out = true; },
                        [&](caf::error& e) { out = from_caf(e, what); });
         }).to_status();
}

result<comm::bytes> actor_store::get(const std::string& key, comm::milliseconds timeout) {
  const std::string what = "store get of '" + key + "'";
  return ask<comm::bytes>(timeout, what, [&](caf::scoped_actor& self, comm::milliseconds slice,
                                             result<comm::bytes>& out) {
    self->request(handle_, slice, caf::get_atom::value, key)
        .receive([&](std::vector<char>& v) { out = std::move(v); },
                 [&](caf::error& e) { out = from_caf(e, what); });
  });
}

result<int64_t> actor_store::add(const std::string& key, int64_t delta, comm::milliseconds timeout) {
  // Not re-sent: a lost answer must not add twice; one request, whole timeout.
  caf::scoped_actor self{sys_};
  result<int64_t> out{status(error_code::internal, "no reply")};
  self->request(handle_, timeout, add_atom::value, key, delta)
      .receive([&](int64_t v) { out = v; },
               [&](caf::error& e) { out = from_caf(e, "store add to '" + key + "'"); });
  return out;
}

status actor_store::wait(const std::vector<std::string>& keys, comm::milliseconds timeout) {
  const std::string what = "store wait for " + keys_text(keys);
  return ask<bool>(timeout, what, [&](caf::scoped_actor& self, comm::milliseconds slice, result<bool>& out) {
           self->request(handle_, slice, wait_atom::value, keys)
               .receive([&](caf::ok_atom) { out = true; },
                        [&](caf::error& e) { out = from_caf(e, what); });
         }).to_status();
}

result<bool> actor_store::check(const std::string& key) {
  const std::string what = "store check of '" + key + "'";
  return ask<bool>(comm::store::default_timeout, what,
                   [&](caf::scoped_actor& self, comm::milliseconds slice, result<bool>& out) {
                     self->request(handle_, slice, check_atom::value, key)
                         .receive([&](bool v) { out = v; },
                                  [&](caf::error& e) { out = from_caf(e, what); });
                   });
}

} // namespace dtrain::actors
