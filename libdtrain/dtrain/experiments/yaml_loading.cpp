// Loading an experiment file's text into one YAML document
// (yaml_reading.hpp: load_document), around yaml-cpp 0.7's faults.
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "dtrain/experiments/yaml_reading.hpp"
#include "dtrain/core/utf8.hpp"

namespace dtrain::experiments::detail {

namespace {

// Where each document of a YAML stream starts; nothing else is kept.
class document_starts final : public YAML::EventHandler {
public:
  std::vector<YAML::Mark> starts;
  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// The number of documents in `yaml_text`. Not YAML::LoadAll: yaml-cpp 0.7
// (Debian 12's) never ends on a token no document can start with (", ",
// found by fuzz/experiment_yaml; yaml-cpp#1040): each round gives another
// empty document at the same place, until the memory runs out. A document
// that starts where the one before it did is that, a syntax error here.
size_t count_documents(const std::string& yaml_text) {
  std::istringstream in(yaml_text);
  YAML::Parser parser(in);
  document_starts h;
  while (parser.HandleNextDocument(h)) {
    const size_t n = h.starts.size();
    if (n >= 2 && h.starts[n - 1].pos == h.starts[n - 2].pos) {
      const YAML::Mark at = h.starts[n - 1];
      const size_t pos = static_cast<size_t>(std::max(at.pos, 0));
      const std::string what = pos < yaml_text.size() ? "'" + yaml_text.substr(pos, 1) + "'"
                                                      : "the end";
      throw YAML::ParserException(at, "unexpected " + what + ": no document starts with it");
    }
  }
  return h.starts.size();
}

// YAML allows no control character but tab and line breaks, and reads a
// carriage return as a line break; yaml-cpp 0.7 keeps them in scalars and
// writes them back unquoted, so that what to_yaml wrote read back to
// something else (found by fuzz/experiment_yaml: "name: \r " read as a
// name, written, read as none). Refused with the place, as a syntax error.
status check_characters(const std::string& yaml_text, const std::string& source_name) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < yaml_text.size(); ++i, ++column) {
    const auto c = static_cast<unsigned char>(yaml_text[i]);
    const bool crlf = c == '\r' && i + 1 < yaml_text.size() && yaml_text[i + 1] == '\n';
    if ((c < 0x20 && c != '\t' && c != '\n' && !crlf) || c == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "U+%04X", c);
      return invalid_argument(source_name + ":" + std::to_string(line) + ":" +
                              std::to_string(column) + ": YAML syntax error: control character " +
                              code + (c == '\r' ? " (a carriage return without a line feed)" : "") +
                              ": YAML allows none but tab and line breaks");
    }
    if (c == '\n')
      line += 1, column = 0;
  }
  // Nor bytes that are not UTF-8: yaml-cpp's emitter writes U+FFFD for
  // them, so the canonical YAML read back to other keys and values.
  const std::string valid = utf8::replace_invalid(yaml_text);
  if (valid != yaml_text) {
    const size_t at = static_cast<size_t>(
        std::mismatch(valid.begin(), valid.end(), yaml_text.begin()).first - valid.begin());
    const size_t line_start = yaml_text.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t bad_line = 1 + static_cast<size_t>(std::count(
        yaml_text.begin(), yaml_text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const size_t bad_column = line_start == std::string::npos || at == 0 ? at + 1 : at - line_start;
    return invalid_argument(source_name + ":" + std::to_string(bad_line) + ":" +
                            std::to_string(bad_column) +
                            ": YAML syntax error: bytes that are not UTF-8 (YAML text is Unicode)");
  }
  return status::ok();
}

} // namespace

result<YAML::Node> load_document(const std::string& yaml_text, const std::string& source_name) {
  DTRAIN_RETURN_IF_ERROR(check_characters(yaml_text, source_name));
  try {
    const size_t documents = count_documents(yaml_text);
    if (documents > 1)
      return invalid_argument(source_name + ": expected one YAML document, got " +
                              std::to_string(documents));
    return documents == 0 ? YAML::Node() : YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    std::string where = source_name;
    if (!e.mark.is_null())
      where += ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1);
    return invalid_argument(where + ": YAML syntax error: " + e.msg);
  }
}

} // namespace dtrain::experiments::detail
