#pragma once

#include <string>

/// The paths of a process's TLS files, apart from certificates.hpp (which
/// makes and checks them) so that the driver's public API can name them
/// alone.
namespace dtrain::security {

/// The files one process presents and trusts.
struct tls_files {
  std::string certificate;  // PEM chain, leaf first
  std::string key;          // PEM private key (mode 0600)
  std::string ca;           // the cluster CA's certificate (PEM)

  /// All three given.
  bool complete() const { return !certificate.empty() && !key.empty() && !ca.empty(); }
  /// None given.
  bool empty() const { return certificate.empty() && key.empty() && ca.empty(); }
};

} // namespace dtrain::security
