#include "dtrain/datasets/npy_format.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "dtrain/core/check.hpp"
#include "dtrain/core/files.hpp"
#include "dtrain/core/mapped_file.hpp"

namespace dtrain::data::npy_detail {

namespace {

constexpr char magic[] = "\x93NUMPY";
constexpr size_t magic_size = 6;

uint32_t little_u32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// The text after `'key':` in a header dict, or npos.
size_t value_of(const std::string& header, const char* key) {
  for (const char quote : {'\'', '"'}) {
    std::string quoted = std::string(1, quote) + key + quote;
    size_t at = header.find(quoted);
    if (at == std::string::npos)
      continue;
    at = header.find(':', at + quoted.size());
    if (at == std::string::npos)
      return at;
    at = header.find_first_not_of(" \t", at + 1);
    return at;
  }
  return std::string::npos;
}

status parse_dtype(const std::string& descr, dtype& type, const std::string& what) {
  auto refuse = [&](const std::string& why) {
    return corrupt_data(what + ": dtype '" + descr + "' is " + why);
  };
  if (descr.size() < 3)
    return refuse("not a dtype the reader knows");
  const char order = descr[0], kind = descr[1];
  int size = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || size > 1000)
      return refuse("not a dtype the reader knows");
    size = size * 10 + (descr[i] - '0');
  }
  if (kind == 'c')
    return refuse("complex: not supported (store real numbers)");
  if (kind == 'O')
    return refuse("object: not supported (save a numeric array)");
  bool known = (kind == 'f' && (size == 2 || size == 4 || size == 8)) ||
               ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
               (kind == 'b' && size == 1);
  if (!known)
    return refuse("not supported (f2 f4 f8, i1-i8, u1-u8 and b1 are)");
  if (order == '>' && size > 1)
    return refuse("big-endian: not supported (save with dtype.newbyteorder('<'))");
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return refuse("not a dtype the reader knows");
  type = dtype{kind, size};
  return status::ok();
}

status parse_shape(const std::string& header, size_t at, std::vector<int64_t>& shape,
                   const std::string& what) {
  if (at == std::string::npos || header[at] != '(')
    return corrupt_data(what + ": header has no 'shape' tuple: " + header);
  size_t close = header.find(')', at);
  if (close == std::string::npos)
    return corrupt_data(what + ": header's shape tuple is not closed: " + header);
  for (size_t p = at + 1; p < close;) {
    if (header[p] == ' ' || header[p] == ',') {
      ++p;
      continue;
    }
    int64_t dim = 0;
    size_t digits = 0;
    for (; p < close && header[p] >= '0' && header[p] <= '9'; ++p, ++digits) {
      if (dim > (std::numeric_limits<int64_t>::max() - 9) / 10)
        return corrupt_data(what + ": a dimension of the shape is too large: " + header);
      dim = dim * 10 + (header[p] - '0');
    }
    if (digits == 0)
      return corrupt_data(what + ": header's shape is not a tuple of integers: " + header);
    shape.push_back(dim);
  }
  return status::ok();
}

// The header dict: descr, fortran_order, shape.
status parse_header(const std::string& header, npy_array& array, const std::string& what) {
  size_t descr = value_of(header, "descr");
  if (descr == std::string::npos)
    return corrupt_data(what + ": header has no 'descr': " + header);
  if (header[descr] == '[')
    return corrupt_data(what + ": structured dtypes are not supported: " + header);
  const char quote = header[descr];
  size_t end = header.find(quote, descr + 1);
  if ((quote != '\'' && quote != '"') || end == std::string::npos)
    return corrupt_data(what + ": header's 'descr' is not a string: " + header);
  status s = parse_dtype(header.substr(descr + 1, end - descr - 1), array.type, what);
  if (!s)
    return s;
  size_t fortran = value_of(header, "fortran_order");
  if (fortran == std::string::npos)
    return corrupt_data(what + ": header has no 'fortran_order': " + header);
  if (header.compare(fortran, 4, "True") == 0)
    return corrupt_data(what + ": fortran_order is True: only C-order arrays are read "
                               "(save np.ascontiguousarray(a))");
  s = parse_shape(header, value_of(header, "shape"), array.shape, what);
  if (!s)
    return s;
  if (array.shape.empty())
    return corrupt_data(what + ": a 0-d array has no sample axis (shape ())");
  return status::ok();
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + ")";
}

// IEEE half to float, subnormals, infinities and NaN included.
float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu, bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    exponent = 113;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

template <class T>
void convert(const unsigned char* src, int64_t count, float* out) {
  for (int64_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, src + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
    out[i] = static_cast<float>(value);
  }
}

} // namespace

result<byte_view> map_file(const std::string& path) {
  DTRAIN_ASSIGN_OR_RETURN(mapped_file file, mapped_file::open(path));
  if (file.size == 0)
    return corrupt_data(path + ": empty file");
  return byte_view{file.owner, file.data, file.size};
}

result<npy_array> parse_npy(byte_view file, const std::string& what) {
  const unsigned char* p = file.data;
  if (file.size < magic_size + 2 || std::memcmp(p, magic, magic_size) != 0)
    return corrupt_data(what + ": not an .npy file (bad magic string; expected \\x93NUMPY)");
  const int major = p[magic_size];
  if (major < 1 || major > 3)
    return corrupt_data(what + ": .npy format version " + std::to_string(major) +
                        " is not one of 1, 2, 3");
  const size_t prefix = major == 1 ? 10 : 12;
  if (file.size < prefix)
    return corrupt_data(what + ": file cut short inside the .npy header");
  const size_t header_size = major == 1 ? size_t{p[8]} | size_t{p[9]} << 8 : little_u32(p + 8);
  if (header_size > file.size - prefix)
    return corrupt_data(what + ": file cut short inside the .npy header (" +
                        std::to_string(header_size) + " header bytes promised, " +
                        std::to_string(file.size - prefix) + " there)");
  npy_array array;
  array.what = what;
  std::string header(reinterpret_cast<const char*>(p + prefix), header_size);
  status s = parse_header(header, array, what);
  if (!s)
    return s;
  for (size_t axis = 1; axis < array.shape.size(); ++axis) {
    int64_t dim = array.shape[axis];
    if (dim != 0 && array.row_elements > std::numeric_limits<int64_t>::max() / dim)
      return corrupt_data(what + ": shape " + shape_text(array.shape) + " is too large");
    array.row_elements *= dim;
  }
  if (array.row_elements > std::numeric_limits<int64_t>::max() / 8)
    return corrupt_data(what + ": shape " + shape_text(array.shape) + " is too large");
  const size_t available = file.size - prefix - header_size;
  const size_t row_bytes = static_cast<size_t>(array.row_elements) * static_cast<size_t>(array.type.size);
  if (row_bytes != 0 && static_cast<size_t>(array.rows()) > available / row_bytes + 1)
    return corrupt_data(what + ": truncated: the header promises shape " +
                        shape_text(array.shape) + ", more than the " + std::to_string(available) +
                        " data bytes there");
  const size_t promised = row_bytes * static_cast<size_t>(array.rows());
  if (promised != available)
    return corrupt_data(what + ": " + (promised > available ? "truncated: " : "") + "data is " +
                        std::to_string(available) + " bytes, the header promises " +
                        std::to_string(promised) + " (shape " + shape_text(array.shape) +
                        ", " + std::to_string(array.type.size) + "-byte elements)");
  array.data = byte_view{file.owner, p + prefix + header_size, available};
  return array;
}

void to_float(const unsigned char* src, dtype type, int64_t count, float* out) {
  switch (type.kind) {
    case 'f':
      if (type.size == 4)
        return convert<float>(src, count, out);
      if (type.size == 8)
        return convert<double>(src, count, out);
      for (int64_t i = 0; i < count; ++i)
        out[i] = half_to_float(static_cast<uint16_t>(src[2 * i] | src[2 * i + 1] << 8));
      return;
    case 'i':
      if (type.size == 1) return convert<int8_t>(src, count, out);
      if (type.size == 2) return convert<int16_t>(src, count, out);
      if (type.size == 4) return convert<int32_t>(src, count, out);
      return convert<int64_t>(src, count, out);
    case 'u':
      if (type.size == 1) return convert<uint8_t>(src, count, out);
      if (type.size == 2) return convert<uint16_t>(src, count, out);
      if (type.size == 4) return convert<uint32_t>(src, count, out);
      return convert<uint64_t>(src, count, out);
    default:  // 'b'
      for (int64_t i = 0; i < count; ++i)
        out[i] = src[i] != 0 ? 1.0f : 0.0f;
  }
}

} // namespace dtrain::data::npy_detail
