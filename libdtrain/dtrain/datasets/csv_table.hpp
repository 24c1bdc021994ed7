#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/datasets/csv.hpp"
#include "dtrain/datasets/csv_columns.hpp"
#include "dtrain/datasets/csv_text.hpp"

/// The row layer of the CSV reader (internal to datasets/): turning records
/// into cells, in parallel chunks where the text allows.
namespace dtrain::data::csv_detail {

enum class missing_mode { error, mean, zero };

/// The cells of a table as they are read, before categories and labels can
/// be numbered (that needs every row). Interned ids are local to this
/// object (merge() renumbers them).
struct table_cells {
  int64_t rows = 0;
  float_buffer numeric;            // [rows, plan.numeric], missing cells 0
  std::vector<int32_t> category;   // [rows, plan.categorical], interned ids, -1 missing
  std::vector<interned_values> categories;  // one per categorical column
  std::vector<float> regression;   // [rows, plan.targets] (regression only)
  std::vector<int32_t> label;      // [rows] interned label ids (classification only)
  interned_values labels;
  std::vector<int64_t> missing;    // offsets into `numeric` of missing cells (mean)
  std::vector<int64_t> missing_per_column;
};

/// Everything the row loop needs; read-only while rows are read, so chunks
/// of one table share it across threads.
struct table_reader {
  const csv_options& options;
  const std::string& path;
  const column_plan& plan;
  char delimiter;
  missing_mode missing;
  std::vector<std::string_view> markers;

  bool is_missing(std::string_view cell) const;
  status push(table_cells& t, float value) const;
  status numeric_cell(std::string_view cell, int64_t row, size_t column, table_cells& t) const;
  status categorical_cell(std::string_view cell, int64_t row, size_t column,
                          table_cells& t) const;
  status target_cell(std::string_view cell, int64_t row, size_t column, table_cells& t) const;
  /// One record: its field count checked, each cell converted.
  status add_row(const std::vector<std::string_view>& fields, int64_t row,
                 table_cells& t) const;
  /// One record from a line without quotes (record_reader::next_plain_line),
  /// converted straight from the text: the same cells and errors as
  /// add_row of its fields. `fields` is scratch space.
  status add_line(std::string_view line, int64_t row, std::vector<std::string_view>& fields,
                  table_cells& t) const;
};

/// Reads every record of `data` (the text after the header, whose first
/// line is `first_line`; `file_start` when it is the file's beginning, BOM
/// and all) into `cells`. A large text without any '"' is cut at line
/// breaks into chunks read in parallel (parallel_for: this process's BLAS
/// thread share) and merged in order; the cells, and the first error in
/// file order, are the same as one pass would give.
status read_table(std::string_view data, int64_t first_line, bool file_start,
                  const table_reader& reader, table_cells& cells);

} // namespace dtrain::data::csv_detail
