// `fairgpu agent`: the node daemon of the live cluster manager (issue 5,
// DESIGN §7, docs/live-protocol.md), run until SIGINT or SIGTERM. The daemon
// itself is src/live/agent.cc; this file turns flags into AgentOptions and
// signals into the stop flag.
#include <signal.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "fairgpu/input_error.h"
#include "live/agent.h"

namespace fairgpu::cli {
namespace {

// Set by SIGINT / SIGTERM; the agent then stops its runs and returns.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

extern "C" void on_stop_signal(int) { g_stop.store(true); }

struct AgentArgs {
  live::AgentOptions options;
  std::string gpus;
};

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  std::string name(buf);
  return name.substr(0, name.find('.'));
}

std::string run_agent_command(AgentArgs& a) {
  live::AgentOptions& o = a.options;
  if (o.node.empty()) o.node = host_name();
  if (!a.gpus.empty()) {
    auto set = live::parse_gpus_flag(a.gpus);
    o.gpu_type = set.gpu_type;
    o.devices = set.devices;
  } else if (auto found = live::discover_gpus()) {
    o.gpu_type = found->gpu_type;
    o.devices = found->devices;
  } else {
    throw InputError("--gpus", "",
                     "missing, and no nvidia-smi on PATH to discover the GPUs: pass --gpus "
                     "TYPE:N or TYPE:ID,ID,...");
  }
  if (o.token.empty())
    throw InputError("--token", "", "missing (or set FAIRGPU_AGENT_TOKEN to the agent token)");
  live::check_agent_options(o);

  g_stop.store(false);
  struct sigaction action {
  }, old_int{}, old_term{};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  try {
    live::run_agent(o, g_stop);
  } catch (...) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    throw;
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return "";
}

}  // namespace

void add_agent_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands) {
  auto args = std::make_shared<AgentArgs>();
  live::AgentOptions& o = args->options;
  o.cpus = static_cast<int>(std::thread::hardware_concurrency());
  struct sysinfo info {};
  if (sysinfo(&info) == 0)
    o.memory_gb = static_cast<double>(info.totalram) * info.mem_unit / (1024.0 * 1024 * 1024);
  auto* c = app.add_subcommand(
      "agent",
      "run the node daemon of the live cluster manager: register this node's GPUs with "
      "`fairgpu serve`, run the jobs it leases here, report progress and exits (until "
      "SIGINT/SIGTERM, which stops the jobs as for a revoke)");
  c->add_option("--server", o.server_url, "the server, http://HOST[:PORT][/PREFIX]")->required();
  c->add_option("--node", o.node, "this node's name (default: the host name)");
  c->add_option("--gpus", args->gpus,
                "GPU type and devices: TYPE:N (devices 0..N-1) or TYPE:ID,ID,... (one device: "
                "TYPE:ID,); default: nvidia-smi's GPUs, named by their model (\"Tesla "
                "V100-SXM2-16GB\" -> v100)");
  c->add_option("--cpus", o.cpus, "CPUs to declare (default: this machine's)");
  c->add_option("--memory-gb", o.memory_gb, "memory to declare in GB (default: this machine's)");
  c->add_option("--token", o.token, "the server's agent token")->envname("FAIRGPU_AGENT_TOKEN");
  c->add_option("--state-dir", o.state_dir,
                "pid files, job logs and progress files (default: ./fairgpu-agent-<node>)");
  commands.emplace_back(c, [args] { return run_agent_command(*args); });
}

}  // namespace fairgpu::cli
