#include "dtrain/dashboard/assets.hpp"

namespace dtrain::dashboard {

const asset* find_asset(std::string_view path) {
  if (path == "/")
    path = "/index.html";
  for (const asset& a : web_assets())
    if (a.path == path)
      return &a;
  return nullptr;
}

} // namespace dtrain::dashboard
