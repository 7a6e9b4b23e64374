// `fairgpu agent`: the node daemon of the live cluster manager (issue 5,
// docs/design.md §7), the agent side of docs/live-protocol.md. The choices made where
// the protocol is silent are listed in agent.h.
//
// One loop, one thread: every tick it reaps runs and advances their stop
// sequences; on fences (lease ended without renewal, no heartbeat answered
// for heartbeat_timeout_s) it starts the stop sequence; every heartbeat_s it
// reports its runs and applies the answer (ack, launch, renew, revoke).
#include "live/agent.h"

#include <fmt/format.h>
#include <httplib.h>
#include <pwd.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "fairgpu/input_error.h"
#include "live/http_util.h"
#include "live/log_relay.h"
#include "live/node_resources.h"
#include "live/log.h"
#include "live/process.h"

namespace fairgpu::live {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kLeftoverWaitS = 2.0;
// How long the start waits for an earlier agent's run cgroups to empty once
// killed before it registers anyway (still killing them every tick): a
// process in uninterruptible sleep dies when it leaves it.
constexpr double kLeftoverCgroupWaitS = 10.0;
// How long a run's cgroup may take to empty after its leader exited before
// the agent says so (once): the run is reported running until it is empty.
constexpr double kSlowCgroupEndS = 10.0;
constexpr int kMasterPortDefault = 29500;

// Clamped: a server's number (lease_s_left: 1e300, NaN) must not overflow
// the conversion to the clock's integer ticks.
Clock::duration seconds(double s) {
  if (!(s == s)) s = 0.0;
  s = std::clamp(s, -1e9, 1e9);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The largest protocol integer (exact in a double).
constexpr std::int64_t kMaxExact = std::int64_t{1} << 53;

// An integer of the server's answer in lo..hi (hi >= 0), compared as an
// integer (never through a double, which rounds 2^53 + 1 down); nullopt for
// anything else: a fraction, a string, out of range.
std::optional<std::int64_t> integer_in(const nlohmann::json& v, std::int64_t lo, std::int64_t hi) {
  // nlohmann stores a non-negative integer as unsigned.
  if (v.is_number_unsigned()) {
    const std::uint64_t x = v.get<std::uint64_t>();
    if (x > static_cast<std::uint64_t>(hi) || (lo > 0 && x < static_cast<std::uint64_t>(lo)))
      return std::nullopt;
    return static_cast<std::int64_t>(x);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const std::int64_t x = v.get<std::int64_t>();
  if (x < lo || x > hi) return std::nullopt;
  return x;
}

// A lease id of the server's answer: an integer in 1..2^53.
std::int64_t lease_id(const nlohmann::json& action) {
  if (auto id = integer_in(action.at("lease"), 1, kMaxExact)) return *id;
  throw std::invalid_argument("lease: not an integer in 1..2^53");
}

// The uid of a tenant's slot.
constexpr int kMaxTenantSlot = 1 << 20;
// Linux's largest pid_max.
constexpr int kMaxPidsLimit = 1 << 22;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (int d : v) out += (out.empty() ? "" : ",") + std::to_string(d);
  return out;
}

ServerUrl agent_server_url(const AgentOptions& o) {
  ServerUrl u = parse_server_url(o.server_url, "--server '" + o.server_url + "'");
  if (!o.ca_file.empty() && !u.https)
    throw InputError("--ca", "",
                     "a CA file verifies an https server; the URL " + o.server_url + " is http");
  return u;
}

// "http[s]://HOST:PORT", the form httplib::Client picks its transport from.
std::string scheme_host_port(const ServerUrl& u) {
  const bool v6 = u.host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", u.https ? "https" : "http", v6 ? "[" : "", u.host,
                     v6 ? "]" : "", u.port);
}

std::string valid_token_chars(const std::string& s) {
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      return std::string(1, c);
  return "";
}

// One run the agent holds: a lease's process, or a launch that failed.
struct Run {
  std::int64_t lease = 0;
  std::string job;
  std::string tenant;  // "" when the launch named none
  std::vector<int> devices;
  std::unique_ptr<Process> process;  // null when the launch never got as far
  std::string failure;               // launch_failed: why
  bool refused_by_node = false;      // launch_failed for the node's reason (its agent stopping)
  bool node_fault = false;           // ... a fault of the node's (disk full, cgroup): counted
  Clock::time_point lease_end{};
  bool end_logged = false;
  bool slow_end_logged = false;  // its cgroup outlived its leader by kSlowCgroupEndS
  std::vector<int> cores;  // pinned to (empty: not pinned)
  std::string cgroup;      // its memory cgroup, until removed
  std::string limits;      // what it is held to, reported with it

  bool launch_failed() const { return !process || process->state() == ProcessState::kLaunchFailed; }
  bool running() const { return process && process->state() == ProcessState::kRunning; }
};

class Agent {
 public:
  Agent(const AgentOptions& options, const std::atomic<bool>& stop)
      : o_(options), stop_(stop), url_(agent_server_url(options)), http_(scheme_host_port(url_)) {
    std::string dir = o_.state_dir.empty() ? "./fairgpu-agent-" + o_.node : o_.state_dir;
    std::error_code ec;
    fs::create_directories(fs::path(dir) / "runs", ec);
    if (ec) throw InputError("--state-dir", "", "cannot create '" + dir + "': " + ec.message());
    state_dir_ = fs::absolute(dir).lexically_normal();
    cores_ = o_.cpu_ids.empty() ? affinity_cpus() : o_.cpu_ids;
    own_cgroup_ = o_.cgroup_dir == "none" ? "" : own_cgroup_dir();
    cgroup_plan_ = plan_cgroups(o_.cgroup_dir, own_cgroup_, is_root_cgroup(own_cgroup_), o_.node);
    cgroup_parent_ = cgroup_plan_.runs_parent;
    switch_users_ = geteuid() == 0;
    if (switch_users_) {
      // Jobs run as other users and must reach runs/<lease>/job: every
      // directory down to runs/ must let others through (x), and none of
      // them list it (runs/ is 0711).
      for (fs::path p = state_dir_; !p.empty(); p = p.parent_path()) {
        struct stat st {};
        if (stat(p.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH))
          throw InputError("--state-dir", "",
                           fmt::format("{}: jobs run as their tenants' users and cannot pass "
                                       "through {} (mode {:o}): give it o+x or choose another dir",
                                       state_dir_.string(), p.string(), st.st_mode & 07777));
        if (p == p.parent_path()) break;
      }
      chmod((state_dir_ / "runs").c_str(), 0711);
    }
    auto whole = static_cast<time_t>(o_.http_timeout_s);
    auto usec = static_cast<time_t>((o_.http_timeout_s - static_cast<double>(whole)) * 1e6);
    http_.set_connection_timeout(whole, usec);
    http_.set_read_timeout(whole, usec);
    http_.set_write_timeout(whole, usec);
    if (!o_.token.empty()) http_.set_bearer_token_auth(o_.token);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (url_.https) {
      // The server's certificate is checked (chain and host name) against
      // --ca, else the system's CAs.
      http_.enable_server_certificate_verification(true);
      if (!o_.ca_file.empty()) http_.set_ca_cert_path(o_.ca_file);
    }
#endif
  }

  void run() {
    move_into_leaf_cgroup();
    kill_leftovers();
    end_leftover_cgroups();
    enable_controllers_for_runs();
    while (!stop_.load()) {
      if (!register_node()) break;  // stopped while retrying
      session();
      if (shutting_down_) break;
    }
  }

 private:
  enum class Beat { kOk, kFailed, kStale };

  // One line "agent NODE: text", with " tenant=T" when it is about a run
  // whose tenant is known; in JSON, node, lease, job and tenant are fields.
  // In JSON the line is the event `event` (as the server's lines are), with
  // node, lease, job and tenant and `fields` as fields, and the text as msg.
  void log(std::string_view event, const std::string& text, log::Level level = log::Level::kInfo,
           const Run* run = nullptr, std::vector<std::pair<const char*, json>> fields = {}) const {
    std::string line = "agent " + o_.node + ": " + text;
    if (run && !run->tenant.empty()) line += " tenant=" + run->tenant;
    if (o_.log) {
      o_.log(line);
      return;
    }
    fields.insert(fields.begin(), {"node", o_.node});
    if (run)
      fields.insert(fields.begin() + 1,
                    {{"lease", run->lease}, {"job", run->job}, {"tenant", run->tenant}});
    log::event_message(level, event, line, fields);
  }

  std::string describe(const Run& r) const {
    return fmt::format("lease {} job {}", r.lease, r.job);
  }

  // Leftovers of an earlier agent process of this node (it was kill -9'd, so
  // its jobs' own children may still run): SIGKILL their groups.
  void kill_leftovers() {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(state_dir_ / "runs", ec)) {
      fs::path pid_file = entry.path() / "pid";
      if (!fs::exists(pid_file)) continue;
      pid_t pgid = 0;
      std::string lease = entry.path().filename().string();
      switch (kill_leftover_group(pid_file.string(), kLeftoverWaitS, &pgid)) {
        case LeftoverResult::kKilled:
          log("leftover_killed",
              fmt::format("killed leftover process group {} (lease {}) of an earlier agent", pgid,
                          lease),
              log::Level::kInfo, nullptr, {{"pgid", pgid}, {"lease", lease}});
          break;
        case LeftoverResult::kPidReused:
          log("leftover_pid_reused",
              fmt::format("pid file of lease {} names pid {}, now another process: left alone",
                          lease, pgid),
              log::Level::kInfo, nullptr, {{"pid", pgid}, {"lease", lease}});
          break;
        case LeftoverResult::kUnreadable:
          log("leftover_pid_unreadable",
              fmt::format("unreadable pid file {}: removed", pid_file.string()));
          break;
        case LeftoverResult::kGone:
          break;
      }
      fs::remove(pid_file, ec);
    }
  }

  // An agent in the cgroup its runs' cgroups go under leaves it for a leaf
  // of it (node_resources.h): a cgroup with processes of its own cannot
  // enable the memory controller for its children. Before any job starts,
  // so that this moves the agent alone; its later jobs without a memory
  // cgroup stay in the leaf with it.
  void move_into_leaf_cgroup() {
    const std::string& leaf = cgroup_plan_.agent_leaf;
    if (leaf.empty()) return;
    if (std::string e = move_into_cgroup(leaf, getpid()); !e.empty()) {
      log("cgroup_unchanged", e + ": staying in " + own_cgroup_, log::Level::kWarn);
      return;
    }
    own_cgroup_ = leaf;
    log("cgroup_moved", fmt::format("moved into cgroup {}; runs' cgroups go beside it", leaf),
        log::Level::kInfo, nullptr, {{"cgroup", leaf}});
  }

  // Once at start, so that an agent that cannot hold jobs to their limits,
  // or end their processes with their runs, says why in one line (each
  // run's limits say it again).
  void enable_controllers_for_runs() {
    if (cgroup_parent_.empty()) {
      log("cgroup_none",
          "runs get no cgroup (--cgroup none, or no cgroup v2 hierarchy): a job's process that "
          "leaves its process group can outlive its run, and memory and pids limits are not "
          "enforced",
          log::Level::kWarn);
      return;
    }
    if (std::string e = enable_child_controller(cgroup_parent_, "memory"); !e.empty())
      log("memory_limits_off", "jobs' memory limits will not be enforced: " + e, log::Level::kWarn);
    if (o_.max_pids == 0) return;
    if (std::string e = enable_child_controller(cgroup_parent_, "pids"); !e.empty())
      log("pids_limit_off",
          fmt::format("jobs' pids.max will not be set: {}{}", e,
                      switch_users_ ? "; RLIMIT_NPROC still limits each job's user" : ""),
          log::Level::kWarn);
  }

  // Whether `pid`, named by a run cgroup of this node, is a live agent other
  // than this one (two agents of one node on a machine, as parallel tests
  // run them): its runs are its own. An earlier agent may have had this
  // agent's pid (a container's first process): it holds no run yet.
  static bool another_live_agent(pid_t pid) {
    if (pid == getpid() || !process_alive(pid)) return false;
    std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
    std::string comm;
    std::getline(in, comm);
    return comm.rfind("fairgpu", 0) == 0;
  }

  // Run cgroups of an earlier agent process of this node (it was kill -9'd:
  // its jobs' children that left their process groups may still run, with
  // the tenant's uid and CUDA_VISIBLE_DEVICES): killed, awaited (up to
  // kLeftoverCgroupWaitS) and removed before this agent registers, so that
  // no job runs twice once the server relaunches it. Then the earlier
  // agent's leaf if this agent is not in it (removed only when empty).
  void end_leftover_cgroups() {
    if (cgroup_parent_.empty()) return;
    std::error_code ec;
    std::vector<std::string> leftovers;
    for (const auto& entry : fs::directory_iterator(cgroup_parent_, ec)) {
      const std::string dir = entry.path().string();
      const pid_t agent = run_cgroup_agent(entry.path().filename().string(), o_.node);
      if (agent == 0) continue;
      if (another_live_agent(agent)) {
        log("leftover_cgroup_busy",
            fmt::format("cgroup {}: its agent, pid {}, still runs: left alone", dir, agent),
            log::Level::kWarn, nullptr, {{"cgroup", dir}, {"pid", agent}});
        continue;
      }
      leftovers.push_back(dir);
      if (!cgroup_populated(dir)) continue;
      if (std::string e = kill_cgroup(dir); !e.empty())
        log("leftover_cgroup_error", e, log::Level::kWarn);
      else
        log("leftover_cgroup_killed",
            fmt::format("killed the processes an earlier agent's run left in cgroup {}", dir),
            log::Level::kInfo, nullptr, {{"cgroup", dir}});
    }
    const auto deadline = Clock::now() + seconds(kLeftoverCgroupWaitS);
    auto any_populated = [&] {
      bool any = false;
      for (const auto& dir : leftovers)
        if (cgroup_populated(dir)) {
          kill_cgroup(dir);  // without cgroup.kill: what forked meanwhile
          any = true;
        }
      return any;
    };
    while (any_populated() && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    for (const auto& dir : leftovers) {
      if (remove_cgroup(dir)) continue;
      log("leftover_cgroup_stuck",
          fmt::format("cgroup {} still holds processes {:.0f} s after SIGKILL: registering anyway, "
                      "killing them until they are gone",
                      dir, kLeftoverCgroupWaitS),
          log::Level::kWarn, nullptr, {{"cgroup", dir}});
      stale_cgroups_.push_back(dir);
    }
    const std::string leaf = cgroup_parent_ + "/" + agent_leaf_name(o_.node);
    if (leaf != own_cgroup_) remove_cgroup(leaf);
  }

  // Registers, retrying with a backoff; false when `stop` came first.
  bool register_node() {
    json body = {{"node", o_.node},
                 {"gpu_type", o_.gpu_type},
                 {"devices", o_.devices},
                 {"cpus", o_.cpus},
                 {"memory_gb", o_.memory_gb}};
    if (!o_.address.empty()) body["address"] = o_.address;
    double backoff = o_.register_retry_s;
    while (!stop_.load()) {
      auto res = http_.Post(url_.prefix + "/v1/agents/register", body.dump(), "application/json");
      std::string problem;
      if (!res) {
        problem = "cannot reach the server: " + describe_http_error(res.error(), o_.http_timeout_s);
      } else if (res->status == 200 || res->status == 201) {
        problem = accept_registration(res->body);
        if (problem.empty()) return true;
      } else if (res->status >= 400 && res->status < 500 && res->status != 408 &&
                 res->status != 409 && res->status != 429) {
        throw InputError("server " + o_.server_url, "register",
                         fmt::format("{}: {}", res->status, error_line(*res)));
      } else {
        problem = fmt::format("server answered {}: {}", res->status, error_line(*res));
      }
      log("register_failed",
          fmt::format("cannot register with {}: {}; retrying in {:.1f} s", o_.server_url, problem,
                      backoff),
          log::Level::kWarn, nullptr,
          {{"server", o_.server_url}, {"error", problem}, {"retry_s", backoff}});
      auto until = Clock::now() + seconds(backoff);
      while (!stop_.load() && Clock::now() < until)
        std::this_thread::sleep_for(std::min(seconds(o_.tick_s), until - Clock::now()));
      backoff = std::min(backoff * 2, o_.register_retry_max_s);
    }
    return false;
  }

  // "" when the register answer was taken, else what is wrong with it.
  std::string accept_registration(const std::string& body) {
    auto j = json::parse(body, nullptr, false);
    if (!j.is_object()) return "register answer is not a JSON object";
    const auto epoch = j.contains("epoch") ? integer_in(j["epoch"], 0, kMaxExact) : std::nullopt;
    if (!epoch) return "register answer: epoch: missing or not an integer in 0..2^53";
    const char* durations[] = {"heartbeat_s", "grace_s", "kill_after_s", "heartbeat_timeout_s"};
    for (const char* key : durations)
      if (!j.contains(key) || !j[key].is_number() || !(j[key].get<double>() >= 0) ||
          j[key].get<double>() > 1e6)
        return fmt::format("register answer: {}: missing or not a number in 0..1e6", key);
    if (j["heartbeat_s"].get<double>() <= 0) return "register answer: heartbeat_s: not > 0";
    epoch_ = *epoch;
    heartbeat_s_ = j["heartbeat_s"].get<double>();
    grace_s_ = j["grace_s"].get<double>();
    kill_after_s_ = j["kill_after_s"].get<double>();
    heartbeat_timeout_s_ = j["heartbeat_timeout_s"].get<double>();
    last_ok_ = Clock::now();
    failed_beats_ = 0;
    log("registered",
        fmt::format("registered with {} (epoch {}, {} x {} on devices {}, heartbeat {} s)",
                    o_.server_url, epoch_, o_.devices.size(), o_.gpu_type, join_ints(o_.devices),
                    heartbeat_s_),
        log::Level::kInfo, nullptr,
        {{"server", o_.server_url},
         {"epoch", epoch_},
         {"gpu_type", o_.gpu_type},
         {"devices", o_.devices},
         {"heartbeat_s", heartbeat_s_}});
    return "";
  }

  // One registration's life: until a 409 (runs stopped and forgotten) or
  // until shutdown is complete.
  void session() {
    auto next_beat = Clock::now();
    while (true) {
      poll_runs();
      if (stop_.load() && !shutting_down_) {
        shutting_down_ = true;
        log("stopping", fmt::format("stopping: {} run(s) to stop", count_running()),
            log::Level::kInfo, nullptr, {{"runs", count_running()}});
        stop_all("agent stopping");
      }
      if (shutting_down_ && count_running() == 0) {
        // The last heartbeat, reporting how the runs ended; once more if its
        // answer launched something (refused, so the server learns it now).
        for (int i = 0; i < 3; ++i) {
          new_runs_ = false;
          if (heartbeat() != Beat::kOk || !new_runs_) break;
        }
        log("stopped", "stopped");
        return;
      }
      auto now = Clock::now();
      enforce_fences(now);
      if (now >= next_beat) {
        if (heartbeat() == Beat::kStale) {
          stop_all("stale epoch");
          wait_for_runs();
          runs_.clear();
          return;
        }
        next_beat = Clock::now() + seconds(heartbeat_s_);
      }
      now = Clock::now();
      if (next_beat > now)
        std::this_thread::sleep_for(std::min(next_beat - now, seconds(o_.tick_s)));
    }
  }

  int count_running() const {
    int n = 0;
    for (const auto& [lease, r] : runs_) n += r.running() ? 1 : 0;
    return n;
  }

  void poll_runs() {
    std::erase_if(stale_cgroups_, [](const std::string& dir) {
      if (cgroup_populated(dir)) kill_cgroup(dir);
      return remove_cgroup(dir);
    });
    for (auto& [lease, r] : runs_) {
      if (r.running()) r.process->poll();
      if (r.running() && r.process->leader_exited() && !r.slow_end_logged &&
          seconds_between(r.process->leader_exited_at(), Clock::now()) >= kSlowCgroupEndS) {
        r.slow_end_logged = true;
        log("cgroup_slow_end",
            fmt::format("{}: its process exited {:.0f} s ago, but cgroup {} still holds processes "
                        "after SIGKILL; the run ends when they are gone",
                        describe(r), kSlowCgroupEndS, r.cgroup),
            log::Level::kWarn, &r, {{"cgroup", r.cgroup}});
      }
      // In the poll that saw the run end: the runs a 409 makes the agent
      // forget are forgotten right after it.
      if (!r.running() && !r.cgroup.empty() && remove_cgroup(r.cgroup)) r.cgroup.clear();
      if (!r.process || r.process->state() != ProcessState::kExited || r.end_logged) continue;
      r.end_logged = true;
      const Process& p = *r.process;
      std::string how = p.signal() ? fmt::format("killed by signal {}", p.signal())
                                   : fmt::format("exited with code {}", p.exit_code());
      const bool failed = !p.stop_requested() && (p.signal() || p.exit_code() != 0);
      log("exit",
          fmt::format("exit {}: {}{}", describe(r), how, p.stop_requested() ? " (revoked)" : ""),
          failed ? log::Level::kWarn : log::Level::kInfo, &r,
          {{"exit_code", p.signal() ? json(nullptr) : json(p.exit_code())},
           {"signal", p.signal() ? json(p.signal()) : json(nullptr)},
           {"revoked", p.stop_requested()}});
    }
  }

  void wait_for_runs() {
    while (count_running() > 0) {
      poll_runs();
      if (count_running() > 0) std::this_thread::sleep_for(seconds(o_.tick_s));
    }
  }

  void stop_run(Run& r, const std::string& verb, const std::string& why) {
    // A run whose leader has exited is already being ended (its cgroup killed).
    if (!r.running() || r.process->stop_requested() || r.process->leader_exited()) return;
    log(verb, fmt::format("{} {}{}", verb, describe(r), why.empty() ? "" : ": " + why),
        log::Level::kInfo, &r);
    r.process->stop(grace_s_, kill_after_s_);
  }

  void stop_all(const std::string& why) {
    for (auto& [lease, r] : runs_) stop_run(r, "stop", why);
  }

  void enforce_fences(Clock::time_point now) {
    double silent = seconds_between(last_ok_, now);
    for (auto& [lease, r] : runs_) {
      if (!r.running() || r.process->stop_requested() || r.process->leader_exited()) continue;
      if (now >= r.lease_end)
        stop_run(r, "fence", "lease ended without renewal");
      else if (silent >= heartbeat_timeout_s_)
        stop_run(r, "fence", fmt::format("no heartbeat answered for {:.1f} s", silent));
    }
  }

  json report(Run& r) {
    json j = {{"lease", r.lease}, {"job", r.job}};
    if (!r.limits.empty()) j["limits"] = fit_report_text(r.limits, 1024);  // the server's bound
    if (r.launch_failed()) {
      j["state"] = "launch_failed";
      j["iterations"] = 0;
      // Within the server's bounds (issue 30, H2): a 70 KiB argv[0] in the
      // reason must not get the whole heartbeat refused.
      j["log_tail"] = fit_report_text(r.process ? r.process->failure() : r.failure);
      // Never started for the node's reason: not the job's failure (the
      // protocol's "revoked" on a launch_failed run).
      if (r.refused_by_node) j["revoked"] = true;
      if (r.node_fault) j["node_fault"] = true;  // counted against the node by the server
      return j;
    }
    Process& p = *r.process;
    j["iterations"] = p.read_progress();
    if (p.batch_size() > 0) j["batch_size"] = p.batch_size();
    if (p.state() == ProcessState::kRunning) {
      j["state"] = "running";
      return j;
    }
    j["state"] = "exited";
    j["exit_code"] = p.exit_code();
    j["signal"] = p.signal();
    j["revoked"] = p.stop_requested();
    j["log_tail"] = fit_report_text(p.log_tail());
    return j;
  }

  Beat heartbeat() {
    json runs = json::array();
    for (auto& [lease, r] : runs_) runs.push_back(report(r));
    json body = {{"node", o_.node}, {"epoch", epoch_}, {"runs", runs}};
    // The log bytes the server asked for in its last answer (log_relay.h).
    if (!log_replies_.empty()) body["logs"] = std::exchange(log_replies_, json::array());
    // A job's log may hold bytes that are not UTF-8.
    std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    auto res = http_.Post(url_.prefix + "/v1/agents/heartbeat", text, "application/json");
    auto arrived = Clock::now();
    std::string problem;
    if (!res) {
      problem = "cannot reach the server: " + describe_http_error(res.error(), o_.http_timeout_s);
    } else if (res->status == 409) {
      log("stale_epoch",
          fmt::format("stale epoch {} (409: {}): stopping {} run(s), then registering again",
                      epoch_, error_line(*res), count_running()),
          log::Level::kWarn, nullptr, {{"epoch", epoch_}, {"runs", count_running()}});
      return Beat::kStale;
    } else if (res->status != 200) {
      problem = fmt::format("server answered {}: {}", res->status, error_line(*res));
    } else {
      auto answer = json::parse(res->body, nullptr, false);
      if (answer.is_object()) {
        if (failed_beats_ > 0)
          log("heartbeat_recovered",
              fmt::format("heartbeat answered again after {} failure(s)", failed_beats_),
              log::Level::kInfo, nullptr, {{"failures", failed_beats_}});
        failed_beats_ = 0;
        last_ok_ = arrived;
        apply(answer, arrived);
        return Beat::kOk;
      }
      problem = "heartbeat answer is not a JSON object";
    }
    if (++failed_beats_ == 1)
      log("heartbeat_failed",
          fmt::format("heartbeat failed: {}; retrying every {} s", problem, heartbeat_s_),
          log::Level::kWarn, nullptr, {{"error", problem}});
    return Beat::kFailed;
  }

  void apply(const json& answer, Clock::time_point arrived) {
    if (answer.contains("heartbeat_s") && answer["heartbeat_s"].is_number() &&
        answer["heartbeat_s"].get<double>() > 0 && answer["heartbeat_s"].get<double>() <= 1e6)
      heartbeat_s_ = answer["heartbeat_s"].get<double>();
    if (answer.contains("ack") && answer["ack"].is_array()) {
      for (const auto& lease : answer["ack"]) {
        if (!lease.is_number_integer()) continue;
        auto it = runs_.find(lease.get<std::int64_t>());
        if (it == runs_.end() || it->second.running()) continue;
        if (!it->second.cgroup.empty() && !remove_cgroup(it->second.cgroup))
          stale_cgroups_.push_back(it->second.cgroup);
        runs_.erase(it);
      }
    }
    if (answer.contains("log_requests") && answer["log_requests"].is_array())
      for (const auto& want : answer["log_requests"]) read_log_for_server(want);
    if (!answer.contains("actions") || !answer["actions"].is_array()) return;
    for (const auto& action : answer["actions"]) {
      try {
        std::string kind = action.at("action").get<std::string>();
        if (kind == "launch") {
          launch(action, arrived);
        } else if (kind == "renew") {
          auto it = runs_.find(lease_id(action));
          if (it == runs_.end() || !it->second.running() || it->second.process->stop_requested())
            continue;
          it->second.lease_end = arrived + seconds(action.at("lease_s_left").get<double>());
        } else if (kind == "revoke") {
          auto it = runs_.find(lease_id(action));
          if (it != runs_.end()) stop_run(it->second, "revoke", "");
        } else {
          log("unknown_action", "ignoring unknown action '" + kind + "'", log::Level::kInfo,
              nullptr, {{"action", kind}});
        }
      } catch (const std::exception& e) {
        log("malformed_action",
            fmt::format("ignoring malformed action {}: {}",
                        action.dump(-1, ' ', false, json::error_handler_t::replace), e.what()),
            log::Level::kInfo, nullptr, {{"error", e.what()}});
      }
    }
  }

  // A tenant reads its job's output through the server: the bytes of
  // runs/<lease>/log from `offset`, sent with the next heartbeat. The log
  // is the agent's own file (the job writes through the descriptor it was
  // given; a link put in its place is not followed).
  void read_log_for_server(const json& want) {
    try {
      const std::int64_t lease = want.at("lease").get<std::int64_t>();
      const std::int64_t offset = want.at("offset").get<std::int64_t>();
      const std::int64_t max =
          std::min<std::int64_t>(want.at("max").get<std::int64_t>(), LogRelay::kMaxChunk);
      if (lease < 1 || offset < 0 || max < 0) return;
      json reply = {{"lease", lease}, {"offset", offset}, {"data", ""}, {"size", 0},
                    {"found", false}};
      const fs::path file = state_dir_ / "runs" / std::to_string(lease) / "log";
      const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0) {
        struct stat st {};
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
          std::string bytes(static_cast<std::size_t>(max), '\0');
          const ssize_t n = offset < st.st_size ? ::pread(fd, bytes.data(), bytes.size(), offset) : 0;
          bytes.resize(static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
          reply["data"] = LogRelay::base64(bytes);
          reply["size"] = static_cast<std::int64_t>(st.st_size);
          reply["found"] = true;
        }
        ::close(fd);
      }
      log_replies_.push_back(std::move(reply));
    } catch (const std::exception& e) {
      log("log_request_malformed", fmt::format("ignoring malformed log request: {}", e.what()),
          log::Level::kWarn);
    }
  }

  void launch(const json& action, Clock::time_point arrived) {
    const auto lease = lease_id(action);
    if (!seen_leases_.insert(lease).second) return;  // already runs or ran: idempotent
    new_runs_ = true;
    Run& r = runs_[lease];
    r.lease = lease;
    r.job =
        action.contains("job") && action["job"].is_string() ? action["job"].get<std::string>() : "";
    if (action.contains("tenant") && action["tenant"].is_string())
      r.tenant = action["tenant"].get<std::string>();
    auto fail = [&](const std::string& why) {
      r.failure = why;
      log("launch_failed", fmt::format("launch {} failed: {}", describe(r), why), log::Level::kWarn,
          &r, {{"error", why}});
    };
    if (shutting_down_) {
      r.refused_by_node = true;
      return fail("agent shutting down");
    }
    try {
      prepare_and_launch(r, action, arrived);
    } catch (const std::exception& e) {
      return fail(std::string("malformed launch action: ") + e.what());
    }
    if (r.launch_failed()) {
      // The node's trouble (a full disk: no pid file): reported as never
      // started, not as the job's failure (issue 30, H9).
      if (r.process && r.process->node_fault()) r.refused_by_node = r.node_fault = true;
      if (r.process)
        log("launch_failed",
            fmt::format("launch {} failed{}: {}", describe(r),
                        r.refused_by_node ? " (the node's fault, not the job's)" : "",
                        r.process->failure()),
            log::Level::kWarn, &r,
            {{"error", r.process->failure()}, {"node_fault", r.refused_by_node}});
      return;
    }
    log("launch",
        fmt::format("launch {} on devices {} (pid {})", describe(r), join_ints(r.devices),
                    r.process->pid()),
        log::Level::kInfo, &r, {{"devices", r.devices}, {"pid", r.process->pid()}});
  }

  // Fills `r` from a launch action and starts it; leaves r.failure set (and
  // no process) when the action cannot be run as given.
  void prepare_and_launch(Run& r, const json& action, Clock::time_point arrived) {
    auto fail = [&](const std::string& why) {
      r.failure = why;
      log("launch_failed", fmt::format("launch {} failed: {}", describe(r), why), log::Level::kWarn,
          &r, {{"error", why}});
    };
    if (r.job.empty()) return fail("launch action: job: missing or not a string");
    LaunchSpec spec;
    const json& command = action.at("command");
    if (command.is_string() && !command.get<std::string>().empty()) {
      spec.shell_command = command.get<std::string>();
    } else if (command.is_array() && !command.empty()) {
      for (const auto& word : command) spec.argv.push_back(word.get<std::string>());
    } else {
      return fail("launch action: command: not a non-empty argv array or string");
    }
    const json& devices = action.at("devices");
    if (!devices.is_array() || devices.empty())
      return fail("launch action: devices: not a non-empty array");
    for (const json& d : devices) {
      const auto id = integer_in(d, 0, std::numeric_limits<int>::max());
      if (!id) return fail("launch action: devices: " + d.dump() + " is not a device id");
      r.devices.push_back(static_cast<int>(*id));
    }
    for (int d : r.devices)
      if (std::find(o_.devices.begin(), o_.devices.end(), d) == o_.devices.end())
        return fail(fmt::format("launch action: devices: {} is not a device of this node ({})", d,
                                join_ints(o_.devices)));
    for (const auto& [lease, other] : runs_)
      if (lease != r.lease && other.running())
        for (int d : r.devices)
          if (std::find(other.devices.begin(), other.devices.end(), d) != other.devices.end())
            log("device_still_held",
                fmt::format("warning: device {} of {} is still held by {}", d, describe(r),
                            describe(other)),
                log::Level::kWarn, &r, {{"device", d}});
    std::string gpu_type = action.value("gpu_type", o_.gpu_type);
    const auto workers = integer_in(action.value("workers", json(r.devices.size())), 1, 4096);
    if (!workers) return fail("launch action: workers: not an integer in 1..4096");
    // The gang's rendezvous (torchrun's variables); a launch without one (an
    // older server) is a gang of this node alone.
    const json rdv = action.value("rendezvous", json::object());
    if (!rdv.is_object()) return fail("launch action: rendezvous: not an object");
    const std::string master_addr = rdv.value("master_addr", std::string("127.0.0.1"));
    const auto master_port =
        integer_in(rdv.value("master_port", json(kMasterPortDefault)), 1, 65535);
    const auto world_size = integer_in(rdv.value("world_size", json(*workers)), 1, 1 << 20);
    const auto rank = integer_in(rdv.value("rank", json(0)), 0, 1 << 20);
    const auto node_rank = integer_in(rdv.value("node_rank", json(0)), 0, 1 << 20);
    const auto nodes = integer_in(rdv.value("nodes", json(1)), 1, 1 << 20);
    const auto local = integer_in(rdv.value("local_world_size", json(r.devices.size())), 1, 4096);
    if (!master_port || !world_size || !rank || !node_rank || !nodes || !local ||
        *node_rank >= *nodes || *rank + *local > *world_size)
      return fail("launch action: rendezvous: not a consistent set of ranks and sizes");
    if (!action.at("lease_s_left").is_number())
      return fail("launch action: lease_s_left: not a number");
    double lease_s_left = action.at("lease_s_left").get<double>();
    std::string checkpoint_dir = action.value("checkpoint_dir", std::string());
    if (checkpoint_dir.empty()) checkpoint_dir = (state_dir_ / "checkpoints" / r.job).string();
    // The job starts in its own directory: a relative path (a server config's
    // "fairgpu-data/checkpoints") is the agent's, made absolute here.
    checkpoint_dir = fs::absolute(checkpoint_dir).lexically_normal().string();

    // Whom the job runs as (agent.h): never as a root agent's root.
    std::optional<RunAs> run_as;
    std::string home, user;
    if (switch_users_) {
      const json unix_user = action.value("unix_user", json(nullptr));
      const json slot = action.value("tenant_slot", json(nullptr));
      if (unix_user.is_string() && !unix_user.get<std::string>().empty()) {
        const std::string user_name = unix_user.get<std::string>();
        struct passwd pw {};
        struct passwd* found = nullptr;
        std::vector<char> buf(16384);
        if (getpwnam_r(user_name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found)
          return fail("launch action: unix_user: no user '" + user_name + "' on this node");
        if (pw.pw_uid == 0) return fail("launch action: unix_user: '" + user_name + "' is root");
        run_as = RunAs{pw.pw_uid, pw.pw_gid};
        home = pw.pw_dir ? pw.pw_dir : "";
        user = user_name;
      } else if (const auto n = integer_in(slot, 0, kMaxTenantSlot - 1)) {
        const auto id = static_cast<std::uint32_t>(o_.uid_base + *n);
        run_as = RunAs{id, id};
        // A uid with no passwd entry: USER and LOGNAME name it, so that what
        // asks who runs it (Python's getpass.getuser(), which torch 2.x calls
        // at import) does not die on getpwuid (issue 30).
        user = fmt::format("fairgpu-run-{}", *n);
      } else {
        return fail(
            "launch action: names neither unix_user nor tenant_slot; a root agent runs no job as "
            "root");
      }
    }

    // <state>/runs/<lease>/{pid,log} are the agent's; <lease>/job (HOME, the
    // progress file) is the job's, mode 0700.
    fs::path run_dir = state_dir_ / "runs" / std::to_string(r.lease);
    fs::path job_dir = run_dir / "job";
    std::error_code ec;
    fs::create_directories(job_dir, ec);
    if (ec) {
      // The agent's own state dir: its disk, not the job (issue 30, H9).
      r.refused_by_node = r.node_fault = true;
      return fail("cannot create " + job_dir.string() + ": " + ec.message());
    }
    if (run_as) {
      if (chmod(run_dir.c_str(), 0711) != 0 ||
          chown(job_dir.c_str(), run_as->uid, run_as->gid) != 0 ||
          chmod(job_dir.c_str(), 0700) != 0)
        return fail("cannot give " + job_dir.string() + " to uid " + std::to_string(run_as->uid) +
                    ": " + std::strerror(errno));
    }
    if (home.empty()) home = run_as ? job_dir.string() : "";
    spec.run_as = run_as;
    spec.working_dir = job_dir.string();
    spec.log_path = (run_dir / "log").string();
    // Which job the run belongs to, for `fairgpu logs JOB` on this node.
    std::ofstream(run_dir / "job_id") << r.job << "\n";
    spec.progress_path = (job_dir / "progress").string();
    spec.pid_path = (run_dir / "pid").string();
    spec.checkpoint_dir = checkpoint_dir;
    if (!home.empty()) spec.env.emplace_back("HOME", home);
    if (!user.empty()) {
      spec.env.emplace_back("USER", user);
      spec.env.emplace_back("LOGNAME", user);
    }
    // (A NUL byte in the command or env fails the launch in Process::launch.)
    if (action.contains("env") && !action["env"].is_null())
      for (const auto& [key, value] : action["env"].items())
        spec.env.emplace_back(key, value.get<std::string>());
    // Last, so that the job's env cannot override them.
    spec.env.emplace_back("FAIRGPU_JOB_ID", r.job);
    spec.env.emplace_back("FAIRGPU_LEASE_ID", std::to_string(r.lease));
    spec.env.emplace_back("FAIRGPU_GPU_TYPE", gpu_type);
    spec.env.emplace_back("FAIRGPU_NUM_WORKERS", std::to_string(*workers));
    spec.env.emplace_back("MASTER_ADDR", master_addr);
    spec.env.emplace_back("MASTER_PORT", std::to_string(*master_port));
    spec.env.emplace_back("WORLD_SIZE", std::to_string(*world_size));
    spec.env.emplace_back("RANK", std::to_string(*rank));
    spec.env.emplace_back("NODE_RANK", std::to_string(*node_rank));
    spec.env.emplace_back("LOCAL_WORLD_SIZE", std::to_string(*local));
    spec.env.emplace_back("FAIRGPU_NUM_NODES", std::to_string(*nodes));
    spec.env.emplace_back("CUDA_VISIBLE_DEVICES", join_ints(r.devices));
    spec.env.emplace_back("FAIRGPU_CHECKPOINT_DIR", checkpoint_dir);
    spec.env.emplace_back("FAIRGPU_PROGRESS_FILE", spec.progress_path);
    if (std::string why = hold_to_grant(r, action, spec); !why.empty()) return fail(why);
    r.lease_end = arrived + seconds(lease_s_left);
    r.process = Process::launch(spec);
    if (r.launch_failed() && !r.cgroup.empty() && remove_cgroup(r.cgroup)) r.cgroup.clear();
  }

  // The launch's CPUs, memory and processes (node_resources.h): cores and
  // OMP_NUM_THREADS, the run's cgroup where one can be made with memory.max
  // and pids.max, RLIMIT_NPROC. "" or why the action is malformed.
  std::string hold_to_grant(Run& r, const json& action, LaunchSpec& spec) {
    double cpus = 0.0, memory_gb = 0.0;
    for (auto [key, value] : {std::pair{"cpus", &cpus}, std::pair{"memory_gb", &memory_gb}}) {
      if (!action.contains(key) || action[key].is_null()) continue;
      if (!action[key].is_number() || !(action[key].get<double>() >= 0) ||
          action[key].get<double>() > 1e9)
        return fmt::format("launch action: {}: not a number in 0..1e9", key);
      *value = action[key].get<double>();
    }
    std::vector<std::string> held;
    if (cpus > 0 && !cores_.empty()) {
      std::map<int, int> pinned;
      for (const auto& [lease, other] : runs_)
        if (other.running())
          for (int c : other.cores) ++pinned[c];
      r.cores = pick_cores(cores_, pinned, cpus);
      spec.cpu_affinity = r.cores;
      spec.env.emplace_back("OMP_NUM_THREADS", std::to_string(r.cores.size()));
      held.push_back(
          fmt::format("cpus {} (OMP_NUM_THREADS={})", cpu_list_text(r.cores), r.cores.size()));
    }
    // A cgroup for every run, limits or not: the run's end kills what is in
    // it (issue 30, M1).
    const RunLimits limits{
        memory_gb > 0 ? static_cast<std::uint64_t>(memory_gb * 1024.0 * 1024.0 * 1024.0) : 0,
        static_cast<std::uint64_t>(o_.max_pids)};
    const RunCgroup cg =
        make_run_cgroup(cgroup_parent_, run_cgroup_name(o_.node, getpid(), r.lease), limits);
    r.cgroup = spec.cgroup_dir = cg.dir;
    if (limits.memory_bytes > 0) {
      if (cg.dir.empty() || !cg.memory_problem.empty())
        held.push_back("memory limit not enforced: " +
                       (cg.dir.empty() ? cg.problem : cg.memory_problem));
      else
        held.push_back(fmt::format("memory.max {} bytes", limits.memory_bytes));
    }
    if (limits.max_pids > 0) {
      std::string pids;
      if (!cg.dir.empty() && cg.pids_problem.empty())
        pids = fmt::format("pids.max {}", limits.max_pids);
      // Where no pids controller is to be had too: a user of its own.
      if (spec.run_as) {
        spec.max_user_processes = limits.max_pids;
        pids += fmt::format("{}RLIMIT_NPROC {} for uid {}", pids.empty() ? "" : ", ",
                            limits.max_pids, spec.run_as->uid);
      }
      held.push_back(!pids.empty() ? pids
                                   : "pids limit not enforced: " +
                                         (cg.dir.empty() ? cg.problem : cg.pids_problem));
    }
    for (const auto& h : held) r.limits += (r.limits.empty() ? "" : "; ") + h;
    if (!r.limits.empty())
      log("limits", fmt::format("{}: {}", describe(r), r.limits), log::Level::kInfo, nullptr,
          {{"limits", r.limits}});
    return "";
  }

  const AgentOptions& o_;
  const std::atomic<bool>& stop_;
  ServerUrl url_;
  httplib::Client http_;
  fs::path state_dir_;
  bool switch_users_ = false;  // root: each job runs as its tenant's user
  std::int64_t epoch_ = 0;
  double heartbeat_s_ = 1.0;
  double grace_s_ = 30.0;
  double kill_after_s_ = 5.0;
  double heartbeat_timeout_s_ = 15.0;
  Clock::time_point last_ok_{};
  int failed_beats_ = 0;
  bool shutting_down_ = false;
  bool new_runs_ = false;  // the last answer held a new launch
  json log_replies_ = json::array();  // for the next heartbeat (read_log_for_server)
  std::map<std::int64_t, Run> runs_;
  std::set<std::int64_t> seen_leases_;  // lease ids are never reused by the server
  std::vector<int> cores_;              // jobs are pinned within these
  std::string own_cgroup_;              // the agent's cgroup v2 directory ("" unknown)
  CgroupPlan cgroup_plan_;
  std::string cgroup_parent_;           // "" = no memory limits
  // Runs' cgroups no run holds (forgotten runs', an earlier agent's) not
  // yet removable: killed and removed by poll_runs.
  std::vector<std::string> stale_cgroups_;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 6 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

void check_agent_options(const AgentOptions& o) {
  agent_server_url(o);
  if (o.node.empty()) throw InputError("--node", "", "empty node name");
  if (auto c = valid_token_chars(o.node); !c.empty())
    throw InputError(
        "--node", "",
        "'" + o.node + "': character '" + c + "' not allowed (letters, digits, '-', '_', '.')");
  if (o.gpu_type.empty()) throw InputError("--gpus", "", "empty GPU type");
  if (o.devices.empty()) throw InputError("--gpus", "", "no devices");
  std::set<int> seen;
  for (int d : o.devices) {
    if (d < 0) throw InputError("--gpus", "", fmt::format("device {} is negative", d));
    if (!seen.insert(d).second) throw InputError("--gpus", "", fmt::format("device {} twice", d));
  }
  if (o.cpus < 1) throw InputError("--cpus", "", fmt::format("{} is not >= 1", o.cpus));
  if (!(o.memory_gb > 0)) throw InputError("--memory-gb", "", "not > 0");
  if (o.max_pids < 0 || o.max_pids > kMaxPidsLimit)
    throw InputError("--max-pids", "",
                     fmt::format("{} is not in 0..{} (0: no limit)", o.max_pids, kMaxPidsLimit));
  if (o.uid_base < 1000 || o.uid_base > 2000000000 - kMaxTenantSlot)
    throw InputError("--uid-base", "",
                     fmt::format("{} is not in 1000..{}", o.uid_base, 2000000000 - kMaxTenantSlot));
  if (!(o.http_timeout_s > 0) || !(o.tick_s > 0) || !(o.register_retry_s > 0) ||
      o.register_retry_max_s < o.register_retry_s)
    throw InputError("agent options", "", "timeouts must be > 0");
}

int run_agent(const AgentOptions& options, const std::atomic<bool>& stop) {
  check_agent_options(options);
  Agent agent(options, stop);
  agent.run();
  return 0;
}

GpuSet parse_gpus_flag(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos || colon == 0)
    throw InputError("--gpus", "", "'" + text + "': expected TYPE:N or TYPE:ID,ID,...");
  GpuSet out;
  out.gpu_type = text.substr(0, colon);
  if (auto c = valid_token_chars(out.gpu_type); !c.empty())
    throw InputError("--gpus", "", "'" + text + "': character '" + c + "' not allowed in the type");
  std::string spec = text.substr(colon + 1);
  if (spec.find(',') == std::string::npos) {
    if (!all_digits(spec) || std::stoi(spec) < 1 || std::stoi(spec) > 1024)
      throw InputError("--gpus", "", "'" + text + "': '" + spec + "' is not a count 1..1024");
    for (int i = 0; i < std::stoi(spec); ++i) out.devices.push_back(i);
    return out;
  }
  std::set<int> seen;
  for (const auto& item : split(spec, ',')) {
    if (item.empty()) continue;  // the trailing comma of a one-device list
    if (!all_digits(item))
      throw InputError("--gpus", "", "'" + text + "': '" + item + "' is not a device id");
    int d = std::stoi(item);
    if (!seen.insert(d).second)
      throw InputError("--gpus", "", "'" + text + "': device " + item + " twice");
    out.devices.push_back(d);
  }
  if (out.devices.empty()) throw InputError("--gpus", "", "'" + text + "': no device ids");
  return out;
}

std::string normalise_gpu_name(const std::string& name) {
  std::vector<std::string> words;
  std::string cur;
  for (char ch : name + " ") {
    auto c = static_cast<unsigned char>(ch);
    if (ch == ' ' || ch == '-' || ch == '\t') {
      if (!cur.empty()) words.push_back(cur);
      cur.clear();
    } else if (std::isalnum(c)) {
      cur += static_cast<char>(std::tolower(c));
    }
  }
  std::vector<std::string> kept;
  for (std::size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w == "nvidia" || w == "tesla" || w == "geforce" || w == "quadro") continue;
    if ((w == "rtx" || w == "gtx" || w == "titan") && i + 1 < words.size()) {
      kept.push_back(w + words[++i]);
      continue;
    }
    kept.push_back(w);
  }
  for (const auto& w : kept)
    if (std::any_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; })) return w;
  std::string joined;
  for (const auto& w : kept) joined += (joined.empty() ? "" : "-") + w;
  return joined;
}

GpuSet parse_nvidia_smi(const std::string& csv) {
  std::map<std::string, std::vector<int>> by_type;
  for (const auto& raw : split(csv, '\n')) {
    std::string line = trim(raw);
    if (line.empty()) continue;
    auto comma = line.find(',');
    std::string index = trim(line.substr(0, comma));
    if (comma == std::string::npos || !all_digits(index))
      throw InputError("nvidia-smi", "", "unexpected line '" + line + "' (want INDEX, NAME)");
    std::string type = normalise_gpu_name(trim(line.substr(comma + 1)));
    if (type.empty()) throw InputError("nvidia-smi", "", "no GPU name in line '" + line + "'");
    by_type[type].push_back(std::stoi(index));
  }
  if (by_type.empty()) throw InputError("nvidia-smi", "", "lists no GPU; pass --gpus TYPE:N");
  if (by_type.size() > 1) {
    std::string all;
    for (const auto& [type, ids] : by_type)
      all += (all.empty() ? "" : "; ") + type + " on " + join_ints(ids);
    throw InputError("nvidia-smi", "",
                     "GPUs of several types on this node (" + all +
                         "); a node has one type: pass --gpus TYPE:ID,... for the ones to use");
  }
  return {by_type.begin()->first, by_type.begin()->second};
}

std::optional<GpuSet> discover_gpus() {
  const char* path = std::getenv("PATH");
  std::string found;
  for (const auto& dir : split(path ? path : "", ':')) {
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/nvidia-smi";
    if (access(candidate.c_str(), X_OK) == 0) {
      found = candidate;
      break;
    }
  }
  if (found.empty()) return std::nullopt;
  std::string cmd = "'" + found + "' --query-gpu=index,name --format=csv,noheader 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw InputError("nvidia-smi", "", "cannot run " + found);
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  int status = pclose(pipe);
  if (status != 0)
    throw InputError("nvidia-smi", "",
                     fmt::format("{} failed (status {}); pass --gpus TYPE:N", found, status));
  return parse_nvidia_smi(out);
}

}  // namespace fairgpu::live
