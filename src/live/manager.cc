// The live cluster manager (see manager.h for the design and the choices
// made where the papers are silent).
#include "live/manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "fairgpu/input_error.h"
#include "fairgpu/profile.h"

namespace fairgpu::live {
namespace {

using nlohmann::json;

double wall_clock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool terminal(const std::string& state) {
  return state == "finished" || state == "failed" || state == "cancelled";
}

[[noreturn]] void bad(const std::string& field, const std::string& problem) {
  throw ApiError(400, field + ": " + problem);
}

std::string need_string(const json& body, const char* key, bool required = true) {
  auto it = body.find(key);
  if (it == body.end()) {
    if (required) bad(key, "missing required field");
    return "";
  }
  if (!it->is_string() || it->get<std::string>().empty()) bad(key, "expected a non-empty string");
  for (char ch : it->get<std::string>())
    if (static_cast<unsigned char>(ch) < 0x20) bad(key, "must not contain control characters");
  return it->get<std::string>();
}

double need_number(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end()) bad(key, "missing required field");
  if (!it->is_number()) bad(key, std::string("expected a number, got ") + it->type_name());
  double v = it->get<double>();
  if (!std::isfinite(v)) bad(key, "must be finite");
  return v;
}

}  // namespace

Manager::Manager(ServeConfig config, std::function<double()> clock)
    : config_(std::move(config)), clock_(clock ? std::move(clock) : wall_clock) {
  // Check the policy and its options now, so a bad config fails at start.
  policy_ = make_round_policy(config_.policy, config_.policy_options);
  if (!config_.profiles_file.empty()) file_profiles_ = read_profiles_file(config_.profiles_file);
  for (std::size_t t = 0; t < config_.tenants.size(); ++t)
    tenant_index_[config_.tenants[t].name] = t;
  store_ = std::make_unique<Store>(config_.data_dir);

  // Recovery: everything acknowledged is in the store. Nodes get a fresh
  // heartbeat deadline (their agents kept running while we were down).
  StoreSnapshot snap = store_->load();
  const double t = now();
  for (StoredProfile& p : snap.profiles)
    if (p.source == "measured") measured_.push_back(std::move(p));
  for (StoredJob& s : snap.jobs) {
    JobEntry e;
    e.command = json::parse(s.command_json);
    e.env = json::parse(s.env_json).get<std::map<std::string, std::string>>();
    e.s = std::move(s);
    last_submitted_ = std::max(last_submitted_, e.s.submitted_at);
    job_index_[e.s.id] = jobs_.size();
    jobs_.push_back(std::move(e));
  }
  for (StoredNode& n : snap.nodes) {
    NodeEntry e;
    e.s = std::move(n);
    e.last_heard = t;
    nodes_[e.s.name] = std::move(e);
  }
  for (StoredLease& l : snap.leases) {
    next_lease_ = std::max(next_lease_, l.id + 1);
    if (l.status == "ended") continue;
    auto it = job_index_.find(l.job);
    if (it != job_index_.end() && (l.status == "pending" || l.status == "active"))
      jobs_[it->second].lease = l.id;
    leases_[l.id] = std::move(l);
  }
  rebuild_catalogue();
  rebuild_needed_ = true;
}

Manager::~Manager() { stop(); }

// ---------------------------------------------------------------- helpers

Caller Manager::authenticate(std::string_view header) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (header.substr(0, kBearer.size()) != kBearer) return {};
  const std::string_view token = header.substr(kBearer.size());
  if (token == config_.admin_token) return {Caller::Role::kAdmin, ""};
  if (token == config_.agent_token) return {Caller::Role::kAgent, ""};
  for (const TenantConfig& t : config_.tenants)
    if (token == t.token) return {Caller::Role::kTenant, t.name};
  return {};
}

static void require(const Caller& c, std::initializer_list<Caller::Role> roles) {
  if (c.role == Caller::Role::kNone) throw ApiError(401, "missing or unknown bearer token");
  for (Caller::Role r : roles)
    if (c.role == r) return;
  throw ApiError(403, "this token may not do that");
}

Manager::JobEntry& Manager::job_by_id(const std::string& id) {
  auto it = job_index_.find(id);
  if (it == job_index_.end()) throw ApiError(404, "job " + id + ": no such job");
  return jobs_[it->second];
}

const Manager::JobEntry* Manager::find_job(const std::string& id) const {
  auto it = job_index_.find(id);
  return it == job_index_.end() ? nullptr : &jobs_[it->second];
}

void Manager::check_owner(const Caller& c, const JobEntry& e) const {
  if (c.role == Caller::Role::kTenant && c.tenant != e.s.tenant)
    throw ApiError(403, fmt::format("job {} belongs to another tenant", e.s.id));
}

json Manager::job_json(const JobEntry& e) const {
  const StoredJob& s = e.s;
  json j = {{"id", s.id},
            {"name", s.name},
            {"tenant", s.tenant},
            {"job_type", s.job_type},
            {"workers", s.workers},
            {"weight", s.weight},
            {"command", e.command},
            {"env", e.env},
            {"iterations", s.iterations},
            {"iterations_done", s.done},
            {"gpu_seconds", s.attained},
            {"state", s.state},
            {"submitted_at", s.submitted_at},
            {"started_at", s.started_at >= 0 ? json(s.started_at) : json(nullptr)},
            {"finished_at", s.finished_at >= 0 ? json(s.finished_at) : json(nullptr)},
            {"restarts", s.restarts},
            {"preemptions", s.preemptions},
            {"failures", s.failures},
            {"exit_code", s.exit_code >= 0 ? json(s.exit_code) : json(nullptr)},
            {"log_tail", s.log_tail},
            {"lease", nullptr},
            {"node", nullptr},
            {"gpu_type", nullptr}};
  if (e.lease) {
    const StoredLease& l = leases_.at(e.lease);
    j["lease"] = l.id;
    j["node"] = l.node;
    if (auto n = nodes_.find(l.node); n != nodes_.end()) j["gpu_type"] = n->second.s.gpu_type;
  }
  return j;
}

std::uint64_t Manager::persist(const JobEntry& e) { return store_->put(e.s); }
std::uint64_t Manager::persist(const StoredLease& l) { return store_->put(l); }
std::uint64_t Manager::persist(const NodeEntry& n) { return store_->put(n.s); }

double Manager::interval() const { return policy_->interval(); }

// ---------------------------------------------------------------- profiles

void Manager::rebuild_catalogue() {
  catalogue_ = file_profiles_;
  catalogue_.source = config_.profiles_file.empty() ? "measured" : config_.profiles_file + " + measured";
  for (const StoredProfile& p : measured_) {
    JobTypeProfile* prof = nullptr;
    for (auto& jt : catalogue_.job_types)
      if (jt.name == p.job_type) prof = &jt;
    if (!prof) {
      catalogue_.job_types.push_back({});
      prof = &catalogue_.job_types.back();
      prof->name = p.job_type;
    }
    if (prof->consolidated.count(p.gpu_type) && !prof->consolidated[p.gpu_type].empty() &&
        std::find_if(measured_.begin(), measured_.end(), [&](const StoredProfile& q) {
          return &q != &p && q.job_type == p.job_type && q.gpu_type == p.gpu_type;
        }) == measured_.end() &&
        file_profiles_.find(p.job_type) && file_profiles_.find(p.job_type)->consolidated.count(p.gpu_type))
      continue;  // the file's figures win
    auto& row = prof->consolidated[p.gpu_type];
    row[p.workers] = p.rate;
    if (!row.count(1)) row[1] = p.rate / p.workers;  // linear scaling assumed (manager.h)
  }
}

std::set<std::string> Manager::ready_gpu_types() const {
  std::set<std::string> out;
  for (const auto& [name, n] : nodes_)
    if (n.s.state == "ready") out.insert(n.s.gpu_type);
  return out;
}

bool Manager::fully_profiled(const std::string& job_type) const {
  const JobTypeProfile* p = catalogue_.find(job_type);
  if (!p) return false;
  for (const std::string& type : ready_gpu_types())
    if (!(p->rate(type, 1, false) > 0.0)) return false;
  return true;
}

// A job the policy may plan for now: queued or running, profiled, and some
// ready node of a type it runs on can hold its whole gang.
bool Manager::schedulable(const JobEntry& e) const {
  if (e.s.state != "queued" && e.s.state != "running") return false;
  if (!fully_profiled(e.s.job_type)) return false;
  const JobTypeProfile* p = catalogue_.find(e.s.job_type);
  for (const auto& [name, n] : nodes_)
    if (n.s.state == "ready" && static_cast<int>(n.s.devices.size()) >= e.s.workers &&
        p->rate(n.s.gpu_type, e.s.workers, false) > 0.0)
      return true;
  return false;
}

// ---------------------------------------------------------------- the core

void Manager::settle(JobEntry& e, double t) {
  if (e.sched == kNone) return;
  Job& j = state_.jobs[e.sched];
  if (j.state != JobState::kRunning || t <= j.settled_at) return;
  j.record.attained_gpu_seconds += j.workers * (t - j.settled_at);
  j.settled_at = t;
  e.s.attained = j.record.attained_gpu_seconds;
}

// Rebuilds the model, the state and the policy from the ready nodes and the
// live jobs: when nodes come, go or drain, or a job type gets its profile.
void Manager::rebuild() {
  rebuild_needed_ = false;
  const double t = now();
  for (JobEntry& e : jobs_) settle(e, t);
  model_.reset();
  state_ = SchedulerState{};
  sched_to_job_.clear();
  flat_device_.clear();
  device_ref_.clear();
  held_.clear();
  for (JobEntry& e : jobs_) e.sched = kNone;
  for (auto& [name, n] : nodes_) n.model_index = kNone;

  Cluster cluster;
  std::vector<std::string> node_names;
  for (auto& [name, n] : nodes_) {
    if (n.s.state != "ready" || n.s.devices.empty()) continue;
    auto type = cluster.type_index(n.s.gpu_type);
    if (!type) {
      cluster.gpu_types.push_back(n.s.gpu_type);
      type = cluster.gpu_types.size() - 1;
    }
    cluster.nodes.push_back({name, *type, static_cast<int>(n.s.devices.size()), n.s.cpus, n.s.memory_gb});
    node_names.push_back(name);
  }
  Workload workload;
  for (const TenantConfig& tc : config_.tenants) workload.tenants.push_back({tc.name, tc.weight});
  std::vector<std::size_t> members;
  for (std::size_t i = 0; i < jobs_.size(); ++i) {
    const JobEntry& e = jobs_[i];
    if (!schedulable(e)) continue;
    JobSpec spec;
    spec.id = e.s.id;
    spec.tenant = e.s.tenant;
    spec.job_type = e.s.job_type;
    spec.workers = e.s.workers;
    spec.arrival_s = e.s.submitted_at;
    spec.iterations = e.s.iterations;
    spec.weight = e.s.weight;
    workload.jobs.push_back(std::move(spec));
    members.push_back(i);
  }
  if (cluster.nodes.empty() || workload.jobs.empty()) {
    policy_ = make_round_policy(config_.policy, config_.policy_options);
    return;
  }
  model_ = std::make_unique<ClusterModel>(
      bind_model(cluster, catalogue_, workload, config_.restart_overhead_s));
  for (std::size_t n = 0; n < model_->cluster.nodes.size(); ++n) {
    NodeEntry& ne = nodes_.at(model_->cluster.nodes[n].name);
    ne.model_index = n;
    for (std::size_t g = 0; g < ne.s.devices.size(); ++g) {
      flat_device_.push_back({ne.s.name, ne.s.devices[g]});
      device_ref_[{ne.s.name, ne.s.devices[g]}] = {static_cast<std::uint32_t>(n),
                                                   static_cast<std::uint32_t>(g)};
    }
  }
  state_ = make_scheduler_state(*model_, workload);
  state_.now = t;
  policy_ = make_round_policy(config_.policy, config_.policy_options);
  sched_to_job_ = members;
  for (std::size_t k = 0; k < members.size(); ++k) {
    JobEntry& e = jobs_[members[k]];
    e.sched = k;
    Job& j = state_.jobs[k];
    j.done = std::min(e.s.done, j.work);
    j.record.done = j.done;
    j.record.attained_gpu_seconds = e.s.attained;
    j.record.restarts = e.s.restarts;
    j.record.preemptions = e.s.preemptions;
    if (e.s.started_at >= 0) j.record.first_start = e.s.started_at;
    if (e.not_before > t) {
      held_.push_back(members[k]);
      continue;
    }
    admit_job(state_, k);
    if (!e.lease) continue;
    const StoredLease& l = leases_.at(e.lease);
    std::vector<DeviceRef> devices;
    for (int d : l.devices) {
      auto it = device_ref_.find({l.node, d});
      if (it == device_ref_.end()) break;
      devices.push_back(it->second);
    }
    if (devices.size() != l.devices.size() || static_cast<int>(devices.size()) != j.workers)
      continue;  // its node left the model: the lease is revoked or lost already
    j.state = JobState::kRunning;
    j.devices = devices;
    j.lease_end = l.end;
    j.placement_type = state_.type_of(devices.front());
    j.rate = j.rate_one_node[j.placement_type];
    j.settled_at = t;
    j.run_start = l.start;
    for (DeviceRef d : devices) state_.device_owner[state_.flat(d)] = static_cast<std::int64_t>(k);
    state_.running.push_back(k);
  }
  // Profiling runs hold their devices outside the policy's jobs.
  for (const auto& [id, l] : leases_) {
    if (!l.profiling || l.status == "revoking") continue;
    for (int d : l.devices) {
      auto it = device_ref_.find({l.node, d});
      if (it == device_ref_.end()) continue;
      state_.device_owner[state_.flat(it->second)] = kDeviceReserved;
      ++state_.reserved[state_.type_of(it->second)];
    }
  }
}

void Manager::admit(JobEntry& e) {
  if (!model_ || !model_->profiles.index(e.s.job_type) || !schedulable(e)) {
    rebuild_needed_ = true;
    return;
  }
  JobSpec spec;
  spec.id = e.s.id;
  spec.tenant = e.s.tenant;
  spec.job_type = e.s.job_type;
  spec.workers = e.s.workers;
  spec.arrival_s = e.s.submitted_at;
  spec.iterations = e.s.iterations;
  spec.weight = e.s.weight;
  e.sched = add_job(state_, spec);
  sched_to_job_.push_back(static_cast<std::size_t>(&e - jobs_.data()));
  account_interval(state_, now() - state_.now);
  state_.now = std::max(state_.now, now());
  admit_job(state_, e.sched);
}

// The job stops holding devices in the state (it stays active).
void Manager::state_release(std::size_t k) {
  Job& j = state_.jobs[k];
  if (j.state != JobState::kRunning) return;
  for (DeviceRef d : j.devices) state_.device_owner[state_.flat(d)] = -1;
  j.devices.clear();
  j.rate = 0.0;
  j.state = JobState::kQueued;
  j.last_stop = state_.now;
  ++j.version;
  std::erase(state_.running, k);
  state_.changed = true;
}

// The job leaves the state for good (finished, failed, cancelled).
void Manager::state_finish(JobEntry& e) {
  if (e.sched == kNone) return;
  settle(e, now());
  state_release(e.sched);
  Job& j = state_.jobs[e.sched];
  if (j.active()) {
    account_interval(state_, now() - state_.now);
    state_.now = std::max(state_.now, now());
    close_job(state_, j);
    std::erase(state_.active, e.sched);
    if (state_.active.empty()) state_.active_weight = state_.active_workers = 0.0;
  }
  j.state = JobState::kFinished;
  std::erase(held_, static_cast<std::size_t>(&e - jobs_.data()));
  e.sched = kNone;
  state_.changed = true;
}

bool Manager::device_busy(const std::string& node, int device, std::int64_t except) const {
  for (const auto& [id, l] : leases_)
    if (id != except && l.node == node && l.status != "pending" &&
        std::find(l.devices.begin(), l.devices.end(), device) != l.devices.end())
      return true;
  return false;
}

std::uint64_t Manager::end_lease(StoredLease& l) {
  l.status = "ended";
  std::uint64_t ticket = persist(l);
  auto it = job_index_.find(l.job);
  if (it != job_index_.end() && jobs_[it->second].lease == l.id) jobs_[it->second].lease = 0;
  leases_.erase(l.id);  // l dangles from here
  return ticket;
}

// Asks the lease's agent to stop the run (or drops a launch never sent).
void Manager::revoke(StoredLease& l, std::vector<std::uint64_t>& tickets) {
  auto it = job_index_.find(l.job);
  if (it != job_index_.end() && jobs_[it->second].lease == l.id) jobs_[it->second].lease = 0;
  if (l.status == "pending") {
    tickets.push_back(end_lease(l));
    return;
  }
  l.status = "revoking";
  tickets.push_back(persist(l));
}

// Pending leases whose job and devices are free of earlier runs may launch.
void Manager::activate_pending(std::vector<std::uint64_t>& tickets) {
  for (auto& [id, l] : leases_) {
    if (l.status != "pending") continue;
    bool clear = true;
    for (const auto& [other_id, other] : leases_)
      if (other_id != id && other.status == "revoking" && other.job == l.job) clear = false;
    for (int d : l.devices) clear = clear && !device_busy(l.node, d, id);
    if (!clear) continue;
    l.status = "active";
    l.start = now();
    tickets.push_back(persist(l));
  }
}

void Manager::apply_plan(const RoundPlan& plan, std::vector<std::uint64_t>& tickets) {
  std::map<std::size_t, const Assignment*> by_job;
  for (const Assignment& a : plan.run) by_job[a.job] = &a;
  auto same = [](std::vector<DeviceRef> a, std::vector<DeviceRef> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return a == b;
  };
  // Stops first: leases that ended and were left out or moved.
  for (std::size_t k : std::vector<std::size_t>(state_.running)) {
    Job& j = state_.jobs[k];
    if (!state_.lease_ended(j)) continue;
    auto a = by_job.find(k);
    if (a != by_job.end() && same(a->second->devices, j.devices)) continue;
    JobEntry& e = jobs_[sched_to_job_[k]];
    settle(e, state_.now);
    if (e.lease) revoke(leases_.at(e.lease), tickets);
    state_release(k);
    e.s.state = "queued";
    if (a == by_job.end()) {
      ++e.s.preemptions;
      ++j.record.preemptions;
      ++preemptions_;
    }
    tickets.push_back(persist(e));
  }
  for (const Assignment& a : plan.run) {
    Job& j = state_.jobs[a.job];
    JobEntry& e = jobs_[sched_to_job_[a.job]];
    if (j.state == JobState::kRunning) {  // renewed: same devices, no cost
      j.lease_end = a.lease_end;
      StoredLease& l = leases_.at(e.lease);
      l.end = a.lease_end;
      tickets.push_back(persist(l));
      continue;
    }
    const std::string& node = flat_device_[state_.flat(a.devices.front())].first;
    bool one_node = true;
    for (DeviceRef d : a.devices) one_node &= d.node == a.devices.front().node;
    if (!one_node) {  // agents run one process per job (manager.h)
      ++spread_skipped_;
      continue;
    }
    StoredLease l;
    l.id = next_lease_++;
    l.job = e.s.id;
    l.node = node;
    for (DeviceRef d : a.devices) l.devices.push_back(flat_device_[state_.flat(d)].second);
    l.start = state_.now;
    l.end = a.lease_end;
    l.status = "pending";
    e.lease = l.id;
    leases_[l.id] = l;
    tickets.push_back(persist(l));
    j.state = JobState::kRunning;
    j.devices = a.devices;
    j.lease_end = a.lease_end;
    j.placement_type = state_.type_of(a.devices.front());
    j.rate = j.rate_one_node[j.placement_type];
    j.settled_at = state_.now;
    j.run_start = state_.now;
    j.overhead_left = j.restart_overhead_s;
    ++j.version;
    for (DeviceRef d : a.devices) state_.device_owner[state_.flat(d)] = static_cast<std::int64_t>(a.job);
    state_.running.push_back(a.job);
    if (std::isnan(j.record.first_start)) {
      j.record.first_start = state_.now;
    } else {
      ++j.record.restarts;
      ++e.s.restarts;
    }
    e.s.state = "running";
    tickets.push_back(persist(e));
  }
  activate_pending(tickets);
}

// Profiling leases (manager.h): for each (job type, GPU type) without a
// figure and without a profiling run, the oldest waiting job of that type
// runs there on one node, on devices that are free or whose lease ended.
void Manager::start_profiling(std::vector<std::uint64_t>& tickets) {
  const std::set<std::string> types = ready_gpu_types();
  std::set<std::pair<std::string, std::string>> busy;  // (job type, gpu type) being profiled
  std::set<std::string> profiling_jobs;
  for (const auto& [id, l] : leases_) {
    if (!l.profiling) continue;
    profiling_jobs.insert(l.job);
    auto n = nodes_.find(l.node);
    const JobEntry* e = find_job(l.job);
    if (n != nodes_.end() && e) busy.insert({e->s.job_type, n->second.s.gpu_type});
  }
  for (JobEntry& e : jobs_) {
    if (e.s.state != "profiling" || profiling_jobs.count(e.s.id) || e.not_before > now()) continue;
    bool stopping = false;
    for (const auto& [id, l] : leases_) stopping |= l.job == e.s.id;
    if (stopping) continue;
    const JobTypeProfile* p = catalogue_.find(e.s.job_type);
    for (const std::string& type : types) {
      if (p && p->rate(type, 1, false) > 0.0) continue;
      if (busy.count({e.s.job_type, type})) continue;
      // A node of this type: the one with the most usable devices.
      const NodeEntry* best = nullptr;
      std::vector<int> best_devices;
      for (const auto& [name, n] : nodes_) {
        if (n.s.state != "ready" || n.s.gpu_type != type) continue;
        std::vector<int> usable;
        for (int d : n.s.devices) {
          auto ref = device_ref_.find({name, d});
          if (ref != device_ref_.end() && model_) {
            std::int64_t owner = state_.device_owner[state_.flat(ref->second)];
            if (owner == kDeviceReserved) continue;
            if (owner >= 0 && !state_.lease_ended(state_.jobs[static_cast<std::size_t>(owner)])) continue;
          }
          usable.push_back(d);
        }
        if (usable.size() > best_devices.size()) {
          best = &n;
          best_devices = usable;
        }
      }
      const int want = [&] {
        int largest = 0;
        for (const auto& [name, n] : nodes_)
          if (n.s.state == "ready" && n.s.gpu_type == type)
            largest = std::max(largest, static_cast<int>(n.s.devices.size()));
        return std::min(e.s.workers, largest);
      }();
      if (!best || want == 0 || static_cast<int>(best_devices.size()) < want) continue;
      best_devices.resize(static_cast<std::size_t>(want));
      // Preempt the policy's jobs whose lease ended on these devices.
      for (int d : best_devices) {
        auto ref = device_ref_.find({best->s.name, d});
        if (ref == device_ref_.end() || !model_) continue;
        std::int64_t owner = state_.device_owner[state_.flat(ref->second)];
        if (owner < 0) continue;
        const std::size_t k = static_cast<std::size_t>(owner);
        JobEntry& victim = jobs_[sched_to_job_[k]];
        settle(victim, state_.now);
        if (victim.lease) revoke(leases_.at(victim.lease), tickets);
        state_release(k);
        victim.s.state = "queued";
        ++victim.s.preemptions;
        ++state_.jobs[k].record.preemptions;
        ++preemptions_;
        tickets.push_back(persist(victim));
      }
      StoredLease l;
      l.id = next_lease_++;
      l.job = e.s.id;
      l.node = best->s.name;
      l.devices = best_devices;
      l.start = now();
      l.end = now() + config_.profile_timeout_s;
      l.status = "pending";
      l.profiling = true;
      for (int d : best_devices) {
        auto ref = device_ref_.find({best->s.name, d});
        if (ref == device_ref_.end() || !model_) continue;
        state_.device_owner[state_.flat(ref->second)] = kDeviceReserved;
        ++state_.reserved[state_.type_of(ref->second)];
      }
      e.lease = l.id;
      leases_[l.id] = l;
      tickets.push_back(persist(l));
      busy.insert({e.s.job_type, type});
      break;  // one profiling run per job at a time
    }
  }
}

double Manager::first_point() const {
  std::lock_guard lock(mu_);
  const double t = now();
  double last_end = t;
  for (const auto& [id, l] : leases_)
    if (!l.profiling && (l.status == "active" || l.status == "pending")) last_end = std::max(last_end, l.end);
  return std::min(last_end, t + interval());
}

double Manager::schedule(double at) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::uint64_t> tickets;
  {
    std::lock_guard lock(mu_);
    if (rebuild_needed_) rebuild();
    const double t = at >= 0 ? std::min(at, now()) : now();
    if (model_) {
      account_interval(state_, t - state_.now);
      state_.now = t;
      for (JobEntry& e : jobs_)
        if (e.sched != kNone) settle(e, t);
      // Jobs whose fence time passed join again, in arrival order.
      for (auto it = held_.begin(); it != held_.end();) {
        JobEntry& e = jobs_[*it];
        if (e.not_before > t) {
          ++it;
          continue;
        }
        admit_job(state_, e.sched);
        std::sort(state_.active.begin(), state_.active.end());  // indices follow arrival
        it = held_.erase(it);
      }
    }
    // A profiling run past its time without a figure stops and counts as a
    // failure of the job (no measurable progress in profile_timeout_s).
    for (auto it = leases_.begin(); it != leases_.end();) {
      StoredLease& l = (it++)->second;
      if (!l.profiling || l.status != "active" || l.end > t) continue;
      JobEntry& e = job_by_id(l.job);
      revoke(l, tickets);
      ++e.s.failures;
      e.s.log_tail = fmt::format("no {} iterations within the {} s profiling lease",
                                 config_.profile_iterations, config_.profile_timeout_s);
      if (e.s.failures > config_.max_retries) {
        e.s.state = "failed";
        e.s.finished_at = t;
      }
      tickets.push_back(persist(e));
    }
    start_profiling(tickets);
    if (model_) {
      RoundPlan plan = policy_->plan(state_);
      validate_plan(plan, state_);
      state_.changed = false;
      apply_plan(plan, tickets);
    } else {
      activate_pending(tickets);
    }
    ++rounds_;
    tickets.push_back(store_->put(StoredMeta{"rounds", std::to_string(rounds_)}));
    // Decisions are durable before any agent hears of them: heartbeats wait
    // on mu_, which is held until the commit.
    if (!tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
    last_round_compute_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    round_compute_sum_ += last_round_compute_;
  }
  return last_round_compute_;
}

double Manager::time_plan_only() {
  std::lock_guard lock(mu_);
  if (rebuild_needed_) rebuild();
  if (!model_) return 0.0;
  account_interval(state_, now() - state_.now);
  state_.now = now();
  const auto t0 = std::chrono::steady_clock::now();
  RoundPlan plan = policy_->plan(state_);
  benchmark_sink_ = plan.run.size();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Manager::tick() {
  std::vector<std::uint64_t> tickets;
  std::unique_lock lock(mu_);
  const double t = now();
  for (auto& [name, n] : nodes_) {
    if (n.s.state == "lost" || t - n.last_heard <= config_.heartbeat_timeout_s) continue;
    // The agent fences its runs heartbeat_timeout after its last heartbeat;
    // they are gone grace + kill_after later (docs/live-protocol.md).
    const double fence = n.last_heard + config_.heartbeat_timeout_s + config_.grace_s +
                         config_.kill_after_s + config_.heartbeat_s;
    n.s.state = "lost";
    tickets.push_back(persist(n));
    for (auto it = leases_.begin(); it != leases_.end();) {
      StoredLease& l = (it++)->second;
      if (l.node != name) continue;
      JobEntry* e = job_index_.count(l.job) ? &jobs_[job_index_.at(l.job)] : nullptr;
      tickets.push_back(end_lease(l));
      if (!e || terminal(e->s.state)) continue;
      e->not_before = std::max(e->not_before, fence);
      if (e->s.state == "running") e->s.state = fully_profiled(e->s.job_type) ? "queued" : "profiling";
      tickets.push_back(persist(*e));
    }
    rebuild_needed_ = true;
  }
  activate_pending(tickets);
  if (!tickets.empty()) {
    lock.unlock();
    store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  }
}

void Manager::run() {
  const double step = interval();
  double next_point = first_point();
  double next_tick = now();
  std::unique_lock lock(run_mu_);
  while (!stopping_) {
    const double t = now();
    if (t >= next_point) {
      lock.unlock();
      try {
        schedule(next_point);
      } catch (const std::exception& e) {
        // A failed round (a policy bug, a store error) is reported and the
        // next one tried; the leases in force stay as they are.
        ++failed_rounds_;
        std::fprintf(stderr, "fairgpu serve: round at %.3f failed: %s\n", next_point, e.what());
      }
      lock.lock();
      // Keep the grid; skip points missed while the decision ran long.
      while (next_point <= now()) next_point += step;
    }
    if (t >= next_tick) {
      lock.unlock();
      tick();
      lock.lock();
      next_tick = now() + config_.heartbeat_s;
    }
    const double wake = std::min(next_point, next_tick);
    run_cv_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, wake - now())),
                     [&] { return stopping_; });
  }
}

void Manager::stop() {
  {
    std::lock_guard lock(run_mu_);
    stopping_ = true;
  }
  run_cv_.notify_all();
}

// ---------------------------------------------------------------- tenants' API

json Manager::submit(const Caller& c, const json& body) {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  if (!body.is_object()) bad("(body)", "expected a JSON object");
  static const std::set<std::string> allowed = {"name", "job_type", "workers", "command",
                                                "iterations", "env", "weight", "tenant"};
  for (const auto& [key, value] : body.items())
    if (!allowed.count(key)) bad(key, "unknown field");
  JobEntry e;
  StoredJob& s = e.s;
  s.name = need_string(body, "name", false);
  s.job_type = need_string(body, "job_type");
  const double workers = need_number(body, "workers");
  if (workers < 1 || workers != std::floor(workers) || workers > 4096)
    bad("workers", "expected an integer in 1..4096");
  s.workers = static_cast<int>(workers);
  s.iterations = need_number(body, "iterations");
  if (!(s.iterations > 0)) bad("iterations", "must be > 0");
  if (body.contains("weight")) {
    s.weight = need_number(body, "weight");
    if (!(s.weight > 0)) bad("weight", "must be > 0");
  }
  auto cmd = body.find("command");
  if (cmd == body.end()) bad("command", "missing required field");
  if (cmd->is_string()) {
    if (cmd->get<std::string>().empty()) bad("command", "must not be empty");
  } else if (cmd->is_array()) {
    if (cmd->empty()) bad("command", "must not be empty");
    for (std::size_t i = 0; i < cmd->size(); ++i)
      if (!(*cmd)[i].is_string()) bad(fmt::format("command[{}]", i), "expected a string");
  } else {
    bad("command", "expected an argv array or a shell string");
  }
  e.command = *cmd;
  if (auto env = body.find("env"); env != body.end()) {
    if (!env->is_object()) bad("env", "expected an object of strings");
    for (const auto& [k, v] : env->items()) {
      if (!v.is_string()) bad("env." + k, "expected a string");
      if (k.empty() || k.find('=') != std::string::npos) bad("env." + k, "bad variable name");
      if (k.rfind("FAIRGPU_", 0) == 0 || k == "CUDA_VISIBLE_DEVICES")
        bad("env." + k, "is set by the agent");
      e.env[k] = v.get<std::string>();
    }
  }
  if (c.role == Caller::Role::kAdmin) {
    s.tenant = need_string(body, "tenant");
  } else {
    if (body.contains("tenant") && need_string(body, "tenant") != c.tenant)
      throw ApiError(403, "tenant: a tenant token submits only for its own tenant");
    s.tenant = c.tenant;
  }
  if (!tenant_index_.count(s.tenant)) bad("tenant", "unknown tenant '" + s.tenant + "'");
  s.command_json = e.command.dump();
  s.env_json = json(e.env).dump();

  std::uint64_t ticket;
  json answer;
  {
    std::lock_guard lock(mu_);
    s.seq = static_cast<std::int64_t>(jobs_.size()) + 1;
    s.id = fmt::format("j-{:06d}", s.seq);
    if (s.name.empty()) s.name = s.id;
    // Arrival order is submission order (the state keeps jobs by arrival).
    s.submitted_at = last_submitted_ = std::max(last_submitted_, now());
    s.state = fully_profiled(s.job_type) ? "queued" : "profiling";
    job_index_[s.id] = jobs_.size();
    jobs_.push_back(std::move(e));
    JobEntry& added = jobs_.back();
    if (added.s.state == "queued") admit(added);
    ++submissions_;
    ticket = persist(added);
    answer = job_json(added);
  }
  store_->wait(ticket);  // durable before acknowledged
  return answer;
}

json Manager::jobs(const Caller& c, const std::string& state_filter) const {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  std::lock_guard lock(mu_);
  json list = json::array();
  for (const JobEntry& e : jobs_) {
    if (c.role == Caller::Role::kTenant && e.s.tenant != c.tenant) continue;
    if (!state_filter.empty() && e.s.state != state_filter) continue;
    list.push_back(job_json(e));
  }
  return {{"jobs", list}};
}

json Manager::job(const Caller& c, const std::string& id) const {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  std::lock_guard lock(mu_);
  const JobEntry* e = find_job(id);
  if (!e) throw ApiError(404, "job " + id + ": no such job");
  check_owner(c, *e);
  return job_json(*e);
}

json Manager::cancel(const Caller& c, const std::string& id) {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  std::vector<std::uint64_t> tickets;
  json answer;
  {
    std::lock_guard lock(mu_);
    JobEntry& e = job_by_id(id);
    check_owner(c, e);
    if (terminal(e.s.state))
      throw ApiError(409, fmt::format("job {} is already {}", id, e.s.state));
    state_finish(e);
    if (e.lease) revoke(leases_.at(e.lease), tickets);
    e.s.state = "cancelled";
    e.s.finished_at = now();
    tickets.push_back(persist(e));
    answer = job_json(e);
  }
  store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  return answer;
}

json Manager::tenants(const Caller& c) const {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  std::lock_guard lock(mu_);
  int total = 0;
  for (const auto& [name, n] : nodes_)
    if (n.s.state == "ready") total += static_cast<int>(n.s.devices.size());
  json list = json::array();
  for (const TenantConfig& t : config_.tenants) {
    if (c.role == Caller::Role::kTenant && c.tenant != t.name) continue;
    int active = 0, held = 0;
    double throughput = 0.0;
    for (const JobEntry& e : jobs_) {
      if (e.s.tenant != t.name) continue;
      active += !terminal(e.s.state);
      if (!e.lease) continue;
      held += e.s.workers;
      if (e.sched != kNone && model_) {
        const Job& j = state_.jobs[e.sched];
        if (j.state == JobState::kRunning && j.ref_rate > 0) throughput += j.normalised_rate();
      }
    }
    list.push_back({{"name", t.name},
                    {"weight", t.weight},
                    {"jobs_active", active},
                    {"gpus_held", held},
                    {"share", total ? double(held) / total : 0.0},
                    {"normalised_throughput", throughput}});
  }
  return {{"tenants", list}};
}

json Manager::cluster(const Caller& c) const {
  if (c.role == Caller::Role::kNone) throw ApiError(401, "missing or unknown bearer token");
  std::lock_guard lock(mu_);
  const double t = now();
  json nodes = json::array();
  for (const auto& [name, n] : nodes_) {
    json holders = json::array();
    for (const auto& [id, l] : leases_) {
      if (l.node != name) continue;
      const JobEntry* e = find_job(l.job);
      for (int d : l.devices)
        holders.push_back({{"device", d},
                           {"job", l.job},
                           {"tenant", e ? e->s.tenant : ""},
                           {"lease", l.id},
                           {"status", l.status},
                           {"profiling", l.profiling},
                           {"lease_end_in_s", l.end - t}});
    }
    nodes.push_back({{"name", name},
                     {"gpu_type", n.s.gpu_type},
                     {"devices", n.s.devices},
                     {"cpus", n.s.cpus},
                     {"memory_gb", n.s.memory_gb},
                     {"state", n.s.state},
                     {"epoch", n.s.epoch},
                     {"last_heartbeat_s_ago", t - n.last_heard},
                     {"holders", holders}});
  }
  return {{"round", rounds_},
          {"policy", config_.policy},
          {"round_s", interval()},
          {"nodes", nodes}};
}

json Manager::set_drained(const Caller& c, const std::string& node, bool drained) {
  require(c, {Caller::Role::kAdmin});
  std::vector<std::uint64_t> tickets;
  json answer;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end()) throw ApiError(404, "node " + node + ": no such node");
    NodeEntry& n = it->second;
    if (drained && n.s.state == "ready") {
      n.s.state = "drained";
      // Drain evicts: every run on the node checkpoints and stops now.
      for (auto l = leases_.begin(); l != leases_.end();) {
        StoredLease& lease = (l++)->second;
        if (lease.node != node) continue;
        JobEntry* e = job_index_.count(lease.job) ? &jobs_[job_index_.at(lease.job)] : nullptr;
        revoke(lease, tickets);
        if (e && e->s.state == "running") {
          e->s.state = fully_profiled(e->s.job_type) ? "queued" : "profiling";
          tickets.push_back(persist(*e));
        }
      }
    } else if (!drained && n.s.state == "drained") {
      n.s.state = "ready";
    }
    tickets.push_back(persist(n));
    rebuild_needed_ = true;
    answer = {{"name", node}, {"state", n.s.state}};
  }
  store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  return answer;
}

json Manager::profiles(const Caller& c) const {
  if (c.role == Caller::Role::kNone) throw ApiError(401, "missing or unknown bearer token");
  std::lock_guard lock(mu_);
  json list = json::array();
  for (const JobTypeProfile& p : file_profiles_.job_types)
    for (const auto& [type, rows] : p.consolidated)
      for (const auto& [workers, rate] : rows)
        list.push_back({{"job_type", p.name}, {"gpu_type", type}, {"workers", workers},
                        {"iterations_per_s", rate}, {"source", "file"}});
  for (const StoredProfile& p : measured_)
    list.push_back({{"job_type", p.job_type}, {"gpu_type", p.gpu_type}, {"workers", p.workers},
                    {"iterations_per_s", p.rate}, {"source", "measured"}});
  return {{"profiles", list}};
}

// ---------------------------------------------------------------- agents

json Manager::register_agent(const Caller& c, const json& body) {
  require(c, {Caller::Role::kAgent});
  if (!body.is_object()) bad("(body)", "expected a JSON object");
  const std::string name = need_string(body, "node");
  const std::string type = need_string(body, "gpu_type");
  auto dev = body.find("devices");
  if (dev == body.end() || !dev->is_array()) bad("devices", "expected an array of device ids");
  std::vector<int> devices;
  for (std::size_t i = 0; i < dev->size(); ++i) {
    if (!(*dev)[i].is_number_integer() || (*dev)[i].get<long long>() < 0)
      bad(fmt::format("devices[{}]", i), "expected a device id >= 0");
    devices.push_back((*dev)[i].get<int>());
  }
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) bad("devices", "repeats a device");
  double cpus = 0.0, memory = 0.0;
  if (body.contains("cpus")) cpus = need_number(body, "cpus");
  if (body.contains("memory_gb")) memory = need_number(body, "memory_gb");
  if (cpus < 0) bad("cpus", "must be >= 0");
  if (memory < 0) bad("memory_gb", "must be >= 0");

  std::vector<std::uint64_t> tickets;
  json answer;
  {
    std::lock_guard lock(mu_);
    NodeEntry& n = nodes_[name];
    const bool was_drained = n.s.state == "drained";
    // A new epoch: whatever ran under the old one is gone (the agent killed
    // its leftovers before registering).
    for (auto it = leases_.begin(); it != leases_.end();) {
      StoredLease& l = (it++)->second;
      if (l.node != name) continue;
      JobEntry* e = job_index_.count(l.job) ? &jobs_[job_index_.at(l.job)] : nullptr;
      tickets.push_back(end_lease(l));
      if (e && e->s.state == "running") {
        e->s.state = fully_profiled(e->s.job_type) ? "queued" : "profiling";
        tickets.push_back(persist(*e));
      }
    }
    n.s.name = name;
    n.s.gpu_type = type;
    n.s.devices = devices;
    n.s.cpus = cpus;
    n.s.memory_gb = memory;
    n.s.epoch += 1;
    n.s.state = was_drained ? "drained" : "ready";
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
// waits for its next lease.
void Manager::run_ended(StoredLease& l, const json& r, std::vector<std::uint64_t>& tickets) {
  const double t = now();
  auto it = job_index_.find(l.job);
  if (it == job_index_.end()) {
    tickets.push_back(end_lease(l));
    return;
  }
  JobEntry& e = jobs_[it->second];
  const bool current = e.lease == l.id;
  const bool profiling = l.profiling;
  const std::string state = r.value("state", "exited");
  const int code = r.value("exit_code", -1);
  const int sig = r.value("signal", 0);
  const bool revoked = r.value("revoked", false);
  const double iterations = r.value("iterations", 0.0);
  if (iterations > e.s.done) e.s.done = std::min(iterations, e.s.iterations);
  settle(e, t);
  tickets.push_back(end_lease(l));  // l dangles from here
  if (terminal(e.s.state)) return;  // cancelled meanwhile

  const bool clean = state == "exited" && code == 0 && sig == 0;
  auto leave_state = [&] {
    if (e.sched != kNone) state_finish(e);
  };
  if (clean && (!revoked || e.s.done >= e.s.iterations)) {
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
      e.s.state = fully_profiled(e.s.job_type) ? "queued" : "profiling";
    }
  } else {
    // Failed on its own (non-zero exit, a signal we did not send, exec error).
    ++e.s.failures;
    e.s.exit_code = code;
    e.s.log_tail = r.value("log_tail", "");
    if (e.s.failures > config_.max_retries) {
      e.s.state = "failed";
      e.s.finished_at = t;
      if (e.lease) revoke(leases_.at(e.lease), tickets);
      leave_state();
    } else {
      if (current && e.sched != kNone) state_release(e.sched);
      if (current) e.s.state = fully_profiled(e.s.job_type) ? "queued" : "profiling";
    }
  }
  if (profiling && e.s.state == "profiling" && fully_profiled(e.s.job_type)) e.s.state = "queued";
  if (e.s.state == "queued" && e.sched == kNone) admit(e);
  tickets.push_back(persist(e));
}

json Manager::heartbeat(const Caller& c, const json& body) {
  require(c, {Caller::Role::kAgent});
  if (!body.is_object()) bad("(body)", "expected a JSON object");
  const std::string name = need_string(body, "node");
  const double epoch = need_number(body, "epoch");
  auto runs = body.find("runs");
  if (runs == body.end() || !runs->is_array()) bad("runs", "expected an array");
  for (std::size_t i = 0; i < runs->size(); ++i) {
    const json& r = (*runs)[i];
    if (!r.is_object() || !r.contains("lease") || !r["lease"].is_number_integer())
      bad(fmt::format("runs[{}].lease", i), "expected an integer lease id");
    if (!r.contains("state") || !r["state"].is_string())
      bad(fmt::format("runs[{}].state", i), "expected running, exited or launch_failed");
    const std::string s = r["state"].get<std::string>();
    if (s != "running" && s != "exited" && s != "launch_failed")
      bad(fmt::format("runs[{}].state", i), "expected running, exited or launch_failed");
    if (r.contains("iterations") && (!r["iterations"].is_number() || !(r["iterations"].get<double>() >= 0)))
      bad(fmt::format("runs[{}].iterations", i), "expected a number >= 0");
  }

  std::vector<std::uint64_t> tickets;
  bool must_wait = false;
  json answer;
  {
    std::lock_guard lock(mu_);
    auto nit = nodes_.find(name);
    if (nit == nodes_.end() || nit->second.s.epoch != static_cast<std::int64_t>(epoch) ||
        nit->second.s.state == "lost")
      throw ApiError(409, fmt::format("stale epoch for node {}: register again", name));
    NodeEntry& n = nit->second;
    const double t = now();
    n.last_heard = t;
    json actions = json::array(), ack = json::array();
    std::set<std::int64_t> reported;
    for (const json& r : *runs) {
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
          lit->second.status == "ended") {
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
      if (iterations > e->s.done) {
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
                   t > l.profile_from_t) {
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
    activate_pending(tickets);
    // Launches: active leases on this node the agent does not run yet.
    for (const auto& [id, l] : leases_) {
      if (l.node != name || l.status != "active" || reported.count(id)) continue;
      const JobEntry* e = find_job(l.job);
      if (!e) continue;
      actions.push_back({{"action", "launch"},
                         {"lease", id},
                         {"job", l.job},
                         {"command", e->command},
                         {"env", e->env},
                         {"devices", l.devices},
                         {"gpu_type", n.s.gpu_type},
                         {"workers", static_cast<int>(l.devices.size())},
                         {"checkpoint_dir", config_.checkpoint_dir + "/" + l.job},
                         {"lease_s_left", l.end - t + config_.heartbeat_timeout_s}});
      must_wait = true;
    }
    answer = {{"heartbeat_s", config_.heartbeat_s}, {"ack", ack}, {"actions", actions}};
  }
  // Ends and launches are durable before the agent acts on them or forgets.
  if (must_wait && !tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  return answer;
}

// ---------------------------------------------------------------- metrics

std::string Manager::metrics() const {
  std::lock_guard lock(mu_);
  std::string out;
  auto line = [&](const std::string& name, const std::string& labels, double v) {
    out += labels.empty() ? fmt::format("{} {}\n", name, v) : fmt::format("{}{{{}}} {}\n", name, labels, v);
  };
  out += "# HELP fairgpu_jobs Jobs by state.\n# TYPE fairgpu_jobs gauge\n";
  std::map<std::string, int> by_state;
  for (const char* s : {"profiling", "queued", "running", "finished", "failed", "cancelled"}) by_state[s] = 0;
  for (const JobEntry& e : jobs_) ++by_state[e.s.state];
  for (const auto& [s, n] : by_state) line("fairgpu_jobs", fmt::format("state=\"{}\"", s), n);

  std::map<std::string, int> gpus, busy;
  for (const auto& [name, n] : nodes_)
    if (n.s.state == "ready") gpus[n.s.gpu_type] += static_cast<int>(n.s.devices.size());
  for (const auto& [id, l] : leases_)
    if (l.status == "active" || l.status == "revoking")
      if (auto n = nodes_.find(l.node); n != nodes_.end())
        busy[n->second.s.gpu_type] += static_cast<int>(l.devices.size());
  out += "# HELP fairgpu_gpus GPUs of ready nodes by type.\n# TYPE fairgpu_gpus gauge\n";
  for (const auto& [type, n] : gpus) line("fairgpu_gpus", fmt::format("gpu_type=\"{}\"", type), n);
  out += "# HELP fairgpu_gpus_busy GPUs held by a run by type.\n# TYPE fairgpu_gpus_busy gauge\n";
  for (const auto& [type, n] : gpus)
    line("fairgpu_gpus_busy", fmt::format("gpu_type=\"{}\"", type), busy.count(type) ? busy.at(type) : 0);

  int total = 0;
  for (const auto& [type, n] : gpus) total += n;
  out += "# HELP fairgpu_tenant_normalised_throughput Expected progress of a tenant's running jobs in "
         "GPU-equivalents of the slowest type (OEF §6.1.4).\n"
         "# TYPE fairgpu_tenant_normalised_throughput gauge\n";
  std::string share;
  for (const TenantConfig& t : config_.tenants) {
    double throughput = 0.0;
    int held = 0;
    for (const JobEntry& e : jobs_) {
      if (e.s.tenant != t.name || !e.lease) continue;
      held += e.s.workers;
      if (e.sched != kNone && model_) {
        const Job& j = state_.jobs[e.sched];
        if (j.state == JobState::kRunning && j.ref_rate > 0) throughput += j.normalised_rate();
      }
    }
    line("fairgpu_tenant_normalised_throughput", fmt::format("tenant=\"{}\"", t.name), throughput);
    share += fmt::format("fairgpu_tenant_gpu_share{{tenant=\"{}\"}} {}\n", t.name,
                         total ? double(held) / total : 0.0);
  }
  out += "# HELP fairgpu_tenant_gpu_share Share of ready GPUs a tenant's leases hold.\n"
         "# TYPE fairgpu_tenant_gpu_share gauge\n" + share;
  out += "# HELP fairgpu_round_compute_seconds Time of the last scheduling decision.\n"
         "# TYPE fairgpu_round_compute_seconds gauge\n";
  line("fairgpu_round_compute_seconds", "", last_round_compute_);
  out += "# TYPE fairgpu_round_compute_seconds_total counter\n";
  line("fairgpu_round_compute_seconds_total", "", round_compute_sum_);
  out += "# TYPE fairgpu_rounds_total counter\n";
  line("fairgpu_rounds_total", "", static_cast<double>(rounds_));
  out += "# TYPE fairgpu_submissions_total counter\n";
  line("fairgpu_submissions_total", "", static_cast<double>(submissions_));
  out += "# TYPE fairgpu_preemptions_total counter\n";
  line("fairgpu_preemptions_total", "", static_cast<double>(preemptions_));
  out += "# TYPE fairgpu_failed_rounds_total counter\n";
  line("fairgpu_failed_rounds_total", "", static_cast<double>(failed_rounds_.load()));
  out += "# TYPE fairgpu_spread_skipped_total counter\n";
  line("fairgpu_spread_skipped_total", "", static_cast<double>(spread_skipped_));
  out += "# TYPE fairgpu_store_transactions_total counter\n";
  line("fairgpu_store_transactions_total", "", static_cast<double>(store_->transactions()));
  return out;
}

}  // namespace fairgpu::live
