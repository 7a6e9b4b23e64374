// The live manager's client (issue 5, docs/design.md §7): a typed wrapper over the
// HTTP/JSON protocol of docs/live-protocol.md that `fairgpu submit`, `jobs`,
// `cancel`, `cluster`, `tenants`, `profiles`, `drain` and `undrain` use, and
// the local check of job specifications (`fairgpu submit --file`).
//
// Errors a caller can rely on:
// - the server refused the request (HTTP 4xx): InputError whose what() is
//   "server <url>: <status>: <the server's {"error"} line>";
// - the URL is malformed, the CA file cannot be used, or the server's TLS
//   certificate does not verify (or it speaks no TLS at an https URL):
//   InputError;
// - the server cannot be reached (refused, unknown host, connect timeout),
//   stopped answering after the connection was made, or failed (5xx):
//   TransientError ("cannot reach server <url>: ..." or
//   "server <url>: ...: 503: ...");
// - the server answered something that is not the protocol's JSON:
//   std::runtime_error.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace fairgpu::live {

// http://127.0.0.1:8470, `fairgpu serve`'s default address.
inline constexpr const char* kDefaultServerUrl = "http://127.0.0.1:8470";

// The job states of protocol v1, in lifecycle order.
const std::vector<std::string>& job_states();

class LiveClient {
 public:
  // `url` is http://HOST[:PORT][/PREFIX] or https://... (port 80 or 443 when
  // absent; the server's certificate is verified against the system's CAs;
  // a prefix is prepended to every request path, for a server behind a
  // reverse proxy). IPv6 hosts are written in brackets.
  // An empty token sends no Authorization header. `ca_file` (PEM), when not
  // empty, replaces the system's CAs for verifying an https server. Throws
  // InputError for a malformed URL or a CA file given with an http URL.
  LiveClient(std::string url, std::string token, double timeout_s = 10.0, std::string ca_file = "");

  const std::string& url() const { return url_; }

  // POST /v1/jobs; `job` is the request body. Returns the job object.
  nlohmann::json submit(const nlohmann::json& job);
  // GET /v1/jobs[?state=S] ("" for every state): {"jobs": [...]}.
  nlohmann::json jobs(const std::string& state = "");
  // GET /v1/jobs with query parameters (state, since, until, all), those
  // with a value only: {"jobs": [...]}.
  nlohmann::json jobs(const std::vector<std::pair<std::string, std::string>>& params);
  // GET /v1/usage (since, until, tenant, by): GPU-seconds over a window.
  nlohmann::json usage(const std::vector<std::pair<std::string, std::string>>& params);
  // GET /v1/jobs/{id}/log?lease=L&offset=N (lease 0: the latest run): a
  // chunk of the job's output, base64 in "data" (docs/live-protocol.md).
  nlohmann::json job_log(const std::string& id, std::int64_t lease, std::int64_t offset);
  // GET /v1/jobs/{id}: the job object.
  nlohmann::json job(const std::string& id);
  // POST /v1/jobs/{id}/cancel: the job object.
  nlohmann::json cancel(const std::string& id);
  // GET /v1/cluster, /v1/tenants, /v1/profiles: the server's answer.
  nlohmann::json cluster();
  nlohmann::json tenants();
  nlohmann::json profiles();
  // DELETE /v1/profiles/{job type} (admin): forgets measured profiles, of
  // one tenant and/or on one GPU type when given. {"job_type", "removed"}.
  nlohmann::json reset_profiles(const std::string& job_type, const std::string& tenant = "",
                                const std::string& gpu_type = "");
  // POST /v1/nodes/{name}/drain and /undrain (admin): the node object.
  nlohmann::json drain(const std::string& node, const std::string& reason = "");
  nlohmann::json undrain(const std::string& node);
  // POST /v1/nodes/{name}/token (admin): {"node", "token"}, a new token for
  // that node's agent (the previous one stops working).
  nlohmann::json node_token(const std::string& node);
  // POST /v1/tenants (admin): adds a tenant or changes its weight / token.
  nlohmann::json set_tenant(const nlohmann::json& tenant);

 private:
  nlohmann::json request(const std::string& method, const std::string& path,
                         const nlohmann::json* body);

  std::string url_;
  std::string host_;
  bool https_ = false;
  int port_ = 80;
  std::string prefix_;  // "" or "/prefix"
  std::string token_;
  double timeout_s_;
  std::string ca_file_;
};

// Checks one job specification as `POST /v1/jobs` takes it: name, job_type
// (non-empty strings), workers (a whole number >= 1), iterations (> 0),
// command (a non-empty argv array of strings or a non-empty shell string),
// and the optional env (object of strings; not FAIRGPU_* nor
// CUDA_VISIBLE_DEVICES, which the agent sets), weight (> 0) and tenant
// (non-empty string); any other field is rejected, so a typo is not silently
// dropped. What only the server knows (the caller's role, known tenants) is
// left to it.
// Throws InputError(source, "<path>.<field>", problem).
void check_job_spec(const nlohmann::json& job, const std::string& source,
                    const std::string& path = "");

// Reads a JSON array of job specifications (`fairgpu submit --file`) and
// checks every entry, so nothing is submitted when one is bad. Errors name
// the file, the index and the field ("jobs.json: [2].workers: ...").
std::vector<nlohmann::json> read_job_file(const std::string& path);

}  // namespace fairgpu::live
