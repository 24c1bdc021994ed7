// A configuration as typed JSON (space.hpp: to_json, config_from_json).
// The reader accepts what to_json writes and any flat JSON object of
// numbers, strings and booleans (whitespace, \u escapes with surrogate
// pairs); nested values and null have no hyperparameter type and are
// refused.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "dtrain/core/check.hpp"
#include "dtrain/core/json.hpp"
#include "dtrain/tune/space.hpp"

namespace dtrain::tune {

std::string to_json(const config& c) {
  std::string out = "{";
  for (const auto& [name, v] : c) {
    if (out.size() > 1)
      out += ", ";
    json::append_string(out, name);
    out += ": ";
    if (const auto* i = std::get_if<int64_t>(&v))
      out += std::to_string(*i);
    else if (const auto* d = std::get_if<double>(&v))
      out += json::number(*d);
    else if (const auto* b = std::get_if<bool>(&v))
      out += *b ? "true" : "false";
    else
      json::append_string(out, std::get<std::string>(v));
  }
  return out + "}";
}

namespace {

/// A cursor over the text; every error names the offset.
class reader {
public:
  explicit reader(const std::string& text) : text_(text) {}

  status fail(const std::string& expected) const {
    std::string found = at_end() ? "the end of the text" : "'" + text_.substr(pos_, 1) + "'";
    return corrupt_data("configuration JSON at offset " + std::to_string(pos_) + ": expected " +
                        expected + ", found " + found);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_space() {
    while (!at_end() && std::strchr(" \t\r\n", text_[pos_]) != nullptr)
      ++pos_;
  }
  bool consume(char c) {
    skip_space();
    if (peek() != c)
      return false;
    ++pos_;
    return true;
  }
  bool consume_word(const char* word) {
    const size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0)
      return false;
    pos_ += n;
    return true;
  }

  result<std::string> string_literal();
  result<value> scalar();

private:
  status unicode_escape(std::string& out);
  result<unsigned> hex4();

  const std::string& text_;
  size_t pos_ = 0;
};

void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

result<unsigned> reader::hex4() {
  unsigned cp = 0;
  const char* first = text_.data() + pos_;
  const char* last = text_.data() + std::min(text_.size(), pos_ + 4);
  const auto [end, ec] = std::from_chars(first, last, cp, 16);
  if (ec != std::errc() || end != first + 4)
    return fail("4 hex digits");
  pos_ += 4;
  return cp;
}

status reader::unicode_escape(std::string& out) {
  DTRAIN_ASSIGN_OR_RETURN(unsigned cp, hex4());
  if (cp >= 0xD800 && cp < 0xDC00) {
    if (!consume_word("\\u"))
      return fail("the low half of a surrogate pair");
    DTRAIN_ASSIGN_OR_RETURN(unsigned low, hex4());
    if (low < 0xDC00 || low > 0xDFFF)
      return fail("the low half of a surrogate pair");
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  } else if (cp >= 0xDC00 && cp < 0xE000) {
    return fail("a code point, not a lone low surrogate");
  }
  append_utf8(out, cp);
  return status::ok();
}

result<std::string> reader::string_literal() {
  if (!consume('"'))
    return fail("'\"'");
  std::string out;
  for (;;) {
    if (at_end())
      return fail("the closing '\"'");
    const char c = text_[pos_++];
    if (c == '"')
      return out;
    if (static_cast<unsigned char>(c) < 0x20) {
      --pos_;
      return fail("an escaped control character");
    }
    if (c != '\\') {
      out += c;
      continue;
    }
    const char e = peek();
    ++pos_;
    switch (e) {
    case '"': out += '"'; break;
    case '\\': out += '\\'; break;
    case '/': out += '/'; break;
    case 'b': out += '\b'; break;
    case 'f': out += '\f'; break;
    case 'n': out += '\n'; break;
    case 'r': out += '\r'; break;
    case 't': out += '\t'; break;
    case 'u': DTRAIN_RETURN_IF_ERROR(unicode_escape(out)); break;
    default: --pos_; return fail("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
    }
  }
}

result<value> reader::scalar() {
  skip_space();
  if (peek() == '"') {
    DTRAIN_ASSIGN_OR_RETURN(std::string s, string_literal());
    return value{std::move(s)};
  }
  if (consume_word("true"))
    return value{true};
  if (consume_word("false"))
    return value{false};
  if (consume_word("NaN"))
    return value{std::numeric_limits<double>::quiet_NaN()};
  if (consume_word("Infinity"))
    return value{std::numeric_limits<double>::infinity()};
  if (consume_word("-Infinity"))
    return value{-std::numeric_limits<double>::infinity()};
  const size_t start = pos_;
  while (!at_end() && std::strchr("+-0123456789.eE", text_[pos_]) != nullptr)
    ++pos_;
  const std::string number = text_.substr(start, pos_ - start);
  pos_ = start;
  if (number.empty())
    return fail("a number, a string, true or false");
  const char* first = number.c_str();
  const char* last = first + number.size();
  if (number.find_first_of(".eE") == std::string::npos) {
    int64_t i = 0;
    const auto [end, ec] = std::from_chars(first, last, i);
    if (ec == std::errc::result_out_of_range)
      return fail("an integer within int64");
    if (ec != std::errc() || end != last)
      return fail("a number");
    pos_ += number.size();
    return value{i};
  }
  // strtod, not from_chars: it reads denormals and signals only overflow
  // and underflow to zero, which JSON written by to_json never holds.
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(first, &end);
  if (end != last || (errno == ERANGE && (std::isinf(d) || d == 0)))
    return fail("a number that fits a double");
  pos_ += number.size();
  return value{d};
}

} // namespace

result<config> config_from_json(const std::string& text) {
  reader r(text);
  config c;
  if (!r.consume('{'))
    return r.fail("'{'");
  if (!r.consume('}')) {
    do {
      DTRAIN_ASSIGN_OR_RETURN(std::string name, r.string_literal());
      if (!r.consume(':'))
        return r.fail("':'");
      DTRAIN_ASSIGN_OR_RETURN(value v, r.scalar());
      if (!c.emplace(std::move(name), std::move(v)).second)
        return r.fail("each name once");
    } while (r.consume(','));
    if (!r.consume('}'))
      return r.fail("',' or '}'");
  }
  r.skip_space();
  if (!r.at_end())
    return r.fail("nothing after the object");
  return c;
}

} // namespace dtrain::tune
