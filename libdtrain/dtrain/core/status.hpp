#pragma once

#include <cstdlib>
#include <ostream>
#include <string>
#include <utility>
#include <variant>

namespace dtrain {

/// What went wrong, coarsely: callers branch on the code, people read the
/// message. Codes are stable; add new ones at the end.
enum class error_code {
  ok = 0,
  invalid_argument,   // the caller passed something malformed
  shape_mismatch,     // tensors or layers whose shapes do not chain
  out_of_range,       // an index or size past its limit
  io_error,           // the OS refused a file operation
  corrupt_data,       // a file or message whose contents are wrong
  not_found,          // a file, key or name that does not exist
  timeout,            // a blocking call ran past its deadline
  aborted,            // cancelled or torn down while waiting
  unavailable,        // a device or backend that is not there (no GPU, ...)
  cuda_error,         // the CUDA runtime, cuBLAS or a kernel failed
  internal,           // a broken invariant inside dtrain
  numerical_error,    // a non-finite loss or value: retrying would repeat it
  resource_exhausted, // memory (host or device) too small for what was asked
};

/// Name of a code, for messages ("shape_mismatch").
const char* to_string(error_code code);
inline std::ostream& operator<<(std::ostream& out, error_code code) {
  return out << to_string(code);
}

/// The outcome of an operation that returns nothing: ok, or a code and a
/// message that names what is at fault (file, layer, rank, field).
/// Cheap to copy when ok. Not thread-safe to mutate; immutable in practice.
class [[nodiscard]] status {
public:
  status() = default;
  status(error_code code, std::string message)
    : code_(code), message_(std::move(message)) {}

  static status ok() { return {}; }

  bool is_ok() const { return code_ == error_code::ok; }
  explicit operator bool() const { return is_ok(); }
  error_code code() const { return code_; }
  const std::string& message() const { return message_; }

  /// "code: message", or "ok".
  std::string to_string() const;

  /// The same error with "context: " put before the message, so that an
  /// error climbing out of nested calls reads outermost first.
  status with_context(const std::string& context) const;

private:
  error_code code_ = error_code::ok;
  std::string message_;
};

/// Shorthands for the common codes.
status invalid_argument(std::string message);
status shape_mismatch(std::string message);
status io_error(std::string message);
status corrupt_data(std::string message);
status not_found(std::string message);
status unavailable(std::string message);
status resource_exhausted(std::string message);

/// A value or the status that says why there is none. Access to value() on
/// an error is a broken invariant and aborts with the error's message.
template <class T>
class [[nodiscard]] result {
public:
  result(T value) : data_(std::move(value)) {}
  result(status error) : data_(std::move(error)) {
    if (std::get<status>(data_).is_ok())
      data_ = status(error_code::internal, "result built from an ok status");
  }

  bool is_ok() const { return data_.index() == 0; }
  explicit operator bool() const { return is_ok(); }

  const status& error() const;
  status to_status() const { return is_ok() ? status::ok() : error(); }

  T& value() & { check(); return std::get<T>(data_); }
  const T& value() const& { check(); return std::get<T>(data_); }
  T&& value() && { check(); return std::move(std::get<T>(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

private:
  void check() const;
  std::variant<T, status> data_;
};

namespace detail {
[[noreturn]] void die_on_bad_result_access(const status& error);
const status& ok_status();
} // namespace detail

template <class T>
const status& result<T>::error() const {
  return is_ok() ? detail::ok_status() : std::get<status>(data_);
}

template <class T>
void result<T>::check() const {
  if (!is_ok())
    detail::die_on_bad_result_access(std::get<status>(data_));
}

} // namespace dtrain
