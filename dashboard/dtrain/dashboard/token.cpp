#include "dtrain/dashboard/token.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::dashboard {

namespace {

constexpr size_t token_chars = 32;

bool well_formed(const std::string& t) {
  if (t.size() != token_chars)
    return false;
  for (char c : t)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

// The token in `path` when the file is private and holds one; "" else.
std::string existing_token(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) != 0 ||
      st.st_uid != ::getuid())
    return "";
  std::ifstream in(path);
  std::string t;
  std::getline(in, t);
  return well_formed(t) ? t : "";
}

} // namespace

std::string default_token_path() { return dtrain_home() + "/dashboard-token"; }

result<std::string> load_or_create_token(const std::string& path) {
  if (std::string t = existing_token(path); !t.empty())
    return t;
  const std::string dir = parent_of(path);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return os_error("creating the dashboard token's directory", dir, errno);
  std::string t = security::random_hex(token_chars / 2);
  const std::string line = t + "\n";
  DTRAIN_RETURN_IF_ERROR(
      write_file_atomically(path, line.data(), line.size(), durability::file, 0600));
  return t;
}

bool token_matches(std::string_view presented, std::string_view token) {
  if (presented.size() != token.size() || token.empty())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < token.size(); ++i)
    diff |= static_cast<unsigned char>(presented[i] ^ token[i]);
  return diff == 0;
}

} // namespace dtrain::dashboard
