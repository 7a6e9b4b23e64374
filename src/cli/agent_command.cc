// `fairgpu agent`: the node daemon of the live cluster manager (issue 5,
// docs/design.md §7, docs/live-protocol.md), run until SIGINT or SIGTERM. The daemon
// itself is src/live/agent.cc; this file turns flags into AgentOptions and
// signals into the stop flag.
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "fairgpu/input_error.h"
#include "live/agent.h"
#include "live/node_resources.h"
#include "live/log.h"

namespace fairgpu::cli {
namespace {

// Set by SIGINT / SIGTERM; the agent then stops its runs and returns.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used from a signal handler");

extern "C" void on_stop_signal(int) { g_stop.store(true); }

struct AgentArgs {
  live::AgentOptions options;
  std::string log_level = "info";
  std::string log_format = "text";
  std::string gpus;
  std::string token_file;
  std::string cpu_list;
  CLI::Option* cpus_flag = nullptr;
};

// The node token: --token-file, else FAIRGPU_AGENT_TOKEN (then wiped from
// this process's environment block, so /proc/<agent>/environ no longer
// shows it), else --token (visible in ps: for trying things out only).
std::string read_token(AgentArgs& a) {
  const int given = !a.token_file.empty() + !a.options.token.empty();
  if (given > 1) throw InputError("--token-file", "", "give --token-file or --token, not both");
  std::string token;
  if (!a.token_file.empty()) {
    // As ssh does with a private key: a token others may read is refused
    // (jobs run as other users on this node).
    struct stat st {};
    if (stat(a.token_file.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
      throw InputError("--token-file", "",
                       fmt::format("{} is readable by others (mode {:o}): chmod 600 it",
                                   a.token_file, st.st_mode & 0777));
    std::ifstream in(a.token_file);
    if (!in) throw InputError("--token-file", "", "cannot read " + a.token_file);
    std::getline(in, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (token.empty())
      throw InputError(a.token_file, "", "empty: expected the node token on line 1");
  } else if (!a.options.token.empty()) {
    token = a.options.token;
  } else if (char* env = std::getenv("FAIRGPU_AGENT_TOKEN")) {
    token = env;
    std::memset(env, 'x', std::strlen(env));
    unsetenv("FAIRGPU_AGENT_TOKEN");
  }
  if (token.empty())
    throw InputError("--token-file", "",
                     "missing: the file holding this node's token (`fairgpu node-token NODE`), or "
                     "set FAIRGPU_AGENT_TOKEN");
  for (char c : token)
    if (static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f)
      throw InputError(a.token_file.empty() ? "token" : a.token_file, "",
                       "the token holds a space or control character");
  return token;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  std::string name(buf);
  return name.substr(0, name.find('.'));
}

std::string run_agent_command(AgentArgs& a) {
  if (std::string problem = live::log::configure(a.log_level, a.log_format); !problem.empty())
    throw InputError("options", "", problem);
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
  if (!a.cpu_list.empty()) {
    o.cpu_ids = live::parse_cpu_list(a.cpu_list);
    if (o.cpu_ids.empty()) throw InputError("--cpu-list", "", "no CPUs");
    if (a.cpus_flag->count() == 0) o.cpus = static_cast<int>(o.cpu_ids.size());
  }
  o.token = read_token(a);
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
  // What this machine offers the agent: its affinity mask and MemTotal.
  o.cpus = static_cast<int>(live::affinity_cpus().size());
  o.memory_gb = live::total_memory_gb();
  auto* c = app.add_subcommand(
      "agent",
      "run the node daemon of the live cluster manager: register this node's GPUs with "
      "`fairgpu serve`, run the jobs it leases here, report progress and exits (until "
      "SIGINT/SIGTERM, which stops the jobs as for a revoke)");
  c->add_option("--server", o.server_url, "the server, http[s]://HOST[:PORT][/PREFIX]")->required();
  c->add_option("--ca", o.ca_file,
                "PEM file of the CA that signed an https server's certificate (default: the "
                "system's CAs)");
  c->add_option("--node", o.node, "this node's name (default: the host name)");
  c->add_option("--gpus", args->gpus,
                "GPU type and devices: TYPE:N (devices 0..N-1) or TYPE:ID,ID,... (one device: "
                "TYPE:ID,); default: nvidia-smi's GPUs, named by their model (\"Tesla "
                "V100-SXM2-16GB\" -> v100)");
  args->cpus_flag = c->add_option(
      "--cpus", o.cpus,
      "CPUs to declare (default: the cores this agent may run on, its affinity mask, or "
      "--cpu-list's)");
  c->add_option("--cpu-list", args->cpu_list,
                "the cores jobs are pinned to, as 0-3,6 (default: the agent's affinity mask); a "
                "launch granting c CPUs pins its job to round(c) of them, distinct from other "
                "jobs' while there are enough, and sets OMP_NUM_THREADS");
  c->add_option("--cgroup", o.cgroup_dir,
                "cgroup v2 directory under which each job gets a child cgroup holding all its "
                "processes, killed together when the run ends, and its memory grant as "
                "memory.max (default: the agent's own cgroup, which it leaves for a leaf "
                "fairgpu-agent@NODE of it: start it alone in its cgroup; `none`: no cgroups). "
                "Where none can be made the job runs unlimited and its status says so");
  c->add_option("--max-pids", o.max_pids,
                "the most processes (and threads) one job may have at once: pids.max of its "
                "cgroup, and when run as root RLIMIT_NPROC of the job's user (shared by that "
                "user's jobs on this node), so that a fork bomb fails its own forks, not other "
                "tenants' (default 4096; 0: no limit)");
  c->add_option("--memory-gb", o.memory_gb,
                "memory to declare in GB (default: this machine's, MemTotal of /proc/meminfo)");
  c->add_option("--token-file", args->token_file,
                "file holding this node's token (`fairgpu node-token NODE`); default: the "
                "FAIRGPU_AGENT_TOKEN variable");
  c->add_option("--token", o.token,
                "this node's token on the command line (visible to every user in ps: prefer "
                "--token-file)");
  c->add_option("--address", o.address,
                "host name or IP address at which other nodes reach this node's jobs (a gang's "
                "MASTER_ADDR); default: the address the server sees this agent connect from");
  c->add_option("--uid-base", o.uid_base,
                "when run as root: jobs of a tenant without a unix_user run as uid = gid = this + "
                "the tenant's slot (default 200000; the range must be unused)");
  c->add_option("--state-dir", o.state_dir,
                "pid files, job logs and progress files (default: ./fairgpu-agent-<node>)");
  c->add_option("--log-level", args->log_level,
                "trace | debug | info (default) | warn | error | off");
  c->add_option("--log-format", args->log_format,
                "text (default: timestamp, level, message) | json (one object per line)");
  commands.emplace_back(c, [args] { return run_agent_command(*args); });
}

}  // namespace fairgpu::cli
