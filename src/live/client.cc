// The live manager's client over cpp-httplib (issue 5; protocol in
// docs/live-protocol.md): URL parsing, one request per call with connect,
// read and write timeouts, the mapping of HTTP statuses to fairgpu's error
// types, and the local check of job specifications before submission.
#include "live/client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "fairgpu/input_error.h"
#include "fairgpu/transient_error.h"
#include "live/http_util.h"
#include "trace/text_input.h"

namespace fairgpu::live {
namespace {

using nlohmann::json;

// Percent-encodes a path segment or query value (RFC 3986 unreserved
// characters pass), so a job id or node name cannot change the request path.
std::string encode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  return out;
}


// One request on a fresh connection of `c` (httplib::ClientImpl or, for
// https, httplib::SSLClient, which take the host and port as they are, IPv6
// literals included).
template <class Client>
httplib::Result send(Client& c, double timeout_s, const std::string& token,
                     const std::string& method, const std::string& path, const json* body) {
  auto sec = static_cast<time_t>(timeout_s);
  auto usec = static_cast<time_t>((timeout_s - static_cast<double>(sec)) * 1e6);
  c.set_connection_timeout(sec, usec);
  c.set_read_timeout(sec, usec);
  c.set_write_timeout(sec, usec);
  if (!token.empty()) c.set_bearer_token_auth(token);
  if (method == "GET") return c.Get(path);
  if (method == "DELETE") return c.Delete(path);
  // Requests without a body of their own (cancel, drain) send {} so a server
  // that parses every POST body still sees valid JSON.
  return c.Post(path, body ? body->dump() : std::string("{}"), "application/json");
}

#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
// Whether host:port completes a TLS handshake: asked when an http:// request
// got no answer, so that a URL naming a TLS server with the wrong scheme is
// the user's mistake, said at once (issue 32, item 4). No certificate check
// and no token: nothing is sent but a bare GET.
bool speaks_tls(const std::string& host, int port, double timeout_s) {
  httplib::SSLClient c(host, port);
  c.enable_server_certificate_verification(false);
  httplib::Result res = send(c, std::min(timeout_s, 3.0), "", "GET", "/", nullptr);
  // Read: the handshake passed and the answer did not come; a plain server
  // fails the handshake (SSLConnection).
  return res || res.error() == httplib::Error::Read;
}
#endif

// ---- job specifications ----------------------------------------------------

class SpecChecker {
 public:
  SpecChecker(const std::string& source, const std::string& path) : source_(source), path_(path) {}

  [[noreturn]] void fail(std::string_view key, const std::string& problem) const {
    throw InputError(
        source_,
        key.empty() ? (path_.empty() ? "(top level)" : path_) : text_input::child(path_, key),
        problem);
  }

  static std::string got(const json& v) {
    std::string text = v.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return fmt::format("{} {}", v.type_name(), text);
  }

  void text(const json& v, std::string_view key) const {
    if (!v.is_string()) fail(key, "expected a string, got " + got(v));
    const auto& s = v.get_ref<const std::string&>();
    if (text_input::trim(s).empty()) fail(key, "must not be empty");
    for (char c : s)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        fail(key, "must not contain control characters");
  }

  // A whole number >= 1, written 4 or 4.0.
  void whole_positive(const json& v, std::string_view key) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()) ||
        v.get<double>() != std::floor(v.get<double>()))
      fail(key, "expected a whole number >= 1, got " + got(v));
    if (v.get<double>() < 1) fail(key, "must be >= 1, got " + v.dump());
  }

  void positive(const json& v, std::string_view key) const {
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      fail(key, "expected a finite number, got " + got(v));
    if (v.get<double>() <= 0) fail(key, "must be > 0, got " + v.dump());
  }

  void command(const json& v) const {
    if (v.is_string()) {
      if (text_input::trim(v.get_ref<const std::string&>()).empty())
        fail("command", "must not be empty");
      return;
    }
    if (!v.is_array())
      fail("command", "expected an argv array of strings or a shell string, got " + got(v));
    if (v.empty()) fail("command", "must not be an empty array");
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!v[i].is_string())
        fail(text_input::element("command", i), "expected a string, got " + got(v[i]));
    if (v[0].get_ref<const std::string&>().empty())
      fail("command[0]", "the program name must not be empty");
  }

  void env(const json& v) const {
    if (!v.is_object()) fail("env", "expected an object of strings, got " + got(v));
    for (const auto& [key, value] : v.items()) {
      std::string field = text_input::child("env", key);
      if (key.empty() || key.find('=') != std::string::npos)
        fail(field, "a variable name must be non-empty and contain no '='");
      // The agent sets these for every launch (docs/live-protocol.md).
      if (key.rfind("FAIRGPU_", 0) == 0 || key == "CUDA_VISIBLE_DEVICES")
        fail(field, "is set by the agent for every job");
      if (!value.is_string()) fail(field, "expected a string, got " + got(value));
    }
  }

 private:
  const std::string& source_;
  const std::string& path_;
};

}  // namespace

const std::vector<std::string>& job_states() {
  static const std::vector<std::string> states = {"profiling", "queued", "running",
                                                  "finished",  "failed", "cancelled"};
  return states;
}

LiveClient::LiveClient(std::string url, std::string token, double timeout_s, std::string ca_file)
    : url_(std::move(url)),
      token_(std::move(token)),
      timeout_s_(timeout_s),
      ca_file_(std::move(ca_file)) {
  ServerUrl parsed = parse_server_url(url_, "server URL '" + url_ + "'");
  https_ = parsed.https;
  host_ = std::move(parsed.host);
  port_ = parsed.port;
  prefix_ = std::move(parsed.prefix);
  if (!ca_file_.empty() && !https_)
    throw InputError("--ca", "",
                     "a CA file verifies an https server; the URL " + url_ + " is http");
  if (!(timeout_s_ > 0) || !std::isfinite(timeout_s_))
    throw std::invalid_argument("LiveClient: timeout must be a positive number of seconds");
}

json LiveClient::request(const std::string& method, const std::string& path, const json* body) {
  const std::string full = prefix_ + path;
  httplib::Result res = [&] {
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (https_) {
      httplib::SSLClient c(host_, port_);
      c.enable_server_certificate_verification(true);
      if (!ca_file_.empty()) c.set_ca_cert_path(ca_file_);
      return send(c, timeout_s_, token_, method, full, body);
    }
#endif
    httplib::ClientImpl c(host_, port_);
    return send(c, timeout_s_, token_, method, full, body);
  }();
  if (!res) {
    httplib::Error e = res.error();
    // The server is not who it claims to be, or speaks no TLS: the user's
    // to fix (--ca, the URL's scheme).
    if (e == httplib::Error::SSLServerVerification || e == httplib::Error::SSLConnection ||
        e == httplib::Error::BindIPAddress) {
      std::string why = describe_http_error(e, timeout_s_);
      if (e == httplib::Error::SSLServerVerification)
        why += ca_file_.empty() ? " by the system's CAs (give its CA with --ca)"
                                : " by the CA in " + ca_file_;
      if (e == httplib::Error::SSLConnection) why += " (is the server's URL http://?)";
      throw InputError("cannot reach server " + url_, "", why);
    }
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (!https_ && (e == httplib::Error::Read || e == httplib::Error::Write) &&
        speaks_tls(host_, port_, timeout_s_))
      throw InputError("server " + url_, "",
                       "it speaks TLS: use https:// (--ca names its CA when the system's do not "
                       "know it)");
#endif
    // Down, unreachable or not answering: may pass (exit status 3).
    std::string why = describe_http_error(e, timeout_s_);
    if (e == httplib::Error::Read && !https_) why += " (if the server speaks TLS, use https://)";
    if (e == httplib::Error::Connection || e == httplib::Error::ConnectionTimeout)
      throw TransientError(fmt::format("cannot reach server {}: {}", url_, why));
    throw TransientError(fmt::format("server {}: {} {}: {}", url_, method, full, why));
  }
  const int status = res->status;
  if (status >= 400 && status < 500) {
    std::string why = error_line(*res);
    if (status == 401 && token_.empty()) why += " (no token was sent)";
    throw InputError("server " + url_, std::to_string(status), why);
  }
  if (status >= 500)
    throw TransientError(
        fmt::format("server {}: {} {}: {}: {}", url_, method, full, status, error_line(*res)));
  if (status < 200 || status >= 300)
    throw std::runtime_error(
        fmt::format("server {}: {} {}: {}: {}", url_, method, full, status, error_line(*res)));
  json answer = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object())
    throw std::runtime_error(
        fmt::format("server {}: {} {}: the answer is not a JSON object", url_, method, full));
  return answer;
}

json LiveClient::submit(const json& job) { return request("POST", "/v1/jobs", &job); }

json LiveClient::jobs(const std::string& state) {
  return request("GET", state.empty() ? "/v1/jobs" : "/v1/jobs?state=" + encode(state), nullptr);
}

namespace {
std::string query_string(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string q;
  for (const auto& [key, value] : params)
    if (!value.empty()) q += (q.empty() ? "?" : "&") + encode(key) + "=" + encode(value);
  return q;
}
}  // namespace

json LiveClient::jobs(const std::vector<std::pair<std::string, std::string>>& params) {
  return request("GET", "/v1/jobs" + query_string(params), nullptr);
}

json LiveClient::usage(const std::vector<std::pair<std::string, std::string>>& params) {
  return request("GET", "/v1/usage" + query_string(params), nullptr);
}

json LiveClient::job_log(const std::string& id, std::int64_t lease, std::int64_t offset) {
  return request("GET",
                 "/v1/jobs/" + encode(id) + "/log?" +
                     (lease ? "lease=" + std::to_string(lease) + "&" : std::string()) +
                     "offset=" + std::to_string(offset),
                 nullptr);
}

json LiveClient::job(const std::string& id) {
  return request("GET", "/v1/jobs/" + encode(id), nullptr);
}

json LiveClient::cancel(const std::string& id) {
  return request("POST", "/v1/jobs/" + encode(id) + "/cancel", nullptr);
}

json LiveClient::cluster() { return request("GET", "/v1/cluster", nullptr); }
json LiveClient::tenants() { return request("GET", "/v1/tenants", nullptr); }
json LiveClient::profiles() { return request("GET", "/v1/profiles", nullptr); }

json LiveClient::reset_profiles(const std::string& job_type, const std::string& tenant,
                                const std::string& gpu_type) {
  std::string query;
  if (!tenant.empty()) query += "tenant=" + encode(tenant);
  if (!gpu_type.empty()) query += (query.empty() ? "" : "&") + ("gpu_type=" + encode(gpu_type));
  return request("DELETE", "/v1/profiles/" + encode(job_type) + (query.empty() ? "" : "?" + query),
                 nullptr);
}

json LiveClient::drain(const std::string& node, const std::string& reason) {
  const json body = reason.empty() ? json::object() : json{{"reason", reason}};
  return request("POST", "/v1/nodes/" + encode(node) + "/drain", &body);
}

json LiveClient::undrain(const std::string& node) {
  return request("POST", "/v1/nodes/" + encode(node) + "/undrain", nullptr);
}

json LiveClient::node_token(const std::string& node) {
  return request("POST", "/v1/nodes/" + encode(node) + "/token", nullptr);
}

json LiveClient::set_tenant(const json& tenant) { return request("POST", "/v1/tenants", &tenant); }

void check_job_spec(const json& job, const std::string& source, const std::string& path) {
  SpecChecker check(source, path);
  if (!job.is_object()) check.fail("", "expected a job object, got " + SpecChecker::got(job));
  static constexpr std::string_view kKeys[] = {"name",       "job_type", "workers", "command",
                                               "iterations", "env",      "weight",  "tenant"};
  for (const auto& [key, value] : job.items()) {
    bool known = false;
    for (auto k : kKeys) known = known || key == k;
    if (!known)
      check.fail(key,
                 "unknown field (expected name, job_type, workers, command, iterations, env, "
                 "weight, tenant)");
  }
  for (const char* key : {"name", "job_type", "workers", "iterations", "command"})
    if (!job.contains(key)) check.fail(key, "missing required field");
  check.text(job["name"], "name");
  check.text(job["job_type"], "job_type");
  check.whole_positive(job["workers"], "workers");
  check.positive(job["iterations"], "iterations");
  check.command(job["command"]);
  if (job.contains("env")) check.env(job["env"]);
  if (job.contains("weight")) check.positive(job["weight"], "weight");
  if (job.contains("tenant")) check.text(job["tenant"], "tenant");
}

std::vector<json> read_job_file(const std::string& path) {
  nlohmann::ordered_json doc = text_input::parse_json(text_input::read_text_file(path), path);
  if (!doc.is_array())
    throw InputError(path, "",
                     std::string("expected a JSON array of job objects, got ") + doc.type_name());
  if (doc.empty()) throw InputError(path, "", "the array holds no jobs");
  std::vector<json> jobs;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    json job(doc[i]);
    check_job_spec(job, path, text_input::element("", i));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

}  // namespace fairgpu::live
