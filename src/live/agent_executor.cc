// The agents' side of the live protocol (docs/live-protocol.md): registration,
// heartbeats and their answers, lost nodes. See agent_executor.h.
#include "live/agent_executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>

#include "live/log.h"
#include "live/manager.h"
#include "live/process.h"
#include "live/request.h"

namespace fairgpu::live {

using nlohmann::json;
using namespace request;

namespace {

// A node token speaks for its own node only.
void require_node(const Caller& c, const std::string& node) {
  require(c, {Caller::Role::kAgent});
  if (c.node != node)
    throw ApiError(403, fmt::format("node: this token is node {}'s, not {}'s", c.node, node));
}

// The largest protocol number stored as a double or an int64 exactly.
constexpr std::int64_t kMaxExact = std::int64_t{1} << 53;

}  // namespace

AgentExecutor::AgentExecutor(const ServeConfig& config, LeaseHost& host,
                             std::function<double()> clock)
    : config_(config), host_(host), clock_(std::move(clock)) {}

void AgentExecutor::adopt_node(const std::string& node, bool lost, double now) {
  Node& n = nodes_[node];
  n.last_heard = now;
  n.lost = lost;
  n.registered.name = node;
}

std::vector<ExecutorNode> AgentExecutor::nodes() {
  std::vector<ExecutorNode> out;
  for (const auto& [name, n] : nodes_)
    if (!n.lost) out.push_back(n.registered);
  return out;
}

json AgentExecutor::register_agent(const Caller& c, const json& body, const std::string& peer) {
  require(c, {Caller::Role::kAgent});
  if (!body.is_object()) bad("(body)", "expected a JSON object");
  LeaseHost::NodeUp up;
  up.name = need_name(body, "node");
  require_node(c, up.name);
  up.gpu_type = need_name(body, "gpu_type");
  auto dev = body.find("devices");
  if (dev == body.end() || !dev->is_array() || dev->empty() || dev->size() > 4096)
    bad("devices", "expected an array of 1..4096 device ids");
  for (std::size_t i = 0; i < dev->size(); ++i)
    up.devices.push_back(static_cast<int>(need_integer((*dev)[i], fmt::format("devices[{}]", i), 0,
                                                       std::numeric_limits<int>::max())));
  std::vector<int> sorted = up.devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    bad("devices", "repeats a device");
  if (body.contains("cpus")) up.cpus = need_number(body, "cpus");
  if (body.contains("memory_gb")) up.memory_gb = need_number(body, "memory_gb");
  if (up.cpus < 0 || up.cpus > 1e6) bad("cpus", "must be in 0..1e6");
  if (up.memory_gb < 0 || up.memory_gb > 1e9) bad("memory_gb", "must be in 0..1e9");
  // Where the node's jobs are reached (a gang's MASTER_ADDR): a host name or
  // an IP address.
  up.address = peer;
  if (body.contains("address")) {
    if (!body["address"].is_string()) bad("address", "expected a host name or IP address");
    up.address = body["address"].get<std::string>();
    if (up.address.empty() || up.address.size() > 253 ||
        !std::all_of(up.address.begin(), up.address.end(), [](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' ||
                 ch == ':' || ch == '_';
        }))
      bad("address", "expected a host name or IP address (letters, digits, '.', '-', ':', '_')");
  }

  LeaseHost::Tickets tickets;
  json answer;
  {
    auto lock = host_.lock();
    // A new epoch: whatever ran under the old one is gone (the agent killed
    // its leftovers before registering), launches not yet sent included.
    std::erase_if(launches_, [&up](const auto& kv) { return kv.second.node == up.name; });
    std::erase_if(refused_, [&up](const auto& kv) { return kv.second.node == up.name; });
    const std::int64_t epoch = host_.node_up(up, tickets);
    Node& n = nodes_[up.name];
    n.last_heard = clock_();
    n.lost = false;
    n.registered = {up.name, up.gpu_type, up.devices, static_cast<int>(up.cpus),
                    static_cast<std::int64_t>(up.memory_gb * 1024)};
    answer = {{"epoch", epoch},
              {"heartbeat_s", config_.heartbeat_s},
              {"grace_s", config_.grace_s},
              {"kill_after_s", config_.kill_after_s},
              {"heartbeat_timeout_s", config_.heartbeat_timeout_s}};
  }
  host_.wait(tickets);
  return answer;
}

json AgentExecutor::heartbeat(const Caller& c, const json& raw) {
  require(c, {Caller::Role::kAgent});
  if (!raw.is_object()) bad("(body)", "expected a JSON object");
  const std::string name = need_name(raw, "node");
  require_node(c, name);
  if (!raw.contains("epoch")) bad("epoch", "missing required field");
  const std::int64_t epoch = need_integer(raw["epoch"], "epoch", 0, kMaxExact);
  auto runs_it = raw.find("runs");
  if (runs_it == raw.end() || !runs_it->is_array()) bad("runs", "expected an array");
  // The heartbeat's frame (node, epoch, runs) is checked whole: a bad one is
  // answered 400 having changed nothing. A bad entry in `runs` costs that
  // run only (issue 30, H2): one job's progress file or log must not fence
  // every run of its node and keep the node lost. What is applied is rebuilt
  // from the checked values.
  struct Run {
    RunEvent event;
    bool running = false;
  };
  std::vector<Run> runs;
  std::set<std::int64_t> seen_leases;
  for (std::size_t i = 0; i < runs_it->size(); ++i) {
    const json& r = (*runs_it)[i];
    const std::string at = fmt::format("runs[{}]", i);
    Run run;
    RunEvent& ev = run.event;
    try {
      if (!r.is_object()) bad(at, "expected an object");
      if (!r.contains("lease")) bad(at + ".lease", "missing required field");
      ev.lease = need_integer(r["lease"], at + ".lease", 1, kMaxExact);
      if (!seen_leases.insert(ev.lease).second)
        bad(at + ".lease", "repeats an earlier run's lease");
    } catch (const ApiError& e) {
      // No run to answer for: the entry is dropped. A run the agent holds
      // and nobody renews is fenced by the agent at its lease's end.
      log::warn("heartbeat_run_ignored", {{"node", name}, {"problem", e.what()}});
      continue;
    }
    ev.nodes = {name};
    ev.exit_code = -1;
    try {
      if (!r.contains("state") || !r["state"].is_string())
        bad(at + ".state", "expected running, exited or launch_failed");
      const std::string s = r["state"].get<std::string>();
      if (s != "running" && s != "exited" && s != "launch_failed")
        bad(at + ".state", "expected running, exited or launch_failed");
      run.running = s == "running";
      ev.kind = run.running ? RunEvent::Kind::kProgress : RunEvent::Kind::kEnded;
      ev.launch_failed = s == "launch_failed";
      for (const auto& [key, value] : r.items())
        if (key != "lease" && key != "job" && key != "state" && key != "iterations" &&
            key != "exit_code" && key != "signal" && key != "revoked" && key != "log_tail" &&
            key != "limits" && key != "batch_size" && key != "node_fault")
          bad(at + "." + key, "unknown field");
      if (r.contains("job")) {
        if (!r["job"].is_string()) bad(at + ".job", "expected a string");
        ev.job = r["job"].get<std::string>();
      }
      if (r.contains("iterations")) {
        const json& it = r["iterations"];
        if (!it.is_number() || !(it.get<double>() >= 0) ||
            it.get<double>() > static_cast<double>(kMaxProgressIterations))
          bad(at + ".iterations", "expected a number in 0..1e15");
        ev.iterations = it.get<double>();
      }
      if (r.contains("exit_code"))
        ev.exit_code = static_cast<int>(need_integer(r["exit_code"], at + ".exit_code", -1, 255));
      if (r.contains("signal"))
        ev.signal = static_cast<int>(need_integer(r["signal"], at + ".signal", 0, 128));
      if (r.contains("revoked")) {
        if (!r["revoked"].is_boolean()) bad(at + ".revoked", "expected true or false");
        ev.revoked = r["revoked"].get<bool>();
      }
      if (r.contains("node_fault")) {
        if (!r["node_fault"].is_boolean()) bad(at + ".node_fault", "expected true or false");
        ev.node_fault = r["node_fault"].get<bool>() && ev.launch_failed;
      }
      if (r.contains("limits")) {
        if (!r["limits"].is_string() || r["limits"].get<std::string>().size() > 1024)
          bad(at + ".limits", "expected a string of at most 1 KiB");
        ev.limits = r["limits"].get<std::string>();
      }
      if (r.contains("batch_size"))
        ev.batch_size = need_integer(r["batch_size"], at + ".batch_size", 1, 1 << 30);
      if (r.contains("log_tail")) {
        if (!r["log_tail"].is_string()) bad(at + ".log_tail", "expected a string");
        if (r["log_tail"].get<std::string>().size() > kMaxLogTailBytes)
          bad(at + ".log_tail", "longer than 64 KiB");
        ev.detail = r["log_tail"].get<std::string>();
      }
    } catch (const ApiError& e) {
      // Refused: nothing it reports is taken. A running run is told to stop
      // and its end counts as a failure; an ended one fails now.
      RunEvent refused;
      refused.kind = ev.kind;
      refused.lease = ev.lease;
      refused.job = r.contains("job") && r["job"].is_string() ? r["job"].get<std::string>() : "";
      refused.nodes = {name};
      refused.exit_code = -1;
      refused.launch_failed = ev.launch_failed;
      refused.refused = e.what();
      ev = std::move(refused);
      log::warn("heartbeat_run_refused", {{"node", name},
                                          {"lease", ev.lease},
                                          {"job", ev.job},
                                          {"problem", ev.refused},
                                          {"then", run.running ? "stopped" : "failed"}});
    }
    runs.push_back(std::move(run));
  }

  LeaseHost::Tickets tickets;
  bool must_wait = false;
  json answer;
  {
    auto lock = host_.lock();
    const double t = clock_();
    if (!host_.node_heard(name, epoch, t))
      throw ApiError(409, fmt::format("stale epoch for node {}: register again", name));
    nodes_[name].last_heard = t;
    json actions = json::array(), ack = json::array();
    std::set<std::int64_t> reported;
    for (const Run& run : runs) {
      const std::int64_t id = run.event.lease;
      reported.insert(id);
      if (auto l = launches_.find(id); l != launches_.end() && l->second.node == name)
        launches_.erase(l);  // the agent has it: never launched again
      if (run.running && (!run.event.refused.empty() || refused_.count(id))) {
        // Its report is not taken; it stops (until it has), and its end is a
        // failure.
        if (!run.event.refused.empty()) refused_[id] = {name, run.event.refused};
        actions.push_back({{"action", "revoke"}, {"lease", id}, {"job", run.event.job}});
        continue;
      }
      RunEvent event = run.event;
      if (!run.running) {
        if (auto f = refused_.find(id); f != refused_.end()) {
          if (f->second.node == name && event.refused.empty()) {
            event.refused = f->second.problem;
            event.detail = event.detail.empty() ? "" : "\n" + event.detail;
          }
          refused_.erase(f);
        }
        if (!event.refused.empty())
          event.detail =
              "the node's report of this run was refused: " + event.refused + event.detail;
      }
      const LeaseHost::Verdict v = host_.report(event, tickets);
      must_wait |= v.wait;
      if (!run.running) {
        ack.push_back(id);
        continue;
      }
      if (v.keep)
        actions.push_back({{"action", "renew"},
                           {"lease", id},
                           {"job", v.job},
                           {"lease_s_left", v.lease_end - t + config_.heartbeat_timeout_s}});
      else
        actions.push_back(
            {{"action", "revoke"}, {"lease", id}, {"job", v.job.empty() ? run.event.job : v.job}});
    }
    // A revoked lease that this node's agent does not report never ran here:
    // its launch was revoked before the agent's heartbeat brought it (one
    // part of a gang failed at once, a cancel). The agent reports every run it
    // holds until acked, so it is over.
    for (std::int64_t id : host_.revoking_on(name)) {
      if (reported.count(id)) continue;
      RunEvent gone;
      gone.kind = RunEvent::Kind::kEnded;
      gone.lease = id;
      gone.nodes = {name};
      gone.exit_code = -1;
      gone.never_started = true;
      host_.report(gone, tickets);
      must_wait = true;
    }
    host_.start_pending(tickets);
    // Launches: started leases on this node the agent does not run yet.
    for (auto it = launches_.begin(); it != launches_.end();) {
      const auto& [id, launch] = *it;
      if (launch.node != name) {
        ++it;
        continue;
      }
      const std::optional<double> until = host_.active_until(id, name);
      if (!until) {  // revoked or ended before it was sent
        it = launches_.erase(it);
        continue;
      }
      json action = launch.action;
      action["lease_s_left"] = *until - t + config_.heartbeat_timeout_s;
      actions.push_back(std::move(action));
      if (launch.ticket) tickets.push_back(launch.ticket);
      must_wait = true;
      ++it;
    }
    answer = {{"heartbeat_s", config_.heartbeat_s}, {"ack", ack}, {"actions", actions}};
  }
  // Tenants' log reads (log_relay.h): what the agent brought, what it is
  // asked for next (an authenticated node's own runs only).
  if (relay_) {
    if (auto logs = raw.find("logs"); logs != raw.end()) relay_->deliver(name, *logs);
    json wanted = relay_->requests_for(name);
    if (!wanted.empty()) answer["log_requests"] = std::move(wanted);
  }
  // Ends and launches are durable before the agent acts on them or forgets.
  if (must_wait) host_.wait(tickets);
  return answer;
}

void AgentExecutor::apply(const std::vector<RunStart>& starts, const std::vector<std::int64_t>&,
                          double) {
  for (const RunStart& s : starts) {
    if (s.placement.empty()) continue;
    // The gang's rendezvous (torchrun's variables): rank 0's node is the
    // master; ranks count workers, the parts' devices in rank order.
    int world = 0;
    for (const Placement& p : s.placement) world += static_cast<int>(p.devices.size());
    const Placement& master = s.placement.front();
    int first_rank = 0;
    for (std::size_t r = 0; r < s.placement.size(); ++r) {
      const Placement& p = s.placement[r];
      const json rendezvous = {
          {"master_addr", master.address.empty() ? master.node : master.address},
          {"master_port", kMasterPortBase + s.lease % kMasterPortSpan},
          {"world_size", world},
          {"rank", first_rank},
          {"node_rank", static_cast<int>(r)},
          {"nodes", static_cast<int>(s.placement.size())},
          {"local_world_size", static_cast<int>(p.devices.size())}};
      first_rank += static_cast<int>(p.devices.size());
      json env = json::object();
      for (const auto& [key, value] : s.spec.env) env[key] = value;
      const std::int64_t lease = p.lease ? p.lease : s.lease;
      launches_[lease] = {
          p.node,
          {{"action", "launch"},
           {"lease", lease},
           {"job", s.job},
           {"tenant", s.spec.tenant},
           {"tenant_slot", s.tenant_slot < 0 ? json(nullptr) : json(s.tenant_slot)},
           {"unix_user", s.unix_user.empty() ? json(nullptr) : json(s.unix_user)},
           {"command", s.spec.argv.empty() ? json(s.spec.shell_command) : json(s.spec.argv)},
           {"env", env},
           {"devices", p.devices},
           {"gpu_type", s.gpu_type},
           {"workers", world},
           {"rendezvous", rendezvous},
           {"checkpoint_dir", s.spec.checkpoint_dir}},
          p.ticket};
      // The part's CPUs and memory (Synergy; the agent pins and limits).
      if (p.cpus > 0) launches_[lease].action["cpus"] = p.cpus;
      if (p.memory_gb > 0) launches_[lease].action["memory_gb"] = p.memory_gb;
    }
  }
}

std::vector<RunEvent> AgentExecutor::poll(double now) {
  std::vector<RunEvent> events;
  for (auto& [name, n] : nodes_) {
    if (n.lost || now - n.last_heard <= config_.heartbeat_timeout_s) continue;
    n.lost = true;
    const std::string node = name;  // (clang 14: no lambda capture of a binding)
    std::erase_if(launches_, [&node](const auto& kv) { return kv.second.node == node; });
    std::erase_if(refused_, [&node](const auto& kv) { return kv.second.node == node; });
    // The agent fences its runs heartbeat_timeout after its last heartbeat;
    // they are gone grace + kill_after later (docs/live-protocol.md).
    RunEvent lost;
    lost.kind = RunEvent::Kind::kNodeLost;
    lost.node = node;
    lost.relaunch_at = n.last_heard + config_.heartbeat_timeout_s + config_.grace_s +
                       config_.kill_after_s + config_.heartbeat_s;
    events.push_back(std::move(lost));
  }
  return events;
}

}  // namespace fairgpu::live
