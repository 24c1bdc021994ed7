#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/spawn.hpp"
#include "dtrain/rendezvous/store.hpp"
#include "dtrain/core/check.hpp"
#include "support/test_util.hpp"

using namespace dtrain;
using namespace dtrain::rendezvous;
using std::chrono::steady_clock;

namespace {

/// A store under test and its name, for messages.
struct named_store {
  std::string kind;
  std::shared_ptr<store> impl;
};

std::shared_ptr<store> open_file_store(const std::string& directory) {
  auto opened = file_store::open(directory);
  BOOST_TEST_REQUIRE(opened.is_ok(), opened.error().to_string());
  return std::move(opened).value();
}

/// A memory_store and a file_store in `dir`: every behaviour of the store
/// contract is checked on both.
std::vector<named_store> both_stores(const testing::temp_dir& dir) {
  return {{"memory_store", std::make_shared<memory_store>()},
          {"file_store", open_file_store(dir.file("store"))}};
}

bytes get_now(store& s, const std::string& key) {
  auto value = s.get(key, milliseconds(1000));
  BOOST_TEST_REQUIRE(value.is_ok(), value.error().to_string());
  return value.value();
}

long elapsed_ms(steady_clock::time_point since) {
  return static_cast<long>(
      std::chrono::duration_cast<milliseconds>(steady_clock::now() - since).count());
}

/// Four ranks add `per_rank` ones each to "counter", concurrently.
status add_ones(store& s, int per_rank) {
  for (int i = 0; i < per_rank; ++i)
    DTRAIN_RETURN_IF_ERROR(s.add("counter", 1).to_status());
  return status::ok();
}

} // namespace

BOOST_AUTO_TEST_SUITE(rendezvous_stores)

BOOST_AUTO_TEST_CASE(set_then_get_round_trips_text_empty_and_binary_values) {
  testing::temp_dir dir;
  const bytes binary{'\0', 'a', '\0', '\xff', '\n', '\0'};
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      BOOST_TEST(s->set("text", to_bytes("hello")).is_ok());
      BOOST_TEST(s->set("empty", bytes{}).is_ok());
      BOOST_TEST(s->set("binary", binary).is_ok());
      BOOST_TEST(to_string(get_now(*s, "text")) == "hello");
      BOOST_TEST(get_now(*s, "empty").empty());
      BOOST_TEST(get_now(*s, "binary") == binary);
    }
  }
}

BOOST_AUTO_TEST_CASE(set_overwrites_the_previous_value) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      BOOST_TEST(s->set("k", to_bytes("a much longer first value")).is_ok());
      BOOST_TEST(s->set("k", to_bytes("short")).is_ok());
      BOOST_TEST(to_string(get_now(*s, "k")) == "short");
    }
  }
}

BOOST_AUTO_TEST_CASE(get_waits_for_a_key_set_later_by_another_thread) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      std::thread writer([s = s] {
        std::this_thread::sleep_for(milliseconds(50));
        (void)s->set("late", to_bytes("here"));
      });
      auto start = steady_clock::now();
      auto value = s->get("late", milliseconds(5000));
      writer.join();
      BOOST_TEST_REQUIRE(value.is_ok(), value.error().to_string());
      BOOST_TEST(to_string(value.value()) == "here");
      BOOST_TEST(elapsed_ms(start) >= 40);
    }
  }
}

BOOST_AUTO_TEST_CASE(get_of_a_missing_key_times_out_naming_the_key_and_the_timeout) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      auto start = steady_clock::now();
      auto value = s->get("never/set", milliseconds(100));
      long took = elapsed_ms(start);
      BOOST_TEST_REQUIRE(!value.is_ok());
      BOOST_TEST(value.error().code() == error_code::timeout);
      BOOST_TEST(value.error().message().find("'never/set'") != std::string::npos,
                 value.error().message());
      BOOST_TEST(value.error().message().find("100 ms") != std::string::npos);
      BOOST_TEST(took >= 100);
      BOOST_TEST(took <= 1100);  // room for a loaded machine, far below a hang
    }
  }
}

BOOST_AUTO_TEST_CASE(wait_returns_once_all_keys_exist) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      BOOST_TEST(s->set("a", to_bytes("1")).is_ok());
      std::thread writer([s = s] {
        std::this_thread::sleep_for(milliseconds(20));
        (void)s->set("b", to_bytes("2"));
        std::this_thread::sleep_for(milliseconds(20));
        (void)s->add("c", 1);
      });
      status waited = s->wait({"a", "b", "c"}, milliseconds(5000));
      writer.join();
      BOOST_TEST(waited.is_ok(), waited.to_string());
      BOOST_TEST(s->wait({}, milliseconds(0)).is_ok());
    }
  }
}

BOOST_AUTO_TEST_CASE(wait_times_out_naming_only_the_keys_still_missing) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      BOOST_TEST(s->set("present", to_bytes("x")).is_ok());
      auto start = steady_clock::now();
      status waited = s->wait({"present", "gone1", "gone2"}, milliseconds(80));
      long took = elapsed_ms(start);
      BOOST_TEST(waited.code() == error_code::timeout);
      const std::string& message = waited.message();
      BOOST_TEST(message.find("'gone1', 'gone2'") != std::string::npos, message);
      BOOST_TEST(message.find("present") == std::string::npos, message);
      BOOST_TEST(took >= 80);
      BOOST_TEST(took <= 1080);
    }
  }
}

BOOST_AUTO_TEST_CASE(add_counts_from_zero_and_reads_back_as_decimal_text) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      BOOST_TEST(s->add("n", 3).value() == 3);
      BOOST_TEST(s->add("n", -5).value() == -2);
      BOOST_TEST(s->add("n", 0).value() == -2);
      BOOST_TEST(to_string(get_now(*s, "n")) == "-2");
      BOOST_TEST(s->set("m", to_bytes("40")).is_ok());
      BOOST_TEST(s->add("m", 2).value() == 42);
    }
  }
}

BOOST_AUTO_TEST_CASE(add_is_atomic_under_contention_from_four_threads) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      auto outcomes = testing::run_ranks(4, testing::rank_mode::threads, milliseconds(30000),
                                         [s = s](int) { return add_ones(*s, 500); });
      BOOST_TEST(testing::failures(outcomes) == "");
      BOOST_TEST(to_string(get_now(*s, "counter")) == "2000");
    }
  }
}

BOOST_AUTO_TEST_CASE(add_to_a_non_numeric_value_is_an_invalid_argument_naming_the_key) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      for (const std::string text : {"abc", "12x", "", " 7", "99999999999999999999"}) {
        BOOST_TEST(s->set("word", to_bytes(text)).is_ok());
        auto added = s->add("word", 1);
        BOOST_TEST_REQUIRE(!added.is_ok(), "value '" << text << "'");
        BOOST_TEST(added.error().code() == error_code::invalid_argument);
        BOOST_TEST(added.error().message().find("'word'") != std::string::npos);
        BOOST_TEST(to_string(get_now(*s, "word")) == text);  // left as it was
      }
      BOOST_TEST(s->set("big", to_bytes(std::to_string(INT64_MAX))).is_ok());
      BOOST_TEST(s->add("big", 1).error().code() == error_code::out_of_range);
    }
  }
}

BOOST_AUTO_TEST_CASE(check_reports_whether_a_key_exists_without_waiting) {
  testing::temp_dir dir;
  for (auto& [kind, s] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      BOOST_TEST(s->check("k").value() == false);
      BOOST_TEST(s->set("k", bytes{}).is_ok());
      BOOST_TEST(s->check("k").value() == true);
      BOOST_TEST(s->check("K").value() == false);
    }
  }
}

BOOST_AUTO_TEST_CASE(prefix_stores_over_one_base_do_not_see_each_others_keys) {
  testing::temp_dir dir;
  for (auto& [kind, base] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      prefix_store red("red", base);
      prefix_store blue("blue", base);
      BOOST_TEST(red.set("k", to_bytes("r")).is_ok());
      BOOST_TEST(blue.set("k", to_bytes("b")).is_ok());
      BOOST_TEST(red.add("n", 1).value() == 1);
      BOOST_TEST(blue.add("n", 5).value() == 5);
      BOOST_TEST(to_string(get_now(red, "k")) == "r");
      BOOST_TEST(to_string(get_now(blue, "k")) == "b");
      BOOST_TEST(to_string(get_now(*base, "red/k")) == "r");
      BOOST_TEST(base->check("k").value() == false);
      BOOST_TEST(blue.wait({"k", "n"}, milliseconds(0)).is_ok());
      BOOST_TEST(red.check("only_blue").value() == false);
      BOOST_TEST(blue.set("only_blue", bytes{}).is_ok());
      BOOST_TEST(red.check("only_blue").value() == false);
      auto missing = red.get("only_blue", milliseconds(20));
      BOOST_TEST(missing.error().code() == error_code::timeout);
      BOOST_TEST(missing.error().message().find("only_blue") != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(prefix_of_a_prefix_composes_into_a_nested_prefix) {
  testing::temp_dir dir;
  for (auto& [kind, base] : both_stores(dir)) {
    BOOST_TEST_CONTEXT(kind) {
      auto group = std::make_shared<prefix_store>("group", base);
      prefix_store generation("gen1", group);
      BOOST_TEST(generation.set("addr", to_bytes("10.0.0.1")).is_ok());
      BOOST_TEST(to_string(get_now(*base, "group/gen1/addr")) == "10.0.0.1");
      BOOST_TEST(to_string(get_now(*group, "gen1/addr")) == "10.0.0.1");
      BOOST_TEST(generation.add("count", 2).value() == 2);
      BOOST_TEST(to_string(get_now(*base, "group/gen1/count")) == "2");
    }
  }
}

BOOST_AUTO_TEST_CASE(file_store_keeps_keys_with_any_characters_apart) {
  testing::temp_dir dir;
  auto s = open_file_store(dir.path());
  const std::vector<std::string> keys{"a/b", "a%2Fb", "a_2Fb", ".", "..", "", ".lock",
                                      std::string("nul\0byte", 8), std::string(300, 'x'),
                                      std::string(299, 'x') + "y", "caf\xc3\xa9"};
  for (size_t i = 0; i < keys.size(); ++i)
    BOOST_TEST(s->set(keys[i], to_bytes(std::to_string(i))).is_ok());
  for (size_t i = 0; i < keys.size(); ++i)
    BOOST_TEST(to_string(get_now(*s, keys[i])) == std::to_string(i), "key #" << i);
  BOOST_TEST(s->add(".lock", 1).value() == 7);  // the key, not the store's lock file
}

BOOST_AUTO_TEST_CASE(file_store_open_creates_nested_directories_and_names_a_blocked_one) {
  testing::temp_dir dir;
  auto nested = file_store::open(dir.file("a/b/c"));
  BOOST_TEST_REQUIRE(nested.is_ok(), nested.error().to_string());
  BOOST_TEST(nested.value()->directory() == dir.file("a/b/c"));
  std::ofstream(dir.file("plain")) << "not a directory";
  auto blocked = file_store::open(dir.file("plain/sub"));
  BOOST_TEST_REQUIRE(!blocked.is_ok());
  BOOST_TEST(blocked.error().code() == error_code::io_error);
  BOOST_TEST(blocked.error().message().find(dir.file("plain/sub")) != std::string::npos,
             blocked.error().message());
}

BOOST_AUTO_TEST_CASE(file_store_readers_never_see_a_partial_value) {
  testing::temp_dir dir;
  auto s = open_file_store(dir.path());
  const bytes as(256 << 10, 'a');
  const bytes bs(256 << 10, 'b');
  BOOST_TEST_REQUIRE(s->set("big", as).is_ok());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; !stop; ++i)
      (void)s->set("big", i % 2 ? as : bs);
  });
  int torn = 0;
  for (int i = 0; i < 100; ++i) {
    bytes value = get_now(*s, "big");
    torn += value != as && value != bs;
  }
  stop = true;
  writer.join();
  BOOST_TEST(torn == 0);
}

BOOST_AUTO_TEST_CASE(file_store_add_is_atomic_across_four_processes) {
  testing::temp_dir dir;
  auto body = [&](int) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto s, file_store::open(dir.path()));
    return add_ones(*s, 200);
  };
  auto outcomes = testing::run_ranks(4, testing::rank_mode::processes, milliseconds(30000), body);
  BOOST_TEST(testing::failures(outcomes) == "");
  auto s = open_file_store(dir.path());
  BOOST_TEST(to_string(get_now(*s, "counter")) == "800");
}

BOOST_AUTO_TEST_CASE(file_store_lets_processes_exchange_values_by_rank) {
  testing::temp_dir dir;
  const int n = 4;
  auto body = [&](int rank) -> status {
    DTRAIN_ASSIGN_OR_RETURN(auto s, file_store::open(dir.path()));
    DTRAIN_RETURN_IF_ERROR(s->set("rank/" + std::to_string(rank),
                                  to_bytes("hello from " + std::to_string(rank))));
    for (int peer = 0; peer < n; ++peer) {
      const std::string key = "rank/" + std::to_string(peer);
      const std::string want = "hello from " + std::to_string(peer);
      DTRAIN_ASSIGN_OR_RETURN(bytes got, s->get(key, milliseconds(10000)));
      DTRAIN_RETURN_IF_ERROR(testing::expect(
          to_string(got) == want, "rank " + std::to_string(rank) + " read '" + to_string(got) +
                                      "' for " + key + ", not '" + want + "'"));
    }
    return status::ok();
  };
  auto outcomes = testing::run_ranks(n, testing::rank_mode::processes, milliseconds(30000), body);
  BOOST_TEST(testing::failures(outcomes) == "");
}

BOOST_AUTO_TEST_CASE(file_store_add_times_out_when_the_lock_is_held) {
  dtrain::testing::temp_dir dir;
  auto s = dtrain::rendezvous::file_store::open(dir.path()).value();
  BOOST_REQUIRE(s->add("c", 1).is_ok());  // creates the lock file
  int fd = ::open((dir.path() + "/.lock").c_str(), O_RDWR);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::flock(fd, LOCK_EX) == 0);  // a holder that hangs
  auto start = std::chrono::steady_clock::now();
  auto r = s->add("c", 1, std::chrono::milliseconds(200));
  auto took = std::chrono::steady_clock::now() - start;
  ::close(fd);
  BOOST_REQUIRE(!r.is_ok());
  BOOST_TEST(r.error().code() == dtrain::error_code::timeout);
  BOOST_TEST(r.error().message().find("'c'") != std::string::npos);
  BOOST_TEST((took < std::chrono::milliseconds(1000)));
  BOOST_TEST(s->add("c", 1).value() == 2);  // free again
}

BOOST_AUTO_TEST_SUITE_END()
