#pragma once

#include <string_view>
#include <vector>

namespace dtrain::dashboard {

/// A file of the page (dashboard/web), embedded into the library at build
/// time (cmake/embed_web.cmake), so the server needs nothing installed
/// beside it.
struct asset {
  std::string_view path;          // "/index.html", "/vendor/uPlot.iife.min.js"
  std::string_view content_type;  // "text/html; charset=utf-8", ...
  std::string_view bytes;
};

/// Every embedded file; static storage, thread-safe.
const std::vector<asset>& web_assets();

/// The asset at `path` ("/" is "/index.html"), or nullptr.
const asset* find_asset(std::string_view path);

} // namespace dtrain::dashboard
