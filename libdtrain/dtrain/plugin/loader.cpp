#include "dtrain/plugin/loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/plugin/plugin.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::plugin {

namespace {

// What one library registered. Libraries are never unloaded (operators of
// running replicas may still execute their code), so neither is this.
struct plugin_entry {
  loaded_plugin info;
  std::map<std::string, train::operator_factory> factories;
};

// The process-wide table: hash -> what its library registered, or why its
// init failed (an init that ran once is not run again).
struct plugin_table {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const plugin_entry>> loaded;
  std::map<std::string, status> failed;
};

plugin_table& table() {
  static plugin_table* t = new plugin_table();  // never destroyed: see plugin_entry
  return *t;
}

// Records what a library's init registers; errors wait for the end of init
// (add_operator returns nothing).
class recording_registrar final : public registrar {
public:
  void add_operator(const std::string& name, train::operator_factory factory) override {
    if (name.empty())
      problems_.push_back("an operator with an empty name");
    else if (!factory)
      problems_.push_back("operator '" + name + "' without a factory");
    else if (!factories_.emplace(name, std::move(factory)).second)
      problems_.push_back("operator '" + name + "' twice");
  }
  std::map<std::string, train::operator_factory>& factories() { return factories_; }
  const std::vector<std::string>& problems() const { return problems_; }

private:
  std::map<std::string, train::operator_factory> factories_;
  std::vector<std::string> problems_;
};

result<std::string> read_whole_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return os_error("cannot open plugin", path, errno);
  std::string bytes;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0)
    bytes.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return os_error("cannot read plugin", path, err);
    }
    if (n == 0)
      break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return bytes;
}

} // namespace

std::string content_hash(const void* data, size_t size) {
  return security::sha256_hex(data, size);
}

namespace {

// The tag after the first marker that carries one (the marker's own text
// may appear elsewhere too, e.g. in a library that embeds this loader).
result<std::string> find_abi_tag(std::string_view bytes, const std::string& path) {
  const std::string_view marker = DTRAIN_PLUGIN_ABI_MARKER;
  for (size_t at = bytes.find(marker); at != std::string_view::npos;
       at = bytes.find(marker, at + 1)) {
    // A tag is shorter than 256 bytes: its NUL is looked for there only
    // (to the end of the file, a file of markers took minutes per MB).
    const std::string_view window = bytes.substr(at + marker.size(), 256);
    const size_t end = window.find('\0');
    if (end == std::string_view::npos)
      continue;
    std::string_view tag = window.substr(0, end);
    if (tag.substr(0, 7) == "dtrain ")
      return std::string(tag);
  }
  return not_found("'" + path + "' is not a dtrain plugin (no DTRAIN_PLUGIN ABI tag in it)");
}

// "0.1.0" of "dtrain 0.1.0; gxx-abi ...".
std::string version_of(const std::string& tag) {
  const size_t end = tag.find(';');
  return tag.substr(7, end == std::string::npos ? std::string::npos : end - 7);
}

// The library's tag is this process's (plugin.hpp: why they must match).
status check_abi(std::string_view bytes, const std::string& path) {
  DTRAIN_ASSIGN_OR_RETURN(std::string tag, find_abi_tag(bytes, path));
  const std::string own = abi_tag();
  if (tag != own)
    return invalid_argument("plugin '" + path + "' was built against dtrain " + version_of(tag) +
                            " (" + tag + "), this process runs dtrain " + version_of(own) +
                            " (" + own + "): rebuild it against this dtrain");
  return status::ok();
}

bool is_content_hash(const std::string& s) {
  if (s.size() != 64)
    return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

// dlopen()s `path` and runs its init; the table's lock is held by the
// caller (a library's init runs once per process and hash). `init_ran`
// says whether the library's code ran (then a failure is final).
result<std::shared_ptr<const plugin_entry>> open_and_init(const std::string& path,
                                                         const std::string& hash,
                                                         bool& init_ran) {
  init_ran = false;
  const std::string what = "plugin '" + path + "'";
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return invalid_argument(what + " cannot be loaded: " + (why ? why : "dlopen failed"));
  }
  using init_function = void (*)(registrar&);
  ::dlerror();
  auto init = reinterpret_cast<init_function>(::dlsym(handle, "dtrain_plugin_init_v1"));
  if (init == nullptr) {
    const char* why = ::dlerror();
    return invalid_argument(what + " has no dtrain_plugin_init_v1 (was it written with "
                            "DTRAIN_PLUGIN?): " + (why ? why : "symbol not found"));
  }
  recording_registrar r;
  init_ran = true;
  try {
    init(r);
  } catch (const std::exception& e) {
    return invalid_argument(what + ": its DTRAIN_PLUGIN function threw: " + e.what());
  } catch (...) {
    return invalid_argument(what + ": its DTRAIN_PLUGIN function threw a non-standard exception");
  }
  if (!r.problems().empty()) {
    std::string list;
    for (const auto& p : r.problems())
      list += (list.empty() ? "" : "; ") + p;
    return invalid_argument(what + " registers " + list);
  }
  if (r.factories().empty())
    return invalid_argument(what + " registers no operators");
  auto entry = std::make_shared<plugin_entry>();
  entry->info.hash = hash;
  entry->info.path = path;
  for (const auto& [name, factory] : r.factories())
    entry->info.operators.push_back(name);
  entry->factories = std::move(r.factories());
  return std::shared_ptr<const plugin_entry>(std::move(entry));
}

std::shared_ptr<const plugin_entry> lookup(const std::string& hash) {
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.loaded.find(hash);
  return it == t.loaded.end() ? nullptr : it->second;
}

} // namespace

std::string abi_tag() { return DTRAIN_ABI_TAG; }

result<std::string> read_abi_tag(const std::string& path) {
  DTRAIN_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(path));
  return find_abi_tag(bytes, path);
}

result<loaded_plugin> load_plugin(const std::string& path) {
  DTRAIN_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(path));
  const std::string hash = content_hash(bytes.data(), bytes.size());
  if (auto known = lookup(hash))
    return known->info;
  // The tag is checked before dlopen: a library of another ABI must not
  // run any code here, not even its static initializers.
  DTRAIN_RETURN_IF_ERROR(check_abi(bytes, path));
  auto& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (auto it = t.loaded.find(hash); it != t.loaded.end())
    return it->second->info;  // loaded by another thread meanwhile
  if (auto it = t.failed.find(hash); it != t.failed.end())
    return it->second;
  bool init_ran = false;
  auto entry = open_and_init(path, hash, init_ran);
  if (!entry) {
    // A library whose init ran stays mapped (dlclose could run code that
    // init left half done); remember why, so init never runs twice.
    if (init_ran)
      t.failed.emplace(hash, entry.error());
    return entry.error();
  }
  t.loaded.emplace(hash, *entry);
  return (*entry)->info;
}

std::string default_plugin_dir() { return dtrain_home() + "/plugins"; }

result<loaded_plugin> install_plugin(const std::string& dir, const std::string& hash,
                                     const std::vector<char>& bytes) {
  if (!is_content_hash(hash))
    return invalid_argument("plugin hash '" + hash.substr(0, 80) +
                            "' is not a SHA-256 in lowercase hex");
  const std::string actual = content_hash(bytes.data(), bytes.size());
  if (actual != hash)
    return corrupt_data("plugin " + hash + ": the " + std::to_string(bytes.size()) +
                        " bytes received hash to " + actual);
  // A library this process would refuse is not kept either.
  const std::string path = dir + "/" + hash + ".so";
  DTRAIN_RETURN_IF_ERROR(check_abi(std::string_view(bytes.data(), bytes.size()), path));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return os_error("cannot create the plugin directory", dir, errno);
  // Between the hash check and dlopen() the file is named by its path: a
  // directory that someone else may write to (or a link to one) would let
  // them swap the library in that window and run code in this process.
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    return os_error("cannot inspect the plugin directory", dir, errno);
  if (!S_ISDIR(st.st_mode))
    return invalid_argument("the plugin directory " + dir +
                            " is not a directory (a symbolic link?); plugins are not installed");
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0)
    return invalid_argument("the plugin directory " + dir + " belongs to user " +
                            std::to_string(st.st_uid) + " with mode " +
                            std::to_string((st.st_mode >> 6) & 7) +
                            std::to_string((st.st_mode >> 3) & 7) + std::to_string(st.st_mode & 7) +
                            ": others could replace a library before it is loaded; it must be "
                            "this user's (" + std::to_string(::geteuid()) +
                            ") and writable by no one else");
  bool have_file = false;
  if (auto existing = read_whole_file(path))
    have_file = content_hash(existing->data(), existing->size()) == hash;
  if (!have_file)
    DTRAIN_RETURN_IF_ERROR(
        write_file_atomically(path, bytes.data(), bytes.size(), durability::file));
  DTRAIN_ASSIGN_OR_RETURN(loaded_plugin p, load_plugin(path));
  if (p.hash != hash)  // the file changed under us between the write and the load
    return corrupt_data("plugin " + hash + ": " + path + " now hashes to " + p.hash);
  return p;
}

result<loaded_plugin> find_plugin(const std::string& hash) {
  if (auto known = lookup(hash))
    return known->info;
  return not_found("plugin " + hash + " is not loaded in this process");
}

result<std::unique_ptr<train::training_operator>> make_operator(
    const std::string& name, const std::vector<std::string>& hashes) {
  std::string offered;
  for (const auto& hash : hashes) {
    auto entry = lookup(hash);
    if (!entry)
      return not_found("operator '" + name + "': plugin " + hash +
                       " is not loaded in this process");
    if (auto it = entry->factories.find(name); it != entry->factories.end()) {
      std::unique_ptr<train::training_operator> op;
      try {
        op = it->second();
      } catch (const std::exception& e) {
        return status(error_code::internal, "operator '" + name + "' of plugin '" +
                                                entry->info.path + "': its factory threw: " + e.what());
      }
      if (!op)
        return status(error_code::internal, "operator '" + name + "' of plugin '" +
                                                entry->info.path + "': its factory made nothing");
      return op;
    }
    offered += "; plugin '" + entry->info.path + "' offers";
    for (const auto& n : entry->info.operators)
      offered += " " + n;
  }
  auto builtin = train::make_operator(name);
  if (builtin || offered.empty())
    return builtin;
  return status(builtin.error().code(), builtin.error().message() + offered);
}

} // namespace dtrain::plugin
