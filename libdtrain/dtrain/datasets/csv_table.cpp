#include "dtrain/datasets/csv_table.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <exception>
#include <utility>

#include "dtrain/core/parallel.hpp"
#include "dtrain/core/threads.hpp"

namespace dtrain::data::csv_detail {

namespace {

// The common cell: a bare integer of up to 9 digits, optionally negative.
// Converting the integer rounds as from_chars would (to nearest, ties to
// even), so the result is the same, sooner.
inline bool quick_number(std::string_view cell, float& out) {
  const char* p = cell.data();
  const char* end = p + cell.size();
  const bool negative = p != end && *p == '-';
  p += negative;
  if (p == end || end - p > 9)
    return false;
  int32_t value = 0;
  for (; p != end; ++p) {
    const unsigned digit = static_cast<unsigned char>(*p) - '0';
    if (digit > 9)
      return false;
    value = value * 10 + static_cast<int32_t>(digit);
  }
  out = static_cast<float>(negative ? -value : value);
  return true;
}

} // namespace

bool table_reader::is_missing(std::string_view cell) const {
  cell = trim(cell);
  for (std::string_view marker : markers)
    if (cell == marker)
      return true;
  return false;
}

status table_reader::push(table_cells& t, float value) const {
  if (t.numeric.push_back(value))
    return status::ok();
  return resource_exhausted(path + ": no memory for " + std::to_string(t.numeric.size()) +
                            " more floats");
}

status table_reader::numeric_cell(std::string_view cell, int64_t row, size_t column,
                                  table_cells& t) const {
  float value = 0;
  // The common cell, a bare number, goes straight to from_chars.
  const char* end = cell.data() + cell.size();
  if (!cell.empty()) {
    auto [stop, ec] = std::from_chars(cell.data(), end, value, std::chars_format::general);
    if (ec == std::errc() && stop == end && !std::isnan(value))
      return push(t, value);
  }
  std::string_view text = trim(cell);
  if (parse_float(text, value) && !std::isnan(value))
    return push(t, value);
  if (!is_missing(text)) {
    if (parse_float(text, value))  // a NaN the markers do not call missing
      return push(t, value);
    return corrupt_data(cell_error(path, row, plan.names[column],
                                   quote_cell(cell) + " is not a number"));
  }
  if (missing == missing_mode::error)
    return corrupt_data(cell_error(path, row, plan.names[column],
                                   "missing value " + quote_cell(cell) +
                                       " (set missing: mean or zero to fill it)"));
  if (missing == missing_mode::mean)
    t.missing.push_back(static_cast<int64_t>(t.numeric.size()));
  ++t.missing_per_column[static_cast<size_t>(plan.slot[column])];
  return push(t, 0.0f);
}

status table_reader::categorical_cell(std::string_view cell, int64_t row, size_t column,
                                      table_cells& t) const {
  std::string_view text = trim(cell);
  const auto& given = options.categorical.at(plan.names[column]);
  bool listed = std::find(given.begin(), given.end(), text) != given.end();
  if (!listed && is_missing(text)) {
    if (missing == missing_mode::error)
      return corrupt_data(cell_error(path, row, plan.names[column],
                                     "missing category " + quote_cell(cell) +
                                         " (set missing: zero for an all-zero one-hot)"));
    t.category.push_back(-1);
    return status::ok();
  }
  auto& values = t.categories[static_cast<size_t>(plan.slot[column])];
  t.category.push_back(values.id_of(text, row));
  return status::ok();
}

status table_reader::target_cell(std::string_view cell, int64_t row, size_t column,
                                 table_cells& t) const {
  std::string_view text = trim(cell);
  if (is_missing(text))
    return corrupt_data(cell_error(path, row, plan.names[column],
                                   "missing target " + quote_cell(cell)));
  if (options.classification) {
    t.label.push_back(t.labels.id_of(text, row));
    return status::ok();
  }
  float value = 0;
  if (!parse_float(text, value))
    return corrupt_data(cell_error(path, row, plan.names[column],
                                   quote_cell(cell) + " is not a number (a regression target)"));
  t.regression.push_back(value);
  return status::ok();
}

status table_reader::add_row(const std::vector<std::string_view>& fields, int64_t row,
                             table_cells& t) const {
  if (fields.size() != plan.names.size())
    return corrupt_data(path + ": row " + std::to_string(row) + " has " +
                        std::to_string(fields.size()) + " fields, the " +
                        (options.header ? "header has " : "first row has ") +
                        std::to_string(plan.names.size()));
  for (size_t c = 0; c < fields.size(); ++c) {
    status s;
    float value;
    switch (plan.roles[c]) {
      case role::numeric:
        if (quick_number(fields[c], value) && t.numeric.push_back(value))
          continue;
        s = numeric_cell(fields[c], row, c, t);
        break;
      case role::categorical: s = categorical_cell(fields[c], row, c, t); break;
      case role::target: s = target_cell(fields[c], row, c, t); break;
      case role::ignored: break;
    }
    if (!s)
      return s;
  }
  ++t.rows;
  return status::ok();
}
status table_reader::add_line(std::string_view line, int64_t row,
                              std::vector<std::string_view>& fields, table_cells& t) const {
  const size_t columns = plan.names.size();
  if (static_cast<size_t>(std::count(line.begin(), line.end(), delimiter)) + 1 != columns) {
    fields.clear();  // add_row names the row and both counts
    for (size_t at = 0;;) {
      size_t stop = std::min(line.find(delimiter, at), line.size());
      fields.push_back(line.substr(at, stop - at));
      if (stop == line.size())
        return add_row(fields, row, t);
      at = stop + 1;
    }
  }
  const char* p = line.data();
  const char* const end = p + line.size();
  for (size_t c = 0; c < columns; ++c) {
    const char* const cell = p;
    if (plan.roles[c] == role::numeric) {
      // A bare integer of up to 9 digits, converted as it is scanned (the
      // same float as from_chars: the integer is exact, then rounded once).
      const bool negative = p != end && *p == '-';
      p += negative;
      const char* const digits = p;
      int32_t value = 0;
      for (unsigned d; p != end && p - digits < 9 && (d = static_cast<unsigned char>(*p) - '0') <= 9; ++p)
        value = value * 10 + static_cast<int32_t>(d);
      if (p != digits && (p == end || *p == delimiter) &&
          t.numeric.push_back(static_cast<float>(negative ? -value : value))) {
        p += p != end;
        continue;
      }
    }
    const void* found = std::memchr(cell, delimiter, static_cast<size_t>(end - cell));
    const char* const stop = found != nullptr ? static_cast<const char*>(found) : end;
    const std::string_view text(cell, static_cast<size_t>(stop - cell));
    status s;
    switch (plan.roles[c]) {
      case role::numeric: s = numeric_cell(text, row, c, t); break;
      case role::categorical: s = categorical_cell(text, row, c, t); break;
      case role::target: s = target_cell(text, row, c, t); break;
      case role::ignored: break;
    }
    if (!s)
      return s;
    p = stop + (stop != end);
  }
  ++t.rows;
  return status::ok();
}

namespace {

// Below this a table is read in one pass: threads would cost more than
// they save.
constexpr size_t parallel_bytes = size_t{8} << 20;

// Reads every record `records` has into cells. A part of a table read in
// parts comes with its numeric window in place (reserve_for 0); a table read
// whole reserves for its `reserve_for` bytes of text here.
status read_rows(record_reader& records, const table_reader& reader, size_t reserve_for,
                 table_cells& t) {
  // A number and its delimiter take two bytes or more: this reservation
  // (address space; pages come as they are written) seldom needs to grow.
  const size_t text_bytes = reserve_for;
  if (reserve_for > 0 && !t.numeric.reserve(text_bytes / 2 + 1024))
    return resource_exhausted(reader.path + ": no address space for " +
                              std::to_string(text_bytes / 2) + " floats");
  t.missing_per_column.assign(reader.plan.numeric.size(), 0);
  t.categories.resize(reader.plan.categorical.size());
  std::vector<std::string_view> fields;
  std::string_view line;
  for (;;) {
    if (records.next_plain_line(line)) {
      status s = reader.add_line(line, records.row(), fields, t);
      if (!s)
        return s;
      continue;
    }
    auto more = records.next(fields);
    if (!more)
      return more.error();
    if (!*more)
      return status::ok();
    status s = reader.add_row(fields, records.row(), t);
    if (!s)
      return s;
  }
}

// Renumbers ids interned in `from` into `into`'s numbering, keeping each
// value's first row (`into` holds the earlier rows).
std::vector<int32_t> renumber(const interned_values& from, interned_values& into) {
  std::vector<int32_t> ids(from.values.size());
  for (size_t id = 0; id < ids.size(); ++id)
    ids[id] = into.id_of(from.values[id], from.first_row[id]);
  return ids;
}

// Appends the cells of a later part to those of the parts before it; the
// numeric cells are in place already (`numeric_base`: where they start).
void merge(table_cells& into, const table_cells& from, int64_t numeric_base) {
  for (int64_t cell : from.missing)
    into.missing.push_back(numeric_base + cell);
  for (size_t c = 0; c < into.missing_per_column.size(); ++c)
    into.missing_per_column[c] += from.missing_per_column[c];
  const size_t columns = into.categories.size();
  std::vector<std::vector<int32_t>> category_ids(columns);
  for (size_t c = 0; c < columns; ++c)
    category_ids[c] = renumber(from.categories[c], into.categories[c]);
  for (size_t i = 0; i < from.category.size(); ++i) {
    const int32_t id = from.category[i];  // -1: missing
    into.category.push_back(id < 0 ? id : category_ids[i % columns][static_cast<size_t>(id)]);
  }
  const std::vector<int32_t> label_ids = renumber(from.labels, into.labels);
  for (int32_t id : from.label)
    into.label.push_back(label_ids[static_cast<size_t>(id)]);
  into.regression.insert(into.regression.end(), from.regression.begin(), from.regression.end());
  into.rows += from.rows;
}

// A part of a table's text, cut after a line break, and what a quick scan
// of it found: its line breaks, its records (lines that are not empty, as
// record_reader counts them) and whether it holds a quote.
struct text_part {
  size_t begin = 0, end = 0;
  int64_t lines = 0, records = 0;
  bool quoted = false;
};

void scan_part(std::string_view data, text_part& part) {
  const char* p = data.data() + part.begin;
  const char* end = data.data() + part.end;
  part.quoted = std::memchr(p, '"', static_cast<size_t>(end - p)) != nullptr;
  while (p < end) {
    const char* newline = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* stop = newline != nullptr ? newline : end;
    part.records += stop - p > 1 || (stop - p == 1 && *p != '\r');
    part.lines += newline != nullptr;
    p = stop + 1;
  }
}

// Cuts `data` after line breaks into about `count` parts of similar size.
std::vector<text_part> cut_parts(std::string_view data, size_t count) {
  std::vector<text_part> parts;
  size_t begin = 0;
  for (size_t k = 1; k <= count && begin < data.size(); ++k) {
    size_t end = data.size();
    if (k < count) {
      size_t newline = data.find('\n', std::max(data.size() / count * k, begin));
      end = newline == std::string_view::npos ? data.size() : newline + 1;
    }
    parts.push_back(text_part{begin, end});
    begin = end;
  }
  return parts;
}

// Reads quote-free parts in parallel, each writing its numeric rows in
// place in `cells`' buffer; then joins the rest in file order.
status read_parts(std::string_view data, int64_t first_line, bool file_start,
                  const std::vector<text_part>& parts, const table_reader& reader,
                  table_cells& cells) {
  const size_t width = reader.plan.numeric.size();
  std::vector<int64_t> first_record(parts.size() + 1, 0), lines(parts.size(), first_line);
  for (size_t k = 0; k < parts.size(); ++k) {
    first_record[k + 1] = first_record[k] + parts[k].records;
    if (k > 0)
      lines[k] = lines[k - 1] + parts[k - 1].lines;
  }
  const size_t floats = static_cast<size_t>(first_record.back()) * width;
  if (!cells.numeric.reserve(floats + 1))
    return resource_exhausted(reader.path + ": no memory for " + std::to_string(floats) +
                              " floats");
  std::vector<table_cells> part(parts.size());
  std::vector<status> results(parts.size());
  parallel_for(static_cast<int64_t>(parts.size()), 1, [&](int64_t begin, int64_t end) {
    for (size_t k = static_cast<size_t>(begin); k < static_cast<size_t>(end); ++k) {
      const size_t offset = static_cast<size_t>(first_record[k]) * width;
      part[k].numeric = float_buffer::window(cells.numeric.data() + offset,
                                             static_cast<size_t>(parts[k].records) * width);
      record_reader records(data.substr(parts[k].begin, parts[k].end - parts[k].begin),
                            reader.delimiter, reader.path, lines[k], file_start && k == 0);
      try {  // a worker must not throw (parallel_for)
        results[k] = read_rows(records, reader, 0, part[k]);
      } catch (const std::exception& e) {
        results[k] = resource_exhausted(reader.path + ": " + e.what());
      }
    }
  });
  for (const status& s : results)
    if (!s)
      return s;  // the first in file order, as one pass would find it
  cells.missing_per_column.assign(width, 0);
  cells.categories.resize(reader.plan.categorical.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    if (part[k].rows != parts[k].records)
      return status(error_code::internal, reader.path + ": part " + std::to_string(k) +
                                              " read " + std::to_string(part[k].rows) +
                                              " records, its scan counted " +
                                              std::to_string(parts[k].records));
    merge(cells, part[k], first_record[k] * static_cast<int64_t>(width));
  }
  cells.numeric.set_size(floats);
  return status::ok();
}

} // namespace

status read_table(std::string_view data, int64_t first_line, bool file_start,
                  const table_reader& reader, table_cells& cells) {
  const size_t threads = static_cast<size_t>(std::max(1, blas_threads()));
  if (threads > 1 && data.size() >= parallel_bytes) {
    std::vector<text_part> parts = cut_parts(data, threads);
    parallel_for(static_cast<int64_t>(parts.size()), 1, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k)
        scan_part(data, parts[static_cast<size_t>(k)]);
    });
    // A quote may hide line breaks inside a field: such text is read in
    // one pass, from its start.
    if (std::none_of(parts.begin(), parts.end(), [](const text_part& p) { return p.quoted; }))
      return read_parts(data, first_line, file_start, parts, reader, cells);
  }
  record_reader records(data, reader.delimiter, reader.path, first_line, file_start);
  return read_rows(records, reader, data.size(), cells);
}

} // namespace dtrain::data::csv_detail
