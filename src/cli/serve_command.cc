// `fairgpu serve --config FILE`: the live cluster manager (docs/design.md §7,
// docs/live-protocol.md). Runs until SIGINT or SIGTERM (leases stay in the
// store; agents keep their runs until their fences); SIGHUP reads the config
// again and applies what can change live (Manager::reload). A kill -9 loses
// nothing acknowledged (src/live/store.h).
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "fairgpu/input_error.h"
#include "live/log.h"
#include "live/manager.h"
#include "live/server.h"

namespace fairgpu::cli {
namespace {

struct ServeArgs {
  std::string config;
  int port = -1;  // -1: the config's
  std::string port_file;
  std::string log_level = "info";
  std::string log_format = "text";
};

std::string run_serve(const ServeArgs& a) {
  if (std::string problem = live::log::configure(a.log_level, a.log_format); !problem.empty())
    throw InputError("options", "", problem);
  live::ServeConfig config = live::read_serve_config(a.config);
  if (a.port >= 0) config.port = a.port;
  // Signals go to one waiting thread, not to whichever thread they hit.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // The port first: a second server on a busy port makes no store. The
  // manager is declared first all the same: it must outlive the server,
  // whose destructor stops it and joins the thread running it.
  std::unique_ptr<live::Manager> manager;
  live::HttpServer server(config);
  const int port = server.bind(config.host, config.port);
  manager = std::make_unique<live::Manager>(config);
  server.attach(*manager);
  const char* scheme = server.tls() ? "https" : "http";
  live::log::info(
      "listening",
      {{"url", fmt::format("{}://{}:{}", scheme, config.host, port)},
       {"agent_url", server.agent_port() < 0 ? std::string("(the url)")
                                             : fmt::format("{}://{}:{}", scheme, config.agent_host,
                                                           server.agent_port())},
       {"policy", config.policy},
       {"round_s", manager->interval()},
       {"data_dir", config.data_dir}});
  // After the log line: whoever waits for the file finds the line too. The
  // agents' port (http.agent_listen) on a second line.
  if (!a.port_file.empty()) {
    std::ofstream out(a.port_file + ".tmp");
    out << port << "\n";
    if (server.agent_port() >= 0) out << server.agent_port() << "\n";
    out.close();
    std::rename((a.port_file + ".tmp").c_str(), a.port_file.c_str());
  }
  std::thread waiter([&] {
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGHUP) {
        try {
          live::ServeConfig next = live::read_serve_config(a.config);
          next.port = config.port;  // --port stays
          manager->reload(next);
        } catch (const std::exception& e) {
          live::log::warn("reload_failed", {{"config", a.config}, {"error", e.what()}});
        }
        continue;
      }
      live::log::info("stopping", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
      server.stop();
      return;
    }
  });
  server.serve();
  // serve() returned: stop() was called (a signal), unless the server
  // failed; then the waiter is woken by a SIGTERM of our own.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  live::log::info("stopped");
  return "";
}

}  // namespace

void add_serve_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand(
      "serve",
      "run the live cluster manager (HTTP API, SQLite store) until SIGINT/SIGTERM; SIGHUP "
      "reloads tenants, weights, tokens and the policy from the config");
  cmd->add_option("--config", args->config, "server configuration JSON (examples/serve.json)")->required();
  cmd->add_option("--port", args->port,
                  "listen on this port instead of the config's (0: any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--port-file", args->port_file,
                  "write the port listened on to this file (the agents' port, with "
                  "http.agent_listen, on a second line)");
  cmd->add_option("--log-level", args->log_level,
                  "trace | debug (also each round) | info (default: submissions, lease "
                  "decisions, launches, revokes, exits, failures) | warn | error | off");
  cmd->add_option("--log-format", args->log_format,
                  "text (default: timestamp, level, event key=value...) | json (one object per "
                  "line)");
  commands.emplace_back(cmd, [args] { return run_serve(*args); });
}

}  // namespace fairgpu::cli
