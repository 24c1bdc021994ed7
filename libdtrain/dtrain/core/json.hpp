#pragma once

#include <string>
#include <string_view>

/// JSON text the way dtrain writes it (the experiment store's typed
/// configurations, `--json` output of the command line): the one place for
/// escaping strings and spelling doubles. Writing only; pure functions,
/// thread-safe, nothing throws.
namespace dtrain::json {

/// Appends `s` as a JSON string literal (quotes included) to `out`: '"',
/// '\\' and the control characters escaped (\n, \t, ... or \u00XX), every
/// other byte (UTF-8 included) as it is.
void append_string(std::string& out, std::string_view s);
/// `s` as a JSON string literal.
std::string quoted(std::string_view s);

/// `d` as a JSON number: the shortest digits that read back to the same
/// bits, always with a '.' or an exponent so that a reader keeps it a
/// double (1.0, -0.0, 1e-300); NaN, Infinity and -Infinity as Python's json
/// module writes them (not strict JSON, which has no spelling for them).
std::string number(double d);

} // namespace dtrain::json
