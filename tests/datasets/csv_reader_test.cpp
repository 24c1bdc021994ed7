// The CSV/TSV reader: tables with headers, targets by name, categorical and
// class-label columns, missing values, quoting and line endings; and every
// malformed table reported with its file, row and column.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/threads.hpp"
#include "dtrain/datasets/csv.hpp"
#include "support/test_util.hpp"

namespace {

using dtrain::error_code;
using dtrain::data::csv_dataset;
using dtrain::data::csv_options;
using dtrain::data::dataset;
using dtrain::data::read_csv;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A table file `name` in `dir` holding `text`, and options reading it.
csv_options table(const dtrain::testing::temp_dir& dir, const std::string& name,
                  const std::string& text) {
  dtrain::testing::write_file(dir.file(name), text);
  csv_options options;
  options.path = dir.file(name);
  return options;
}

std::shared_ptr<const dataset> read_ok(const csv_options& options) {
  auto got = read_csv(options);
  BOOST_TEST_REQUIRE(got.is_ok(), got.error().to_string());
  return *got;
}

// Every row's features and targets, row after row.
struct all_rows {
  std::vector<float> x, y;
};

all_rows gather_all(const dataset& data) {
  all_rows out;
  out.x.resize(static_cast<size_t>(data.size() * data.feature_count()));
  out.y.resize(static_cast<size_t>(data.size() * data.target_count()));
  std::vector<int64_t> idx;
  for (int64_t i = 0; i < data.size(); ++i)
    idx.push_back(i);
  dtrain::status s = data.gather(idx.data(), data.size(), out.x.data(), out.y.data());
  BOOST_TEST_REQUIRE(s.is_ok(), s.to_string());
  return out;
}

// Reads expecting `code`, with a message naming the file and each of `parts`.
void expect_error(const csv_options& options, error_code code,
                  const std::vector<std::string>& parts) {
  auto got = read_csv(options);
  BOOST_TEST_REQUIRE(!got.is_ok());
  BOOST_TEST(dtrain::to_string(got.error().code()) == dtrain::to_string(code));
  const std::string& msg = got.error().message();
  BOOST_TEST(contains(msg, options.path), "message '" << msg << "' lacks the path");
  for (const std::string& part : parts)
    BOOST_TEST(contains(msg, part), "message '" << msg << "' lacks '" << part << "'");
}

const csv_dataset& as_csv(const dataset& data) {
  const auto* table = dynamic_cast<const csv_dataset*>(&data);
  BOOST_TEST_REQUIRE(table != nullptr);
  return *table;
}

} // namespace

BOOST_AUTO_TEST_SUITE(csv_reader)

BOOST_AUTO_TEST_CASE(header_names_columns_and_the_last_is_the_class_target) {
  dtrain::testing::temp_dir dir;
  auto data = read_ok(table(dir, "t.csv", "a,b,label\n1,2.5,0\n-3,+4e1,2\n0.5,6,1\n"));
  BOOST_TEST(data->size() == 3);
  BOOST_TEST(data->feature_count() == 2);
  BOOST_TEST(data->target_count() == 1);
  BOOST_TEST(data->class_count() == 3);
  auto rows = gather_all(*data);
  BOOST_TEST(rows.x == (std::vector<float>{1, 2.5f, -3, 40, 0.5f, 6}));
  BOOST_TEST(rows.y == (std::vector<float>{0, 2, 1}));
  BOOST_TEST(as_csv(*data).feature_names() == (std::vector<std::string>{"a", "b"}));
}

BOOST_AUTO_TEST_CASE(target_by_name_ignored_id_and_gather_by_index) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "id,y,x1,x2\n7,1,10,11\n8,0,20,21\n9,1,30,31\n");
  options.targets = {"y"};
  options.ignore = {"id"};
  auto data = read_ok(options);
  BOOST_TEST(data->feature_count() == 2);
  std::vector<int64_t> idx = {2, 0};
  std::vector<float> x(4), y(2);
  BOOST_TEST_REQUIRE(data->gather(idx.data(), 2, x.data(), y.data()).is_ok());
  BOOST_TEST(x == (std::vector<float>{30, 31, 10, 11}));
  BOOST_TEST(y == (std::vector<float>{1, 1}));
}

BOOST_AUTO_TEST_CASE(string_labels_are_numbered_in_sorted_order_or_by_class_names) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "x,kind\n1,dog\n2,cat\n3,emu\n4,cat\n");
  auto data = read_ok(options);
  BOOST_TEST(gather_all(*data).y == (std::vector<float>{1, 0, 2, 0}));
  BOOST_TEST(data->class_count() == 3);
  BOOST_TEST(as_csv(*data).class_names() == (std::vector<std::string>{"cat", "dog", "emu"}));
  options.class_names = {"emu", "dog", "cat", "yak"};
  data = read_ok(options);
  BOOST_TEST(gather_all(*data).y == (std::vector<float>{1, 2, 0, 2}));
  BOOST_TEST(data->class_count() == 4);
}

BOOST_AUTO_TEST_CASE(regression_targets_are_floats_of_several_columns) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "x,u,v\n1,0.5,-2\n2,1.5,3e2\n");
  options.classification = false;
  options.targets = {"u", "v"};
  auto data = read_ok(options);
  BOOST_TEST(data->target_count() == 2);
  BOOST_TEST(data->class_count() == 0);
  BOOST_TEST(gather_all(*data).y == (std::vector<float>{0.5f, -2, 1.5f, 300}));
}

BOOST_AUTO_TEST_CASE(categorical_column_is_one_hot_from_the_files_sorted_values) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "age,color,y\n30,red,0\n40,blue,1\n50,green,0\n60,red,1\n");
  options.categorical["color"] = {};
  auto data = read_ok(options);
  BOOST_TEST(data->feature_count() == 4);  // age + blue, green, red
  BOOST_TEST(gather_all(*data).x ==
             (std::vector<float>{30, 0, 0, 1, 40, 1, 0, 0, 50, 0, 1, 0, 60, 0, 0, 1}));
  BOOST_TEST(as_csv(*data).feature_names() ==
             (std::vector<std::string>{"age", "color=blue", "color=green", "color=red"}));
}

BOOST_AUTO_TEST_CASE(categorical_column_follows_a_given_category_list) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "color,age,y\nred,30,0\nblue,40,1\n");
  options.categorical["color"] = {"red", "green", "blue"};
  auto data = read_ok(options);
  BOOST_TEST(data->feature_count() == 4);  // red, green, blue + age
  BOOST_TEST(gather_all(*data).x == (std::vector<float>{1, 0, 0, 30, 0, 0, 1, 40}));
}

BOOST_AUTO_TEST_CASE(missing_values_are_filled_by_the_column_mean_or_zero) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "a,b,y\n1,NA,0\n,4,1\n5,?,0\n6,8,1\n");
  options.missing = "mean";
  auto mean = gather_all(*read_ok(options)).x;
  BOOST_TEST(mean == (std::vector<float>{1, 6, 4, 4, 5, 6, 6, 8}));
  options.missing = "zero";
  auto zero = gather_all(*read_ok(options)).x;
  BOOST_TEST(zero == (std::vector<float>{1, 0, 0, 4, 5, 0, 6, 8}));
}

BOOST_AUTO_TEST_CASE(tsv_is_tab_separated_by_its_extension) {
  dtrain::testing::temp_dir dir;
  auto data = read_ok(table(dir, "t.tsv", "a\tb\ty\n1\t2\t0\n3\t4\t1\n"));
  BOOST_TEST(gather_all(*data).x == (std::vector<float>{1, 2, 3, 4}));
}

BOOST_AUTO_TEST_CASE(quoted_fields_crlf_bom_and_no_trailing_newline_are_read) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv",
                       "\xEF\xBB\xBF\"a\",\"the, name\",y\r\n"
                       "\"1\",\"Smith, \"\"J\"\"\",x\r\n"
                       "\r\n"
                       "2,\"two\r\nlines\",z");
  options.ignore = {"the, name"};
  auto data = read_ok(options);
  BOOST_TEST(data->size() == 2);
  auto rows = gather_all(*data);
  BOOST_TEST(rows.x == (std::vector<float>{1, 2}));
  BOOST_TEST(rows.y == (std::vector<float>{0, 1}));
}

BOOST_AUTO_TEST_CASE(unquoted_crlf_lines_blank_lines_and_a_bom_are_read) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "\xEF\xBB\xBF" "a,b,y\r\n1,2,0\r\n\r\n\n3, 4 ,1\r\n-5,6.5,0\r");
  auto data = read_ok(options);
  BOOST_TEST(data->size() == 3);
  BOOST_TEST(gather_all(*data).x == (std::vector<float>{1, 2, 3, 4, -5, 6.5f}));
  BOOST_TEST(gather_all(*data).y == (std::vector<float>{0, 1, 0}));
  BOOST_TEST(as_csv(*data).feature_names() == (std::vector<std::string>{"a", "b"}));
  expect_error(table(dir, "u.csv", "a,b,y\r\n1,2,0\r\n\r\n3,x,1\r\n"), error_code::corrupt_data,
               {"row 4, column 'b': 'x' is not a number"});
}

BOOST_AUTO_TEST_CASE(quoted_field_keeps_delimiters_and_doubled_quotes_as_a_category) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "name,v,y\n\"a,\"\"b\"\"\",1,0\nplain,2,1\n");
  options.categorical["name"] = {};
  auto data = read_ok(options);
  BOOST_TEST(as_csv(*data).feature_names() ==
             (std::vector<std::string>{"name=a,\"b\"", "name=plain", "v"}));
}

BOOST_AUTO_TEST_CASE(headerless_columns_are_named_by_index) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "3,1,2\n1,6,5\n");
  options.header = false;
  options.targets = {"0"};
  auto data = read_ok(options);
  BOOST_TEST(data->size() == 2);
  BOOST_TEST(gather_all(*data).x == (std::vector<float>{1, 2, 6, 5}));
  BOOST_TEST(gather_all(*data).y == (std::vector<float>{3, 1}));
  BOOST_TEST(data->class_count() == 4);
}

BOOST_AUTO_TEST_CASE(short_row_names_the_row_and_both_counts) {
  dtrain::testing::temp_dir dir;
  expect_error(table(dir, "t.csv", "a,b,y\n1,2,0\n\n1,2\n"), error_code::corrupt_data,
               {"row 4 has 2 fields, the header has 3"});
}

BOOST_AUTO_TEST_CASE(bad_number_names_row_column_and_text) {
  dtrain::testing::temp_dir dir;
  expect_error(table(dir, "t.csv", "age,y\n3,0\nabc,1\n"), error_code::corrupt_data,
               {"row 3, column 'age': 'abc' is not a number"});
  expect_error(table(dir, "u.csv", "age,y\n3 4,0\n"), error_code::corrupt_data,
               {"row 2, column 'age': '3 4' is not a number"});
}

BOOST_AUTO_TEST_CASE(unknown_category_names_row_column_and_value) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "c,y\nred,0\nblue,1\npink,0\n");
  options.categorical["c"] = {"red", "blue"};
  expect_error(options, error_code::corrupt_data, {"row 4, column 'c'", "unknown category 'pink'"});
}

// Found by fuzz/csv_table: the table read as a dataset of no features.
BOOST_AUTO_TEST_CASE(categorical_columns_without_a_category_leave_no_feature_and_are_refused) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "c,y\n,0\nNA,1\n");
  options.categorical["c"] = {};
  options.missing = "mean";
  expect_error(options, error_code::corrupt_data, {"t.csv", "no feature is left"});
}

BOOST_AUTO_TEST_CASE(missing_value_under_error_names_row_and_column) {
  dtrain::testing::temp_dir dir;
  expect_error(table(dir, "t.csv", "a,b,y\n1,2,0\n3,NA,1\n"), error_code::corrupt_data,
               {"row 3, column 'b'", "missing value 'NA'"});
  expect_error(table(dir, "u.csv", "a,y\n1,\n"), error_code::corrupt_data,
               {"row 2, column 'y'", "missing target"});
}

BOOST_AUTO_TEST_CASE(unknown_target_or_ignore_column_lists_the_header) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "a,b,y\n1,2,0\n");
  options.targets = {"label"};
  expect_error(options, error_code::invalid_argument,
               {"target column 'label' is not in the header", "columns: a, b, y"});
  options.targets = {};
  options.ignore = {"id"};
  expect_error(options, error_code::invalid_argument,
               {"ignore column 'id' is not in the header", "columns: a, b, y"});
  options.ignore = {};
  options.categorical["colour"] = {};
  expect_error(options, error_code::invalid_argument, {"categorical column 'colour'"});
}

BOOST_AUTO_TEST_CASE(empty_file_and_header_only_file_are_refused) {
  dtrain::testing::temp_dir dir;
  expect_error(table(dir, "t.csv", ""), error_code::corrupt_data, {"empty file"});
  expect_error(table(dir, "u.csv", "\xEF\xBB\xBF\r\n\n"), error_code::corrupt_data,
               {"empty file"});
  expect_error(table(dir, "v.csv", "a,y\n"), error_code::corrupt_data, {"no data rows"});
}

BOOST_AUTO_TEST_CASE(open_quote_and_text_after_a_closing_quote_name_the_row) {
  dtrain::testing::temp_dir dir;
  expect_error(table(dir, "t.csv", "a,y\n1,0\n\"2,1\n3,0\n"), error_code::corrupt_data,
               {"row 3", "never closed"});
  expect_error(table(dir, "u.csv", "a,y\n1,0\n\"2\"x,1\n"), error_code::corrupt_data,
               {"row 3", "text after a closing quote"});
}

BOOST_AUTO_TEST_CASE(bad_class_labels_name_row_and_label) {
  dtrain::testing::temp_dir dir;
  expect_error(table(dir, "t.csv", "a,y\n1,0\n2,-1\n"), error_code::corrupt_data,
               {"row 3, column 'y'", "label '-1'"});
  expect_error(table(dir, "u.csv", "a,y\n1,0\n2,1.5\n"), error_code::corrupt_data,
               {"row 3, column 'y'", "label '1.5'", "classification: false"});
  auto options = table(dir, "v.csv", "a,y\n1,cat\n2,dog\n");
  options.class_names = {"cat"};
  expect_error(options, error_code::corrupt_data, {"row 3, column 'y'", "label 'dog'"});
}

BOOST_AUTO_TEST_CASE(options_that_cannot_hold_are_refused) {
  dtrain::testing::temp_dir dir;
  auto options = table(dir, "t.csv", "a,b,y\n1,2,0\n");
  options.missing = "median";
  expect_error(options, error_code::invalid_argument, {"median"});
  options.missing = "error";
  options.targets = {"a", "y"};
  expect_error(options, error_code::invalid_argument, {"exactly one target column"});
  options.targets = {"y"};
  options.ignore = {"y"};
  expect_error(options, error_code::invalid_argument, {"column 'y' cannot be both"});
  options.ignore = {"a", "b"};
  expect_error(options, error_code::invalid_argument, {"no feature column"});
  auto dup = table(dir, "d.csv", "a,a,y\n1,2,0\n");
  dup.ignore = {"a"};
  expect_error(dup, error_code::invalid_argument, {"'a' is ambiguous"});
}

// A table large enough (over 8 MiB) to be read in parallel parts: numbers,
// a categorical column, string labels and missing cells spread over all of
// it. `bad_row` (a 1-based line, 0: none) holds a word in a number column.
std::string large_table(int64_t rows, int64_t bad_row) {
  static const char* colors[] = {"red", "green", "blue", "NA"};
  static const char* kinds[] = {"dog", "cat", "emu"};
  std::string text = "id,a,b,c,d,e,f,g,h,i,j,k,l,color,kind\n";
  for (int64_t r = 0; r < rows; ++r) {
    text += std::to_string(r);
    for (int64_t c = 0; c < 12; ++c) {
      text += ',';
      if (r + 2 == bad_row && c == 5)
        text += "oops";
      else if ((r * 13 + c) % 97 != 0)
        text += std::to_string((r * 31 + c * 7) % 1000) + (c % 3 == 0 ? ".25" : "");
    }
    text += std::string(",") + colors[(r / 7) % 4] + "," + kinds[(r * 5 / 3) % 3] + "\n";
  }
  return text;
}

// Options reading large_table(150000, bad_row) written in `dir`.
csv_options large_options(const dtrain::testing::temp_dir& dir, int64_t bad_row) {
  auto options = table(dir, "big.csv", large_table(150000, bad_row));
  options.ignore = {"id"};
  options.categorical["color"] = {};
  options.missing = "mean";
  return options;
}

BOOST_AUTO_TEST_CASE(a_large_table_read_in_parallel_parts_equals_one_pass) {
  dtrain::testing::temp_dir dir;
  auto options = large_options(dir, 0);
  BOOST_TEST_REQUIRE(dtrain::testing::read_file(options.path).size() > (size_t{9} << 20));
  const int before = dtrain::blas_threads();
  dtrain::set_blas_threads(1);
  auto one = gather_all(*read_ok(options));
  dtrain::set_blas_threads(3);
  auto data = read_ok(options);
  auto parts = gather_all(*data);
  dtrain::set_blas_threads(before);
  BOOST_TEST(data->size() == 150000);
  BOOST_TEST(data->feature_count() == 12 + 3);
  BOOST_TEST(as_csv(*data).class_names() == (std::vector<std::string>{"cat", "dog", "emu"}));
  BOOST_TEST((one.x == parts.x));
  BOOST_TEST((one.y == parts.y));
  BOOST_TEST(parts.x[15] == 31.25f);    // row 1, column a: "31.25"
  BOOST_TEST(parts.y[149999] == 2.0f);  // (149999 * 5 / 3) % 3 = 2: "emu"
}

BOOST_AUTO_TEST_CASE(an_error_deep_in_a_large_table_names_its_row_in_parallel_too) {
  dtrain::testing::temp_dir dir;
  auto options = large_options(dir, 140001);
  const int before = dtrain::blas_threads();
  for (int threads : {1, 2, 3}) {
    dtrain::set_blas_threads(threads);
    expect_error(options, error_code::corrupt_data, {"row 140001, column 'f': 'oops'"});
  }
  dtrain::set_blas_threads(before);
}

BOOST_AUTO_TEST_CASE(missing_file_is_not_found_naming_the_path) {
  dtrain::testing::temp_dir dir;
  csv_options options;
  options.path = dir.file("absent.csv");
  expect_error(options, error_code::not_found, {});
}

BOOST_AUTO_TEST_SUITE_END()
