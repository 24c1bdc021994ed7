// The experiment file of `dtrain train`: the shipped examples parse, every
// mistake is reported with the file and the key path, Determined's spellings
// are accepted, and to_yaml reads back to the same experiment.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include <cstdio>
#include <string>
#include <tuple>

#include "dtrain/experiments/experiment.hpp"
#include "dtrain/tune/space.hpp"
#include "dtrain/tune/sweep.hpp"
#include "support/test_util.hpp"

#ifndef DTRAIN_SOURCE_DIR
#error "tests/CMakeLists.txt defines DTRAIN_SOURCE_DIR for dtrain-core-test"
#endif

namespace {

using dtrain::error_code;
using dtrain::result;
using dtrain::experiments::experiment;
using dtrain::experiments::load_experiment;
using dtrain::experiments::parse_experiment;
using dtrain::experiments::to_yaml;

const std::string source = "experiment.yaml";

// The smallest valid file, with `extra` appended (top-level YAML lines).
std::string minimal(const std::string& extra = "") {
  return "name: tiny\nglobal_batch_size: 8\n" + extra;
}

result<experiment> parse(const std::string& text) { return parse_experiment(text, source); }

// The error message of a parse that must fail (empty when it succeeded).
std::string error_of(const std::string& text) {
  auto parsed = parse(text);
  BOOST_TEST(!parsed.is_ok());
  if (parsed.is_ok())
    return "";
  BOOST_TEST((parsed.error().code() == error_code::invalid_argument));
  return parsed.error().message();
}

bool same(const experiment& a, const experiment& b) {
  auto fields = [](const experiment& e) {
    return std::tie(e.name, e.operator_name, e.hyperparameters, e.slots_per_trial, e.use_gpu,
                    e.backend, e.global_batch_size, e.epochs, e.aggregation_frequency,
                    e.average_training_metrics, e.gradient_compression, e.precision,
                    e.bucket_cap_mb, e.zero_stage, e.clip_grad_norm, e.checkpoint_dir,
                    e.checkpoint_keep, e.seed, e.max_failures, e.plugins);
  };
  return fields(a) == fields(b);
}

bool same_domain(const dtrain::tune::domain& a, const dtrain::tune::domain& b) {
  return std::tie(a.type, a.constant_value, a.low, a.high, a.base, a.q, a.choices, a.grid,
                  a.count) ==
         std::tie(b.type, b.constant_value, b.low, b.high, b.base, b.q, b.choices, b.grid, b.count);
}

// The search: its space, domain by domain, and the sweep settings.
bool same_search(const experiment& a, const experiment& b) {
  if (a.has_search != b.has_search || a.space.domains().size() != b.space.domains().size())
    return false;
  for (const auto& [name, d] : a.space.domains()) {
    auto it = b.space.domains().find(name);
    if (it == b.space.domains().end() || !same_domain(d, it->second))
      return false;
  }
  auto knobs = [](const dtrain::tune::sweep_config& c) {
    return std::tie(c.metric, c.direction, c.searcher, c.num_samples, c.max_concurrent_trials,
                    c.max_epochs, c.scheduler, c.asha.grace_period, c.asha.reduction_factor,
                    c.asha.keep_rule, c.asha.max_t, c.median.warmup_epochs,
                    c.median.min_completed, c.time_budget_seconds, c.has_stop_threshold,
                    c.stop_threshold, c.max_failed_trials, c.seed);
  };
  auto hyperband = [](const dtrain::tune::hyperband_options& o) {
    return std::tie(o.min_resource, o.max_resource, o.reduction_factor, o.study_name);
  };
  return knobs(a.sweep) == knobs(b.sweep) &&
         hyperband(a.sweep.hyperband) == hyperband(b.sweep.hyperband);
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

void write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  BOOST_TEST_REQUIRE(f != nullptr);
  BOOST_TEST_REQUIRE(std::fwrite(text.data(), 1, text.size(), f) == text.size());
  std::fclose(f);
}

} // namespace

// The file's suite: the YAML reading, and the search spaces read from it.
BOOST_AUTO_TEST_SUITE(experiment_yaml)

BOOST_AUTO_TEST_SUITE(reading)

// --- The shipped files ------------------------------------------------------

BOOST_AUTO_TEST_CASE(shipped_fashion_mnist_experiment_parses_with_its_values) {
  auto loaded = load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist.yaml");
  BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
  const experiment& e = *loaded;
  BOOST_TEST(e.name == "fashion-mnist-mlp");
  BOOST_TEST(e.operator_name == "mlp_classifier");
  BOOST_TEST(e.hyperparameters.size() == 6u);
  BOOST_TEST(e.hyperparameters.at("hidden") == "256,128,100");
  BOOST_TEST(e.hyperparameters.at("activation") == "relu");
  BOOST_TEST(e.hyperparameters.at("optimizer") == "adam");
  BOOST_TEST(e.hyperparameters.at("lr") == "0.001");
  BOOST_TEST(e.hyperparameters.at("schedule") == "cosine");
  BOOST_TEST(e.hyperparameters.at("epochs") == "15");
  BOOST_TEST(e.slots_per_trial == 2);
  BOOST_TEST(!e.use_gpu);
  BOOST_TEST(e.backend == "auto");
  BOOST_TEST(e.global_batch_size == 128);
  BOOST_TEST(e.epochs == 15);
  BOOST_TEST(e.aggregation_frequency == 1);
  BOOST_TEST(e.average_training_metrics);
  BOOST_TEST(e.gradient_compression == "none");
  BOOST_TEST(e.checkpoint_dir == "/tmp/dtrain-checkpoints/fashion-mnist");
  BOOST_TEST(e.checkpoint_keep == 1);
  BOOST_TEST(e.seed == 0u);
  BOOST_TEST(e.max_failures == 3);
}

BOOST_AUTO_TEST_CASE(shipped_fashion_mnist_cnn_experiment_parses_with_its_values) {
  auto loaded =
      load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist_cnn.yaml");
  BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
  const experiment& e = *loaded;
  BOOST_TEST(e.name == "fashion-mnist-cnn");
  BOOST_TEST(e.operator_name == "cnn_classifier");
  BOOST_TEST(e.hyperparameters.size() == 9u);
  BOOST_TEST(e.hyperparameters.at("conv") == "16,32");
  BOOST_TEST(e.hyperparameters.at("kernel") == "5");
  BOOST_TEST(e.hyperparameters.at("pool") == "2");
  BOOST_TEST(e.hyperparameters.at("hidden") == "128");
  BOOST_TEST(e.hyperparameters.at("lr") == "0.002");
  BOOST_TEST(e.hyperparameters.at("epochs") == "8");
  BOOST_TEST(e.slots_per_trial == 2);
  BOOST_TEST(e.global_batch_size == 128);
  BOOST_TEST(e.epochs == 8);
}

BOOST_AUTO_TEST_CASE(shipped_linear_regression_experiment_parses_with_its_values) {
  auto loaded =
      load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/linear_regression.yaml");
  BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
  BOOST_TEST(loaded->operator_name == "linear_regression");
  BOOST_TEST(loaded->global_batch_size == 32);
  BOOST_TEST(loaded->epochs == 8);
  BOOST_TEST(loaded->slots_per_trial == 2);
  BOOST_TEST(loaded->hyperparameters.at("milestones") == "3,6");
  BOOST_TEST(loaded->hyperparameters.at("gamma") == "0.1");
  BOOST_TEST(loaded->hyperparameters.at("lr") == "0.001");
  BOOST_TEST(loaded->hyperparameters.at("optimizer") == "adam");
}

// The checkpoint root is stored with the experiment and later removed by
// `dtrain experiments delete` from any directory: it is absolute once
// read, resolved against the file's directory, never the shell's.
BOOST_AUTO_TEST_CASE(a_relative_host_path_becomes_absolute_against_the_files_directory) {
  dtrain::testing::temp_dir dir;
  const std::string path = dir.file("exp.yaml");
  write_file(path, "name: p\noperator: my_op\nglobal_batch_size: 8\n"
                   "checkpoint_storage: {host_path: runs/../ckpt}\n");
  auto loaded = load_experiment(path);
  BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
  BOOST_TEST(loaded->checkpoint_dir == dir.file("ckpt"));
  write_file(path, "name: p\noperator: my_op\nglobal_batch_size: 8\n"
                   "checkpoint_storage: {host_path: /mnt/ckpt}\n");
  BOOST_TEST(load_experiment(path)->checkpoint_dir == "/mnt/ckpt");
}

BOOST_AUTO_TEST_CASE(plugins_are_a_list_of_paths_relative_to_the_file) {
  dtrain::testing::temp_dir dir;
  const std::string path = dir.file("exp.yaml");
  write_file(path, "name: p\noperator: my_op\nglobal_batch_size: 8\n"
                   "plugins: [build/libmy_ops.so, /opt/ops/libother.so]\n");
  auto loaded = load_experiment(path);
  BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
  BOOST_TEST(loaded->plugins ==
             (std::vector<std::string>{dir.file("build/libmy_ops.so"), "/opt/ops/libother.so"}));
  // As written when parsed from text; a single path is a list of one.
  auto one = parse("name: p\nglobal_batch_size: 8\nplugins: libmy_ops.so\n");
  BOOST_TEST_REQUIRE(one.is_ok(), one.error().to_string());
  BOOST_TEST(one->plugins == std::vector<std::string>{"libmy_ops.so"});
  // to_yaml writes them back.
  auto again = parse(to_yaml(*loaded));
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string());
  BOOST_TEST(same(*loaded, *again));
  const std::string bad = error_of("name: p\nglobal_batch_size: 8\nplugins: {a: b}\n");
  BOOST_TEST(bad.find("plugins: expected a list of plugin library paths") != std::string::npos, bad);
}

BOOST_AUTO_TEST_CASE(a_minimal_file_takes_the_documented_defaults) {
  auto parsed = parse(minimal());
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  experiment expected;
  expected.name = "tiny";
  expected.global_batch_size = 8;
  BOOST_TEST(same(*parsed, expected));
}

// --- Errors name the file and the key path ----------------------------------

BOOST_AUTO_TEST_CASE(an_unknown_nested_key_is_named_with_the_known_ones) {
  BOOST_TEST(error_of(minimal("optimizations:\n  aggregation_frequncy: 2\n")) ==
             "experiment.yaml: optimizations.aggregation_frequncy: unknown key (known: "
             "aggregation_frequency, average_training_metrics, bucket_cap_mb, "
             "clip_grad_norm, gradient_compression, precision, zero_stage)");
}

BOOST_AUTO_TEST_CASE(precision_defaults_to_fp32_and_reads_each_allowed_value) {
  auto plain = parse_experiment(minimal(""), "experiment.yaml");
  BOOST_TEST_REQUIRE(plain.is_ok(), plain.error().to_string());
  BOOST_TEST(plain->precision == "fp32");
  for (const char* p : {"fp32", "tf32", "bf16", "fp16"}) {
    auto e = parse_experiment(minimal(std::string("optimizations:\n  precision: ") + p + "\n"),
                              "experiment.yaml");
    BOOST_TEST_REQUIRE(e.is_ok(), e.error().to_string());
    BOOST_TEST(e->precision == p);
    auto again = parse_experiment(to_yaml(*e), "again.yaml");
    BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string());
    BOOST_TEST(again->precision == p);
  }
  // The default is not written, so older experiments keep their canonical YAML.
  BOOST_TEST(to_yaml(*plain).find("precision") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unknown_precision_names_the_key_and_the_allowed_values) {
  const std::string message = error_of(minimal("optimizations:\n  precision: fp8\n"));
  BOOST_TEST(message.find("optimizations.precision") != std::string::npos, message);
  BOOST_TEST(message.find("fp32, tf32, bf16, fp16") != std::string::npos, message);
  BOOST_TEST(message.find("fp8") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(bucket_cap_mb_is_read_written_only_when_set_and_checked) {
  auto plain = parse_experiment(minimal(""), "experiment.yaml");
  BOOST_TEST_REQUIRE(plain.is_ok(), plain.error().to_string());
  BOOST_TEST(plain->bucket_cap_mb == 0.0);  // the device's default
  BOOST_TEST(to_yaml(*plain).find("bucket_cap_mb") == std::string::npos);
  auto e = parse_experiment(minimal("optimizations:\n  bucket_cap_mb: 2.5\n"), "experiment.yaml");
  BOOST_TEST_REQUIRE(e.is_ok(), e.error().to_string());
  BOOST_TEST(e->bucket_cap_mb == 2.5);
  auto again = parse_experiment(to_yaml(*e), "again.yaml");
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string());
  BOOST_TEST(again->bucket_cap_mb == 2.5);
  for (const char* bad : {"-1", "2048", "0.000001", "big", ".nan"}) {
    const std::string message =
        error_of(minimal(std::string("optimizations:\n  bucket_cap_mb: ") + bad + "\n"));
    BOOST_TEST(message.find("optimizations.bucket_cap_mb") != std::string::npos, message);
  }
}

BOOST_AUTO_TEST_CASE(zero_stage_and_clip_grad_norm_are_read_written_only_when_set_and_checked) {
  auto plain = parse_experiment(minimal(""), "experiment.yaml");
  BOOST_TEST_REQUIRE(plain.is_ok(), plain.error().to_string());
  BOOST_TEST(plain->zero_stage == 0);
  BOOST_TEST(plain->clip_grad_norm == 0.0);
  BOOST_TEST(to_yaml(*plain).find("zero_stage") == std::string::npos);
  BOOST_TEST(to_yaml(*plain).find("clip_grad_norm") == std::string::npos);
  auto e = parse_experiment(minimal("optimizations:\n  zero_stage: 2\n  clip_grad_norm: 1.5\n"),
                            "experiment.yaml");
  BOOST_TEST_REQUIRE(e.is_ok(), e.error().to_string());
  BOOST_TEST(e->zero_stage == 2);
  BOOST_TEST(e->clip_grad_norm == 1.5);
  auto again = parse_experiment(to_yaml(*e), "again.yaml");
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string());
  BOOST_TEST(again->zero_stage == 2);
  BOOST_TEST(again->clip_grad_norm == 1.5);
  auto three = parse_experiment(minimal("optimizations:\n  zero_stage: 3\n"), "three.yaml");
  BOOST_TEST_REQUIRE(three.is_ok(), three.error().to_string());
  BOOST_TEST(three->zero_stage == 3);
  BOOST_TEST(error_of(minimal("optimizations:\n  zero_stage: 4\n"))
                 .find("optimizations.zero_stage must be 0, 1, 2 or 3, got 4") != std::string::npos);
  for (const char* bad : {"-1", "4", "two"})
    BOOST_TEST(error_of(minimal(std::string("optimizations:\n  zero_stage: ") + bad + "\n"))
                       .find("optimizations.zero_stage") != std::string::npos, bad);
  for (const char* bad : {"-0.5", ".nan", "big"})
    BOOST_TEST(error_of(minimal(std::string("optimizations:\n  clip_grad_norm: ") + bad + "\n"))
                       .find("optimizations.clip_grad_norm") != std::string::npos, bad);
}

BOOST_AUTO_TEST_CASE(min_checkpoint_period_reads_batches_epochs_or_seconds_and_round_trips) {
  auto plain = parse(minimal());
  BOOST_TEST_REQUIRE(plain.is_ok(), plain.error().to_string());
  BOOST_TEST(plain->checkpoint_every_steps == 0);
  BOOST_TEST(to_yaml(*plain).find("min_checkpoint_period") == std::string::npos);
  auto steps = parse(minimal("min_checkpoint_period:\n  batches: 500\n"));
  BOOST_TEST_REQUIRE(steps.is_ok(), steps.error().to_string());
  BOOST_TEST(steps->checkpoint_every_steps == 500);
  auto epochs = parse(minimal("min_checkpoint_period:\n  epochs: 2\n"));
  BOOST_TEST_REQUIRE(epochs.is_ok(), epochs.error().to_string());
  BOOST_TEST(epochs->checkpoint_every_epochs == 2);
  auto seconds = parse(minimal("min_checkpoint_period:\n  seconds: 90.5\n"));
  BOOST_TEST_REQUIRE(seconds.is_ok(), seconds.error().to_string());
  BOOST_TEST(seconds->checkpoint_every_seconds == 90.5);
  for (const auto* e : {&*steps, &*epochs, &*seconds}) {
    auto again = parse_experiment(to_yaml(*e), "again.yaml");
    BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string());
    BOOST_TEST(again->checkpoint_every_steps == e->checkpoint_every_steps);
    BOOST_TEST(again->checkpoint_every_epochs == e->checkpoint_every_epochs);
    BOOST_TEST(again->checkpoint_every_seconds == e->checkpoint_every_seconds);
  }
  BOOST_TEST(error_of(minimal("min_checkpoint_period:\n  records: 100\n")) ==
             "experiment.yaml: min_checkpoint_period.records: unknown key "
             "(known: batches, epochs, seconds)");
  std::string both = error_of(minimal("min_checkpoint_period:\n  batches: 5\n  epochs: 1\n"));
  BOOST_TEST(both.find("exactly one of batches, epochs and seconds") != std::string::npos, both);
  for (const char* bad : {"batches: 0", "epochs: -1", "seconds: 0", "seconds: .inf"}) {
    const std::string message =
        error_of(minimal(std::string("min_checkpoint_period:\n  ") + bad + "\n"));
    BOOST_TEST(message.find("min_checkpoint_period.") != std::string::npos, message);
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_top_level_key_is_named) {
  const std::string message = error_of(minimal("epoch: 3\n"));
  BOOST_TEST(message.rfind("experiment.yaml: epoch: unknown key (known: ", 0) == 0, message);
  BOOST_TEST(message.find("epochs") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(an_unknown_key_two_levels_down_is_named) {
  BOOST_TEST(error_of(minimal("searcher:\n  max_length:\n    batches: 100\n")) ==
             "experiment.yaml: searcher.max_length.batches: unknown key (known: epochs)");
}

BOOST_AUTO_TEST_CASE(a_text_where_an_integer_belongs_is_a_type_error) {
  BOOST_TEST(error_of(minimal("resources:\n  slots_per_trial: two\n")) ==
             "experiment.yaml: resources.slots_per_trial: expected an integer, got 'two'");
  BOOST_TEST(error_of(minimal("epochs: 1.5\n")) ==
             "experiment.yaml: epochs: expected an integer, got '1.5'");
}

BOOST_AUTO_TEST_CASE(a_list_or_map_where_a_scalar_belongs_is_a_type_error) {
  BOOST_TEST(error_of(minimal("resources:\n  use_gpu: [true]\n")) ==
             "experiment.yaml: resources.use_gpu: expected true or false, got a list");
  BOOST_TEST(error_of("name: {a: 1}\nglobal_batch_size: 8\n") ==
             "experiment.yaml: name: expected a non-empty string, got a map");
  BOOST_TEST(error_of(minimal("resources: 2\n")) ==
             "experiment.yaml: resources: expected a map of settings, got '2'");
}

BOOST_AUTO_TEST_CASE(a_bad_boolean_is_a_type_error) {
  BOOST_TEST(error_of(minimal("optimizations:\n  average_training_metrics: maybe\n")) ==
             "experiment.yaml: optimizations.average_training_metrics: expected true or "
             "false, got 'maybe'");
}

BOOST_AUTO_TEST_CASE(out_of_range_values_name_the_bound) {
  BOOST_TEST(error_of(minimal("resources:\n  slots_per_trial: 0\n")) ==
             "experiment.yaml: resources.slots_per_trial: must be at least 1, got 0");
  BOOST_TEST(error_of("name: x\nglobal_batch_size: -4\n") ==
             "experiment.yaml: global_batch_size: must be at least 1, got -4");
  BOOST_TEST(error_of(minimal("optimizations:\n  aggregation_frequency: 3000000000\n")) ==
             "experiment.yaml: optimizations.aggregation_frequency: must be at most "
             "2147483647, got 3000000000");
  BOOST_TEST(error_of(minimal("checkpoint_storage:\n  save_trial_latest: -1\n")) ==
             "experiment.yaml: checkpoint_storage.save_trial_latest: must be at least 0, got -1");
  BOOST_TEST(error_of(minimal("max_restarts: -1\n")) ==
             "experiment.yaml: max_restarts: must be at least 0, got -1");
  BOOST_TEST(error_of(minimal("seed: -1\n")) == "experiment.yaml: seed: must be at least 0, got -1");
  BOOST_TEST(error_of(minimal("epochs: 99999999999999999999\n")) ==
             "experiment.yaml: epochs: 99999999999999999999 does not fit in 64 bits");
}

BOOST_AUTO_TEST_CASE(a_value_outside_its_choices_lists_them) {
  BOOST_TEST(error_of(minimal("resources:\n  backend: mpi\n")) ==
             "experiment.yaml: resources.backend: expected one of auto, shm, gloo, "
             "hierarchical, nccl, got 'mpi'");
  BOOST_TEST(error_of(minimal("optimizations:\n  gradient_compression: int8\n")) ==
             "experiment.yaml: optimizations.gradient_compression: expected none, fp16, bf16 "
             "or a boolean, got 'int8'");
}

BOOST_AUTO_TEST_CASE(missing_required_keys_are_named) {
  BOOST_TEST(error_of("global_batch_size: 8\n") == "experiment.yaml: name: missing required key");
  BOOST_TEST(error_of("name: x\n") ==
             "experiment.yaml: global_batch_size: missing required key");
  BOOST_TEST(error_of("") == "experiment.yaml: name: missing required key");
  BOOST_TEST(error_of("name:\nglobal_batch_size: 8\n") ==
             "experiment.yaml: name: expected a non-empty string, got nothing");
}

BOOST_AUTO_TEST_CASE(a_yaml_syntax_error_gives_line_and_column) {
  const std::string message = error_of("name: x\nglobal_batch_size: 8\nresources: [1, 2\n");
  BOOST_TEST(message.rfind("experiment.yaml:", 0) == 0, message);
  BOOST_TEST(message.find("YAML syntax error") != std::string::npos, message);
  // "experiment.yaml:LINE:COLUMN: ...", both 1-based and past the first line.
  const std::string position = message.substr(source.size() + 1);
  BOOST_TEST(std::stoi(position) >= 3, message);
  BOOST_TEST(position.find(':') != std::string::npos, message);
  BOOST_TEST(std::stoi(position.substr(position.find(':') + 1)) >= 1, message);
}

BOOST_AUTO_TEST_CASE(a_tab_indented_file_is_a_syntax_error_not_an_exception) {
  const std::string message = error_of("name: x\nresources:\n\tslots_per_trial: 2\n");
  BOOST_TEST(message.find("YAML syntax error") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(a_top_level_that_is_not_a_map_is_an_error) {
  BOOST_TEST(error_of("- name: x\n") ==
             "experiment.yaml: the top level: expected a map of settings, got a list");
}

BOOST_AUTO_TEST_CASE(a_duplicate_key_is_an_error) {
  BOOST_TEST(error_of(minimal("epochs: 2\nepochs: 3\n")) ==
             "experiment.yaml: epochs: duplicate key");
}

BOOST_AUTO_TEST_CASE(several_yaml_documents_are_an_error) {
  BOOST_TEST(error_of(minimal("---\nname: other\n")) ==
             "experiment.yaml: expected one YAML document, got 2");
}

// Found by fuzz/experiment_yaml: yaml-cpp 0.7's LoadAll never ends on a
// stream that a ',' starts (each round another empty document, until the
// memory ran out); now a syntax error naming the place.
BOOST_AUTO_TEST_CASE(a_document_that_cannot_start_is_a_syntax_error_not_a_hang) {
  BOOST_TEST(error_of(",  ") ==
             "experiment.yaml:1:1: YAML syntax error: unexpected ',': no document starts with it");
  const std::string later = error_of(minimal("---\n, x\n"));
  BOOST_TEST(later.find("YAML syntax error: unexpected ','") != std::string::npos, later);
}

// Found by fuzz/experiment_yaml: yaml-cpp kept a carriage return without a
// line feed in a scalar and to_yaml wrote it back unquoted: "name: \r "
// was accepted, and its canonical YAML was refused ("name: expected a
// non-empty string"). YAML allows no control character but tab and line
// breaks: refused with the place; CRLF line ends still read.
BOOST_AUTO_TEST_CASE(control_characters_are_a_syntax_error_naming_the_place) {
  BOOST_TEST(error_of("name: \r \nglobal_batch_size: 1\n") ==
             "experiment.yaml:1:7: YAML syntax error: control character U+000D (a carriage "
             "return without a line feed): YAML allows none but tab and line breaks");
  const std::string bell = error_of(minimal("hyperparameters:\n  x: a\ab\n"));
  BOOST_TEST(bell.find("experiment.yaml:4:7: YAML syntax error: control character U+0007") == 0,
             bell);
  // Found by fuzz/experiment_yaml too: a key with a byte that is not
  // UTF-8 came back from to_yaml as U+FFFD, another key.
  BOOST_TEST(error_of("name: f\nhyperparameters:\n  \xff\te: 1\n") ==
             "experiment.yaml:3:3: YAML syntax error: bytes that are not UTF-8 (YAML text is "
             "Unicode)");
  auto crlf = parse("name: tiny\r\nglobal_batch_size: 8\r\n");
  BOOST_REQUIRE_MESSAGE(crlf.is_ok(), crlf.error().to_string());
  BOOST_TEST(crlf->name == "tiny");
  auto again = parse(to_yaml(*crlf));
  BOOST_REQUIRE(again.is_ok());
  BOOST_TEST(to_yaml(*again) == to_yaml(*crlf));
}

BOOST_AUTO_TEST_CASE(a_nested_map_hyperparameter_is_an_error_naming_its_path) {
  BOOST_TEST(error_of(minimal("hyperparameters:\n  lr:\n    kind: const\n    val: 0.1\n")) ==
             "experiment.yaml: hyperparameters.lr: expected a scalar, a list of scalars or a "
             "typed hyperparameter (type:), got a map");
  BOOST_TEST(error_of(minimal("hyperparameters:\n  hidden: [8, [4, 2]]\n")) ==
             "experiment.yaml: hyperparameters.hidden[1]: expected a scalar, got a list");
}

BOOST_AUTO_TEST_CASE(a_missing_file_is_not_found_and_named) {
  dtrain::testing::temp_dir dir;
  const std::string path = dir.file("absent.yaml");
  auto loaded = load_experiment(path);
  BOOST_TEST_REQUIRE(!loaded.is_ok());
  BOOST_TEST((loaded.error().code() == error_code::not_found));
  BOOST_TEST(loaded.error().message().find(path) != std::string::npos, loaded.error().message());
}

BOOST_AUTO_TEST_CASE(errors_from_a_loaded_file_name_its_path) {
  dtrain::testing::temp_dir dir;
  const std::string path = dir.file("typo.yaml");
  write_file(path, minimal("resources:\n  slot_per_trial: 2\n"));
  auto loaded = load_experiment(path);
  BOOST_TEST_REQUIRE(!loaded.is_ok());
  BOOST_TEST(loaded.error().message().rfind(path + ": resources.slot_per_trial: unknown key", 0) ==
                 0,
             loaded.error().message());
}

BOOST_AUTO_TEST_CASE(a_global_batch_smaller_than_the_slots_is_an_error) {
  BOOST_TEST(error_of("name: x\nglobal_batch_size: 2\nresources:\n  slots_per_trial: 4\n") ==
             "experiment.yaml: global_batch_size: 2 is less than resources.slots_per_trial (4): "
             "every slot needs at least one sample per batch");
}

BOOST_AUTO_TEST_CASE(the_nccl_backend_needs_use_gpu) {
  BOOST_TEST(error_of(minimal("resources:\n  backend: nccl\n")) ==
             "experiment.yaml: resources.backend: nccl needs resources.use_gpu: true");
  BOOST_TEST(parse(minimal("resources:\n  backend: nccl\n  use_gpu: true\n")).is_ok());
}

// --- Determined's spellings -------------------------------------------------

BOOST_AUTO_TEST_CASE(determined_searcher_max_length_sets_the_epochs) {
  auto parsed = parse(minimal(
      "searcher:\n  name: single\n  metric: validation_loss\n  smaller_is_better: true\n"
      "  max_length:\n    epochs: 7\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->epochs == 7);
  BOOST_TEST(error_of(minimal("searcher:\n  name: pbt\n")) ==
             "experiment.yaml: searcher.name: expected one of single, grid, random, asha, "
             "adaptive_asha, tpe, nsga2, got 'pbt'");
}

BOOST_AUTO_TEST_CASE(epochs_spelled_both_ways_must_agree) {
  BOOST_TEST(parse(minimal("epochs: 4\nsearcher:\n  max_length:\n    epochs: 4\n")).is_ok());
  BOOST_TEST(error_of(minimal("epochs: 4\nsearcher:\n  max_length:\n    epochs: 5\n")) ==
             "experiment.yaml: epochs: 4 contradicts searcher.max_length.epochs: 5");
}

BOOST_AUTO_TEST_CASE(determined_experiment_seed_sets_the_seed) {
  auto parsed = parse(minimal("reproducibility:\n  experiment_seed: 18446744073709551615\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->seed == 18446744073709551615ull);
  BOOST_TEST(parse(minimal("seed: 42\n"))->seed == 42u);
  BOOST_TEST(error_of(minimal("seed: 1\nreproducibility:\n  experiment_seed: 2\n")) ==
             "experiment.yaml: seed: 1 contradicts reproducibility.experiment_seed: 2");
}

BOOST_AUTO_TEST_CASE(determined_max_restarts_and_ray_max_failures_set_the_failure_budget) {
  BOOST_TEST(parse(minimal("max_restarts: 5\n"))->max_failures == 5);
  BOOST_TEST(parse(minimal("max_failures: 0\n"))->max_failures == 0);
  BOOST_TEST(error_of(minimal("max_restarts: 1\nmax_failures: 2\n")) ==
             "experiment.yaml: max_restarts: 1 contradicts max_failures: 2");
}

BOOST_AUTO_TEST_CASE(determined_boolean_gradient_compression_means_fp16_or_none) {
  BOOST_TEST(parse(minimal("optimizations:\n  gradient_compression: true\n"))
                 ->gradient_compression == "fp16");
  BOOST_TEST(parse(minimal("optimizations:\n  gradient_compression: false\n"))
                 ->gradient_compression == "none");
  BOOST_TEST(parse(minimal("optimizations:\n  gradient_compression: bf16\n"))
                 ->gradient_compression == "bf16");
}

BOOST_AUTO_TEST_CASE(determined_shared_fs_checkpoint_storage_is_accepted) {
  auto parsed = parse(minimal(
      "checkpoint_storage:\n  type: shared_fs\n  host_path: /mnt/ckpt\n  save_trial_latest: 0\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->checkpoint_dir == "/mnt/ckpt");
  BOOST_TEST(parsed->checkpoint_keep == 0);
  BOOST_TEST(error_of(minimal("checkpoint_storage:\n  type: s3\n")) ==
             "experiment.yaml: checkpoint_storage.type: expected one of shared_fs, got 's3'");
}

// --- Writing ------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(to_yaml_round_trips_the_shipped_experiment) {
  auto loaded = load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist.yaml");
  BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
  const std::string text = to_yaml(*loaded);
  auto again = parse(text);
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + text);
  BOOST_TEST(same(*again, *loaded), text);
  BOOST_TEST(text.find("hidden: [256, 128, 100]") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(to_yaml_round_trips_every_field_and_awkward_text) {
  experiment e;
  e.name = "name: with # and 'quotes'";
  e.operator_name = "linear_regression";
  e.hyperparameters = {{"empty", ""},        {"null_text", "null"}, {"tilde", "~"},
                       {"flag", "true"},     {"list", "a,,b"},      {"colon", "a: b"},
                       {"spaced", " pad "}, {"trailing", "x,"}};
  e.slots_per_trial = 4;
  e.use_gpu = true;
  e.backend = "nccl";
  e.global_batch_size = 1024;
  e.epochs = 30;
  e.aggregation_frequency = 4;
  e.average_training_metrics = false;
  e.gradient_compression = "bf16";
  e.checkpoint_dir = "/tmp/a dir/with: colon";
  e.checkpoint_keep = 0;
  e.seed = 18446744073709551615ull;
  e.max_failures = 0;
  const std::string text = to_yaml(e);
  auto again = parse(text);
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + text);
  BOOST_TEST(same(*again, e), text);
  BOOST_TEST(to_yaml(*again) == text);
}

BOOST_AUTO_TEST_CASE(to_yaml_round_trips_the_defaults_and_no_hyperparameters) {
  experiment e;
  e.name = "defaults";
  const std::string text = to_yaml(e);
  auto again = parse(text);
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + text);
  BOOST_TEST(same(*again, e), text);
}

// --- Hyperparameter searches ------------------------------------------------

BOOST_AUTO_TEST_CASE(a_typed_search_space_parses_to_the_right_domains) {
  using kind = dtrain::tune::domain::kind;
  auto parsed = parse(minimal(
      "hyperparameters:\n"
      "  width: {type: int, minval: 16, maxval: 256, q: 16}\n"
      "  dropout: {type: double, minval: 0.0, maxval: 0.5}\n"
      "  lr: {type: log, minval: -4, maxval: -1}\n"
      "  hidden: {type: categorical, vals: [[256, 128], [64], '7']}\n"
      "  act: {type: const, val: relu}\n"
      "  schedule: cosine\n"
      "searcher:\n  name: adaptive_asha\n  max_trials: 16\n  divisor: 3\n  grace_period: 2\n"
      "epochs: 9\nseed: 5\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  const experiment& e = *parsed;
  BOOST_TEST(e.has_search);
  BOOST_TEST(dtrain::experiments::searcher_name(e) == "asha");
  BOOST_TEST((e.hyperparameters == std::map<std::string, std::string>{{"act", "relu"},
                                                                       {"schedule", "cosine"}}));
  const auto& d = e.space.domains();
  BOOST_TEST_REQUIRE(d.size() == 4u);
  BOOST_TEST((d.at("width").type == kind::integer));
  BOOST_TEST(d.at("width").low == 16);
  BOOST_TEST(d.at("width").high == 256);
  BOOST_TEST(d.at("width").q == 16);
  BOOST_TEST((d.at("dropout").type == kind::uniform));
  BOOST_TEST(d.at("dropout").high == 0.5);
  BOOST_TEST((d.at("lr").type == kind::log_uniform));
  BOOST_TEST((d.at("hidden").type == kind::choice));
  BOOST_TEST(!d.at("hidden").grid);
  BOOST_TEST((d.at("hidden").choices ==
              std::vector<dtrain::tune::value>{std::string("256,128"), std::string("64"),
                                               std::string("7")}));  // a list, and quoted, stay text
  BOOST_TEST(e.sweep.num_samples == 16);
  BOOST_TEST(e.sweep.scheduler == "asha");
  BOOST_TEST(e.sweep.searcher == "random");
  BOOST_TEST(e.sweep.asha.reduction_factor == 3);
  BOOST_TEST(e.sweep.asha.grace_period == 2);
  BOOST_TEST(e.sweep.max_epochs == 9);
  BOOST_TEST(e.sweep.seed == 5u);
  BOOST_TEST((e.sweep.direction == dtrain::tune::mode::max));  // an accuracy: larger is better
  BOOST_TEST(e.space.validate().is_ok());
}

BOOST_AUTO_TEST_CASE(determined_log_exponents_become_a_range_of_values) {
  auto parsed = parse(minimal(
      "hyperparameters:\n  lr: {type: log, minval: -4, maxval: -2}\n"
      "  step: {type: log, base: 2, minval: 1, maxval: 5, q: 2}\n"
      "searcher:\n  name: random\n  max_trials: 3\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  const auto& lr = parsed->space.domains().at("lr");
  BOOST_TEST(lr.low == 1e-4);
  BOOST_TEST(lr.high == 1e-2);
  BOOST_TEST(lr.base == 10);
  const auto& step = parsed->space.domains().at("step");
  BOOST_TEST(step.low == 2);
  BOOST_TEST(step.high == 32);
  BOOST_TEST(step.base == 2);
  BOOST_TEST(step.q == 2);
  BOOST_TEST(parsed->sweep.scheduler == "fifo");
}

BOOST_AUTO_TEST_CASE(a_grid_enumerates_counts_and_categoricals) {
  auto parsed = parse(minimal(
      "hyperparameters:\n  lr: {type: log, minval: -4, maxval: -2, count: 3}\n"
      "  layers: {type: int, minval: 1, maxval: 4, count: 2}\n"
      "  opt: {type: categorical, vals: [adam, sgd]}\n"
      "searcher:\n  name: grid\n  num_samples: 2\n  metric: validation_loss\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->space.grid_size() == 12);
  BOOST_TEST(parsed->space.domains().at("opt").grid);
  BOOST_TEST(parsed->space.domains().at("lr").count == 3);
  BOOST_TEST(parsed->sweep.searcher == "grid");
  BOOST_TEST(parsed->sweep.num_samples == 2);
  BOOST_TEST((parsed->sweep.direction == dtrain::tune::mode::min));  // a loss: smaller is better
}

BOOST_AUTO_TEST_CASE(a_grid_range_without_count_is_an_error_naming_the_count_key) {
  const std::string message = error_of(minimal(
      "hyperparameters:\n  lr: {type: double, minval: 0.1, maxval: 0.2}\n"
      "searcher:\n  name: grid\n"));
  BOOST_TEST(starts_with(message, "experiment.yaml: hyperparameters.lr.count: missing required key"),
             message);
}

BOOST_AUTO_TEST_CASE(a_count_outside_the_grid_searcher_is_an_error_naming_it) {
  BOOST_TEST(error_of(minimal("hyperparameters:\n  lr: {type: double, minval: 0.1, maxval: 0.2, "
                              "count: 3}\nsearcher:\n  name: random\n  max_trials: 4\n")) ==
             "experiment.yaml: hyperparameters.lr.count: count only applies to the grid searcher");
}

BOOST_AUTO_TEST_CASE(an_unknown_searcher_key_is_named) {
  const std::string message =
      error_of(minimal("searcher:\n  name: asha\n  max_trials: 4\n  divisr: 3\n"));
  BOOST_TEST(starts_with(message, "experiment.yaml: searcher.divisr: unknown key (known: "),
             message);
  BOOST_TEST(message.find("divisor") != std::string::npos, message);
}

BOOST_AUTO_TEST_CASE(a_typed_hyperparameter_without_a_searching_searcher_is_refused) {
  for (const std::string searcher : {"", "searcher:\n  name: single\n"}) {
    const std::string message =
        error_of(minimal("hyperparameters:\n  lr: {type: log, minval: -4, maxval: -1}\n" +
                         searcher));
    BOOST_TEST(starts_with(message, "experiment.yaml: hyperparameters.lr: a log hyperparameter"),
               message);
    BOOST_TEST(message.find("dtrain tune") != std::string::npos, message);
  }
  // A const is a constant, whatever the searcher.
  auto parsed = parse(minimal("hyperparameters:\n  lr: {type: const, val: 0.1}\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->hyperparameters.at("lr") == "0.1");
  BOOST_TEST(!parsed->has_search);
}

BOOST_AUTO_TEST_CASE(malformed_searches_are_errors_naming_the_key) {
  const std::string metric =
      error_of(minimal("searcher:\n  name: random\n  max_trials: 2\n  metric: val-acc\n"));
  BOOST_TEST(starts_with(metric, "experiment.yaml: searcher.metric: 'val-acc'"), metric);
  BOOST_TEST(metric.find("validation_accuracy") != std::string::npos, metric);
  BOOST_TEST(starts_with(error_of(minimal("searcher:\n  name: random\n")),
                         "experiment.yaml: searcher.max_trials: missing required key"));
  BOOST_TEST(starts_with(error_of(minimal("searcher:\n  name: single\n  max_trials: 2\n")),
                         "experiment.yaml: searcher.max_trials: only a searcher that searches"));
  BOOST_TEST(error_of(minimal("searcher:\n  name: asha\n  max_trials: 2\n  divisor: 1\n")) ==
             "experiment.yaml: searcher.divisor: must be at least 2, got 1");
  BOOST_TEST(error_of(minimal("hyperparameters:\n  lr: {type: double, minval: 2, maxval: 1}\n"
                              "searcher:\n  name: random\n  max_trials: 2\n")) ==
             "experiment.yaml: hyperparameters.lr: minval 2 is more than maxval 1");
  BOOST_TEST(starts_with(error_of(minimal("hyperparameters:\n  lr: {type: categorical, vals: []}\n"
                                          "searcher:\n  name: random\n  max_trials: 2\n")),
                         "experiment.yaml: hyperparameters.lr.vals: expected a non-empty list"));
  BOOST_TEST(starts_with(error_of(minimal("hyperparameters:\n  lr: {type: int, minval: 1}\n"
                                          "searcher:\n  name: random\n  max_trials: 2\n")),
                         "experiment.yaml: hyperparameters.lr.maxval: missing required key"));
}

// A hyperband search over 9-epoch trials, with `knobs` under searcher.
std::string hyperband_file(const std::string& knobs) {
  return minimal("hyperparameters:\n  lr: {type: log, minval: -4, maxval: -1}\n"
                 "searcher:\n  name: random\n  max_trials: 30\n  scheduler: hyperband\n" +
                 knobs + "epochs: 9\n");
}

BOOST_AUTO_TEST_CASE(hyperband_reads_its_knobs_and_round_trips) {
  auto parsed = parse(hyperband_file("  divisor: 4\n  min_resource: 2\n  max_resource: 32\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  const dtrain::tune::sweep_config& c = parsed->sweep;
  BOOST_TEST(c.scheduler == "hyperband");
  BOOST_TEST(c.hyperband.reduction_factor == 4);
  BOOST_TEST(c.hyperband.min_resource == 2);
  BOOST_TEST(c.hyperband.max_resource == 32);
  BOOST_TEST(c.hyperband.study_name == "tiny");  // the experiment's name
  BOOST_TEST(c.asha.reduction_factor == dtrain::tune::asha_options{}.reduction_factor);
  BOOST_TEST(c.asha.grace_period == 1);  // asha's knobs stay untouched
  auto knobs = [](const dtrain::tune::hyperband_options& o) {
    return std::tie(o.reduction_factor, o.min_resource, o.max_resource, o.study_name);
  };
  for (const std::string extra : {"  divisor: 4\n  min_resource: 2\n  max_resource: 32\n",
                                  "  grace_period: 3\n  max_resource: auto\n", ""}) {
    auto first = parse(hyperband_file(extra));
    BOOST_TEST_REQUIRE(first.is_ok(), first.error().to_string());
    const std::string text = to_yaml(*first);
    auto again = parse(text);
    BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + text);
    BOOST_TEST((knobs(again->sweep.hyperband) == knobs(first->sweep.hyperband)), text);
    BOOST_TEST(to_yaml(*again) == text);
    BOOST_TEST(text.find("rule:") == std::string::npos, text);
  }
}

BOOST_AUTO_TEST_CASE(hyperband_defaults_to_rf_3_and_the_experiments_epochs) {
  auto parsed = parse(hyperband_file(""));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->sweep.hyperband.reduction_factor == 3);
  BOOST_TEST(parsed->sweep.hyperband.min_resource == 1);
  auto s = dtrain::tune::make_scheduler(parsed->sweep);
  BOOST_TEST_REQUIRE(s.is_ok(), s.error().to_string());
  const std::string d = (*s)->describe();
  BOOST_TEST(d.find("max_resource 9, 3 brackets") != std::string::npos, d);
  BOOST_TEST(d.find("crc32(\"tiny_<trial number>\")") != std::string::npos, d);
  auto automatic = parse(hyperband_file("  max_resource: auto\n"));
  BOOST_TEST_REQUIRE(automatic.is_ok(), automatic.error().to_string());
  BOOST_TEST(automatic->sweep.hyperband.max_resource ==
             dtrain::tune::hyperband_options::auto_max_resource);
}

BOOST_AUTO_TEST_CASE(the_shipped_hyperband_experiment_makes_three_brackets) {
  auto loaded =
      load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist_hyperband.yaml");
  BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
  auto s = dtrain::tune::make_scheduler(loaded->sweep, loaded->space);
  BOOST_TEST_REQUIRE(s.is_ok(), s.error().to_string());
  const std::string d = (*s)->describe();
  BOOST_TEST(d.find("max_resource 9, 3 brackets: bracket 0 rungs at epochs 1, 3, 9 (9 of 17") !=
                 std::string::npos, d);
  BOOST_TEST(d.find("crc32(\"fashion-mnist-hyperband_<trial number>\")") != std::string::npos, d);
}

BOOST_AUTO_TEST_CASE(wrong_hyperband_keys_are_errors_naming_the_key) {
  BOOST_TEST(error_of(minimal("searcher:\n  name: asha\n  max_trials: 2\n  max_resource: 5\n")) ==
             "experiment.yaml: searcher.max_resource: only scheduler: hyperband uses it (the "
             "scheduler is asha)");
  BOOST_TEST(starts_with(error_of(minimal("searcher:\n  name: random\n  max_trials: 2\n"
                                          "  scheduler: median\n  min_resource: 2\n")),
                         "experiment.yaml: searcher.min_resource: only scheduler: hyperband"));
  BOOST_TEST(starts_with(error_of(hyperband_file("  rule: top_k\n")),
                         "experiment.yaml: searcher.rule: only scheduler: asha uses it"));
  BOOST_TEST(starts_with(error_of(hyperband_file("  max_resource: lots\n")),
                         "experiment.yaml: searcher.max_resource: expected an integer or auto"));
  BOOST_TEST(error_of(hyperband_file("  max_resource: 0\n")) ==
             "experiment.yaml: searcher.max_resource: must be at least 1, got 0");
  BOOST_TEST(error_of(hyperband_file("  divisor: 1\n")) ==
             "experiment.yaml: searcher.divisor: must be at least 2, got 1");
  BOOST_TEST(error_of(hyperband_file("  grace_period: 2\n  min_resource: 3\n")) ==
             "experiment.yaml: searcher.grace_period: 2 contradicts searcher.min_resource: 3");
  // Across keys: the first rung past the last epoch (max_resource defaults to it).
  const std::string late = error_of(hyperband_file("  min_resource: 10\n"));
  BOOST_TEST(starts_with(late, "experiment.yaml: searcher: hyperband.max_resource: must be at "
                               "least min_resource 10"), late);
}

BOOST_AUTO_TEST_CASE(shipped_search_experiments_parse_with_their_spaces) {
  using kind = dtrain::tune::domain::kind;
  auto asha =
      load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist_asha.yaml");
  BOOST_TEST_REQUIRE(asha.is_ok(), asha.error().to_string());
  BOOST_TEST((asha->space.varying() ==
              std::vector<std::string>{"dropout", "hidden", "lr", "optimizer"}));
  BOOST_TEST((asha->space.domains().at("lr").type == kind::log_uniform));
  BOOST_TEST(asha->space.domains().at("lr").low == std::pow(10.0, -3.7),
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST((asha->space.domains().at("hidden").type == kind::choice));
  BOOST_TEST(asha->space.domains().at("hidden").choices.size() == 4u);
  BOOST_TEST(asha->sweep.num_samples == 16);
  BOOST_TEST(asha->sweep.scheduler == "asha");
  BOOST_TEST(asha->sweep.max_concurrent_trials == 2);
  BOOST_TEST(asha->sweep.max_epochs == 15);
  BOOST_TEST(asha->hyperparameters.at("epochs") == "15");
  BOOST_TEST(asha->slots_per_trial == 1);
  BOOST_TEST(dtrain::tune::make_searcher(asha->space, asha->sweep)->total() == 16);

  auto grid =
      load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/fashion_mnist_grid.yaml");
  BOOST_TEST_REQUIRE(grid.is_ok(), grid.error().to_string());
  BOOST_TEST((grid->space.varying() == std::vector<std::string>{"lr", "optimizer"}));
  BOOST_TEST(grid->space.grid_size() == 6);
  BOOST_TEST(grid->sweep.searcher == "grid");
  BOOST_TEST(dtrain::tune::make_searcher(grid->space, grid->sweep)->total() == 6);
}

BOOST_AUTO_TEST_CASE(to_yaml_round_trips_searches) {
  for (const char* file : {"/experiments/fashion_mnist_asha.yaml",
                           "/experiments/fashion_mnist_grid.yaml",
                           "/experiments/fashion_mnist_hyperband.yaml"}) {
    auto loaded = load_experiment(std::string(DTRAIN_SOURCE_DIR) + file);
    BOOST_TEST_REQUIRE(loaded.is_ok(), loaded.error().to_string());
    const std::string text = to_yaml(*loaded);
    auto again = parse(text);
    BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + text);
    BOOST_TEST(same(*again, *loaded), text);
    BOOST_TEST(same_search(*again, *loaded), text);
  }
  auto awkward = parse(minimal(
      "hyperparameters:\n  lr: {type: log, base: 3, minval: -2.5, maxval: 0.7, q: 0.001}\n"
      "  w: {type: int, minval: -3, maxval: 9, q: 3}\n"
      "  c: {type: categorical, vals: ['1', '2.5', 'true', 7, 0.5, true, '', 'a,b']}\n"
      "searcher:\n  name: random\n  max_trials: 3\n  scheduler: median\n  rule: percentile\n"
      "  stop_threshold: 0.25\n  time_budget_seconds: 60\n  max_failed_trials: 2\n"
      "  smaller_is_better: true\n"));
  BOOST_TEST_REQUIRE(awkward.is_ok(), awkward.error().to_string());
  const std::string text = to_yaml(*awkward);
  auto again = parse(text);
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + text);
  BOOST_TEST(same_search(*again, *awkward), text);
  BOOST_TEST(to_yaml(*again) == text);
}

BOOST_AUTO_TEST_CASE(the_tpe_searcher_reads_its_knobs_and_round_trips) {
  const std::string space = "hyperparameters:\n  lr: {type: log, minval: -4, maxval: -1}\n";
  auto parsed = parse(minimal(space + "searcher:\n  name: tpe\n  max_trials: 30\n"
                                      "  startup_trials: 5\n  ei_candidates: 12\n"
                                      "  metric: validation_loss\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->sweep.searcher == "tpe");
  BOOST_TEST(parsed->sweep.scheduler == "fifo");
  BOOST_TEST(parsed->sweep.num_samples == 30);
  BOOST_TEST(parsed->sweep.tpe_startup_trials == 5);
  BOOST_TEST(parsed->sweep.tpe_ei_candidates == 12);
  BOOST_TEST(dtrain::experiments::searcher_name(*parsed) == "tpe");
  BOOST_TEST(dtrain::tune::validate(parsed->sweep).is_ok());
  BOOST_TEST(dtrain::tune::make_searcher(parsed->space, parsed->sweep)->total() == 30);
  const std::string text = to_yaml(*parsed);
  auto again = parse(text);
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string() + "\n" + text);
  BOOST_TEST(same_search(*again, *parsed), text);
  BOOST_TEST(again->sweep.tpe_startup_trials == 5);
  BOOST_TEST(again->sweep.tpe_ei_candidates == 12);
  // Optuna's defaults when absent; errors name the key.
  auto defaults = parse(minimal(space + "searcher:\n  name: tpe\n  max_trials: 30\n"));
  BOOST_TEST_REQUIRE(defaults.is_ok(), defaults.error().to_string());
  BOOST_TEST(defaults->sweep.tpe_startup_trials == 10);
  BOOST_TEST(defaults->sweep.tpe_ei_candidates == 24);
  BOOST_TEST(error_of(minimal(space + "searcher:\n  name: tpe\n  max_trials: 3\n"
                                      "  startup_trials: 0\n")) ==
             "experiment.yaml: searcher.startup_trials: must be at least 1, got 0");
  BOOST_TEST(error_of(minimal(space + "searcher:\n  name: random\n  max_trials: 3\n"
                                      "  ei_candidates: 4\n")) ==
             "experiment.yaml: searcher.ei_candidates: only the tpe searcher uses it, not random");
  BOOST_TEST(starts_with(error_of(minimal(space + "searcher:\n  name: tpe\n")),
                         "experiment.yaml: searcher.max_trials: missing required key"));
  // Multivariate TPE and the constant liar: read, validated, round-tripped;
  // left out of the canonical text when off (stored experiments' hashes).
  BOOST_TEST(to_yaml(*defaults).find("multivariate") == std::string::npos);
  auto joint = parse(minimal(space + "searcher:\n  name: tpe\n  max_trials: 30\n"
                                     "  multivariate: true\n  group: true\n  constant_liar: true\n"));
  BOOST_TEST_REQUIRE(joint.is_ok(), joint.error().to_string());
  BOOST_TEST(joint->sweep.tpe_multivariate);
  BOOST_TEST(joint->sweep.tpe_group);
  BOOST_TEST(joint->sweep.tpe_constant_liar);
  auto joint_again = parse(to_yaml(*joint));
  BOOST_TEST_REQUIRE(joint_again.is_ok(), joint_again.error().to_string());
  BOOST_TEST((joint_again->sweep.tpe_multivariate && joint_again->sweep.tpe_group &&
              joint_again->sweep.tpe_constant_liar));
  BOOST_TEST(error_of(minimal(space + "searcher:\n  name: tpe\n  max_trials: 3\n"
                                      "  group: true\n")) ==
             "experiment.yaml: searcher.group: group splits the multivariate estimator; it needs "
             "multivariate: true");
  BOOST_TEST(error_of(minimal(space + "searcher:\n  name: random\n  max_trials: 3\n"
                                      "  constant_liar: true\n")) ==
             "experiment.yaml: searcher.constant_liar: only the tpe searcher uses it, not random");
  auto shipped =
      load_experiment(std::string(DTRAIN_SOURCE_DIR) + "/experiments/branin_tpe.yaml");
  BOOST_TEST_REQUIRE(shipped.is_ok(), shipped.error().to_string());
  BOOST_TEST(shipped->operator_name == "objective");
  BOOST_TEST(shipped->sweep.searcher == "tpe");
  BOOST_TEST((shipped->sweep.direction == dtrain::tune::mode::min));
  BOOST_TEST((shipped->space.varying() == std::vector<std::string>{"x1", "x2"}));
}

// The store keeps config_hash to tell a resumed experiment whose file
// changed, so its value must not move between versions: FNV-1a 64 with the
// reference's offset basis, as 16 lowercase hex digits.
BOOST_AUTO_TEST_CASE(config_hash_keeps_the_fnv1a_values_stored_experiments_hold) {
  BOOST_TEST(dtrain::experiments::config_hash("") == "cbf29ce484222325");
  BOOST_TEST(dtrain::experiments::config_hash("a") == "af63dc4c8601ec8c");
  BOOST_TEST(dtrain::experiments::config_hash("foobar") == "85944171f73967e8");
}

BOOST_AUTO_TEST_SUITE_END()

// --- Hyperparameter searches (dtrain tune) -----------------------------------

BOOST_AUTO_TEST_SUITE(searches)

BOOST_AUTO_TEST_CASE(typed_hyperparameters_become_the_search_space) {
  auto parsed = parse(minimal(
      "hyperparameters:\n"
      "  lr: {type: log, base: 10, minval: -4, maxval: -2}\n"
      "  width: {type: int, minval: 16, maxval: 64}\n"
      "  dropout: {type: double, minval: 0.0, maxval: 0.5, q: 0.1}\n"
      "  hidden: {type: categorical, vals: [[256, 128], [64]]}\n"
      "  act: relu\n"
      "searcher:\n  name: random\n  max_trials: 5\n  max_length: {epochs: 3}\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  BOOST_TEST(parsed->has_search);
  BOOST_TEST(parsed->sweep.num_samples == 5);
  BOOST_TEST(parsed->sweep.max_epochs == 3);
  BOOST_TEST(parsed->hyperparameters.at("act") == "relu");
  const auto& d = parsed->space.domains();
  BOOST_TEST_REQUIRE(d.size() == 4u);
  // Determined's log bounds are exponents: 10^-4 .. 10^-2 as values.
  BOOST_TEST((d.at("lr").type == dtrain::tune::domain::kind::log_uniform));
  BOOST_TEST(d.at("lr").low == 1e-4, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(d.at("lr").high == 1e-2, boost::test_tools::tolerance(1e-12));
  BOOST_TEST((d.at("width").type == dtrain::tune::domain::kind::integer));
  BOOST_TEST(d.at("dropout").q == 0.1);
  BOOST_TEST(d.at("hidden").choices.size() == 2u);
  BOOST_TEST(dtrain::tune::to_string(d.at("hidden").choices[0]) == "256,128");
}

BOOST_AUTO_TEST_CASE(a_grid_range_without_count_is_an_error_naming_the_key) {
  std::string err = error_of(minimal(
      "hyperparameters:\n  lr: {type: double, minval: 0.1, maxval: 0.5}\n"
      "searcher:\n  name: grid\n  max_length: {epochs: 1}\n"));
  BOOST_TEST(err.find("hyperparameters.lr.count") != std::string::npos, err);
}

BOOST_AUTO_TEST_CASE(an_unknown_searcher_key_is_an_error_naming_its_path) {
  std::string err = error_of(minimal(
      "hyperparameters:\n  lr: {type: double, minval: 0.1, maxval: 0.5}\n"
      "searcher:\n  name: asha\n  max_trials: 4\n  divisr: 3\n"));
  BOOST_TEST(err.find("searcher.divisr") != std::string::npos, err);
}

BOOST_AUTO_TEST_CASE(a_searched_hyperparameter_needs_a_searching_searcher) {
  std::string err = error_of(minimal(
      "hyperparameters:\n  lr: {type: double, minval: 0.1, maxval: 0.5}\n"));
  BOOST_TEST(err.find("hyperparameters.lr") != std::string::npos, err);
  BOOST_TEST(err.find("dtrain tune") != std::string::npos, err);
}

BOOST_AUTO_TEST_CASE(a_pbt_scheduler_reads_its_knobs_and_errors_name_the_key) {
  const std::string space =
      "hyperparameters:\n  lr: {type: log, minval: -4, maxval: -1}\n"
      "  width: {type: int, minval: 16, maxval: 64}\n  act: relu\n";
  auto parsed = parse(minimal(space + "searcher:\n  name: random\n  max_trials: 8\n"
                                      "  scheduler: pbt\n  perturbation_interval: 2\n  burn_in: 3\n"
                                      "  quantile_fraction: 0.5\n  resample_probability: 0\n"
                                      "  mutations: [lr]\n"));
  BOOST_TEST_REQUIRE(parsed.is_ok(), parsed.error().to_string());
  const auto& pbt = parsed->sweep.pbt;
  BOOST_TEST(parsed->sweep.scheduler == "pbt");
  BOOST_TEST(pbt.perturbation_interval == 2);
  BOOST_TEST(pbt.burn_in == 3);
  BOOST_TEST(pbt.quantile_fraction == 0.5);
  BOOST_TEST(pbt.resample_probability == 0);
  BOOST_TEST((pbt.mutations == std::vector<std::string>{"lr"}));
  BOOST_TEST(dtrain::tune::make_scheduler(parsed->sweep, parsed->space).is_ok());
  // to_yaml keeps them.
  auto again = parse(to_yaml(*parsed));
  BOOST_TEST_REQUIRE(again.is_ok(), again.error().to_string());
  BOOST_TEST(again->sweep.scheduler == "pbt");
  BOOST_TEST(again->sweep.pbt.perturbation_interval == 2);
  BOOST_TEST(again->sweep.pbt.burn_in == 3);
  BOOST_TEST(again->sweep.pbt.quantile_fraction == 0.5);
  BOOST_TEST((again->sweep.pbt.mutations == std::vector<std::string>{"lr"}));
  // Ray's defaults when absent.
  auto defaults = parse(minimal(space + "searcher:\n  name: random\n  max_trials: 4\n"
                                        "  scheduler: pbt\n"));
  BOOST_TEST_REQUIRE(defaults.is_ok(), defaults.error().to_string());
  BOOST_TEST(defaults->sweep.pbt.quantile_fraction == 0.25);
  BOOST_TEST(defaults->sweep.pbt.resample_probability == 0.25);
  BOOST_TEST(defaults->sweep.pbt.mutations.empty());

  const std::string head = space + "searcher:\n  name: random\n  max_trials: 4\n";
  auto error_names = [&](const std::string& lines, const std::string& key) {
    const std::string err = error_of(minimal(head + lines));
    BOOST_TEST(err.find(key) != std::string::npos, err);
  };
  error_names("  scheduler: pbt\n  perturbation_interval: 0\n", "searcher.perturbation_interval");
  error_names("  scheduler: pbt\n  burn_in: -1\n", "searcher.burn_in");
  error_names("  scheduler: pbt\n  quantile_fraction: 0.75\n", "searcher.quantile_fraction");
  error_names("  scheduler: pbt\n  resample_probability: 2\n", "searcher.resample_probability");
  error_names("  scheduler: pbt\n  mutations: lr\n", "searcher.mutations");
  error_names("  scheduler: pbt\n  mutations: [lr, lr]\n", "searcher.mutations[1]");
  error_names("  scheduler: pbt\n  mutations: [lr, act]\n", "searcher.mutations[1]");
  error_names("  scheduler: pbt\n  mutations: [momentum]\n", "searcher.mutations[0]");
  error_names("  scheduler: asha\n  perturbation_interval: 2\n", "searcher.perturbation_interval");
  error_names("  scheduler: pbtt\n", "searcher.scheduler");
}

BOOST_AUTO_TEST_CASE(an_inverted_range_is_an_error_naming_the_hyperparameter) {
  std::string err = error_of(minimal(
      "hyperparameters:\n  lr: {type: double, minval: 0.5, maxval: 0.1}\n"
      "searcher:\n  name: random\n  max_trials: 2\n"));
  BOOST_TEST(err.find("lr") != std::string::npos, err);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE_END()  // experiment_yaml
