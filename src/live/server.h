// `fairgpu serve`'s HTTP front (docs/live-protocol.md): cpp-httplib routes
// onto the Manager, JSON in and out, ApiError -> status + {"error": ...}.
// The manager's scheduling loop runs on a thread of its own.
#pragma once

#include <memory>
#include <string>
#include <thread>

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

  // Binds host:port (port 0: any free port); returns the port, or throws
  // std::runtime_error naming the address. Before the Manager exists, so a
  // busy port is refused before a store is made.
  int bind(const std::string& host, int port);
  // The manager the routes call; before serve().
  void attach(Manager& manager);
  // Whether it speaks https (the config's "tls").
  bool tls() const;
  // Serves and schedules until stop(); blocking.
  void serve();
  void stop();

 private:
  Manager* manager_ = nullptr;
  bool tls_;
  std::unique_ptr<httplib::Server> http_;
  std::thread rounds_;
};

}  // namespace fairgpu::live
