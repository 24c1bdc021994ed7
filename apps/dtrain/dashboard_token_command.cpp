// `dtrain dashboard-token`: the web dashboard's bearer token.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "command_line.hpp"
#include "dtrain/dashboard/token.hpp"

namespace dtrain::cli {

void add_dashboard_token_command(CLI::App& app, command_list& out) {
  auto* token = app.add_subcommand(
      "dashboard-token", "print the web dashboard's bearer token ($DTRAIN_HOME/dashboard-token, "
                         "made if missing)");
  out.push_back({token, [] {
                   auto t = dashboard::load_or_create_token(dashboard::default_token_path());
                   if (!t) {
                     std::fprintf(stderr, "error: %s\n", t.error().message().c_str());
                     return 1;
                   }
                   std::printf("%s\n", t->c_str());
                   return 0;
                 }});
}

} // namespace dtrain::cli
