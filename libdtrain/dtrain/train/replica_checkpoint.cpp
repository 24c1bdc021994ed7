// The replica's simple checkpoint file (the sharded Cap'n Proto checkpoints
// of a later issue replace it):
//   "DTRNCKP1", u64 epoch, i64 optimizer steps, u64 parameter count, floats,
//   u32 state buffers, each (u32 name length, name, floats of parameter
//   count), u64 operator-state length, bytes, u64 FNV-1a of all before.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "dtrain/core/check.hpp"
#include "dtrain/train/replica.hpp"

namespace dtrain::train {

namespace {

constexpr char magic[8] = {'D', 'T', 'R', 'N', 'C', 'K', 'P', '1'};

uint64_t fnv1a(const char* data, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; ++i)
    h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ULL;
  return h;
}

template <class T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void put_floats(std::string& out, const tensor& t) {
  auto v = t.to_vector();
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Reads fields off a byte string, failing (not crashing) past its end.
struct reader {
  const std::string& data;
  size_t at = 0;
  template <class T>
  bool get(T& v) {
    if (at + sizeof v > data.size())
      return false;
    std::memcpy(&v, data.data() + at, sizeof v);
    at += sizeof v;
    return true;
  }
  bool get_floats(tensor& into, uint64_t count) {
    if (at + count * sizeof(float) > data.size() || static_cast<int64_t>(count) != into.numel())
      return false;
    tensor host = tensor::empty({static_cast<int64_t>(count)});
    std::memcpy(host.data(), data.data() + at, count * sizeof(float));
    into.copy_from(host);
    at += count * sizeof(float);
    return true;
  }
};

status write_atomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return io_error("checkpoint " + path + ": cannot create " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return io_error("checkpoint " + path + ": write failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  // errno is read before close() and unlink() can overwrite it.
  int err = ::fsync(fd) == 0 ? 0 : errno;
  ::close(fd);
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0)
    err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return io_error("checkpoint " + path + ": cannot commit: " + std::strerror(err));
  }
  return status::ok();
}

// The file's bytes up to and including the checksum. The optimizer state
// is allocated first, so that a checkpoint taken before the first step
// still holds the (zero) state buffers restore() expects.
std::string encode(int64_t epoch, optim::optimizer& opt, const tensor& params,
                   const bytes& extra) {
  std::string out(magic, sizeof magic);
  put(out, static_cast<uint64_t>(epoch));
  put(out, static_cast<int64_t>(opt.steps()));
  put(out, static_cast<uint64_t>(params.numel()));
  put_floats(out, params);
  opt.allocate_state(params);
  auto state = opt.state_buffers();
  put(out, static_cast<uint32_t>(state.size()));
  for (auto& [name, buffer] : state) {
    put(out, static_cast<uint32_t>(name.size()));
    out += name;
    put_floats(out, *buffer);
  }
  put(out, static_cast<uint64_t>(extra.size()));
  out.append(extra.data(), extra.size());
  put(out, fnv1a(out.data(), out.size()));
  return out;
}

// A status as bytes for broadcasting: empty when ok, else the code's byte
// and the message.
bytes to_bytes(const status& s) {
  if (s.is_ok())
    return {};
  bytes out(1, static_cast<char>(s.code()));
  out.insert(out.end(), s.message().begin(), s.message().end());
  return out;
}

status from_bytes(const bytes& b) {
  if (b.empty())
    return status::ok();
  return status(static_cast<error_code>(b[0]), std::string(b.begin() + 1, b.end()));
}

} // namespace

status replica_runner::save(const std::string& path) {
  status written = status::ok();
  if (ctx_->rank() == 0)
    written = write_atomically(path, encode(epoch_, *parts_.optimizer, parameters(),
                                            op_->save_state()));
  // The chief's outcome, broadcast, is the barrier: nobody returns before
  // the file is complete, and a failed write fails every replica at once
  // instead of leaving the others waiting for a chief that gave up.
  DTRAIN_ASSIGN_OR_RETURN(bytes outcome, ctx_->broadcast(to_bytes(written), 0));
  return ctx_->rank() == 0 ? written : from_bytes(outcome);
}

status replica_runner::restore(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return not_found("checkpoint " + path + ": cannot open: " + std::strerror(errno));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto corrupt = [&](const std::string& what) { return corrupt_data("checkpoint " + path + ": " + what); };
  if (data.size() < sizeof magic + 8 || std::memcmp(data.data(), magic, sizeof magic) != 0)
    return corrupt("not a dtrain checkpoint (bad magic)");
  uint64_t stored;
  std::memcpy(&stored, data.data() + data.size() - 8, 8);
  if (fnv1a(data.data(), data.size() - 8) != stored)
    return corrupt("checksum mismatch (truncated or damaged)");
  reader r{data, sizeof magic};
  uint64_t epoch = 0, count = 0;
  int64_t steps = 0;
  if (!r.get(epoch) || !r.get(steps) || !r.get(count))
    return corrupt("truncated header");
  if (static_cast<int64_t>(count) != parameters().numel())
    return invalid_argument("checkpoint " + path + " holds " + std::to_string(count) +
                            " parameters, the model has " + std::to_string(parameters().numel()));
  if (!r.get_floats(parts_.model->parameters(), count))
    return corrupt("truncated parameters");
  parts_.optimizer->allocate_state(parameters());
  auto state = parts_.optimizer->state_buffers();
  uint32_t buffers = 0;
  if (!r.get(buffers) || buffers != state.size())
    return corrupt("optimizer state for another optimizer");
  for (auto& [name, buffer] : state) {
    uint32_t len = 0;
    if (!r.get(len) || r.at + len > data.size() || data.compare(r.at, len, name) != 0)
      return corrupt("optimizer state '" + name + "' missing");
    r.at += len;
    if (!r.get_floats(*buffer, count))
      return corrupt("truncated optimizer state '" + name + "'");
  }
  uint64_t extra_len = 0;
  if (!r.get(extra_len) || r.at + extra_len + 8 != data.size())
    return corrupt("bad operator state length");
  DTRAIN_RETURN_IF_ERROR(op_->load_state(bytes(data.begin() + r.at, data.begin() + r.at + extra_len)));
  parts_.optimizer->set_steps(steps);
  epoch_ = static_cast<int64_t>(epoch);
  return status::ok();
}

} // namespace dtrain::train
