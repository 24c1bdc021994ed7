#include "dtrain/datasets/csv_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "dtrain/core/files.hpp"

namespace dtrain::data::csv_detail {

namespace {

// Reads are capped so one read() call never asks for more than Linux gives.
constexpr size_t max_read = size_t{1} << 30;

// Closes a descriptor on every path out of read_whole_file.
struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

result<std::string> read_whole_file(const std::string& path) {
  fd_closer file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0)
    return os_error("cannot open", path, errno);
  struct stat info {};
  if (::fstat(file.fd, &info) != 0)
    return os_error("cannot stat", path, errno);
  if (S_ISDIR(info.st_mode))
    return io_error(path + ": is a directory, not a file");
  std::string text;
  try {
    text.resize(static_cast<size_t>(info.st_size));
  } catch (const std::exception&) {
    return resource_exhausted(path + ": cannot hold its " + std::to_string(info.st_size) +
                              " bytes in memory");
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t got = ::read(file.fd, &text[done], std::min(text.size() - done, max_read));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return os_error("cannot read", path, errno);
    if (got == 0)
      break;  // the file shrank while we read it: take what is there
    done += static_cast<size_t>(got);
  }
  text.resize(done);
  return text;
}

record_reader::record_reader(std::string_view text, char delimiter, std::string path)
  : text_(text), delimiter_(delimiter), path_(std::move(path)) {
  if (text_.size() >= 3 && text_.compare(0, 3, "\xEF\xBB\xBF") == 0)
    pos_ = 3;
}

int64_t record_reader::estimate_records() const {
  return static_cast<int64_t>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(pos_),
                                         text_.end(), '\n')) + 1;
}

void record_reader::read_plain_field() {
  const char* data = text_.data();
  const size_t end = text_.size();
  size_t p = pos_;
  while (p < end && data[p] != delimiter_ && data[p] != '\n')
    ++p;
  size_t stop = p;
  // A CR is part of the line break when it ends the line (CRLF, or the last
  // line of a file written with CRLF).
  if (stop > pos_ && data[stop - 1] == '\r' && (p == end || data[p] == '\n'))
    --stop;
  spans_.push_back({false, pos_, stop - pos_});
  pos_ = p;
}

status record_reader::read_quoted_field() {
  const char* data = text_.data();
  const size_t end = text_.size();
  size_t p = pos_ + 1;  // after the opening quote
  size_t piece = p;
  bool escaped = false;
  size_t arena_start = arena_.size();
  for (;;) {
    const void* found = std::memchr(data + p, '"', end - p);
    if (found == nullptr)
      return corrupt_data(path_ + ": row " + std::to_string(row_) + ", field " +
                          std::to_string(spans_.size() + 1) +
                          ": a quoted field is never closed (no matching '\"')");
    size_t quote = static_cast<size_t>(static_cast<const char*>(found) - data);
    line_ += std::count(data + p, data + quote, '\n');
    if (quote + 1 < end && data[quote + 1] == '"') {
      // A doubled quote stands for one: the field needs its own copy.
      arena_.append(data + piece, quote + 1 - piece);
      escaped = true;
      p = piece = quote + 2;
      continue;
    }
    if (escaped) {
      arena_.append(data + piece, quote - piece);
      spans_.push_back({true, arena_start, arena_.size() - arena_start});
    } else {
      spans_.push_back({false, piece, quote - piece});
    }
    pos_ = quote + 1;
    break;
  }
  size_t after = pos_;
  if (after < end && data[after] == '\r' && (after + 1 == end || data[after + 1] == '\n'))
    pos_ = ++after;
  if (after < end && data[after] != delimiter_ && data[after] != '\n')
    return error_after_quote(spans_.size());
  return status::ok();
}

status record_reader::error_after_quote(size_t field) const {
  std::string rest(text_.substr(pos_, 20));
  rest = rest.substr(0, rest.find('\n'));
  return corrupt_data(path_ + ": row " + std::to_string(line_) + ", field " +
                      std::to_string(field) + ": text after a closing quote ('" + rest +
                      "'); a quote inside a quoted field is written twice");
}

result<bool> record_reader::next(std::vector<std::string_view>& fields) {
  fields.clear();
  spans_.clear();
  arena_.clear();
  const char* data = text_.data();
  const size_t end = text_.size();
  // Empty lines separate nothing: skip them.
  while (pos_ < end && (data[pos_] == '\n' ||
                        (data[pos_] == '\r' && (pos_ + 1 == end || data[pos_ + 1] == '\n')))) {
    if (data[pos_] == '\n')
      ++line_;
    ++pos_;
  }
  if (pos_ >= end)
    return false;
  row_ = line_;
  for (;;) {
    if (data[pos_] == '"') {
      status quoted = read_quoted_field();
      if (!quoted)
        return quoted;
    } else {
      read_plain_field();
    }
    if (pos_ < end && data[pos_] == delimiter_) {
      ++pos_;
      if (pos_ == end || data[pos_] == '\n' ||
          (data[pos_] == '\r' && (pos_ + 1 == end || data[pos_ + 1] == '\n')))
        spans_.push_back({false, pos_, 0});  // a trailing delimiter: one empty field
      else
        continue;
    }
    break;
  }
  if (pos_ < end && data[pos_] == '\r')
    ++pos_;  // the CR of a CRLF after a trailing delimiter
  if (pos_ < end && data[pos_] == '\n') {
    ++pos_;
    ++line_;
  }
  fields.reserve(spans_.size());
  for (const span& s : spans_)
    fields.emplace_back(s.in_arena ? std::string_view(arena_).substr(s.offset, s.length)
                                   : text_.substr(s.offset, s.length));
  return true;
}

} // namespace dtrain::data::csv_detail
