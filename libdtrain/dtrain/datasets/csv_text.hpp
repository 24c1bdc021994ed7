#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dtrain/core/status.hpp"

/// The text layer of the CSV reader (internal to datasets/): reading a file
/// whole and splitting it into records of fields. Nothing here knows about
/// columns or numbers.
namespace dtrain::data::csv_detail {

/// The bytes of `path` in one string (one read per 1 GiB). Errors name the
/// path: not_found, io_error.
result<std::string> read_whole_file(const std::string& path);

/// Splits delimited text into records: fields separated by `delimiter`,
/// records ended by LF or CRLF (a lone CR inside a field is kept), fields
/// optionally quoted with '"' (a quote inside one written twice; a quoted
/// field may hold delimiters and line breaks). A UTF-8 byte order mark at
/// the start is skipped, and so are empty lines. The text must outlive the
/// reader; one thread at a time.
class record_reader {
public:
  record_reader(std::string_view text, char delimiter, std::string path);

  /// Reads the next record into `fields` (views into the text, or into the
  /// reader for a field with doubled quotes; valid until the next call).
  /// Returns false at the end of the text; corrupt_data naming the path and
  /// row for a quote left open or text after a closing quote.
  result<bool> next(std::vector<std::string_view>& fields);

  /// The 1-based line on which the record last read starts.
  int64_t row() const { return row_; }

  /// An upper bound on the records left (line breaks + 1), for reserving.
  int64_t estimate_records() const;

private:
  struct span {
    bool in_arena;
    size_t offset, length;
  };
  status read_quoted_field();
  void read_plain_field();
  status error_after_quote(size_t field) const;

  std::string_view text_;
  char delimiter_;
  std::string path_;
  size_t pos_ = 0;
  int64_t line_ = 1;  // the line pos_ is on
  int64_t row_ = 0;
  std::string arena_;  // unescaped quoted fields of the current record
  std::vector<span> spans_;
};

} // namespace dtrain::data::csv_detail
