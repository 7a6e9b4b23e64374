// `fairgpu serve --config FILE`: the live cluster manager (DESIGN §7,
// docs/live-protocol.md). Runs until SIGINT or SIGTERM; a kill -9 loses
// nothing acknowledged (src/live/store.h).
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "cli/commands.h"
#include "fairgpu/input_error.h"
#include "live/manager.h"
#include "live/server.h"

namespace fairgpu::cli {
namespace {

struct ServeArgs {
  std::string config;
  int port = -1;  // -1: the config's
  std::string port_file;
};

std::string run_serve(const ServeArgs& a) {
  live::ServeConfig config = live::read_serve_config(a.config);
  if (a.port >= 0) config.port = a.port;
  // Signals go to one waiting thread, not to whichever thread they hit.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  live::Manager manager(config);
  live::HttpServer server(manager);
  const int port = server.bind(config.host, config.port);
  if (!a.port_file.empty()) {
    std::ofstream(a.port_file + ".tmp") << port << "\n";
    std::rename((a.port_file + ".tmp").c_str(), a.port_file.c_str());
  }
  std::fprintf(stderr, "fairgpu serve: listening on http://%s:%d (policy %s, round %g s, data %s)\n",
               config.host.c_str(), port, config.policy.c_str(), manager.interval(),
               config.data_dir.c_str());
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (sig != 0) server.stop();
  });
  server.serve();
  // serve() returned: stop() was called (a signal); let the waiter go.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  std::fprintf(stderr, "fairgpu serve: stopped\n");
  return "";
}

}  // namespace

void add_serve_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "run the live cluster manager (HTTP API, SQLite store)");
  cmd->add_option("--config", args->config, "server configuration JSON (examples/serve.json)")->required();
  cmd->add_option("--port", args->port, "listen on this port instead of the config's (0: any free port)");
  cmd->add_option("--port-file", args->port_file, "write the port listened on to this file");
  commands.emplace_back(cmd, [args] { return run_serve(*args); });
}

}  // namespace fairgpu::cli
