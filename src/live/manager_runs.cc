// What the executor reports to the lease manager (LeaseHost, executor.h):
// nodes that come up or are lost, runs' progress (with profiling measurements
// and the verdict: renew or stop) and their ends. The agents' protocol itself
// is agent_executor.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "live/log.h"
#include "live/manager.h"
#include "live/request.h"

namespace fairgpu::live {

using nlohmann::json;
using namespace request;

json Manager::register_agent(const Caller& c, const json& body, const std::string& peer) {
  return agents_->register_agent(c, body, peer);
}

json Manager::heartbeat(const Caller& c, const json& body) { return agents_->heartbeat(c, body); }

void Manager::wait(const Tickets& tickets) {
  if (!tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
}

std::int64_t Manager::node_up(const NodeUp& up, Tickets& tickets) {
  NodeEntry& n = nodes_[up.name];
  const bool was_drained = n.s.state == "drained";
  // A new epoch: whatever ran under the old one is gone.
  for (JobEntry* e : lose_node_parts(up.name, tickets)) {
    if (e->s.state != "running") continue;
    e->s.state = waiting_state(e->s.tenant, e->s.job_type);
    tickets.push_back(persist(*e));
  }
  n.s.name = up.name;
  n.s.gpu_type = up.gpu_type;
  n.s.devices = up.devices;
  n.s.cpus = up.cpus;
  n.s.memory_gb = up.memory_gb;
  n.s.address = up.address;
  n.s.epoch += 1;
  n.s.state = was_drained ? "drained" : "ready";
  refresh_ready_types();
  n.last_heard = now();
  tickets.push_back(persist(n));
  log::info("register", {{"node", up.name},
                         {"gpu_type", up.gpu_type},
                         {"devices", up.devices},
                         {"epoch", n.s.epoch},
                         {"state", n.s.state}});
  // New job types to profile on a new GPU type: back to profiling.
  for (JobEntry& e : jobs_)
    if (e.s.state == "queued" && !fully_profiled(e.s.tenant, e.s.job_type)) {
      e.s.state = "profiling";
      tickets.push_back(persist(e));
    }
  rebuild_needed_ = true;
  activate_pending(tickets);
  return n.s.epoch;
}

bool Manager::node_heard(const std::string& node, std::int64_t epoch, double t) {
  auto nit = nodes_.find(node);
  if (nit == nodes_.end() || nit->second.s.epoch != epoch || nit->second.s.state == "lost")
    return false;
  nit->second.last_heard = t;
  return true;
}

void Manager::node_lost(const std::string& node, double relaunch_at, Tickets& tickets) {
  auto nit = nodes_.find(node);
  if (nit == nodes_.end() || nit->second.s.state == "lost") return;
  NodeEntry& n = nit->second;
  n.s.state = "lost";
  log::warn("node_lost", {{"node", node}, {"relaunch_at", relaunch_at}});
  refresh_ready_types();
  tickets.push_back(persist(n));
  for (JobEntry* e : lose_node_parts(node, tickets)) {
    if (terminal(e->s.state)) continue;
    e->not_before = std::max(e->not_before, relaunch_at);
    if (e->s.state == "running") e->s.state = waiting_state(e->s.tenant, e->s.job_type);
    tickets.push_back(persist(*e));
  }
  rebuild_needed_ = true;
}

std::vector<std::int64_t> Manager::revoking_on(const std::string& node) const {
  std::vector<std::int64_t> ids;
  for (const auto& [id, l] : leases_)
    if (l.node == node && l.status == "revoking") ids.push_back(id);
  return ids;
}

std::optional<double> Manager::active_until(std::int64_t lease, const std::string& node) const {
  auto it = leases_.find(lease);
  if (it == leases_.end() || it->second.node != node || it->second.status != "active")
    return std::nullopt;
  return it->second.end;
}

LeaseHost::Verdict Manager::report(const RunEvent& event, Tickets& tickets) {
  const std::string node = event.nodes.empty() ? "" : event.nodes.front();
  if (event.kind == RunEvent::Kind::kProgress) return run_running(event, tickets);
  if (event.kind != RunEvent::Kind::kEnded) return {};
  auto lit = leases_.find(event.lease);
  if (lit == leases_.end() || lit->second.node != node) return {};
  if (event.never_started) {
    lit->second.reason = "not_started";
    tickets.push_back(end_lease(lit->second));
  } else {
    run_ended(lit->second, event, tickets);
  }
  if (event.launch_failed && event.node_fault && event.refused.empty())
    count_node_fault(node, event.detail, tickets);
  return {false, "", 0.0, true};
}

void Manager::count_node_fault(const std::string& node, const std::string& why,
                               Tickets& tickets) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return;
  NodeEntry& n = it->second;
  ++n.faults;
  const std::string last = why.size() > 200 ? why.substr(0, 200) + "..." : why;
  log::warn("node_fault", {{"node", node},
                           {"faults", n.faults},
                           {"limit", config_.node_fault_limit},
                           {"error", last}});
  if (config_.node_fault_limit <= 0 || n.faults < config_.node_fault_limit ||
      n.s.state != "ready")
    return;
  set_node_drained(n, true,
                   fmt::format("node faults: {} launches in a row failed for the node's reason "
                               "(last: {}); undrain once fixed",
                               n.faults, last),
                   tickets);
}

// A run ended (the executor's report): the job finishes, fails, retries or
// waits for its next lease. For a part of a gang over several nodes: a clean
// finish waits for the other parts (status "exited"); any other end stops
// them (manager.h).
void Manager::run_ended(StoredLease& l, const RunEvent& r, std::vector<std::uint64_t>& tickets) {
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
  const bool exited = !r.launch_failed;  // else it never ran
  const int code = r.exit_code;
  const int sig = r.signal;
  // A refused report (issue 30, H2) is the job's fault: a failure, even
  // after the stop we asked for.
  const bool refused = !r.refused.empty();
  // A launch the node failed for its own reason is not the job's failure.
  const bool revoked = (r.revoked || r.node_fault) && !refused;
  const double iterations = r.iterations;
  if (l.rank == 0 && iterations > e.s.done) e.s.done = std::min(iterations, e.s.iterations);
  // A run shorter than a heartbeat is never reported running: it started
  // when its lease became active (the queue-wait metric needs it).
  if (e.s.started_at < 0 && !r.launch_failed && !r.never_started) e.s.started_at = l.start;
  settle(e, t);
  const bool clean = exited && code == 0 && sig == 0 && !refused;
  log::write(clean || revoked ? log::Level::kInfo : log::Level::kWarn, "exit",
             {{"lease", l.id},
              {"job", e.s.id},
              {"tenant", e.s.tenant},
              {"node", l.node},
              {"exit_code", code},
              {"signal", sig},
              {"revoked", revoked},
              {"launch_failed", r.launch_failed}});
  const bool part_finished = clean && (!revoked || e.s.done >= e.s.iterations);
  // The run's record: how it ended (accounting, job history).
  l.exit_code = code;
  l.signal = sig;
  l.reason = r.never_started   ? "not_started"
             : r.launch_failed ? "launch_failed"
             : part_finished   ? "finished"
             : revoked         ? (profiling ? "profiled" : "revoked")
                               : "failed";
  if (l.reason != "not_started") l.stopped = std::max(l.start, t);
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
    e.s.log_tail = r.detail;
    if (e.lease) revoke(leases_.at(e.lease), tickets);  // a new lease not launched yet
    leave_state();
  } else if (revoked) {
    // Stopped at our request, or by the agent's fencing (then it was still
    // the job's current lease), or never started because its node refused
    // it for the node's own reason (an agent stopping: launch_failed with
    // revoked, issue 32 defect 3): it waits for its next lease.
    if (current) {
      if (e.sched != kNone) state_release(e.sched);
      e.s.state = waiting_state(e.s.tenant, e.s.job_type);
    }
  } else {
    // Failed on its own (non-zero exit, a signal we did not send, exec error).
    ++e.s.failures;
    e.s.exit_code = code;
    e.s.log_tail = r.detail;
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
      if (current) e.s.state = waiting_state(e.s.tenant, e.s.job_type);
    }
  }
  if (profiling && e.s.state == "profiling" && fully_profiled(e.s.tenant, e.s.job_type))
    e.s.state = "queued";
  if (e.s.state == "queued" && e.sched == kNone) admit(e);
  tickets.push_back(persist(e));
}

LeaseHost::Verdict Manager::run_running(const RunEvent& r, Tickets& tickets) {
  const std::string node = r.nodes.empty() ? "" : r.nodes.front();
  auto lit = leases_.find(r.lease);
  if (lit == leases_.end() || lit->second.node != node || lit->second.status == "revoking" ||
      lit->second.status == "exited" || lit->second.status == "ended")
    return {};  // not a run of ours there: it stops
  StoredLease& l = lit->second;
  JobEntry* e = job_index_.count(l.job) ? &jobs_[job_index_.at(l.job)] : nullptr;
  if (!e) return {};
  nodes_.at(node).faults = 0;  // a launch there worked: node faults counted in a row
  const double t = now();
  const double iterations = r.iterations;
  if (l.rank == 0 && !r.limits.empty()) e->limits = r.limits;
  if (l.rank == 0 && !l.profiling && r.batch_size > 0)
    note_batch_size(*e, r.batch_size, iterations, t);
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
      // Kept as the tenant's own, or refused when implausible
      // (manager_profiles.cc); either way the run stops.
      record_profile(*e, l, nodes_.at(node).s.gpu_type,
                     (iterations - l.profile_from) / (t - l.profile_from_t), tickets);
      return {false, e->s.id, 0.0, true};
    }
  } else {
    cross_check(*e, l, iterations, t);
  }
  return {true, l.job, l.end, false};
}

}  // namespace fairgpu::live
