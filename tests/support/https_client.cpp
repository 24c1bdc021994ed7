#include "support/https_client.hpp"

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace dtrain::testing {

namespace {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
} // namespace

https_reply https_get(uint16_t port, const std::string& target, const std::string& ca_file,
                      const std::string& token, bool check_host, int timeout_s) {
  https_reply out;
  try {
    asio::io_context io;
    ssl::context ctx{ssl::context::tls_client};
    ctx.load_verify_file(ca_file);
    ctx.set_verify_mode(ssl::verify_peer);
    beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
    if (check_host)
      stream.set_verify_callback(ssl::host_name_verification("127.0.0.1"));
    auto& lowest = beast::get_lowest_layer(stream);
    lowest.expires_after(std::chrono::seconds(timeout_s));
    lowest.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    // Beast's expiry bounds asynchronous calls only: bound these blocking
    // ones in the socket.
    timeval tv{timeout_s, 0};
    const int fd = lowest.socket().native_handle();
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    stream.handshake(ssl::stream_base::client);
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::connection, "close");
    if (!token.empty())
      req.set(http::field::authorization, "Bearer " + token);
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    out.status = static_cast<int>(res.result_int());
    out.body = res.body();
    beast::error_code ignored;
    lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
  } catch (const std::exception& e) {
    out.status = -1;
    out.error = e.what();
  }
  return out;
}

} // namespace dtrain::testing
