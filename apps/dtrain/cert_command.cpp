// `dtrain cert ca create | create | check`: the cluster's certificate
// authority and the certificates of its processes, in the shape of `consul
// tls ca create` / `consul tls cert create`. A thin layer over
// dtrain/security/certificates.hpp.
#include <CLI/CLI.hpp>
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::cli {

namespace sec = dtrain::security;

namespace {

struct cert_options {
  std::string action;              // "ca create", "create" or "check"
  std::string dir;                 // empty: $DTRAIN_HOME/tls
  std::string out;                 // create: where the files go (empty: dir)
  std::string name;                // common name (CA: "dtrain cluster CA")
  int days = 0;                    // 0: the library's default for the kind
  bool head = false, node = false, client = false;
  std::vector<std::string> hosts;  // create: DNS/IP subjectAltNames
  bool force = false;              // replace existing files
  std::vector<std::string> files;  // check: certificates (empty: all in dir)
  std::string ca;                  // check: the CA file (empty: dir/ca.pem)
};

constexpr int warn_days = 30;  // `check` warns about certificates this close to expiry

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

std::string tls_dir(const cert_options& o) { return o.dir.empty() ? sec::default_tls_dir() : o.dir; }

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// "node (serverAuth, clientAuth)"
std::string role_line(const sec::certificate_info& info) {
  if (info.is_ca)
    return "none (a CA)";
  if (!info.has_role)
    return "none";
  std::string usage = info.server_auth && info.client_auth ? "serverAuth, clientAuth"
                      : info.server_auth                   ? "serverAuth"
                      : info.client_auth                   ? "clientAuth"
                                                           : "no TLS use";
  return std::string(sec::role_name(info.role_)) + " (" + usage + ")";
}

long days_left(const sec::certificate_info& info) {
  return static_cast<long>((info.not_after - std::time(nullptr)) / 86400);
}

std::string fingerprint_line(const std::string& hex) {
  std::string out = "sha256:";
  for (size_t i = 0; i < hex.size(); i += 2)
    out += (i ? ":" : "") + hex.substr(i, 2);
  return out;
}

int ca_create(const cert_options& o) {
  sec::ca_request r;
  r.dir = tls_dir(o);
  if (!o.name.empty())
    r.name = o.name;
  if (o.days != 0)
    r.valid.days = o.days;
  r.force = o.force;
  auto ca = sec::create_ca(r);
  if (!ca)
    return fail(ca.error().message());
  std::printf("created the cluster CA '%s'\n", ca->subject.c_str());
  std::printf("  certificate  %s/ca.pem (every process trusts it)\n", r.dir.c_str());
  std::printf("  key          %s/ca-key.pem (mode 0600; only `dtrain cert create` needs it: "
              "keep it off the nodes)\n", r.dir.c_str());
  std::printf("  valid until  %s\n", sec::format_utc(ca->not_after).c_str());
  std::printf("  fingerprint  %s\n", fingerprint_line(ca->fingerprint).c_str());
  std::printf("next: dtrain cert create --head | --node | --client\n");
  return 0;
}

int create(const cert_options& o) {
  if (o.head + o.node + o.client != 1) {
    std::fprintf(stderr, "error: dtrain cert create needs exactly one of --head, --node or --client\n");
    return 2;
  }
  sec::certificate_request r;
  r.role_ = o.head ? sec::role::head : o.node ? sec::role::node : sec::role::client;
  r.name = o.name;
  r.ca_dir = tls_dir(o);
  r.out_dir = o.out.empty() ? r.ca_dir : o.out;
  r.hosts = o.hosts;
  if (o.days != 0)
    r.valid.days = o.days;
  r.force = o.force;
  auto made = sec::create_certificate(r);
  if (!made)
    return fail(made.error().message());
  const sec::certificate_info& info = made->info;
  std::printf("created a %s certificate '%s', signed by '%s'\n", sec::role_name(r.role_),
              info.subject.c_str(), info.issuer.c_str());
  std::printf("  certificate  %s\n", made->certificate_path.c_str());
  std::printf("  key          %s (mode 0600)\n", made->key_path.c_str());
  std::printf("  role         %s\n", role_line(info).c_str());
  for (const std::string& host : info.hosts)
    std::printf("  host         %s\n", host.c_str());
  std::printf("  valid until  %s (%ld days)\n", sec::format_utc(info.not_after).c_str(),
              days_left(info));
  return 0;
}

// The certificates `check` looks at without names: every *.pem in dir but
// the CA's and the keys, sorted.
std::vector<std::string> certificates_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr)
    return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    auto ends_with = [&](const std::string& tail) {
      return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (name[0] != '.' && ends_with(".pem") && !ends_with("-key.pem") && name != "ca.pem")
      out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// Prints one certificate's block; returns the number of failed checks.
int check_one(const std::string& file, const std::string& ca_file) {
  std::printf("\n%s\n", file.c_str());
  auto info = sec::read_certificate(file);
  if (!info) {
    std::printf("  unreadable\n");
    fail(info.error().message());
    return 1;
  }
  int failures = 0;
  std::printf("  subject      %s\n", info->subject.c_str());
  std::printf("  role         %s\n", role_line(*info).c_str());
  std::printf("  issuer       %s\n", info->issuer.c_str());
  for (const std::string& host : info->hosts)
    std::printf("  host         %s\n", host.c_str());
  const long left = days_left(*info);
  std::printf("  valid        %s to %s (%ld days left)\n", sec::format_utc(info->not_before).c_str(),
              sec::format_utc(info->not_after).c_str(), std::max(left, 0L));
  if (left < warn_days && info->not_after > std::time(nullptr))
    std::fprintf(stderr, "warning: %s expires in %ld days (%s)\n", file.c_str(), left,
                 sec::format_utc(info->not_after).c_str());

  auto verified = sec::verify_certificate(
      info->pem, ca_file, {sec::role::head, sec::role::node, sec::role::client});
  std::printf("  chain        %s\n", verified ? "ok (signed by the cluster CA)" : "FAILED");
  if (!verified) {
    fail(file + ": " + verified.error().message());
    ++failures;
  }

  const std::string key = file.substr(0, file.size() - 4) + "-key.pem";
  if (exists(key)) {
    const status key_ok = sec::check_key_file(key, info->pem);
    std::printf("  key          %s: %s\n", key.c_str(), key_ok ? "private, matches the certificate" : "FAILED");
    if (!key_ok) {
      fail(file + ": " + key_ok.message());
      ++failures;
    }
  } else {
    std::printf("  key          none beside it (%s)\n", key.c_str());
  }
  return failures;
}

int check(const cert_options& o) {
  const std::string dir = tls_dir(o);
  const std::string ca_file = o.ca.empty() ? dir + "/ca.pem" : o.ca;
  int failures = 0;
  auto ca = sec::read_certificate(ca_file);
  if (!ca) {
    fail(ca.error().message());
    ++failures;
  } else {
    std::printf("cluster CA %s\n", ca_file.c_str());
    std::printf("  subject      %s\n", ca->subject.c_str());
    std::printf("  valid until  %s (%ld days left)\n", sec::format_utc(ca->not_after).c_str(),
                std::max(days_left(*ca), 0L));
    std::printf("  fingerprint  %s\n", fingerprint_line(ca->fingerprint).c_str());
    if (!ca->is_ca) {
      fail(ca_file + ": '" + ca->subject + "' is not a CA certificate");
      ++failures;
    }
  }
  const std::vector<std::string> files = o.files.empty() ? certificates_in(dir) : o.files;
  if (files.empty() && o.files.empty())
    std::printf("\nno certificates in %s besides the CA (create one with dtrain cert create)\n",
                dir.c_str());
  int failed_files = 0;
  for (const std::string& file : files) {
    const int f = check_one(file, ca_file);
    failures += f;
    failed_files += f > 0;
  }
  std::printf("\n%zu certificate%s checked: %s\n", files.size(), files.size() == 1 ? "" : "s",
              failures == 0 ? "all ok"
                            : (std::to_string(failed_files) + " failed" +
                               (ca ? "" : "; the CA file failed"))
                                  .c_str());
  return failures == 0 ? 0 : 1;
}

// The parsed `dtrain cert ...`: the process's exit code (0 ok; 1 a
// creation or a check failed, with one line naming the file and why).
int run_cert(const cert_options& o) {
  if (o.action == "ca create")
    return ca_create(o);
  if (o.action == "create")
    return create(o);
  return check(o);
}

// Adds `cert ca create`, `cert create` and `cert check` to `app`, filling
// `o` (which must outlive the parse); returns the `cert` command.
CLI::App* add_cert_subcommands(CLI::App& app, cert_options& o) {
  auto* cert = app.add_subcommand("cert", "the cluster's CA and the certificates of its processes");
  cert->require_subcommand(1);
  const std::string dir_help = "the TLS directory (default: $DTRAIN_HOME/tls)";

  auto* ca = cert->add_subcommand("ca", "the cluster's certificate authority");
  ca->require_subcommand(1);
  auto* ca_create = ca->add_subcommand("create", "create the CA: ca.pem and ca-key.pem in DIR");
  ca_create->add_option("--dir", o.dir, dir_help);
  ca_create->add_option("--name", o.name, "the CA's common name (default: dtrain cluster CA)");
  ca_create->add_option("--days", o.days, "days it is valid (default: 3650)")
      ->check(CLI::PositiveNumber);
  ca_create->add_flag("--force", o.force, "replace an existing CA (orphans what it signed)");
  ca_create->callback([&o] { o.action = "ca create"; });

  auto* create = cert->add_subcommand("create", "create a key and a certificate signed by the CA");
  create->add_flag("--head", o.head, "for a head (TLS server and client)");
  create->add_flag("--node", o.node, "for a node (TLS server and client)");
  create->add_flag("--client", o.client, "for a client such as `dtrain train` (TLS client only)");
  create->add_option("--name", o.name,
                     "common name and file name (default: ROLE@HOST, files ROLE.pem)");
  create->add_option("--days", o.days, "days it is valid (default: 825)")->check(CLI::PositiveNumber);
  create->add_option("--host", o.hosts, "a DNS name or IP address for subjectAltName (repeatable)");
  create->add_option("--dir", o.dir, "where the CA is, and the files go (default: $DTRAIN_HOME/tls)");
  create->add_option("--out", o.out, "write the files here instead of --dir");
  create->add_flag("--force", o.force, "replace existing files");
  create->callback([&o] { o.action = "create"; });

  auto* check = cert->add_subcommand("check", "check certificates, their keys and the CA");
  check->add_option("files", o.files, "certificates (default: every one in DIR)");
  check->add_option("--dir", o.dir, dir_help);
  check->add_option("--ca", o.ca, "the CA certificate (default: DIR/ca.pem)");
  check->callback([&o] { o.action = "check"; });
  return cert;
}

} // namespace

void add_cert_command(CLI::App& app, command_list& out) {
  auto o = std::make_shared<cert_options>();
  CLI::App* cert = add_cert_subcommands(app, *o);
  out.push_back({cert, [o] { return run_cert(*o); }});
}

} // namespace dtrain::cli
