// HTTP routes of the live manager (see server.h).
#include "live/server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <stdexcept>
#include <string_view>

#include "fairgpu/input_error.h"

namespace fairgpu::live {
namespace {

using nlohmann::json;

// An error may echo what the caller sent (a job id from the path), which
// need not be UTF-8: such bytes are replaced, never a reason for a 500.
void answer(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
                  "application/json");
}

// Runs one API call: parses the body when asked, maps errors to statuses.
template <typename F>
void handle(httplib::Response& res, F&& call) {
  // The request is read whole: its deadline stops while the manager answers.
  Listener::Handling handling;
  if (handling.cut()) return answer(res, 408, {{"error", "request not read within its deadline"}});
  try {
    answer(res, 200, call());
  } catch (const ApiError& e) {
    answer(res, e.status(), {{"error", e.what()}});
  } catch (const json::exception& e) {
    answer(res, 400, {{"error", fmt::format("(body): {}", e.what())}});
  } catch (const std::exception& e) {
    answer(res, 500, {{"error", e.what()}});
  }
}

// "Basic base64(user:password)" as "Bearer password" (any user), for the
// status page; any other header as it is.
std::string bearer_from_basic(const std::string& header) {
  constexpr std::string_view kBasic = "Basic ";
  if (header.compare(0, kBasic.size(), kBasic) != 0) return header;
  std::string decoded;
  int bits = 0;
  unsigned value = 0;
  for (char c : header.substr(kBasic.size())) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else return "";  // not base64: no credentials
    value = (value << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      decoded += static_cast<char>((value >> bits) & 0xff);
    }
  }
  const std::size_t colon = decoded.find(':');
  if (colon == std::string::npos) return "";
  return "Bearer " + decoded.substr(colon + 1);
}

json parse_body(const httplib::Request& req) {
  if (req.body.empty()) throw ApiError(400, "(body): expected a JSON object");
  try {
    return json::parse(req.body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, fmt::format("(body): not JSON: {}", e.what()));
  }
}

// The most a request body may hold. httplib's payload_max_length bounds a
// body sent with Content-Length only: a chunked one (or one that runs to the
// end of the connection) it reads whole (issue 30, M3: 24 MiB accepted).
// Every route with a body therefore reads it through a content reader that
// stops at this cap.
constexpr std::size_t kMaxBodyBytes = 8 << 20;

// An answer after which the connection is closed: a body was left unread
// (over the cap, or malformed), and httplib would read what is still on the
// wire as the next requests (a client still sending would hang). httplib
// 0.11.4 closes a keep-alive connection when writing a response fails, and
// lets a handler make that happen only through a content provider that
// reports failure: this one writes the whole answer first, then fails.
void answer_and_close(httplib::Response& res, int status, const std::string& error) {
  const std::string body = json{{"error", error}}.dump() + "\n";
  res.status = status;
  res.set_header("Connection", "close");
  res.set_content_provider(body.size(), "application/json",
                           [body](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
                             sink.write(body.data() + offset, length);
                             return false;  // closes the connection (above)
                           });
}

// A route's handler with its body read under kMaxBodyBytes, whatever the
// framing (Content-Length, chunked or none).
httplib::Server::HandlerWithContentReader capped(httplib::Server::Handler handler) {
  return [handler = std::move(handler)](const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& read) {
    std::string body;
    bool oversized = false;
    const bool complete = read([&](const char* data, std::size_t length) {
      if (body.size() + length > kMaxBodyBytes) {
        oversized = true;
        return false;  // stop reading: nothing more is taken in
      }
      body.append(data, length);
      return true;
    });
    // Content-Length over payload_max_length: httplib says 413 itself.
    if (oversized || (!complete && res.status == 413))
      return answer_and_close(res, 413,
                              fmt::format("(body): larger than {} bytes (8 MiB), the most a "
                                          "request may carry; the connection is closed",
                                          kMaxBodyBytes));
    if (!complete)  // malformed chunks, or cut short: the rest cannot be read in step
      return answer_and_close(res, 400, "(body): malformed or incomplete request body");
    // httplib hands the handler its own non-const Request (Server::routing):
    // the body goes where the route's handler reads it.
    const_cast<httplib::Request&>(req).body = std::move(body);
    handler(req, res);
  };
}

// httplib's TLS server when the config names a certificate, else plain http.
std::unique_ptr<httplib::Server> make_http_server(const ServeConfig& config) {
  if (config.tls_cert.empty()) return std::make_unique<httplib::Server>();
  auto tls = std::make_unique<httplib::SSLServer>(config.tls_cert.c_str(), config.tls_key.c_str());
  if (!tls->is_valid())
    throw InputError(config.source, "tls",
                     fmt::format("cannot load the certificate {} with the key {} (PEM files, "
                                 "the key matching the certificate)",
                                 config.tls_cert, config.tls_key));
  return tls;
}

}  // namespace

HttpServer::HttpServer(const ServeConfig& config)
    : tls_(!config.tls_cert.empty()), config_(config), http_(make_http_server(config)) {
  add_routes(*http_, false);
  if (config.agent_port >= 0) {
    agent_http_ = make_http_server(config);
    add_routes(*agent_http_, true);
  }
}

void HttpServer::add_routes(httplib::Server& s, bool agents_only) {
  // Connections are accepted and given workers by a Listener (http_front.h),
  // not by httplib's own loop. A keep-alive connection holds a worker.
  s.set_keep_alive_max_count(1000000);
  s.set_tcp_nodelay(true);  // small JSON answers: no Nagle delay
  s.set_payload_max_length(kMaxBodyBytes);
  // SO_REUSEADDR only: httplib's default SO_REUSEPORT would let a second
  // server bind the same port and take half the connections.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // What httplib answers itself (no route, a malformed request) is the
  // documented JSON error too; the routes' own errors already are.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    // A body, or one to come from a content provider (answer_and_close: a
    // body set here would replace it and keep the connection open).
    Listener::answered();  // the next request on the connection: a new deadline
    if (!res.body.empty() || res.content_length_ > 0) return;
    const char* why = res.status == 404   ? "no such endpoint (docs/live-protocol.md)"
                      : res.status == 413 ? "body larger than 8 MiB"
                      : res.status == 400 ? "malformed request"
                                          : "refused";
    answer(res, res.status, {{"error", fmt::format("{} {}: {}", req.method, req.path, why)}});
  });
  auto who = [this](const httplib::Request& req) {
    return manager_->authenticate(req.get_header_value("Authorization"));
  };
  s.Post("/v1/agents/register",
         capped([this, who](const httplib::Request& req, httplib::Response& res) {
           handle(res, [&] {
             return manager_->register_agent(who(req), parse_body(req), req.remote_addr);
           });
         }));
  s.Post("/v1/agents/heartbeat",
         capped([this, who](const httplib::Request& req, httplib::Response& res) {
           handle(res, [&] { return manager_->heartbeat(who(req), parse_body(req)); });
         }));
  // Any other path or method with a body: read under the same cap too, else
  // httplib would read it whole before answering 404.
  const auto no_route = capped([](const httplib::Request& req, httplib::Response& res) {
    Listener::Handling handling;
    answer(res, 404, {{"error", fmt::format("{} {}: no such endpoint (docs/live-protocol.md)",
                                            req.method, req.path)}});
  });
  if (agents_only) {  // the agents' listener: nothing else
    s.Post(".*", no_route);
    s.Put(".*", no_route);
    s.Patch(".*", no_route);
    s.Delete(".*", no_route);
    return;
  }
  s.Post("/v1/jobs", capped([this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] {
      auto caller = who(req);
      if (caller.role == Caller::Role::kNone) throw ApiError(401, "missing or unknown bearer token");
      json j = manager_->submit(caller, parse_body(req));
      res.status = 201;
      return j;
    });
    if (res.status == 200) res.status = 201;
  }));
  s.Get("/v1/jobs", [this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] {
      Manager::JobsQuery q;
      for (const auto& [key, value] : req.params)
        if (key != "state" && key != "since" && key != "until" && key != "all")
          throw ApiError(400, key + ": unknown parameter");
      q.state = req.get_param_value("state");
      q.since = req.get_param_value("since");
      q.until = req.get_param_value("until");
      const std::string all = req.get_param_value("all");
      if (req.has_param("all") && all != "1" && all != "true" && all != "0" && all != "false")
        throw ApiError(400, "all: expected 1 or 0");
      q.all = all == "1" || all == "true";
      return manager_->jobs(who(req), q);
    });
  });
  // Accounting: GPU-seconds over a window by tenant or job and GPU type.
  s.Get("/v1/usage", [this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] {
      Manager::UsageQuery q;
      for (const auto& [key, value] : req.params)
        if (key != "since" && key != "until" && key != "tenant" && key != "by")
          throw ApiError(400, key + ": unknown parameter");
      q.since = req.get_param_value("since");
      q.until = req.get_param_value("until");
      q.tenant = req.get_param_value("tenant");
      if (req.has_param("by")) q.by = req.get_param_value("by");
      return manager_->usage(who(req), q);
    });
  });
  s.Get(R"(/v1/jobs/([^/]+))", [this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] { return manager_->job(who(req), req.matches[1]); });
  });
  // A job's output (a tenant's own): a chunk from `offset` of a run's log.
  s.Get(R"(/v1/jobs/([^/]+)/log)", [this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] {
      std::int64_t lease = 0, offset = 0;
      for (const auto& [key, value] : req.params) {
        if (key != "lease" && key != "offset") throw ApiError(400, key + ": unknown parameter");
        std::size_t used = 0;
        long long v = -1;
        try {
          v = std::stoll(value, &used);
        } catch (const std::exception&) {
        }
        if (value.empty() || used != value.size() || v < (key == "lease" ? 1 : 0))
          throw ApiError(400, key + ": expected an integer >= " + (key == "lease" ? "1" : "0"));
        (key == "lease" ? lease : offset) = v;
      }
      return manager_->job_log(who(req), req.matches[1], lease, offset);
    });
  });
  s.Post(R"(/v1/jobs/([^/]+)/cancel)",
         capped([this, who](const httplib::Request& req, httplib::Response& res) {
           handle(res, [&] { return manager_->cancel(who(req), req.matches[1]); });
         }));
  s.Delete(R"(/v1/jobs/([^/]+))",
           capped([this, who](const httplib::Request& req, httplib::Response& res) {
             handle(res, [&] { return manager_->cancel(who(req), req.matches[1]); });
           }));
  s.Get("/v1/tenants", [this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] { return manager_->tenants(who(req)); });
  });
  s.Post("/v1/tenants", capped([this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] { return manager_->set_tenant(who(req), parse_body(req)); });
  }));
  s.Get("/v1/cluster", [this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] { return manager_->cluster(who(req)); });
  });
  s.Get("/v1/profiles", [this, who](const httplib::Request& req, httplib::Response& res) {
    handle(res, [&] { return manager_->profiles(who(req)); });
  });
  // Admin: forget measured profiles (?tenant=, ?gpu_type= narrow it).
  s.Delete(R"(/v1/profiles/([^/]+))",
           capped([this, who](const httplib::Request& req, httplib::Response& res) {
             handle(res, [&] {
               for (const auto& [key, value] : req.params)
                 if (key != "tenant" && key != "gpu_type")
                   throw ApiError(400, key + ": unknown parameter");
               std::optional<std::string> tenant;
               if (req.has_param("tenant")) tenant = req.get_param_value("tenant");
               if (req.has_param("gpu_type") && req.get_param_value("gpu_type").empty())
                 throw ApiError(400, "gpu_type: expected a GPU type");
               return manager_->reset_profiles(who(req), req.matches[1], tenant,
                                              req.get_param_value("gpu_type"));
             });
           }));
  s.Post(R"(/v1/nodes/([^/]+)/(drain|undrain))", capped([this, who](const httplib::Request& req,
                                                                    httplib::Response& res) {
    handle(res, [&] {
      // An optional {"reason": "..."} (a drain's, kept and shown).
      std::string reason;
      if (!req.body.empty()) {
        json body = parse_body(req);
        if (!body.is_object()) throw ApiError(400, "(body): expected a JSON object");
        for (const auto& [key, value] : body.items())
          if (key != "reason") throw ApiError(400, key + ": unknown field");
        if (body.contains("reason")) {
          if (!body["reason"].is_string()) throw ApiError(400, "reason: expected a string");
          reason = body["reason"].get<std::string>();
          if (reason.size() > 200) throw ApiError(400, "reason: longer than 200 characters");
          for (char ch : reason)
            if (static_cast<unsigned char>(ch) < 0x20)
              throw ApiError(400, "reason: must not contain control characters");
        }
      }
      return manager_->set_drained(who(req), req.matches[1], req.matches[2] == "drain", reason);
    });
  }));
  s.Post(R"(/v1/nodes/([^/]+)/token)",
         capped([this, who](const httplib::Request& req, httplib::Response& res) {
           handle(res, [&] { return manager_->issue_node_token(who(req), req.matches[1]); });
         }));
  s.Post(".*", no_route);
  s.Put(".*", no_route);
  s.Patch(".*", no_route);
  s.Delete(".*", no_route);
  s.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    Listener::Handling handling;
    if (!manager_->metrics_allowed(req.get_header_value("Authorization"))) {
      answer(res, 401,
             {{"error",
               "/metrics needs the admin token or metrics_token (or \"metrics_open\": "
               "true in the config)"}});
      return;
    }
    res.set_content(manager_->metrics(), "text/plain; version=0.0.4");
  });
  // The status page (issue 32, item 8): the same tokens as /metrics, as a
  // bearer token or as the password of HTTP Basic authentication (which a
  // browser asks for itself: the 401 says so).
  s.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
    Listener::Handling handling;
    if (!manager_->metrics_allowed(bearer_from_basic(req.get_header_value("Authorization")))) {
      res.set_header("WWW-Authenticate", "Basic realm=\"fairgpu status\", charset=\"UTF-8\"");
      answer(res, 401,
             {{"error",
               "/ needs the admin token or metrics_token, as a bearer token or as the password "
               "of HTTP Basic authentication (or \"metrics_open\": true in the config)"}});
      return;
    }
    res.set_header("Cache-Control", "no-store");
    // No script or resource from anywhere, even if a string escaped the
    // page's escaping.
    res.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
    res.set_content(manager_->status_page(), "text/html; charset=utf-8");
  });
}

HttpServer::~HttpServer() {
  stop();
  if (rounds_.joinable()) rounds_.join();
}

int HttpServer::bind(const std::string& host, int port) {
  auto bind_one = [](httplib::Server& http, const std::string& h, int p, const std::string& what) {
    const int bound =
        p == 0 ? http.bind_to_any_port(h.c_str()) : (http.bind_to_port(h.c_str(), p) ? p : -1);
    if (bound < 0)
      throw InputError(what, "",
                       fmt::format("cannot listen on {}:{} (in use by another server, or not an "
                                   "address of this machine)",
                                   h, p));
    return bound;
  };
  const int bound = bind_one(*http_, host, port, "listen");
  listener_ = std::make_unique<Listener>(*http_, config_.http, "api", tls_);
  if (agent_http_) {
    agent_port_ = bind_one(*agent_http_, config_.agent_host, config_.agent_port, "http.agent_listen");
    HttpLimits agents = config_.http;
    agents.workers = config_.agent_workers;
    agent_listener_ = std::make_unique<Listener>(*agent_http_, agents, "agents", tls_);
  }
  return bound;
}

bool HttpServer::tls() const { return tls_; }

void HttpServer::attach(Manager& manager) { manager_ = &manager; }

void HttpServer::serve() {
  if (!manager_) throw std::logic_error("HttpServer::serve before attach");
  if (!listener_) throw std::logic_error("HttpServer::serve before bind");
  rounds_ = std::thread([this] { manager_->run(); });
  std::thread agents;
  if (agent_listener_) agents = std::thread([this] { agent_listener_->run(); });
  listener_->run();
  // One listener returned: the server stops (both, and the rounds).
  if (agent_listener_) agent_listener_->stop();
  if (agents.joinable()) agents.join();
  manager_->stop();
  rounds_.join();
}

void HttpServer::stop() {
  if (manager_) manager_->stop();
  if (listener_) listener_->stop();
  if (agent_listener_) agent_listener_->stop();
}

}  // namespace fairgpu::live
