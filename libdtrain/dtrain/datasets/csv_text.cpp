#include "dtrain/datasets/csv_text.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"

namespace dtrain::data::csv_detail {

namespace {

// Bytes of a mapping of `floats` floats, whole pages.
size_t mapping_bytes(size_t floats) {
  const size_t page = 4096;
  return (floats * sizeof(float) + page - 1) / page * page;
}

} // namespace

result<mapped_text> mapped_text::open(const std::string& path) {
  DTRAIN_ASSIGN_OR_RETURN(mapped_file file, mapped_file::open(path, /*sequential=*/true));
  return mapped_text(std::move(file));
}

float_buffer float_buffer::window(float* data, size_t capacity) {
  float_buffer out;
  out.data_ = data;
  out.capacity_ = capacity;
  out.owned_ = false;
  return out;
}

float_buffer::~float_buffer() {
  if (owned_ && data_ != nullptr)
    ::munmap(data_, mapping_bytes(capacity_));
}

bool float_buffer::reserve(size_t count) {
  if (count <= capacity_)
    return true;
  if (!owned_ || count > (size_t{1} << 60) / sizeof(float))
    return false;
  void* p = data_ == nullptr
                ? ::mmap(nullptr, mapping_bytes(count), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                : ::mremap(data_, mapping_bytes(capacity_), mapping_bytes(count), MREMAP_MAYMOVE);
  if (p == MAP_FAILED)
    return false;
  ::madvise(p, mapping_bytes(count), MADV_HUGEPAGE);
  data_ = static_cast<float*>(p);
  capacity_ = count;
  return true;
}

std::shared_ptr<float> float_buffer::release() {
  // Give back the reserved address space the floats did not use (an
  // in-place shrink: the data stays where it is).
  if (data_ != nullptr && mapping_bytes(size_) < mapping_bytes(capacity_) &&
      ::mremap(data_, mapping_bytes(capacity_), mapping_bytes(size_), 0) != MAP_FAILED)
    capacity_ = size_;
  const size_t bytes = mapping_bytes(capacity_);
  std::shared_ptr<float> out(data_, [bytes](float* p) {
    if (p != nullptr)
      ::munmap(p, bytes);
  });
  data_ = nullptr;
  size_ = capacity_ = 0;
  return out;
}

record_reader::record_reader(std::string_view text, char delimiter, std::string path,
                             int64_t first_line, bool file_start)
  : text_(text), delimiter_(delimiter), path_(std::move(path)), line_(first_line) {
  ends_field_[static_cast<unsigned char>(delimiter)] = true;
  ends_field_[static_cast<unsigned char>('\n')] = true;
  if (file_start && text_.size() >= 3 && text_.compare(0, 3, "\xEF\xBB\xBF") == 0)
    pos_ = 3;
}

void record_reader::read_plain_field() {
  const char* data = text_.data();
  const size_t end = text_.size();
  const char* scan = data + pos_;
  const char* last = data + end;
  while (scan != last && !ends_field_[static_cast<unsigned char>(*scan)])
    ++scan;
  const size_t p = static_cast<size_t>(scan - data);
  size_t stop = p;
  // A CR is part of the line break when it ends the line (CRLF, or the last
  // line of a file written with CRLF).
  if (stop > pos_ && data[stop - 1] == '\r' && (p == end || data[p] == '\n'))
    --stop;
  fields_->push_back(text_.substr(pos_, stop - pos_));
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
                          std::to_string(fields_->size() + 1) +
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
      escaped_.push_back({fields_->size(), arena_start, arena_.size() - arena_start});
      fields_->emplace_back();  // set once the arena stops growing
    } else {
      fields_->push_back(text_.substr(piece, quote - piece));
    }
    pos_ = quote + 1;
    break;
  }
  size_t after = pos_;
  if (after < end && data[after] == '\r' && (after + 1 == end || data[after + 1] == '\n'))
    pos_ = ++after;
  if (after < end && data[after] != delimiter_ && data[after] != '\n')
    return error_after_quote(fields_->size());
  return status::ok();
}

status record_reader::error_after_quote(size_t field) const {
  std::string rest(text_.substr(pos_, 20));
  rest = rest.substr(0, rest.find('\n'));
  return corrupt_data(path_ + ": row " + std::to_string(line_) + ", field " +
                      std::to_string(field) + ": text after a closing quote ('" + rest +
                      "'); a quote inside a quoted field is written twice");
}

bool record_reader::next_plain_line(std::string_view& line) {
  const char* data = text_.data();
  const size_t end = text_.size();
  while (pos_ < end) {
    const void* found = std::memchr(data + pos_, '\n', end - pos_);
    const size_t stop = found != nullptr ? static_cast<size_t>(static_cast<const char*>(found) - data) : end;
    size_t content = stop;
    if (content > pos_ && data[content - 1] == '\r')
      --content;  // the CR of a CRLF, or ending the last line
    if (std::memchr(data + pos_, '"', content - pos_) != nullptr)
      return false;
    const size_t start = pos_;
    row_ = line_;
    pos_ = found != nullptr ? stop + 1 : end;
    line_ += found != nullptr;
    if (content > start) {
      line = text_.substr(start, content - start);
      return true;
    }
  }
  return false;
}

result<bool> record_reader::next(std::vector<std::string_view>& fields) {
  fields.clear();
  fields_ = &fields;
  escaped_.clear();
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
        fields.push_back(text_.substr(pos_, 0));  // a trailing delimiter: one empty field
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
  for (const escaped_field& e : escaped_)
    fields[e.index] = std::string_view(arena_).substr(e.offset, e.length);
  return true;
}

} // namespace dtrain::data::csv_detail
