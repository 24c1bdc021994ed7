#include "dtrain/rendezvous/store.hpp"

#include <charconv>
#include <condition_variable>
#include <mutex>
#include <unordered_map>

#include "dtrain/core/check.hpp"

namespace dtrain::rendezvous {

// ---------------------------------------------------------------------------
// Shared helpers

namespace detail {

result<int64_t> add_to_counter(const std::string& key, const bytes* current, int64_t delta) {
  int64_t value = 0;
  if (current != nullptr) {
    const char* begin = current->data();
    const char* end = begin + current->size();
    auto [stop, ec] = std::from_chars(begin, end, value);
    if (current->empty() || ec != std::errc() || stop != end)
      return invalid_argument("store key '" + key + "' holds " +
                              std::to_string(current->size()) +
                              " bytes that are not a decimal counter; add() cannot add to it");
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(value, delta, &sum))
    return status(error_code::out_of_range, "store counter '" + key + "' overflows: " +
                                                std::to_string(value) + " + " +
                                                std::to_string(delta));
  return sum;
}

status missing_keys_error(const std::vector<std::string>& missing, milliseconds timeout) {
  std::string names;
  for (const auto& key : missing)
    names += (names.empty() ? "'" : ", '") + key + "'";
  return status(error_code::timeout, "timed out after " + std::to_string(timeout.count()) +
                                         " ms waiting for store key" +
                                         (missing.size() == 1 ? " " : "s ") + names);
}

} // namespace detail

bytes to_bytes(const std::string& text) { return bytes(text.begin(), text.end()); }

std::string to_string(const bytes& value) { return std::string(value.begin(), value.end()); }

// ---------------------------------------------------------------------------
// memory_store

/// Every access holds `mutex`; every change wakes all waiters, who recheck
/// their keys (stores are small and waiters few, so one condition suffices).
struct memory_store::state {
  std::mutex mutex;
  std::condition_variable changed;
  std::unordered_map<std::string, bytes> values;

  bool has(const std::string& key) const { return values.count(key) > 0; }
};

memory_store::memory_store() : state_(std::make_unique<state>()) {}

memory_store::~memory_store() = default;

status memory_store::set(const std::string& key, const bytes& value, milliseconds) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->values[key] = value;
  }
  state_->changed.notify_all();
  return status::ok();
}

result<bytes> memory_store::get(const std::string& key, milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (!state_->changed.wait_until(lock, deadline, [&] { return state_->has(key); }))
    return detail::missing_keys_error({key}, timeout);
  return state_->values.at(key);
}

result<int64_t> memory_store::add(const std::string& key, int64_t delta, milliseconds) {
  int64_t sum = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    auto it = state_->values.find(key);
    const bytes* current = it == state_->values.end() ? nullptr : &it->second;
    DTRAIN_ASSIGN_OR_RETURN(sum, detail::add_to_counter(key, current, delta));
    state_->values[key] = to_bytes(std::to_string(sum));
  }
  state_->changed.notify_all();
  return sum;
}

status memory_store::wait(const std::vector<std::string>& keys, milliseconds timeout) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto all_present = [&] {
    for (const auto& key : keys)
      if (!state_->has(key))
        return false;
    return true;
  };
  if (state_->changed.wait_until(lock, deadline, all_present))
    return status::ok();
  std::vector<std::string> missing;
  for (const auto& key : keys)
    if (!state_->has(key))
      missing.push_back(key);
  return detail::missing_keys_error(missing, timeout);
}

result<bool> memory_store::check(const std::string& key) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->has(key);
}

// ---------------------------------------------------------------------------
// prefix_store: errors from the base name the full (prefixed) keys, which is
// what an operator finds in the underlying store.

status prefix_store::set(const std::string& key, const bytes& value, milliseconds timeout) {
  return base_->set(prefix_ + key, value, timeout);
}

result<bytes> prefix_store::get(const std::string& key, milliseconds timeout) {
  return base_->get(prefix_ + key, timeout);
}

result<int64_t> prefix_store::add(const std::string& key, int64_t delta, milliseconds timeout) {
  return base_->add(prefix_ + key, delta, timeout);
}

status prefix_store::wait(const std::vector<std::string>& keys, milliseconds timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& key : keys)
    full.push_back(prefix_ + key);
  return base_->wait(full, timeout);
}

result<bool> prefix_store::check(const std::string& key) { return base_->check(prefix_ + key); }

} // namespace dtrain::rendezvous
