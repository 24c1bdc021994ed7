#pragma once

#include <string>
#include <string_view>

#include "dtrain/core/status.hpp"

namespace dtrain::dashboard {

/// $DTRAIN_HOME/dashboard-token: where a dashboard keeps its bearer token.
std::string default_token_path();

/// The dashboard's bearer token: 32 lowercase hex characters (128 random
/// bits from OpenSSL's RAND_bytes). The one in `path` is kept when it is
/// such a token and the file is readable by its owner only (so a browser's
/// bookmark outlives a restart, and every dashboard of one DTRAIN_HOME
/// shares it). Without a file, a new one is created with mode 0600,
/// whole or not at all, and exclusively: of dashboards starting at once,
/// one creates it and the others read and use its token. A file that is
/// there but unusable is removed, if it is still the one found, and a new
/// one created the same exclusive way, so dashboards replacing it at once
/// end up with one token too. Errors (io_error) name the path. Blocks on
/// file I/O (and on another starter's removal of an unusable file).
result<std::string> load_or_create_token(const std::string& path);

/// Compares a presented token with the real one in time that does not
/// depend on where they differ.
bool token_matches(std::string_view presented, std::string_view token);

} // namespace dtrain::dashboard
