#include "dtrain/checkpoint/ownership.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"

namespace dtrain::checkpoint {

namespace {

namespace fs = std::filesystem;

constexpr const char* header = "dtrain-owner 1";

std::string marker_path(const std::string& dir) { return dir + "/" + owner_file; }

// One field of a marker: a value without line breaks (a name with one
// would split the file into lines of its own).
std::string one_line(std::string value) {
  for (char& c : value)
    if (c == '\n' || c == '\r')
      c = ' ';
  return value;
}

result<owner> parse_owner(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != header)
    return corrupt_data(file + ": not a dtrain owner marker (its first line is not '" +
                        std::string(header) + "')");
  owner o;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    const std::string key = line.substr(0, space);
    const std::string value = space == std::string::npos ? "" : line.substr(space + 1);
    if (key == "token")
      o.token = value;
    else if (key == "experiment")
      o.experiment = std::strtoll(value.c_str(), nullptr, 10);
    else if (key == "created")
      o.created = value;
    else if (key == "store")
      o.store = value;
    else if (key == "name")
      o.name = value;
  }
  if (o.token.empty())
    return corrupt_data(file + ": the owner marker names no token");
  return o;
}

// Whether `inner` is `outer` or lies under it (both made absolute and
// free of "..", links resolved as far as they exist).
bool lies_within(const std::string& inner, const std::string& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(fs::absolute(inner, ec), ec);
  const fs::path b = fs::weakly_canonical(fs::absolute(outer, ec), ec);
  if (ec)
    return false;
  auto i = a.begin();
  for (auto j = b.begin(); j != b.end(); ++j, ++i)
    if (j->empty() && std::next(j) == b.end())  // a trailing "/"
      break;
    else if (i == a.end() || *i != *j)
      return false;
  return true;
}

} // namespace

bool same_owner(const owner& a, const owner& b) {
  return a.token == b.token && a.experiment == b.experiment && a.created == b.created;
}

std::string created_text(double unix_seconds) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6f", unix_seconds);
  return text;
}

result<std::string> new_owner_token() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return io_error(std::string("the kernel gave no random bytes for a checkpoint owner "
                                  "token (getrandom): ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  std::string hex;
  char two[3];
  for (unsigned char b : bytes) {
    std::snprintf(two, sizeof two, "%02x", b);
    hex += two;
  }
  return hex;
}

std::string describe(const owner& o) {
  return "experiment " + std::to_string(o.experiment) + (o.name.empty() ? "" : " (" + o.name + ")") +
         " of the store " + (o.store.empty() ? "(unnamed)" : o.store) + " [token " + o.token + "]";
}

result<owner> read_owner(const std::string& dir) {
  const std::string file = marker_path(dir);
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(file, ec))
      return not_found(dir + " carries no owner marker (" + owner_file + ")");
    return io_error(file + ": cannot read: " + std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return io_error(file + ": cannot read");
  return parse_owner(text.str(), file);
}

status write_owner(const std::string& dir, const owner& o) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return io_error("cannot create the checkpoint directory " + dir + ": " + ec.message());
  const std::string text = std::string(header) + "\ntoken " + one_line(o.token) +
                           "\nexperiment " + std::to_string(o.experiment) + "\ncreated " +
                           one_line(o.created) + "\nstore " +
                           one_line(o.store) + "\nname " + one_line(o.name) + "\n";
  return write_file_atomically(marker_path(dir), text.data(), text.size(),
                               durability::file_and_directory);
}

status check_owner(const std::string& dir, const owner& me, const std::string& action) {
  auto found = read_owner(dir);
  if (!found)
    return found.error().code() == error_code::not_found
               ? not_found("will not " + action + " " + dir + ": it carries no owner marker (" +
                           owner_file + ") of this experiment")
               : found.error().with_context("will not " + action + " " + dir);
  if (!same_owner(*found, me))
    return invalid_argument("will not " + action + " " + dir + ": it belongs to " +
                            describe(*found));
  return status::ok();
}

status claim(const std::string& dir, const owner& me, bool* adopted) {
  auto found = read_owner(dir);
  if (found) {
    if (same_owner(*found, me))
      return status::ok();
    return invalid_argument("the checkpoint directory " + dir + " belongs to " + describe(*found) +
                            ", not to " + describe(me) + "; nothing in it was touched");
  }
  if (found.error().code() != error_code::not_found)
    return found.error();
  std::error_code ec;
  const bool held_files = fs::exists(dir, ec) && !fs::is_empty(dir, ec);
  DTRAIN_RETURN_IF_ERROR(write_owner(dir, me));
  if (adopted != nullptr)
    *adopted = held_files;
  return status::ok();
}

status remove_owned(const std::string& dir, const owner& me, const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))
    return status::ok();
  if (!lies_within(path, dir))
    return invalid_argument("will not delete " + path + ": it is not inside " + dir);
  DTRAIN_RETURN_IF_ERROR(check_owner(dir, me, "delete under"));
  fs::remove_all(path, ec);
  if (ec)
    return io_error("cannot delete " + path + ": " + ec.message());
  return status::ok();
}

} // namespace dtrain::checkpoint
