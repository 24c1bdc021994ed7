#include "dtrain/launch/nodelist.hpp"

#include <cctype>

#include "dtrain/core/check.hpp"

namespace dtrain::launch {

namespace {

bool all_digits(const std::string& s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

std::string padded(unsigned long long value, size_t width) {
  std::string digits = std::to_string(value);
  return digits.size() < width ? std::string(width - digits.size(), '0') + digits : digits;
}

// The numbers of one bracket group's contents ("1,3-5,08-10"), as text
// with their padding: a range keeps the width of its first number. More
// than `max_hosts` numbers is an error: every number is in some name.
result<std::vector<std::string>> expand_group(const std::string& group, const std::string& list,
                                              size_t max_hosts) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= group.size()) {
    size_t comma = group.find(',', start);
    std::string item = group.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
    size_t dash = item.find('-');
    std::string lo = item.substr(0, dash);
    std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    if (!all_digits(lo) || !all_digits(hi) || lo.size() > 18 || hi.size() > 18)
      return invalid_argument("host list '" + list + "': '[" + group + "]' holds '" + item +
                              "', not a number or a range of numbers");
    const unsigned long long a = std::stoull(lo), b = std::stoull(hi);
    if (b < a)
      return invalid_argument("host list '" + list + "': the range '" + item +
                              "' runs backwards");
    const size_t width = lo.size() > 1 && lo[0] == '0' ? lo.size() : 0;
    for (unsigned long long v = a; v <= b; ++v) {
      out.push_back(padded(v, width));
      if (out.size() > max_hosts)
        return invalid_argument("host list '" + list + "': the group '[" + group +
                                "]' names more than " + std::to_string(max_hosts) + " hosts");
    }
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

// One entry (no separators outside brackets): its names. The text between
// groups is kept; the names run through the groups' numbers in Slurm's
// order: the last group fastest, then the first, the second, ... (for two
// groups the plain product from the left; "a[1-2]b[3-4]c[5-6]" starts
// a1b3c5 a1b3c6 a2b3c5 a2b3c6 a1b4c5, as `scontrol show hostnames`).
status expand_entry(const std::string& entry, const std::string& list, size_t max_hosts,
                    std::vector<std::string>& out) {
  std::vector<std::string> texts;                 // texts[0] group 0 texts[1] group 1 ...
  std::vector<std::vector<std::string>> groups;
  size_t names = 1;  // the product of the groups' sizes so far, at most max_hosts
  size_t i = 0;
  for (;;) {
    size_t open = entry.find('[', i);
    size_t stray = entry.find(']', i);
    if (stray != std::string::npos && (open == std::string::npos || stray < open))
      return invalid_argument("host list '" + list + "': a ']' without its '[' in '" + entry + "'");
    std::string text = entry.substr(i, open == std::string::npos ? std::string::npos : open - i);
    if (open == std::string::npos && !groups.empty() && !text.empty())
      return invalid_argument("host list '" + list + "': '" + entry + "' goes on after its last "
                              "bracket group (Slurm takes no suffix there)");
    texts.push_back(text);
    if (open == std::string::npos)
      break;
    size_t close = entry.find(']', open);
    if (close == std::string::npos)
      return invalid_argument("host list '" + list + "': a '[' is never closed in '" + entry + "'");
    DTRAIN_ASSIGN_OR_RETURN(auto numbers, expand_group(entry.substr(open + 1, close - open - 1),
                                                       list, max_hosts));
    // Checked before the next group is expanded: many groups of many
    // numbers must not fill the memory before the names are counted.
    if (numbers.size() > max_hosts / names)
      return invalid_argument("host list '" + list + "': '" + entry + "' names more than " +
                              std::to_string(max_hosts) + " hosts");
    names *= numbers.size();
    groups.push_back(std::move(numbers));
    i = close + 1;
  }
  // An odometer over the groups' positions; digits advance in Slurm's order.
  const size_t k = groups.size();
  std::vector<size_t> order;
  if (k > 0) {
    order.push_back(k - 1);
    for (size_t g = 0; g + 1 < k; ++g)
      order.push_back(g);
  }
  std::vector<size_t> at(k, 0);
  for (;;) {
    std::string name = texts[0];
    for (size_t g = 0; g < k; ++g)
      name += groups[g][at[g]] + texts[g + 1];
    out.push_back(std::move(name));
    if (out.size() > max_hosts)
      return invalid_argument("host list '" + list + "' names more than " +
                              std::to_string(max_hosts) + " hosts");
    size_t d = 0;
    while (d < order.size() && ++at[order[d]] == groups[order[d]].size())
      at[order[d++]] = 0;
    if (d == order.size())
      break;
  }
  return status::ok();
}

} // namespace

result<std::vector<std::string>> expand_nodelist(const std::string& list, size_t max_hosts) {
  std::vector<std::string> out;
  std::string entry;
  int depth = 0;
  auto flush = [&]() -> status {
    if (!entry.empty())
      DTRAIN_RETURN_IF_ERROR(expand_entry(entry, list, max_hosts, out));
    entry.clear();
    return status::ok();
  };
  for (char c : list) {
    if (c == '[')
      ++depth;
    else if (c == ']')
      --depth;
    if (depth == 0 && (c == ',' || std::isspace(static_cast<unsigned char>(c)))) {
      DTRAIN_RETURN_IF_ERROR(flush());
      continue;
    }
    if (depth > 1)
      return invalid_argument("host list '" + list + "': brackets inside brackets");
    entry += c;
  }
  DTRAIN_RETURN_IF_ERROR(flush());
  if (out.empty())
    return invalid_argument("host list '" + list + "' names no host");
  return out;
}

result<std::vector<int>> expand_tasks_per_node(const std::string& list, size_t max_nodes) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? std::string::npos
                                                                     : comma - start);
    std::string count = item, times = "1";
    if (size_t paren = item.find("(x"); paren != std::string::npos) {
      if (item.back() != ')')
        return invalid_argument("tasks per node '" + list + "': '" + item + "' is not N or N(xM)");
      count = item.substr(0, paren);
      times = item.substr(paren + 2, item.size() - paren - 3);
    }
    if (!all_digits(count) || !all_digits(times) || count.size() > 6 || times.size() > 6)
      return invalid_argument("tasks per node '" + list + "': '" + item + "' is not N or N(xM)");
    const auto repeats = static_cast<size_t>(std::stoi(times));
    if (repeats > max_nodes - out.size())
      return invalid_argument("tasks per node '" + list + "' counts more than " +
                              std::to_string(max_nodes) + " nodes");
    out.insert(out.end(), repeats, std::stoi(count));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return out;
}

} // namespace dtrain::launch
