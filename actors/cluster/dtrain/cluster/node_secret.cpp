#include "dtrain/cluster/node_secret.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::actors {

namespace {

// The directory exists (made here if needed), belongs to this user and is
// closed to everyone else.
status check_private_directory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return os_error("cannot create the secret directory", dir, errno);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    return os_error("cannot inspect the secret directory", dir, errno);
  if (!S_ISDIR(st.st_mode))
    return io_error("the secret directory " + dir + " is not a directory");
  if (st.st_uid != ::getuid())
    return io_error("the secret directory " + dir + " belongs to user " +
                    std::to_string(st.st_uid) + ", not to this user (" +
                    std::to_string(::getuid()) + ")");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return io_error("the secret directory " + dir + " has mode " + mode +
                    ": others may reach it (it must be 0700)");
  }
  return status::ok();
}

} // namespace

std::string default_secret_dir() { return dtrain_home() + "/secrets"; }

result<node_secret> node_secret::create(const std::string& dir, const std::string& name) {
  // $DTRAIN_HOME itself may not exist yet.
  if (::mkdir(parent_of(dir).c_str(), 0700) != 0 && errno != EEXIST)
    return os_error("cannot create", parent_of(dir), errno);
  DTRAIN_RETURN_IF_ERROR(check_private_directory(dir));
  node_secret s;
  s.value_ = security::random_hex(32);
  s.path_ = dir + "/" + name + ".secret";
  ::unlink(s.path_.c_str());  // a stale file of an earlier process of that name
  const int fd = ::open(s.path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    s.path_.clear();
    return os_error("cannot create the secret file", dir + "/" + name + ".secret", err);
  }
  status written = write_all(fd, s.value_.data(), s.value_.size(), s.path_);
  ::close(fd);
  if (!written)
    return written;
  return s;
}

node_secret::node_secret(node_secret&& other) noexcept
  : path_(std::move(other.path_)), value_(std::move(other.value_)) {
  other.path_.clear();
}

node_secret& node_secret::operator=(node_secret&& other) noexcept {
  if (this != &other) {
    if (!path_.empty())
      ::unlink(path_.c_str());
    path_ = std::move(other.path_);
    value_ = std::move(other.value_);
    other.path_.clear();
  }
  return *this;
}

node_secret::~node_secret() {
  if (!path_.empty())
    ::unlink(path_.c_str());
}

result<std::string> read_node_secret(const std::string& path) {
  if (path.empty())
    return invalid_argument(std::string(same_user_refusal) +
                            " (the node advertises no secret file)");
  // The path comes from the node's registration, i.e. from the peer: only
  // a file that is a node secret is read and used as a MAC key, never
  // another of this user's files (a private key).
  const std::string name = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  const std::string prefix = "node-", suffix = ".secret";
  bool named_as_secret = name.size() > prefix.size() + suffix.size() &&
                         name.compare(0, prefix.size(), prefix) == 0 &&
                         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  for (size_t i = prefix.size(); named_as_secret && i < name.size() - suffix.size(); ++i)
    named_as_secret = name[i] >= '0' && name[i] <= '9';
  if (!named_as_secret)
    return invalid_argument(std::string(same_user_refusal) + " (its secret file " + path +
                            " is not named like a node secret, node-PID.secret; not read)");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return invalid_argument(std::string(same_user_refusal) + " (cannot read its secret file " +
                            path + ": " + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0) {
    ::close(fd);
    return invalid_argument(std::string(same_user_refusal) + " (its secret file " + path +
                            " is not a regular file of this user closed to others; not read)");
  }
  char buffer[256];
  ssize_t n;
  do {
    n = ::read(fd, buffer, sizeof buffer);
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (n <= 0)
    return invalid_argument(std::string(same_user_refusal) + " (cannot read its secret file " +
                            path + ": " + (n < 0 ? std::strerror(err) : "empty") + ")");
  std::string secret(buffer, static_cast<size_t>(n));
  bool hex = secret.size() == 64;
  for (char c : secret)
    hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!hex)
    return invalid_argument(std::string(same_user_refusal) + " (its secret file " + path +
                            " does not hold a node secret; not used)");
  return secret;
}

std::string plugin_mac_message(const std::string& challenge, const std::string& subject,
                               const std::string& node_name, const std::string& secret_file,
                               const std::string& node_id) {
  std::string out = "dtrain-plugin-mac-v1\n";
  for (const std::string* part : {&challenge, &subject, &node_name, &secret_file, &node_id})
    out += std::to_string(part->size()) + ":" + *part + "\n";
  return out;
}

std::string plugin_mac(const std::string& secret, const std::string& message) {
  return security::hmac_sha256_hex(secret, message);
}

} // namespace dtrain::actors
