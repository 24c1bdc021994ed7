#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dtrain/core/mapped_file.hpp"
#include "dtrain/core/status.hpp"

/// The text layer of the CSV reader (internal to datasets/): reading a file
/// whole and splitting it into records of fields. Nothing here knows about
/// columns or numbers.
namespace dtrain::data::csv_detail {

/// The bytes of a file, mapped read-only for one pass (mapped_file's
/// sequential: populated up front, since one fault per page would cost
/// more than the parse on a virtual machine). `text` is empty for an empty
/// file.
class mapped_text {
public:
  static result<mapped_text> open(const std::string& path);
  std::string_view text() const {
    return {reinterpret_cast<const char*>(file_.data), file_.size};
  }

private:
  explicit mapped_text(mapped_file file) : file_(std::move(file)) {}
  mapped_file file_;
};

/// A growable array of floats in its own anonymous mapping, advised to use
/// transparent huge pages: filling hundreds of MB of rows costs 2 MiB
/// faults, not 4 KiB ones. Its memory can be handed to a tensor (release).
/// One thread at a time.
class float_buffer {
public:
  float_buffer() = default;
  float_buffer(const float_buffer&) = delete;
  float_buffer& operator=(const float_buffer&) = delete;
  float_buffer(float_buffer&& other) noexcept { swap(other); }
  float_buffer& operator=(float_buffer&& other) noexcept {
    float_buffer gone(std::move(*this));
    swap(other);
    return *this;
  }
  ~float_buffer();

  /// Room for `count` floats; false when the memory cannot be had.
  bool reserve(size_t count);
  bool push_back(float value) {
    if (size_ == capacity_ && !reserve(capacity_ * 2 + 1024))
      return false;
    data_[size_++] = value;
    return true;
  }
  /// A buffer over [data, data + capacity) that another buffer owns: it
  /// never grows nor unmaps (the parts of a table read in parallel write
  /// their rows in place this way).
  static float_buffer window(float* data, size_t capacity);
  /// Declares the first `count` floats written (through windows).
  void set_size(size_t count) { size_ = count; }
  float* data() { return data_; }
  float& operator[](size_t i) { return data_[i]; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  /// The floats as a shared pointer that unmaps them; the buffer is empty
  /// afterwards. Only for a buffer that owns its memory.
  std::shared_ptr<float> release();

private:
  void swap(float_buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(owned_, other.owned_);
  }

  float* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
  bool owned_ = true;
};

/// Splits delimited text into records: fields separated by `delimiter`,
/// records ended by LF or CRLF (a lone CR inside a field is kept), fields
/// optionally quoted with '"' (a quote inside one written twice; a quoted
/// field may hold delimiters and line breaks). A UTF-8 byte order mark at
/// the start is skipped, and so are empty lines. The text must outlive the
/// reader; one thread at a time.
class record_reader {
public:
  /// `first_line`: the line number of the text's first line (a later part
  /// of a file); `file_start`: the text starts the file, so a byte order
  /// mark is skipped.
  record_reader(std::string_view text, char delimiter, std::string path, int64_t first_line,
                bool file_start);

  /// Reads the next record into `fields` (views into the text, or into the
  /// reader for a field with doubled quotes; valid until the next call).
  /// Returns false at the end of the text; corrupt_data naming the path and
  /// row for a quote left open or text after a closing quote.
  result<bool> next(std::vector<std::string_view>& fields);

  /// The common case, fast: when the next non-empty line holds no '"',
  /// returns true with `line` set to it (without its line break) and the
  /// reader past it; its fields are then the line split at the delimiter.
  /// False, having moved past empty lines only, at the end of the text or
  /// when the line needs next() (quotes).
  bool next_plain_line(std::string_view& line);

  /// The 1-based line on which the record last read starts.
  int64_t row() const { return row_; }
  /// Where the next record starts: its offset in the text, and its line.
  size_t offset() const { return pos_; }
  int64_t line() const { return line_; }

private:
  // A field unescaped into the arena: fields[index] = arena_[offset, +length).
  struct escaped_field {
    size_t index, offset, length;
  };
  status read_quoted_field();
  void read_plain_field();
  status error_after_quote(size_t field) const;

  std::string_view text_;
  char delimiter_;
  bool ends_field_[256] = {};  // the delimiter and '\n'
  std::string path_;
  size_t pos_ = 0;
  int64_t line_ = 1;  // the line pos_ is on
  int64_t row_ = 0;
  std::string arena_;  // unescaped quoted fields of the current record
  std::vector<escaped_field> escaped_;
  std::vector<std::string_view>* fields_ = nullptr;  // next()'s output
};

} // namespace dtrain::data::csv_detail
