#include "dtrain/core/status.hpp"

#include <cstdio>

namespace dtrain {

const char* to_string(error_code code) {
  switch (code) {
    case error_code::ok: return "ok";
    case error_code::invalid_argument: return "invalid_argument";
    case error_code::shape_mismatch: return "shape_mismatch";
    case error_code::out_of_range: return "out_of_range";
    case error_code::io_error: return "io_error";
    case error_code::corrupt_data: return "corrupt_data";
    case error_code::not_found: return "not_found";
    case error_code::timeout: return "timeout";
    case error_code::aborted: return "aborted";
    case error_code::unavailable: return "unavailable";
    case error_code::cuda_error: return "cuda_error";
    case error_code::internal: return "internal";
    case error_code::numerical_error: return "numerical_error";
    case error_code::resource_exhausted: return "resource_exhausted";
  }
  return "unknown";
}

std::string status::to_string() const {
  if (is_ok())
    return "ok";
  return std::string(dtrain::to_string(code_)) + ": " + message_;
}

status status::with_context(const std::string& context) const {
  if (is_ok())
    return *this;
  return {code_, context + ": " + message_};
}

status invalid_argument(std::string message) {
  return {error_code::invalid_argument, std::move(message)};
}
status shape_mismatch(std::string message) {
  return {error_code::shape_mismatch, std::move(message)};
}
status io_error(std::string message) {
  return {error_code::io_error, std::move(message)};
}
status corrupt_data(std::string message) {
  return {error_code::corrupt_data, std::move(message)};
}
status not_found(std::string message) {
  return {error_code::not_found, std::move(message)};
}
status unavailable(std::string message) {
  return {error_code::unavailable, std::move(message)};
}

status resource_exhausted(std::string message) {
  return {error_code::resource_exhausted, std::move(message)};
}

namespace detail {

void die_on_bad_result_access(const status& error) {
  std::fprintf(stderr, "dtrain: value() of a failed result: %s\n",
               error.to_string().c_str());
  std::abort();
}

const status& ok_status() {
  static const status ok;
  return ok;
}

} // namespace detail
} // namespace dtrain
