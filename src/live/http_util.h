// What the agent and the client share to talk to `fairgpu serve` over
// cpp-httplib (docs/live-protocol.md): the server URL, the server's one-line
// reason for an error answer, and a request's failure in words.
#pragma once

#include <httplib.h>

#include <string>
#include <string_view>

namespace fairgpu::live {

inline constexpr std::string_view kUrlForm = "expected http[s]://HOST[:PORT][/PREFIX]";

struct ServerUrl {
  bool https = false;
  std::string host;  // without the brackets of an IPv6 literal
  int port = 80;     // 443 for https
  std::string prefix;  // "" or "/prefix", no trailing slash
};

// http[s]://HOST[:PORT][/PREFIX]; throws InputError(source, "", why).
ServerUrl parse_server_url(std::string_view url, const std::string& source);

// The server's one-line reason: its {"error": "..."} when it sent one, else
// the first line of whatever it sent, else the HTTP reason phrase.
std::string error_line(const httplib::Response& res);

// Why a request got no answer, in words (httplib's names are terse).
std::string describe_http_error(httplib::Error e, double timeout_s);

}  // namespace fairgpu::live
