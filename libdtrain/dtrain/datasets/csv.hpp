#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dtrain/core/status.hpp"
#include "dtrain/data/dataset.hpp"

namespace dtrain::data {

/// How to read a table of delimited text (CSV, TSV) into samples. The
/// option names are the keys of an experiment's `data:` section.
///
/// Columns are named by the header row; without one (header = false) a
/// column's name is its 0-based index written as a number ("0", "3"), in
/// these options and in error messages alike.
struct csv_options {
  std::string path;
  /// The field separator; 0 picks '\t' for a path ending .tsv or .tab, ','
  /// otherwise.
  char delimiter = 0;
  /// The first row names the columns.
  bool header = true;
  /// Target column names; empty: the last column not in `ignore`.
  std::vector<std::string> targets;
  /// Columns dropped (an id column).
  std::vector<std::string> ignore;
  /// Categorical FEATURE columns, one-hot encoded in place (a column of K
  /// categories becomes K features, in the given order): name -> categories.
  /// An empty list means "the file's values, in sorted (byte) order". A
  /// value not in a given list is an error naming it.
  std::map<std::string, std::vector<std::string>> categorical;
  /// True: one target column of class labels. Non-numeric labels become
  /// their index in sorted (byte) order, or in `class_names` when given;
  /// integer labels are taken as they are, must be >= 0, and give
  /// class_count() = max + 1. False: every target column holds float
  /// regression values and class_count() is 0.
  bool classification = true;
  /// An optional fixed label list: a label is looked up by name, else an
  /// integer label in [0, class_names.size()) is taken as the index.
  std::vector<std::string> class_names;
  /// What an empty/NA cell of a feature column becomes: "error" (the read
  /// fails naming the cell), "mean" (the column's mean over the rows that
  /// have a value; 0 when none has), "zero". A missing categorical cell is
  /// all-zero one-hot under "mean" and "zero". A missing target is always
  /// an error.
  std::string missing = "error";
  /// The cell texts (after trimming spaces) that mean "no value". A value
  /// listed in a categorical column's category list is a category, not a
  /// missing value.
  std::vector<std::string> missing_markers = {"", "NA", "NaN", "nan", "?"};
};

/// Reads the whole table into memory and returns it as a dataset: features
/// are the feature columns in file order (categorical ones one-hot
/// expanded), as floats; targets are one float per sample (a class index)
/// under classification, else one float per target column. The returned
/// object is a csv_dataset (below), immutable, and safe to gather from any
/// number of threads.
///
/// The file is read in one go (its size in memory, plus the floats); the
/// text is RFC 4180-like: fields may be quoted ("a,b", "say ""hi"""; a
/// quoted field may span lines), rows end in LF or CRLF, a trailing newline
/// and a UTF-8 byte order mark are accepted, empty lines are skipped, and
/// spaces around a number are ignored. Blocks on file I/O; throws nothing.
///
/// Every error message starts with the path and names the row (1-based
/// line number of the row's start, as an editor shows it) and the column
/// where there is one:
///  - not_found / io_error: the file cannot be opened or read;
///  - invalid_argument: an unknown delimiter or `missing` mode, a target,
///    ignore or categorical column that is not in the header (the header is
///    listed), a column named twice in the header, a column given two roles,
///    classification with other than one target column, no feature column;
///  - corrupt_data: an empty file or no data rows, a row with another
///    field count than the header ("row 12 has 784 fields, the header has
///    785"), a quote left open or text after a closing quote, a cell that is
///    not a number, a missing value under "error", a category or label not
///    in its given list, a negative or fractional integer label.
result<std::shared_ptr<const dataset>> read_csv(const csv_options& options);

/// A table read by read_csv: a tensor_dataset plus what the columns meant.
/// Immutable; gather() is safe from several threads.
class csv_dataset final : public dataset {
public:
  csv_dataset(std::shared_ptr<tensor_dataset> rows, std::string name,
              std::vector<std::string> feature_names, std::vector<std::string> class_names,
              int64_t class_count);

  int64_t size() const override { return rows_->size(); }
  int64_t feature_count() const override { return rows_->feature_count(); }
  int64_t target_count() const override { return rows_->target_count(); }
  std::string name() const override { return name_; }
  int64_t class_count() const override { return class_count_; }
  status gather(const int64_t* indices, int64_t n, float* features,
                float* targets) const override {
    return rows_->gather(indices, n, features, targets);
  }

  /// One name per feature: the column's name, or "column=category" for a
  /// one-hot feature.
  const std::vector<std::string>& feature_names() const { return feature_names_; }
  /// The label of each class index for non-numeric labels (or the given
  /// class_names); empty for integer labels and regression.
  const std::vector<std::string>& class_names() const { return class_names_; }

private:
  std::shared_ptr<tensor_dataset> rows_;
  std::string name_;
  std::vector<std::string> feature_names_;
  std::vector<std::string> class_names_;
  int64_t class_count_;
};

} // namespace dtrain::data
