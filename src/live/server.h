// `fairgpu serve`'s HTTP front (docs/live-protocol.md): cpp-httplib routes
// onto the Manager, JSON in and out, ApiError -> status + {"error": ...}.
// The manager's scheduling loop runs on a thread of its own.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "live/http_front.h"
#include "live/manager.h"

namespace httplib {
class Server;
}

namespace fairgpu::live {

class HttpServer {
 public:
  // Throws InputError when the config's TLS certificate or key cannot be
  // loaded.
  explicit HttpServer(const ServeConfig& config);
  ~HttpServer();

  // Binds host:port (port 0: any free port), and the config's agent_listen
  // when it names one; returns the port, or throws InputError naming the
  // address. Before the Manager exists, so a busy port is refused before a
  // store is made.
  int bind(const std::string& host, int port);
  // The agents' own port (the config's agent_listen), -1 when none; after
  // bind().
  int agent_port() const { return agent_port_; }
  // The manager the routes call; before serve().
  void attach(Manager& manager);
  // Whether it speaks https (the config's "tls").
  bool tls() const;
  // Serves and schedules until stop(); blocking.
  void serve();
  void stop();

 private:
  // The routes on `s`: all of them, or the agents' alone.
  void add_routes(httplib::Server& s, bool agents_only);

  Manager* manager_ = nullptr;
  bool tls_;
  ServeConfig config_;
  // The API's server, and the agents' own when agent_listen is set (the
  // agent routes alone); each behind a Listener (declared after them: it
  // refers to them).
  std::unique_ptr<httplib::Server> http_, agent_http_;
  std::unique_ptr<Listener> listener_, agent_listener_;
  int agent_port_ = -1;
  std::thread rounds_;
};

}  // namespace fairgpu::live
