#include "dtrain/datasets/csv_columns.hpp"

#include <charconv>
#include <system_error>
#include <utility>

namespace dtrain::data::csv_detail {

namespace {

// The header in an error message: the first names and the count, so that a
// table of 785 columns does not fill the screen.
std::string header_list(const std::vector<std::string>& names) {
  constexpr size_t shown = 16;
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > shown)
    out += ", ... (" + std::to_string(names.size()) + " columns)";
  return out;
}

// Finds columns by name, refusing names the header holds twice.
class column_index {
public:
  column_index(const std::vector<std::string>& names, const std::string& path)
    : names_(names), path_(path) {
    for (size_t c = 0; c < names.size(); ++c) {
      auto [it, fresh] = index_.emplace(names[c], static_cast<int32_t>(c));
      if (!fresh)
        twice_.emplace(names[c], std::make_pair(it->second, static_cast<int32_t>(c)));
    }
  }

  result<int32_t> find(const std::string& name, const char* what) const {
    auto dup = twice_.find(name);
    if (dup != twice_.end())
      return invalid_argument(path_ + ": " + what + " column '" + name +
                              "' is ambiguous: the header names columns " +
                              std::to_string(dup->second.first + 1) + " and " +
                              std::to_string(dup->second.second + 1) + " so");
    auto it = index_.find(name);
    if (it == index_.end())
      return invalid_argument(path_ + ": " + what + " column '" + name +
                              "' is not in the header (columns: " + header_list(names_) + ")");
    return it->second;
  }

private:
  const std::vector<std::string>& names_;
  const std::string& path_;
  std::unordered_map<std::string, int32_t> index_;
  std::unordered_map<std::string, std::pair<int32_t, int32_t>> twice_;
};

const char* role_name(role r) {
  switch (r) {
    case role::numeric: return "a feature";
    case role::categorical: return "a categorical feature";
    case role::target: return "a target";
    case role::ignored: return "ignored";
  }
  return "?";
}

// Gives `column` role `r`, refusing a second role.
status assign(column_plan& plan, int32_t column, role r, const std::string& path) {
  role& current = plan.roles[static_cast<size_t>(column)];
  if (current != role::numeric && current != r)
    return invalid_argument(path + ": column '" + plan.names[static_cast<size_t>(column)] +
                            "' cannot be both " + role_name(current) + " and " + role_name(r));
  current = r;
  return status::ok();
}

status assign_named(column_plan& plan, const column_index& index,
                    const std::vector<std::string>& names, role r, const char* what,
                    const std::string& path) {
  for (const std::string& name : names) {
    auto column = index.find(name, what);
    if (!column)
      return column.error();
    status s = assign(plan, *column, r, path);
    if (!s)
      return s;
  }
  return status::ok();
}

} // namespace

result<column_plan> plan_columns(std::vector<std::string> names, const csv_options& options,
                                 const std::string& path) {
  column_plan plan;
  plan.names = std::move(names);
  plan.roles.assign(plan.names.size(), role::numeric);
  column_index index(plan.names, path);
  status s = assign_named(plan, index, options.ignore, role::ignored, "ignore", path);
  std::vector<std::string> categorical;
  for (const auto& entry : options.categorical)
    categorical.push_back(entry.first);
  if (s)
    s = assign_named(plan, index, categorical, role::categorical, "categorical", path);
  if (!s)
    return s;
  if (options.targets.empty()) {
    int32_t last = static_cast<int32_t>(plan.names.size()) - 1;
    while (last >= 0 && plan.roles[static_cast<size_t>(last)] == role::ignored)
      --last;
    if (last < 0)
      return invalid_argument(path + ": every column is ignored: no target column is left");
    s = assign(plan, last, role::target, path);
  } else {
    s = assign_named(plan, index, options.targets, role::target, "target", path);
  }
  if (!s)
    return s;
  plan.slot.assign(plan.names.size(), -1);
  for (size_t c = 0; c < plan.names.size(); ++c) {
    std::vector<int32_t>* group = plan.roles[c] == role::numeric       ? &plan.numeric
                                  : plan.roles[c] == role::categorical ? &plan.categorical
                                  : plan.roles[c] == role::target      ? &plan.targets
                                                                       : nullptr;
    if (group == nullptr)
      continue;
    plan.slot[c] = static_cast<int32_t>(group->size());
    group->push_back(static_cast<int32_t>(c));
  }
  if (options.classification && plan.targets.size() != 1)
    return invalid_argument(path + ": classification needs exactly one target column, got " +
                            std::to_string(plan.targets.size()) +
                            " (set classification: false for regression targets)");
  if (plan.numeric.empty() && plan.categorical.empty())
    return invalid_argument(path + ": no feature column is left (columns: " +
                            header_list(plan.names) + ")");
  return plan;
}

int32_t interned_values::id_of(std::string_view value, int64_t row) {
  auto [it, fresh] = ids.emplace(std::string(value), static_cast<int32_t>(values.size()));
  if (fresh) {
    values.emplace_back(value);
    first_row.push_back(row);
  }
  return it->second;
}

std::string_view trim(std::string_view text) {
  size_t begin = 0, end = text.size();
  while (begin < end && (text[begin] == ' ' || text[begin] == '\t'))
    ++begin;
  while (end > begin && (text[end - 1] == ' ' || text[end - 1] == '\t'))
    --end;
  return text.substr(begin, end - begin);
}

bool parse_float(std::string_view text, float& out) {
  const char* first = text.data();
  const char* last = first + text.size();
  // from_chars takes no '+', which people and spreadsheets write.
  if (first != last && *first == '+' && last - first > 1 && first[1] != '-' && first[1] != '+')
    ++first;
  if (first == last)
    return false;
  auto [end, ec] = std::from_chars(first, last, out, std::chars_format::general);
  return ec == std::errc() && end == last;
}

std::string cell_error(const std::string& path, int64_t row, const std::string& column,
                       const std::string& what) {
  return path + ": row " + std::to_string(row) + ", column '" + column + "': " + what;
}

std::string quote_cell(std::string_view text) {
  constexpr size_t longest = 40;
  if (text.size() <= longest)
    return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, longest)) + "...'";
}

} // namespace dtrain::data::csv_detail
