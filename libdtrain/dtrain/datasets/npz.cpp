#include "dtrain/datasets/npz.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>

namespace dtrain::data::npy_detail {

namespace {

constexpr uint32_t end_signature = 0x06054b50;
constexpr uint32_t zip64_end_signature = 0x06064b50;
constexpr uint32_t zip64_locator_signature = 0x07064b50;
constexpr uint32_t central_signature = 0x02014b50;
constexpr uint32_t local_signature = 0x04034b50;
constexpr size_t end_size = 22, central_size = 46, local_size = 30;
constexpr uint32_t escape32 = 0xffffffffu;

uint64_t little(const unsigned char* p, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i)
    value = value << 8 | p[i];
  return value;
}

// Where the central directory is and how many entries it has.
struct directory {
  uint64_t offset = 0, size = 0, entries = 0;
};

// One central directory entry, zip64 sizes resolved.
struct entry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, uncompressed = 0, local_offset = 0;
};

result<directory> find_directory(const byte_view& zip, const std::string& path) {
  auto damaged = [&](const std::string& why) {
    return corrupt_data(path + ": not a readable .npz (zip) archive: " + why);
  };
  if (zip.size < end_size)
    return damaged("too short for a zip end record");
  // The end record sits in the last 22 bytes plus at most a 64 KiB comment.
  size_t lowest = zip.size > end_size + 0xffff ? zip.size - end_size - 0xffff : 0;
  size_t at = zip.size - end_size + 1;
  do {
    --at;
  } while (at > lowest && little(zip.data + at, 4) != end_signature);
  if (little(zip.data + at, 4) != end_signature)
    return damaged("no end-of-central-directory record");
  const unsigned char* end = zip.data + at;
  directory dir{little(end + 16, 4), little(end + 12, 4), little(end + 10, 2)};
  bool zip64 = dir.offset == escape32 || dir.size == escape32 || dir.entries == 0xffff;
  if (zip64 && at >= 20 && little(zip.data + at - 20, 4) == zip64_locator_signature) {
    uint64_t record = little(zip.data + at - 20 + 8, 8);
    if (record > zip.size || zip.size - record < 56 ||
        little(zip.data + record, 4) != zip64_end_signature)
      return damaged("bad zip64 end record");
    const unsigned char* r = zip.data + record;
    dir = directory{little(r + 48, 8), little(r + 40, 8), little(r + 32, 8)};
  }
  if (dir.offset > zip.size || dir.size > zip.size - dir.offset)
    return damaged("the central directory lies past the end of the file");
  return dir;
}

// Reads the zip64 extra field (id 1) for the sizes and offset that the
// fixed fields could not hold.
void read_zip64_extra(const unsigned char* extra, size_t length, entry& e) {
  for (size_t p = 0; p + 4 <= length;) {
    uint64_t id = little(extra + p, 2), size = little(extra + p + 2, 2);
    const unsigned char* field = extra + p + 4;
    if (p + 4 + size > length)
      return;
    if (id == 1) {
      size_t at = 0;
      for (uint64_t* value : {&e.uncompressed, &e.compressed, &e.local_offset})
        if (*value == escape32 && at + 8 <= size) {
          *value = little(field + at, 8);
          at += 8;
        }
    }
    p += 4 + size;
  }
}

result<std::vector<entry>> read_entries(const byte_view& zip, const directory& dir,
                                        const std::string& path) {
  std::vector<entry> entries;
  const unsigned char* p = zip.data + dir.offset;
  const unsigned char* end = p + dir.size;
  while (static_cast<size_t>(end - p) >= central_size && little(p, 4) == central_signature) {
    entry e;
    e.flags = static_cast<uint16_t>(little(p + 8, 2));
    e.method = static_cast<uint16_t>(little(p + 10, 2));
    e.crc = static_cast<uint32_t>(little(p + 16, 4));
    e.compressed = little(p + 20, 4);
    e.uncompressed = little(p + 24, 4);
    e.local_offset = little(p + 42, 4);
    const size_t name = little(p + 28, 2), extra = little(p + 30, 2), comment = little(p + 32, 2);
    if (static_cast<size_t>(end - p) < central_size + name + extra + comment)
      return corrupt_data(path + ": .npz central directory entry " +
                          std::to_string(entries.size() + 1) + " runs past its end");
    e.name.assign(reinterpret_cast<const char*>(p + central_size), name);
    read_zip64_extra(p + central_size + name, extra, e);
    entries.push_back(std::move(e));
    p += central_size + name + extra + comment;
  }
  return entries;
}

std::string array_list(const std::vector<entry>& entries) {
  std::string out;
  for (const entry& e : entries) {
    std::string name = e.name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    out += (out.empty() ? "" : ", ") + name;
  }
  return out.empty() ? "none" : out;
}

result<byte_view> inflate_member(const unsigned char* data, const entry& e,
                                 const std::string& what) {
  if (e.uncompressed > std::numeric_limits<size_t>::max() / 2)
    return corrupt_data(what + ": deflated member claims " + std::to_string(e.uncompressed) +
                        " bytes");
  // Deflate packs at most 1032:1: a larger claim is damage, refused before
  // the buffer it would size is allocated.
  if (e.uncompressed / 1032 > e.compressed)
    return corrupt_data(what + ": deflated member claims " + std::to_string(e.uncompressed) +
                        " bytes from " + std::to_string(e.compressed) +
                        " compressed (deflate packs at most 1032:1)");
  std::shared_ptr<unsigned char[]> out;
  try {
    out.reset(new unsigned char[std::max<uint64_t>(e.uncompressed, 1)]);
  } catch (const std::bad_alloc&) {
    return resource_exhausted(what + ": cannot hold the " + std::to_string(e.uncompressed) +
                              " inflated bytes in memory");
  }
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK)
    return corrupt_data(what + ": zlib cannot start inflating");
  uint64_t in_left = e.compressed, out_done = 0;
  int rc = Z_OK;
  const unsigned char* in = data;
  constexpr uint64_t chunk = uint64_t{1} << 30;  // zlib counts in 32 bits
  while (rc == Z_OK) {
    if (z.avail_in == 0 && in_left > 0) {
      z.next_in = const_cast<unsigned char*>(in);
      z.avail_in = static_cast<uInt>(std::min(in_left, chunk));
      in += z.avail_in;
      in_left -= z.avail_in;
    }
    z.next_out = out.get() + out_done;
    z.avail_out = static_cast<uInt>(std::min(e.uncompressed - out_done, chunk));
    uInt before = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);  // Z_BUF_ERROR: input used up or output full
    out_done += before - z.avail_out;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || out_done != e.uncompressed)
    return corrupt_data(what + ": deflated data is damaged (" +
                        (z.msg ? std::string(z.msg) : "cut short or too long") + ")");
  uint32_t crc = 0;
  for (uint64_t done = 0; done < out_done; done += chunk)
    crc = static_cast<uint32_t>(crc32(crc, out.get() + done,
                                      static_cast<uInt>(std::min(chunk, out_done - done))));
  if (crc != e.crc)
    return corrupt_data(what + ": CRC-32 of the inflated data does not match the archive's");
  const unsigned char* bytes = out.get();
  return byte_view{std::move(out), bytes, static_cast<size_t>(out_done)};
}

} // namespace

result<byte_view> npz_member(const byte_view& archive, const std::string& member,
                             const std::string& path) {
  auto dir = find_directory(archive, path);
  if (!dir)
    return dir.error();
  auto entries = read_entries(archive, *dir, path);
  if (!entries)
    return entries.error();
  auto found = std::find_if(entries->begin(), entries->end(),
                            [&](const entry& e) { return e.name == member; });
  std::string array = member.substr(0, member.size() - 4);
  if (found == entries->end())
    return not_found(path + ": has no array '" + array + "' (arrays: " + array_list(*entries) +
                     ")");
  const std::string what = path + " (array '" + array + "')";
  if (found->flags & 1)
    return invalid_argument(what + ": encrypted members are not supported");
  const uint64_t at = found->local_offset;
  if (at > archive.size || archive.size - at < local_size ||
      little(archive.data + at, 4) != local_signature)
    return corrupt_data(what + ": no local header at offset " + std::to_string(at));
  const uint64_t data = at + local_size + little(archive.data + at + 26, 2) +
                        little(archive.data + at + 28, 2);
  if (data > archive.size || found->compressed > archive.size - data)
    return corrupt_data(what + ": truncated: member data runs past the end of the file");
  if (found->method == 8)
    return inflate_member(archive.data + data, *found, what);
  if (found->method != 0)
    return invalid_argument(what + ": compression method " + std::to_string(found->method) +
                            " is not supported (stored and deflate are)");
  if (found->compressed != found->uncompressed)
    return corrupt_data(what + ": stored member has two sizes");
  return byte_view{archive.owner, archive.data + data, static_cast<size_t>(found->compressed)};
}

} // namespace dtrain::data::npy_detail
