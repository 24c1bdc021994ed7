#include "dtrain/driver/log_lines.hpp"

#include <algorithm>
#include <vector>

namespace dtrain::actors {

namespace {

// The complete lines of `text` (that pass `keep`); where the unfinished
// rest begins in `rest`.
template <class Keep>
std::vector<std::string> complete_lines(const std::string& text, Keep keep, size_t& rest) {
  std::vector<std::string> lines;
  size_t begin = 0;
  for (size_t end = text.find('\n'); end != std::string::npos;
       begin = end + 1, end = text.find('\n', begin)) {
    std::string line = text.substr(begin, end - begin);
    if (keep(line))
      lines.push_back(std::move(line));
  }
  rest = begin;
  return lines;
}

} // namespace

log_lines::log_lines(log_source source, std::string grep, sink out,
                     std::chrono::milliseconds timeout)
  : source_(std::move(source)), grep_(std::move(grep)), out_(std::move(out)), timeout_(timeout) {}

bool log_lines::wanted(const std::string& line) const {
  return grep_.empty() || line.find(grep_) != std::string::npos;
}

void log_lines::emit(const std::string& text) {
  partial_ += text;
  size_t rest = 0;
  for (const auto& line : complete_lines(partial_, [this](auto& l) { return wanted(l); }, rest))
    out_(line);
  partial_.erase(0, rest);
}

status log_lines::read_all(caf::scoped_actor& self) {
  for (;;) {
    auto c = read_log_chunk(self, source_, next_, max_log_chunk, timeout_);
    if (!c)
      return c.error();
    emit(c->bytes);
    next_ = c->next;
    if (c->bytes.empty() || c->next >= c->size)
      return status::ok();
  }
}

status log_lines::read_tail(caf::scoped_actor& self, int k) {
  auto last = read_log_chunk(self, source_, -max_log_chunk, max_log_chunk, timeout_);
  if (!last)
    return last.error();
  std::string text = last->bytes;
  int64_t start = last->offset;
  next_ = last->next;
  auto matching = [&] {
    size_t rest = 0;
    return complete_lines(text, [this](auto& l) { return wanted(l); }, rest).size();
  };
  // One line more than k: the first one read may be cut.
  while (start > 0 && matching() <= static_cast<size_t>(k) &&
         static_cast<int64_t>(text.size()) < max_tail_bytes) {
    const int64_t from = std::max<int64_t>(0, start - max_log_chunk);
    auto c = read_log_chunk(self, source_, from, static_cast<int32_t>(start - from), timeout_);
    if (!c)
      return c.error();
    text = c->bytes + text;
    start = c->offset;
  }
  if (start > 0)  // the first line began before what was read
    text.erase(0, text.find('\n') == std::string::npos ? text.size() : text.find('\n') + 1);
  size_t rest = 0;
  auto lines = complete_lines(text, [this](auto& l) { return wanted(l); }, rest);
  for (size_t i = lines.size() > static_cast<size_t>(k) ? lines.size() - k : 0; i < lines.size(); ++i)
    out_(lines[i]);
  partial_ = text.substr(rest);
  return status::ok();
}

status log_lines::read_new(caf::scoped_actor& self) {
  auto chunk = read_log_chunk(self, source_, next_, max_log_chunk, timeout_);
  if (!chunk)
    return chunk.error();
  if (chunk->size < next_) {  // the file was truncated or replaced: anew
    next_ = 0;
    partial_.clear();
    return status::ok();
  }
  emit(chunk->bytes);
  next_ = chunk->next;
  return status::ok();
}

void log_lines::flush() {
  if (!partial_.empty() && wanted(partial_))
    out_(partial_);
  partial_.clear();
}

} // namespace dtrain::actors
