#pragma once

#include <boost/test/unit_test.hpp>

#include <string>

#include "dtrain/cluster/tls.hpp"
#include "dtrain/security/certificates.hpp"

namespace dtrain::testing {

/// A test CA in `dir` with one certificate per role, each named after its
/// role (head.pem, node.pem, client.pem and their keys); the head's TLS
/// identity, for a head_auth.
inline actors::tls_identity make_role_pki(const std::string& dir) {
  security::ca_request r;
  r.dir = dir;
  r.name = "test CA";
  auto made = security::create_ca(r);
  BOOST_REQUIRE_MESSAGE(made.is_ok(), made.error().to_string());
  for (auto role : {security::role::head, security::role::node, security::role::client}) {
    security::certificate_request c;
    c.role_ = role;
    c.name = security::role_name(role);
    c.ca_dir = dir;
    c.out_dir = dir;
    auto issued = security::create_certificate(c);
    BOOST_REQUIRE_MESSAGE(issued.is_ok(), issued.error().to_string());
  }
  actors::tls_identity id;
  id.files = {dir + "/head.pem", dir + "/head-key.pem", dir + "/ca.pem"};
  id.role_ = security::role::head;
  return id;
}

} // namespace dtrain::testing
