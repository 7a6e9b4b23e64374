// Shared by the live manager's agent and client (see http_util.h).
#include "live/http_util.h"

#include <fmt/format.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "fairgpu/input_error.h"
#include "trace/text_input.h"

namespace fairgpu::live {

using nlohmann::json;

ServerUrl parse_server_url(std::string_view url, const std::string& source) {
  std::string_view rest = url;
  ServerUrl out;
  if (rest.substr(0, 8) == "https://") {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    out.https = true;
    out.port = 443;
    rest.remove_prefix(8);
#else
    throw InputError(source, "",
                     "https is not supported by this build (cpp-httplib without "
                     "OpenSSL); use http://");
#endif
  } else if (rest.substr(0, 7) == "http://") {
    rest.remove_prefix(7);
  } else {
    throw InputError(source, "", std::string(kUrlForm));
  }
  std::string_view authority = rest.substr(0, rest.find('/'));
  std::string_view path = rest.substr(authority.size());
  if (authority.find('@') != std::string_view::npos)
    throw InputError(source, "", "user names in the URL are not supported; use --token");
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {  // [IPv6]
    auto close = authority.find(']');
    if (close == std::string_view::npos) throw InputError(source, "", "unterminated '[' in host");
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') throw InputError(source, "", std::string(kUrlForm));
    if (!after.empty()) port_text = after.substr(1);
    if (after == ":") throw InputError(source, "", "empty port");
  } else {
    auto colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) throw InputError(source, "", "empty port");
    }
  }
  if (out.host.empty()) throw InputError(source, "", "no host; " + std::string(kUrlForm));
  if (!port_text.empty()) {
    long port = 0;
    for (char c : port_text) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || port > 65535)
        throw InputError(source, "", "port must be a number in 1..65535");
      port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535) throw InputError(source, "", "port must be a number in 1..65535");
    out.port = static_cast<int>(port);
  }
  if (path.find_first_of("?#") != std::string_view::npos)
    throw InputError(source, "", "a query or fragment is not allowed; " + std::string(kUrlForm));
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  out.prefix = std::string(path);
  return out;
}

std::string error_line(const httplib::Response& res) {
  json body = json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object()) {
    auto it = body.find("error");
    if (it != body.end() && it->is_string()) return it->get<std::string>();
  }
  std::string_view text = res.body;
  text = text.substr(0, text.find_first_of("\r\n"));
  text = text_input::trim(text);
  if (text.size() > 200) text = text.substr(0, 200);
  if (!text.empty()) return std::string(text);
  return res.reason.empty() ? "no error message" : res.reason + " (no error message)";
}

std::string describe_http_error(httplib::Error e, double timeout_s) {
  switch (e) {
    case httplib::Error::Connection:
      return "connection failed (nothing listening, host unknown or unreachable)";
    case httplib::Error::ConnectionTimeout:
      return fmt::format("no connection within {:g} s", timeout_s);
    case httplib::Error::Read:
      return fmt::format("no complete answer within {:g} s", timeout_s);
    case httplib::Error::Write:
      return "sending the request failed";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "the server's TLS certificate could not be verified";
    default:
      return httplib::to_string(e);
  }
}

}  // namespace fairgpu::live
