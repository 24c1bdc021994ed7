#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/datasets/csv.hpp"

/// The column layer of the CSV reader (internal to datasets/): which column
/// plays which role, and the distinct texts seen in the text-valued ones.
namespace dtrain::data::csv_detail {

enum class role { numeric, categorical, target, ignored };

/// What every column of a table is for: `slot[c]` is column c's index among
/// the columns of its role (numeric feature, categorical feature, target).
struct column_plan {
  std::vector<std::string> names;
  std::vector<role> roles;
  std::vector<int32_t> slot;
  std::vector<int32_t> numeric, categorical, targets;  // column indices, file order
};

/// Assigns roles from the options. invalid_argument naming `path` for a
/// name not in the header (the header listed), a name the header holds
/// twice, a column given two roles, classification with other than one
/// target, or no feature column left.
result<column_plan> plan_columns(std::vector<std::string> names, const csv_options& options,
                                 const std::string& path);

/// The distinct texts of one column, numbered in order of first sight, with
/// the row each was first seen on (for errors found after the read).
struct interned_values {
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::string> values;
  std::vector<int64_t> first_row;

  int32_t id_of(std::string_view value, int64_t row);
};

/// A cell's text without the spaces and tabs around it.
std::string_view trim(std::string_view text);

/// Parses a whole (trimmed) cell as a float: decimal or exponent form, an
/// optional '+' or '-', inf and nan. False for anything else, including
/// values outside float's range.
bool parse_float(std::string_view text, float& out);

/// "path: row R, column 'name': what".
std::string cell_error(const std::string& path, int64_t row, const std::string& column,
                       const std::string& what);

/// A cell's text for a message: quoted, cut at 40 characters.
std::string quote_cell(std::string_view text);

} // namespace dtrain::data::csv_detail
