// The live manager's side of the agent protocol (docs/live-protocol.md):
// registration (a new epoch ends the node's old leases), heartbeats (progress,
// profiling measurements, ended runs, and the launch / renew / revoke answer).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "live/log.h"
#include "live/manager.h"
#include "live/request.h"

namespace fairgpu::live {

using nlohmann::json;
using namespace request;

// ---------------------------------------------------------------- agents

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

json Manager::register_agent(const Caller& c, const json& body, const std::string& peer) {
  require(c, {Caller::Role::kAgent});
  if (!body.is_object()) bad("(body)", "expected a JSON object");
  const std::string name = need_name(body, "node");
  require_node(c, name);
  const std::string type = need_name(body, "gpu_type");
  auto dev = body.find("devices");
  if (dev == body.end() || !dev->is_array() || dev->empty() || dev->size() > 4096)
    bad("devices", "expected an array of 1..4096 device ids");
  std::vector<int> devices;
  for (std::size_t i = 0; i < dev->size(); ++i)
    devices.push_back(static_cast<int>(need_integer((*dev)[i], fmt::format("devices[{}]", i), 0,
                                                    std::numeric_limits<int>::max())));
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) bad("devices", "repeats a device");
  double cpus = 0.0, memory = 0.0;
  if (body.contains("cpus")) cpus = need_number(body, "cpus");
  if (body.contains("memory_gb")) memory = need_number(body, "memory_gb");
  if (cpus < 0 || cpus > 1e6) bad("cpus", "must be in 0..1e6");
  if (memory < 0 || memory > 1e9) bad("memory_gb", "must be in 0..1e9");
  // Where the node's jobs are reached (a gang's MASTER_ADDR): a host name or
  // an IP address.
  std::string address = peer;
  if (body.contains("address")) {
    if (!body["address"].is_string()) bad("address", "expected a host name or IP address");
    address = body["address"].get<std::string>();
    if (address.empty() || address.size() > 253 ||
        !std::all_of(address.begin(), address.end(), [](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' ||
                 ch == ':' || ch == '_';
        }))
      bad("address", "expected a host name or IP address (letters, digits, '.', '-', ':', '_')");
  }

  std::vector<std::uint64_t> tickets;
  json answer;
  {
    std::lock_guard lock(mu_);
    NodeEntry& n = nodes_[name];
    const bool was_drained = n.s.state == "drained";
    // A new epoch: whatever ran under the old one is gone (the agent killed
    // its leftovers before registering).
    for (JobEntry* e : lose_node_parts(name, tickets)) {
      if (e->s.state != "running") continue;
      e->s.state = waiting_state(e->s.job_type);
      tickets.push_back(persist(*e));
    }
    n.s.name = name;
    n.s.gpu_type = type;
    n.s.devices = devices;
    n.s.cpus = cpus;
    n.s.memory_gb = memory;
    n.s.address = address;
    n.s.epoch += 1;
    n.s.state = was_drained ? "drained" : "ready";
    refresh_ready_types();
    n.last_heard = now();
    tickets.push_back(persist(n));
    // New job types to profile on a new GPU type: back to profiling.
    for (JobEntry& e : jobs_)
      if (e.s.state == "queued" && !fully_profiled(e.s.job_type)) {
        e.s.state = "profiling";
        tickets.push_back(persist(e));
      }
    rebuild_needed_ = true;
    activate_pending(tickets);
    log::info("register",
              {{"node", name}, {"gpu_type", type}, {"devices", devices}, {"epoch", n.s.epoch}});
    answer = {{"epoch", n.s.epoch},
              {"heartbeat_s", config_.heartbeat_s},
              {"grace_s", config_.grace_s},
              {"kill_after_s", config_.kill_after_s},
              {"heartbeat_timeout_s", config_.heartbeat_timeout_s}};
  }
  store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  return answer;
}

// A run ended (the agent's report): the job finishes, fails, retries or
// waits for its next lease. For a part of a gang over several nodes: a clean
// finish waits for the other parts (status "exited"); any other end stops
// them (manager.h).
void Manager::run_ended(StoredLease& l, const json& r, std::vector<std::uint64_t>& tickets) {
  const double t = now();
  auto it = job_index_.find(l.job);
  if (it == job_index_.end()) {
    tickets.push_back(end_lease(l));
    return;
  }
  if (l.status == "exited") return;  // reported again before the ack arrived
  JobEntry& e = jobs_[it->second];
  const std::int64_t gang = l.gang;
  const bool current = e.lease == gang;
  const bool profiling = l.profiling;
  const std::string state = r.value("state", "exited");
  const int code = r.value("exit_code", -1);
  const int sig = r.value("signal", 0);
  const bool revoked = r.value("revoked", false);
  const double iterations = r.value("iterations", 0.0);
  if (l.rank == 0 && iterations > e.s.done) e.s.done = std::min(iterations, e.s.iterations);
  settle(e, t);
  const bool clean = state == "exited" && code == 0 && sig == 0;
  log::write(clean || revoked ? log::Level::kInfo : log::Level::kWarn, "exit",
             {{"lease", l.id},
              {"job", e.s.id},
              {"tenant", e.s.tenant},
              {"node", l.node},
              {"state", state},
              {"exit_code", code},
              {"signal", sig},
              {"revoked", revoked}});
  const bool part_finished = clean && (!revoked || e.s.done >= e.s.iterations);
  if (part_finished && current && l.parts > 1 && !terminal(e.s.state)) {
    l.status = "exited";
    tickets.push_back(persist(l));
    for (std::int64_t id : part_ids(gang))
      if (leases_.at(id).status != "exited") {
        tickets.push_back(persist(e));
        return;  // the others still run
      }
    for (std::int64_t id : part_ids(gang)) tickets.push_back(end_lease(leases_.at(id)));
  } else {
    tickets.push_back(end_lease(l));  // l dangles from here
    // A part that did not finish stops the rest of its gang.
    if (const std::vector<std::int64_t> rest = part_ids(gang); !rest.empty())
      revoke(leases_.at(rest.front()), tickets);
  }
  if (terminal(e.s.state)) return;  // cancelled meanwhile

  auto leave_state = [&] {
    if (e.sched != kNone) state_finish(e);
  };
  if (part_finished) {
    log::info("job_finished", {{"job", e.s.id}, {"tenant", e.s.tenant}});
    e.s.state = "finished";
    e.s.done = e.s.iterations;
    e.s.exit_code = 0;
    e.s.finished_at = t;
    e.s.log_tail = r.value("log_tail", "");
    if (e.lease) revoke(leases_.at(e.lease), tickets);  // a new lease not launched yet
    leave_state();
  } else if (revoked && state == "exited") {
    // Stopped at our request, or by the agent's fencing (then it was still
    // the job's current lease): it waits for its next lease.
    if (current) {
      if (e.sched != kNone) state_release(e.sched);
      e.s.state = waiting_state(e.s.job_type);
    }
  } else {
    // Failed on its own (non-zero exit, a signal we did not send, exec error).
    ++e.s.failures;
    e.s.exit_code = code;
    e.s.log_tail = r.value("log_tail", "");
    log::warn(
        e.s.failures > config_.max_retries ? "job_failed" : "job_retry",
        {{"job", e.s.id}, {"tenant", e.s.tenant}, {"failures", e.s.failures}, {"exit_code", code}});
    if (e.s.failures > config_.max_retries) {
      e.s.state = "failed";
      e.s.finished_at = t;
      if (e.lease) revoke(leases_.at(e.lease), tickets);
      leave_state();
    } else {
      if (current && e.sched != kNone) state_release(e.sched);
      if (current) e.s.state = waiting_state(e.s.job_type);
    }
  }
  if (profiling && e.s.state == "profiling" && fully_profiled(e.s.job_type)) e.s.state = "queued";
  if (e.s.state == "queued" && e.sched == kNone) admit(e);
  tickets.push_back(persist(e));
}

json Manager::heartbeat(const Caller& c, const json& raw) {
  require(c, {Caller::Role::kAgent});
  if (!raw.is_object()) bad("(body)", "expected a JSON object");
  const std::string name = need_name(raw, "node");
  require_node(c, name);
  if (!raw.contains("epoch")) bad("epoch", "missing required field");
  const std::int64_t epoch = need_integer(raw["epoch"], "epoch", 0, kMaxExact);
  auto runs_it = raw.find("runs");
  if (runs_it == raw.end() || !runs_it->is_array()) bad("runs", "expected an array");
  // The whole request is checked before anything is applied, and what is
  // applied is rebuilt from the checked values: a heartbeat is taken whole or
  // answered 400 having changed nothing.
  json runs = json::array();
  std::set<std::int64_t> seen_leases;
  for (std::size_t i = 0; i < runs_it->size(); ++i) {
    const json& r = (*runs_it)[i];
    const std::string at = fmt::format("runs[{}]", i);
    if (!r.is_object()) bad(at, "expected an object");
    for (const auto& [key, value] : r.items())
      if (key != "lease" && key != "job" && key != "state" && key != "iterations" &&
          key != "exit_code" && key != "signal" && key != "revoked" && key != "log_tail")
        bad(at + "." + key, "unknown field");
    if (!r.contains("lease")) bad(at + ".lease", "missing required field");
    const std::int64_t lease = need_integer(r["lease"], at + ".lease", 1, kMaxExact);
    if (!seen_leases.insert(lease).second) bad(at + ".lease", "repeats an earlier run's lease");
    if (!r.contains("state") || !r["state"].is_string())
      bad(at + ".state", "expected running, exited or launch_failed");
    const std::string s = r["state"].get<std::string>();
    if (s != "running" && s != "exited" && s != "launch_failed")
      bad(at + ".state", "expected running, exited or launch_failed");
    json checked = {{"lease", lease}, {"state", s}, {"iterations", 0.0}};
    if (r.contains("job")) {
      if (!r["job"].is_string()) bad(at + ".job", "expected a string");
      checked["job"] = r["job"];
    }
    if (r.contains("iterations")) {
      const json& it = r["iterations"];
      if (!it.is_number() || !(it.get<double>() >= 0) || it.get<double>() > 1e15)
        bad(at + ".iterations", "expected a number in 0..1e15");
      checked["iterations"] = it.get<double>();
    }
    if (r.contains("exit_code"))
      checked["exit_code"] = need_integer(r["exit_code"], at + ".exit_code", -1, 255);
    if (r.contains("signal")) checked["signal"] = need_integer(r["signal"], at + ".signal", 0, 128);
    if (r.contains("revoked")) {
      if (!r["revoked"].is_boolean()) bad(at + ".revoked", "expected true or false");
      checked["revoked"] = r["revoked"];
    }
    if (r.contains("log_tail")) {
      if (!r["log_tail"].is_string()) bad(at + ".log_tail", "expected a string");
      if (r["log_tail"].get<std::string>().size() > 65536)
        bad(at + ".log_tail", "longer than 64 KiB");
      checked["log_tail"] = r["log_tail"];
    }
    runs.push_back(std::move(checked));
  }

  std::vector<std::uint64_t> tickets;
  bool must_wait = false;
  json answer;
  {
    std::lock_guard lock(mu_);
    auto nit = nodes_.find(name);
    if (nit == nodes_.end() || nit->second.s.epoch != epoch || nit->second.s.state == "lost")
      throw ApiError(409, fmt::format("stale epoch for node {}: register again", name));
    NodeEntry& n = nit->second;
    const double t = now();
    n.last_heard = t;
    json actions = json::array(), ack = json::array();
    std::set<std::int64_t> reported;
    for (const json& r : runs) {
      const std::int64_t id = r["lease"].get<std::int64_t>();
      reported.insert(id);
      auto lit = leases_.find(id);
      const std::string state = r["state"].get<std::string>();
      if (state != "running") {
        if (lit != leases_.end() && lit->second.node == name) {
          run_ended(lit->second, r, tickets);
          must_wait = true;
        }
        ack.push_back(id);
        continue;
      }
      if (lit == leases_.end() || lit->second.node != name || lit->second.status == "revoking" ||
          lit->second.status == "exited" || lit->second.status == "ended") {
        actions.push_back({{"action", "revoke"}, {"lease", id}, {"job", r.value("job", "")}});
        continue;
      }
      StoredLease& l = lit->second;
      JobEntry* e = job_index_.count(l.job) ? &jobs_[job_index_.at(l.job)] : nullptr;
      if (!e) continue;
      const double iterations = r.value("iterations", 0.0);
      if (e->s.started_at < 0) {
        e->s.started_at = t;
        tickets.push_back(persist(*e));
      }
      if (l.rank == 0 && iterations > e->s.done) {  // a gang's progress is rank 0's
        e->s.done = std::min(iterations, e->s.iterations);
        if (e->sched != kNone) {
          Job& j = state_.jobs[e->sched];
          settle(*e, t);
          j.done = std::min(e->s.done, j.work);
          j.record.done = j.done;
          j.overhead_left = 0.0;
        }
        tickets.push_back(persist(*e));
      }
      if (l.profiling) {
        if (l.profile_from < 0 && iterations > 0) {
          l.profile_from = iterations;
          l.profile_from_t = t;
          tickets.push_back(persist(l));
        } else if (l.profile_from >= 0 && iterations - l.profile_from >= config_.profile_iterations &&
                   t - l.profile_from_t >= 5 * config_.heartbeat_s) {
          // Progress arrives once a heartbeat: timed over >= 5 of them, the
          // rate is off by at most ~1/5 of a heartbeat's worth either way.
          StoredProfile p{e->s.job_type, n.s.gpu_type, static_cast<int>(l.devices.size()),
                          (iterations - l.profile_from) / (t - l.profile_from_t), "measured"};
          measured_.push_back(p);
          tickets.push_back(store_->put(p));
          rebuild_catalogue();
          revoke(l, tickets);
          actions.push_back({{"action", "revoke"}, {"lease", id}, {"job", e->s.id}});
          rebuild_needed_ = true;
          must_wait = true;
          continue;
        }
      }
      actions.push_back({{"action", "renew"},
                         {"lease", id},
                         {"job", l.job},
                         {"lease_s_left", l.end - t + config_.heartbeat_timeout_s}});
    }
    // A revoked lease that this node's agent does not report never ran here:
    // its launch was revoked before the agent's heartbeat brought it (one
    // part of a gang failed at once, a cancel). The agent reports every run it
    // holds until acked, so it is over.
    std::vector<std::int64_t> never_launched;
    for (const auto& [id, l] : leases_)
      if (l.node == name && l.status == "revoking" && !reported.count(id))
        never_launched.push_back(id);
    for (std::int64_t id : never_launched) {
      tickets.push_back(end_lease(leases_.at(id)));
      must_wait = true;
    }
    activate_pending(tickets);
    // Launches: active leases on this node the agent does not run yet.
    for (const auto& [id, l] : leases_) {
      if (l.node != name || l.status != "active" || reported.count(id)) continue;
      const JobEntry* e = find_job(l.job);
      if (!e) continue;
      auto tenant = tenant_index_.find(e->s.tenant);
      const std::string unix_user =
          tenant == tenant_index_.end() ? "" : config_.tenants[tenant->second].unix_user;
      auto slot = tenant_slot_.find(e->s.tenant);
      // The gang's rendezvous (torchrun's variables): rank 0's node is the
      // master; ranks count workers, the parts' devices in rank order.
      int world = 0, first_rank = 0;
      for (std::int64_t part : part_ids(l.gang)) {
        const StoredLease& p = leases_.at(part);
        if (p.rank < l.rank) first_rank += static_cast<int>(p.devices.size());
        world += static_cast<int>(p.devices.size());
      }
      std::string master = leases_.count(l.gang) ? leases_.at(l.gang).node : l.node;
      if (auto m = nodes_.find(master); m != nodes_.end() && !m->second.s.address.empty())
        master = m->second.s.address;
      const json rendezvous = {{"master_addr", master},
                               {"master_port", kMasterPortBase + l.gang % kMasterPortSpan},
                               {"world_size", world},
                               {"rank", first_rank},
                               {"node_rank", l.rank},
                               {"nodes", l.parts},
                               {"local_world_size", static_cast<int>(l.devices.size())}};
      actions.push_back(
          {{"action", "launch"},
           {"lease", id},
           {"job", l.job},
           {"tenant", e->s.tenant},
           {"tenant_slot", slot == tenant_slot_.end() ? json(nullptr) : json(slot->second)},
           {"unix_user", unix_user.empty() ? json(nullptr) : json(unix_user)},
           {"command", e->command},
           {"env", e->env},
           {"devices", l.devices},
           {"gpu_type", n.s.gpu_type},
           {"workers", world},
           {"rendezvous", rendezvous},
           {"checkpoint_dir", config_.checkpoint_dir + "/" + l.job},
           {"lease_s_left", l.end - t + config_.heartbeat_timeout_s}});
      log::info("launch", {{"lease", id},
                           {"job", l.job},
                           {"tenant", e->s.tenant},
                           {"node", name},
                           {"devices", l.devices}});
      if (auto ticket = launch_ticket_.find(id); ticket != launch_ticket_.end())
        tickets.push_back(ticket->second);
      must_wait = true;
    }
    answer = {{"heartbeat_s", config_.heartbeat_s}, {"ack", ack}, {"actions", actions}};
  }
  // Ends and launches are durable before the agent acts on them or forgets.
  if (must_wait && !tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  return answer;
}

}  // namespace fairgpu::live
