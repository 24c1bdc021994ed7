#include "dtrain/datasets/csv.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <string_view>
#include <utility>

#include "dtrain/datasets/csv_table.hpp"

namespace dtrain::data {

using namespace csv_detail;

namespace {

// Category numbers for one categorical column: remap[id] is the one-hot
// position of interned value id; `names` the categories in order.
struct category_map {
  std::vector<int32_t> remap;
  std::vector<std::string> names;
};

result<category_map> number_categories(const interned_values& seen,
                                       const std::vector<std::string>& given,
                                       const std::string& path, const std::string& column) {
  category_map map;
  map.names = given;
  if (given.empty()) {
    map.names = seen.values;
    std::sort(map.names.begin(), map.names.end());
  }
  for (size_t i = 0; i < map.names.size(); ++i)
    if (std::find(map.names.begin(), map.names.begin() + static_cast<std::ptrdiff_t>(i),
                  map.names[i]) != map.names.begin() + static_cast<std::ptrdiff_t>(i))
      return invalid_argument(path + ": categorical column '" + column + "' lists category " +
                              quote_cell(map.names[i]) + " twice");
  for (size_t id = 0; id < seen.values.size(); ++id) {
    auto it = std::find(map.names.begin(), map.names.end(), seen.values[id]);
    if (it == map.names.end())
      return corrupt_data(cell_error(path, seen.first_row[id], column,
                                     "unknown category " + quote_cell(seen.values[id]) +
                                         " (not in the column's category list)"));
    map.remap.push_back(static_cast<int32_t>(it - map.names.begin()));
  }
  return map;
}

// Replaces each interned label id by its class index: by name in the given
// class names (else an integer index into them), as integers when every
// label is one, else by sorted label text.
result<std::vector<float>> number_labels(const interned_values& seen, const csv_options& options,
                                         const std::string& path, const std::string& column,
                                         std::vector<std::string>& class_names,
                                         int64_t& class_count) {
  std::vector<float> index(seen.values.size());
  const auto& given = options.class_names;
  std::vector<float> numbers(seen.values.size());
  bool all_numbers = true;
  for (size_t id = 0; id < seen.values.size(); ++id)
    all_numbers = all_numbers && parse_float(seen.values[id], numbers[id]);
  if (given.empty() && !all_numbers) {
    class_names = seen.values;
    std::sort(class_names.begin(), class_names.end());
  } else {
    class_names = given;
  }
  constexpr float largest_class = 1 << 24;  // exact in a float
  float top = -1;
  for (size_t id = 0; id < seen.values.size(); ++id) {
    auto named = std::find(class_names.begin(), class_names.end(), seen.values[id]);
    if (named != class_names.end()) {
      index[id] = static_cast<float>(named - class_names.begin());
      continue;
    }
    float n = numbers[id];
    bool integer = all_numbers || parse_float(seen.values[id], n);
    integer = integer && n >= 0 && n < largest_class && n == std::floor(n);
    if (!integer || (!given.empty() && n >= static_cast<float>(given.size())))
      return corrupt_data(cell_error(
          path, seen.first_row[id], column,
          "label " + quote_cell(seen.values[id]) +
              (given.empty() ? " is not a class index (an integer >= 0); set classification: "
                               "false for regression targets"
                             : " is not in class_names, nor an index into them")));
    index[id] = n;
    top = std::max(top, n);
  }
  class_count = class_names.empty() ? static_cast<int64_t>(top) + 1
                                    : static_cast<int64_t>(class_names.size());
  return index;
}

}  // namespace

namespace {

// Fills each missing cell with its column's mean over the rows that have a
// value (double sums: 70,000 float rows would lose digits).
void fill_means(table_cells& t, size_t width) {
  if (t.missing.empty())
    return;
  std::vector<double> sums(width, 0.0);
  for (int64_t r = 0; r < t.rows; ++r)
    for (size_t c = 0; c < width; ++c)
      sums[c] += t.numeric[static_cast<size_t>(r) * width + c];  // missing cells hold 0
  for (int64_t cell : t.missing) {
    size_t c = static_cast<size_t>(cell) % width;
    int64_t present = t.rows - t.missing_per_column[c];
    t.numeric[static_cast<size_t>(cell)] =
        present > 0 ? static_cast<float>(sums[c] / static_cast<double>(present)) : 0.0f;
  }
}

// The feature matrix [rows, F]: numeric columns as read, categorical ones
// one-hot at their place in file order. Without categorical columns the
// numeric cells already are that matrix and are handed over, not copied.
result<tensor> feature_tensor(table_cells& t, const column_plan& plan,
                              const std::vector<category_map>& maps,
                              std::vector<std::string>& names) {
  const int64_t numeric = static_cast<int64_t>(plan.numeric.size());
  if (plan.categorical.empty()) {
    for (int32_t c : plan.numeric)
      names.push_back(plan.names[static_cast<size_t>(c)]);
    std::shared_ptr<float> owner = t.numeric.release();
    float* data = owner.get();
    return tensor::over(data, {t.rows, numeric}, std::move(owner));
  }
  for (size_t c = 0; c < plan.names.size(); ++c) {
    if (plan.roles[c] == role::numeric)
      names.push_back(plan.names[c]);
    if (plan.roles[c] == role::categorical)
      for (const std::string& category : maps[static_cast<size_t>(plan.slot[c])].names)
        names.push_back(plan.names[c] + "=" + category);
  }
  const int64_t width = static_cast<int64_t>(names.size());
  auto out = tensor::try_zeros({t.rows, width});
  if (!out)
    return out.error();
  const size_t cats = plan.categorical.size();
  for (int64_t r = 0; r < t.rows; ++r) {
    float* row = out->data() + r * width;
    size_t at = 0;
    for (size_t c = 0; c < plan.names.size(); ++c) {
      const int32_t slot = plan.slot[c];
      if (plan.roles[c] == role::numeric) {
        row[at++] = t.numeric[static_cast<size_t>(r * numeric + slot)];
      } else if (plan.roles[c] == role::categorical) {
        const category_map& map = maps[static_cast<size_t>(slot)];
        int32_t id = t.category[static_cast<size_t>(r) * cats + static_cast<size_t>(slot)];
        if (id >= 0)
          row[at + static_cast<size_t>(map.remap[static_cast<size_t>(id)])] = 1.0f;
        at += map.names.size();
      }
    }
  }
  return std::move(*out);
}

result<missing_mode> parse_missing(const std::string& mode, const std::string& path) {
  if (mode == "error")
    return missing_mode::error;
  if (mode == "mean")
    return missing_mode::mean;
  if (mode == "zero")
    return missing_mode::zero;
  return invalid_argument(path + ": missing: '" + mode + "' is not one of error, mean, zero");
}

char pick_delimiter(const csv_options& options) {
  if (options.delimiter != 0)
    return options.delimiter;
  auto ends_with = [&](const char* tail) {
    std::string_view p(options.path), t(tail);
    return p.size() >= t.size() && p.substr(p.size() - t.size()) == t;
  };
  return ends_with(".tsv") || ends_with(".tab") || ends_with(".TSV") ? '\t' : ',';
}

// Numbers the categories and labels that reading has collected, and puts
// the dataset together.
result<std::shared_ptr<const dataset>> build_dataset(table_cells& t, const table_reader& reader) {
  const column_plan& plan = reader.plan;
  const std::string& path = reader.path;
  std::vector<category_map> maps;
  for (int32_t c : plan.categorical) {
    const std::string& column = plan.names[static_cast<size_t>(c)];
    auto map = number_categories(t.categories[maps.size()], reader.options.categorical.at(column),
                                 path, column);
    if (!map)
      return map.error();
    maps.push_back(std::move(*map));
  }
  if (reader.missing == missing_mode::mean)
    fill_means(t, plan.numeric.size());
  std::vector<std::string> feature_names, class_names;
  auto features = feature_tensor(t, plan, maps, feature_names);
  if (!features)
    return features.error();
  if (feature_names.empty())  // categorical columns whose every cell is missing
    return corrupt_data(path + ": no feature is left: the categorical columns have no "
                               "category (every cell is missing; give a category list)");
  int64_t class_count = 0;
  tensor targets;
  if (reader.options.classification) {
    auto index = number_labels(t.labels, reader.options, path,
                               plan.names[static_cast<size_t>(plan.targets[0])], class_names,
                               class_count);
    if (!index)
      return index.error();
    std::vector<float> labels(t.label.size());
    for (size_t r = 0; r < labels.size(); ++r)
      labels[r] = (*index)[static_cast<size_t>(t.label[r])];
    targets = tensor::from_vector(labels, {t.rows});
  } else {
    targets = tensor::from_vector(t.regression,
                                  {t.rows, static_cast<int64_t>(plan.targets.size())});
  }
  std::string name = path + " (" + std::to_string(t.rows) + " rows)";
  auto rows = tensor_dataset::create(std::move(*features), std::move(targets), name);
  if (!rows)
    return rows.error();
  return std::shared_ptr<const dataset>(std::make_shared<csv_dataset>(
      std::move(*rows), name, std::move(feature_names), std::move(class_names), class_count));
}

} // namespace

csv_dataset::csv_dataset(std::shared_ptr<tensor_dataset> rows, std::string name,
                         std::vector<std::string> feature_names,
                         std::vector<std::string> class_names, int64_t class_count)
  : rows_(std::move(rows)),
    name_(std::move(name)),
    feature_names_(std::move(feature_names)),
    class_names_(std::move(class_names)),
    class_count_(class_count) {}

namespace {

result<std::shared_ptr<const dataset>> read_table_file(const csv_options& options) {
  const std::string& path = options.path;
  auto missing = parse_missing(options.missing, path);
  if (!missing)
    return missing.error();
  const char delimiter = pick_delimiter(options);
  if (delimiter == '"' || delimiter == '\n' || delimiter == '\r')
    return invalid_argument(path + ": delimiter '" + std::string(1, delimiter) +
                            "' cannot separate fields (it quotes or ends rows)");
  auto file = mapped_text::open(path);
  if (!file)
    return file.error();
  record_reader records(file->text(), delimiter, path, 1, true);
  std::vector<std::string_view> fields;
  auto first = records.next(fields);
  if (!first)
    return first.error();
  if (!*first)
    return corrupt_data(path + ": empty file (no rows)");
  std::vector<std::string> names;
  for (size_t c = 0; c < fields.size(); ++c)
    names.push_back(options.header ? std::string(trim(fields[c])) : std::to_string(c));
  auto plan = plan_columns(std::move(names), options, path);
  if (!plan)
    return plan.error();
  table_reader reader{options, path, *plan, delimiter, *missing, {}};
  for (const std::string& marker : options.missing_markers)
    reader.markers.emplace_back(marker);
  // Without a header the first record is data: read it again with the rest.
  const std::string_view text = file->text();
  table_cells cells;
  status read = options.header
                    ? read_table(text.substr(records.offset()), records.line(), false, reader, cells)
                    : read_table(text, 1, true, reader, cells);
  if (!read)
    return read;
  if (cells.rows == 0)
    return corrupt_data(path + ": has a header but no data rows");
  return build_dataset(cells, reader);
}

} // namespace

result<std::shared_ptr<const dataset>> read_csv(const csv_options& options) {
  // The containers below throw only when memory runs out: that is an error
  // of this call, not an exception for the caller.
  try {
    return read_table_file(options);
  } catch (const std::exception& e) {
    return resource_exhausted(options.path + ": " + e.what());
  }
}

} // namespace dtrain::data
