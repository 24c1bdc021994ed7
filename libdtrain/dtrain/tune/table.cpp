#include "dtrain/tune/table.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace dtrain::tune {

namespace {

std::string fixed(double v, int digits) {
  if (std::isnan(v))
    return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A hyperparameter as a cell: numbers short (4 significant digits), text as is.
std::string cell(const value& v) {
  if (const double* d = std::get_if<double>(&v)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g", *d);
    return buf;
  }
  return to_string(v);
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace

std::string describe(const config& c) {
  std::string out;
  for (const auto& [name, v] : c)
    out += (out.empty() ? "" : ", ") + name + "=" + to_string(v);
  return out;
}

trial_table::trial_table(options o, std::vector<std::string> columns, std::string metric,
                         mode direction)
  : options_(o), columns_(std::move(columns)), metric_(std::move(metric)), direction_(direction) {}

std::string trial_table::render(const std::vector<const trial_record*>& rows,
                                size_t max_rows, const bar_lines& bars) const {
  std::vector<std::string> header{"trial", "status"};
  header.insert(header.end(), columns_.begin(), columns_.end());
  for (const char* h : {"epochs", "last", "best", "time (s)"})
    header.emplace_back(h);
  std::vector<std::vector<std::string>> cells;
  for (size_t i = 0; i < rows.size() && i < max_rows; ++i) {
    const trial_record& t = *rows[i];
    std::vector<std::string> row{t.id, to_string(t.status)};
    for (const auto& c : columns_) {
      auto it = t.configuration.find(c);
      row.push_back(it == t.configuration.end() ? "" : cell(it->second));
    }
    row.push_back(std::to_string(t.epochs()));
    row.push_back(fixed(t.last(metric_), 4));
    row.push_back(fixed(t.best(metric_, direction_), 4));
    row.push_back(fixed(t.seconds, 1));
    cells.push_back(std::move(row));
  }
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : cells)
      width[c] = std::max(width[c], row[c].size());
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string out;
    for (size_t c = 0; c < row.size(); ++c)
      out += row[c] + std::string(width[c] - row[c].size() + 2, ' ');
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    return out + "\n";
  };
  std::string out = line(header);
  for (size_t i = 0; i < cells.size(); ++i) {
    out += line(cells[i]);
    if (auto it = bars.find(rows[i]->id); it != bars.end())
      out += "  " + it->second + "\n";
  }
  if (rows.size() > max_rows)
    out += "... and " + std::to_string(rows.size() - max_rows) + " more trials\n";
  return out;
}

bool trial_table::due() const {
  return options_.redraw && options_.verbosity != 0 &&
         (last_draw_ < 0 || now_seconds() - last_draw_ >= 0.2);
}

void trial_table::show(const std::vector<trial_record>& trials, double elapsed_seconds,
                       const std::string& headline, bool force, const bar_lines& bars) {
  if (!options_.redraw || options_.verbosity == 0)
    return;
  double now = now_seconds();
  if (!force && last_draw_ >= 0 && now - last_draw_ < 0.2)
    return;
  last_draw_ = now;
  // Running and pending trials first, then the ended ones best first.
  std::vector<const trial_record*> live, ended;
  for (const auto& t : trials)
    (t.status == trial_status::running || t.status == trial_status::pending ? live : ended)
        .push_back(&t);
  auto by_metric = [&](const trial_record* a, const trial_record* b) {
    double x = a->best(metric_, direction_), y = b->best(metric_, direction_);
    if (std::isnan(x) != std::isnan(y))
      return std::isnan(y);
    return direction_ == mode::max ? x > y : x < y;
  };
  std::stable_sort(ended.begin(), ended.end(), by_metric);
  live.insert(live.end(), ended.begin(), ended.end());
  std::string text = headline + " (" + fixed(elapsed_seconds, 0) + " s)\n" +
                     render(live, options_.max_rows, bars);
  std::string erase;
  if (drawn_lines_ > 0)
    erase = "\x1b[" + std::to_string(drawn_lines_) + "F\x1b[J";  // up N lines, clear below
  std::fputs((erase + text).c_str(), options_.out);
  std::fflush(options_.out);
  drawn_lines_ = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

void trial_table::event(int level, const std::string& line) {
  if (options_.redraw || options_.verbosity < level)
    return;
  std::fprintf(options_.out, "%s\n", line.c_str());
  std::fflush(options_.out);
}

namespace {

// mo: a multi-objective sweep's best is its Pareto set: each trial of it
// with its last value of every objective and its configuration.
void print_pareto(std::FILE* out, const result_grid& grid) {
  const auto front = grid.pareto();
  std::fprintf(out, "Pareto set: %zu trial(s) no other trial dominates on", front.size());
  for (const auto& o : grid.objectives)
    std::fprintf(out, " %s (%s)", o.metric.c_str(), o.direction == mode::min ? "min" : "max");
  std::fprintf(out, "%s\n", grid.constraints.empty() ? "" : ", feasible first");
  for (const trial_record* t : front) {
    std::fprintf(out, "  trial %s:", t->id.c_str());
    for (const auto& o : grid.objectives)
      std::fprintf(out, " %s %.4f", o.metric.c_str(), t->last(o.metric));
    std::fprintf(out, "\n    %s\n", describe(t->configuration).c_str());
  }
}

} // namespace

void trial_table::summary(const result_grid& grid, double elapsed_seconds) {
  if (options_.verbosity == 0)
    return;
  drawn_lines_ = 0;  // the summary goes below the live table
  auto sorted = grid.sorted(metric_, direction_);
  std::fprintf(options_.out, "\n%zu trials in %.1f s%s%s\n", grid.trials.size(), elapsed_seconds,
               grid.stop_reason.empty() ? "" : "; stopped: ", grid.stop_reason.c_str());
  std::fputs(render(sorted, sorted.size()).c_str(), options_.out);
  auto best = grid.best(metric_, direction_);
  if (grid.objectives.size() > 1) {
    print_pareto(options_.out, grid);
  } else if (best) {
    const trial_record& b = **best;
    std::fprintf(options_.out, "best trial %s: %s %.4f at epoch %lld of %lld\n  %s\n",
                 b.id.c_str(), metric_.c_str(), b.best(metric_, direction_),
                 static_cast<long long>([&] {
                   double target = b.best(metric_, direction_);
                   for (const auto& r : b.history) {
                     auto it = r.metrics.find(metric_);
                     if (it != r.metrics.end() && it->second == target)
                       return r.epoch;
                   }
                   return b.epochs();
                 }()),
                 static_cast<long long>(b.epochs()), describe(b.configuration).c_str());
    if (!b.checkpoint_dir.empty())
      std::fprintf(options_.out, "  checkpoints: %s\n", b.checkpoint_dir.c_str());
  } else {
    std::fprintf(options_.out, "no trial reported %s\n", metric_.c_str());
  }
  std::fflush(options_.out);
}

} // namespace dtrain::tune
