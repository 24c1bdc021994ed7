#include "dtrain/driver/prediction.hpp"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "dtrain/cluster/errors.hpp"
#include "dtrain/core/check.hpp"

namespace dtrain::actors {

namespace {

using clock_type = std::chrono::steady_clock;

/// The shared queue of chunk starts, the answers, and who is still working.
struct work {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<int64_t> queue;                       // chunk starts not yet taken
  std::map<int64_t, predict_chunk> done;           // by chunk start
  int in_flight = 0;
  int64_t redone = 0;
  int failed = 0;
  int64_t width = 0;             // of the first chunk answered
  status last_error = unavailable("no replica answered");

  /// The next chunk for a worker, or nullopt when there is none left to
  /// take and none in flight that could come back.
  std::optional<int64_t> take() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return !queue.empty() || in_flight == 0; });
    if (queue.empty())
      return std::nullopt;
    int64_t begin = queue.front();
    queue.pop_front();
    ++in_flight;
    return begin;
  }
  int64_t expected_width() {
    std::lock_guard<std::mutex> lock(mutex);
    return width;
  }
  void finish(predict_chunk chunk) {
    std::lock_guard<std::mutex> lock(mutex);
    --in_flight;
    if (width == 0)
      width = chunk.width;
    done.emplace(chunk.begin, std::move(chunk));
    changed.notify_all();
  }
  void give_back(int64_t begin, const status& why) {
    std::lock_guard<std::mutex> lock(mutex);
    --in_flight;
    queue.push_front(begin);
    ++redone;
    ++failed;
    last_error = why;
    changed.notify_all();
  }
};

status write_csv(const std::string& path, const std::map<int64_t, predict_chunk>& done,
                 predict_report& report) {
  // A temporary file of its own beside the output, renamed over it once
  // complete; removed on any failure.
  std::string tmp = path + ".XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    return io_error("predict: cannot create a file beside " + path + ": " + std::strerror(errno));
  std::FILE* f = fdopen(fd, "w");
  if (f == nullptr) {
    close(fd);
    unlink(tmp.c_str());
    return io_error("predict: cannot write " + tmp);
  }
  const int64_t width = done.empty() ? 0 : done.begin()->second.width;
  const bool classes = !done.empty() && done.begin()->second.classification && width > 1;
  std::fprintf(f, "index,target,prediction");
  for (int64_t j = 0; j < width; ++j)
    std::fprintf(f, ",output_%lld", static_cast<long long>(j));
  std::fprintf(f, "\n");
  int64_t correct = 0, counted = 0;
  for (const auto& [begin, c] : done) {
    const int64_t rows = c.width > 0 ? static_cast<int64_t>(c.outputs.size()) / c.width : 0;
    for (int64_t r = 0; r < rows; ++r) {
      std::fprintf(f, "%lld,", static_cast<long long>(begin + r));
      for (int64_t t = 0; t < c.target_width; ++t)
        std::fprintf(f, t == 0 ? "%.9g" : ";%.9g",
                     static_cast<double>(c.targets[static_cast<size_t>(r * c.target_width + t)]));
      const float* out = c.outputs.data() + r * c.width;
      int64_t best = 0;
      for (int64_t j = 1; j < c.width; ++j)
        if (out[j] > out[best])
          best = j;
      if (classes)
        std::fprintf(f, ",%lld", static_cast<long long>(best));
      else
        std::fprintf(f, ",");
      for (int64_t j = 0; j < c.width; ++j)
        std::fprintf(f, ",%.9g", static_cast<double>(out[j]));
      std::fprintf(f, "\n");
      if (classes && c.target_width == 1) {
        ++counted;
        correct += static_cast<int64_t>(c.targets[static_cast<size_t>(r)]) == best ? 1 : 0;
      }
    }
  }
  bool ok = std::fflush(f) == 0 && std::ferror(f) == 0 && fsync(fileno(f)) == 0;
  ok = std::fclose(f) == 0 && ok;
  std::error_code ec;
  if (ok)
    std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) {
    unlink(tmp.c_str());
    return io_error("predict: cannot write " + path +
                    (ec ? ": " + ec.message() : std::string(": ") + std::strerror(errno)));
  }
  report.width = width;
  report.accuracy = counted > 0 ? static_cast<double>(correct) / static_cast<double>(counted) : -1;
  return status::ok();
}

/// Whether a reply is the chunk asked for, whole: its start, its row
/// count times its widths, and the width of the chunks before it.
status check_chunk(const predict_chunk& c, int64_t begin, int64_t end, int64_t width) {
  const auto rows = static_cast<size_t>(end - begin);
  if (c.begin != begin || c.width < 1 || c.target_width < 0 ||
      c.outputs.size() != rows * static_cast<size_t>(c.width) ||
      c.targets.size() != rows * static_cast<size_t>(c.target_width))
    return corrupt_data("the reply for rows [" + std::to_string(begin) + ", " +
                        std::to_string(end) + ") is not those rows whole");
  if (width > 0 && c.width != width)
    return shape_mismatch("rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                          ") have " + std::to_string(c.width) + " outputs, others " +
                          std::to_string(width));
  return status::ok();
}

} // namespace

result<predict_report> predict(trainer& t, const predict_options& o) {
  if (o.output.empty())
    return invalid_argument("predict: no output file");
  if (o.chunk_rows < 1)
    return invalid_argument("predict: chunk_rows must be at least 1");
  const auto& replicas = t.replicas();
  if (replicas.empty())
    return status(error_code::aborted, "predict: the trainer has no replicas");
  const auto start = clock_type::now();
  // Every replica says how many rows the input has (and sets its thread
  // share for the whole run); they must agree. One that fails here takes
  // no part; the run fails only when none answers.
  int64_t rows = -1;
  std::vector<size_t> live;
  status first_error;
  {
    caf::scoped_actor self{t.cluster_of().system()};
    for (size_t rank = 0; rank < replicas.size(); ++rank) {
      status asked;
      int64_t n = -1;
      self->request(replicas[rank], o.chunk_timeout, predict_atom::value,
                    t.replica_capabilities()[rank], o.input)
          .receive([&](int64_t got) { n = got; },
                   [&](caf::error& e) {
                     asked = from_caf(e, "predict: replica " + std::to_string(rank));
                   });
      if (!asked) {
        if (asked.code() == error_code::invalid_argument || asked.code() == error_code::not_found)
          return asked;  // the input itself is wrong: every replica would say so
        if (first_error.is_ok())
          first_error = asked;
        continue;
      }
      if (rows >= 0 && n != rows)
        return invalid_argument("predict: replicas disagree on the rows of '" + o.input + "' (" +
                                std::to_string(rows) + " and " + std::to_string(n) + ")");
      rows = n;
      live.push_back(rank);
    }
  }
  if (live.empty())
    return first_error;
  work w;
  for (int64_t b = 0; b < rows; b += o.chunk_rows)
    w.queue.push_back(b);
  predict_report report;
  report.rows = rows;
  report.chunks = static_cast<int64_t>(w.queue.size());
  report.replicas = static_cast<int>(live.size());
  std::vector<std::thread> workers;
  for (size_t rank : live)
    workers.emplace_back([&, rank] {
      caf::scoped_actor self{t.cluster_of().system()};
      while (auto begin = w.take()) {
        const int64_t end = std::min(rows, *begin + o.chunk_rows);
        std::optional<predict_chunk> got;
        status why;
        self->request(replicas[rank], o.chunk_timeout, predict_atom::value,
                      t.replica_capabilities()[rank], o.input, *begin, end)
            .receive([&](predict_chunk& c) { got = std::move(c); },
                     [&](caf::error& e) { why = from_caf(e, "replica " + std::to_string(rank)); });
        if (got)
          why = check_chunk(*got, *begin, end, w.expected_width())
                    .with_context("replica " + std::to_string(rank));
        if (!why) {
          w.give_back(*begin, why);  // this replica takes no more
          return;
        }
        w.finish(std::move(*got));
        if (o.on_chunk)
          o.on_chunk(static_cast<int>(rank), *begin);
      }
    });
  for (auto& th : workers)
    th.join();
  report.redone = w.redone;
  report.failed_replicas = w.failed + static_cast<int>(replicas.size() - live.size());
  if (static_cast<int64_t>(w.done.size()) != report.chunks)
    return status(w.last_error.code(),
                  "predict: every replica failed, " +
                      std::to_string(report.chunks - static_cast<int64_t>(w.done.size())) +
                      " of " + std::to_string(report.chunks) + " chunks left; the last: " +
                      w.last_error.message());
  DTRAIN_RETURN_IF_ERROR(write_csv(o.output, w.done, report));
  report.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  report.rows_per_second = report.seconds > 0 ? static_cast<double>(rows) / report.seconds : 0;
  return report;
}

} // namespace dtrain::actors
