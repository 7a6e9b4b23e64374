// The live cluster manager (see manager.h for the design and the choices
// made where the papers are silent).
#include "live/manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <thread>

#include "fairgpu/input_error.h"
#include "fairgpu/profile.h"
#include "live/log.h"
#include "live/request.h"
#include "live/slurm/executor.h"
#include "placement/midround.h"

namespace fairgpu::live {
namespace {

using nlohmann::json;
using namespace request;

double wall_clock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Manager::Manager(ServeConfig config, std::function<double()> clock)
    : config_(std::move(config)), clock_(clock ? std::move(clock) : wall_clock) {
  // Check the policy and its options now, so a bad config fails at start.
  policy_ = make_round_policy(config_.policy, live_policy_options(config_.policy_options));
  interval_ = policy_->interval();
  if (!config_.profiles_file.empty()) file_profiles_ = read_profiles_file(config_.profiles_file);
  for (std::size_t t = 0; t < config_.tenants.size(); ++t) {
    tenant_index_[config_.tenants[t].name] = t;
    config_tenants_.insert(config_.tenants[t].name);
  }
  // A Slurm that does not answer, or a partition it does not have, is a bad
  // config: refused before anything is written.
  if (config_.backend == "slurm") connect_slurm();
  store_ = std::make_unique<Store>(config_.data_dir);

  // Recovery: everything acknowledged is in the store. Nodes get a fresh
  // heartbeat deadline (their agents kept running while we were down).
  StoreSnapshot snap = store_->load();
  const double t = now();
  // Tenants (config_tenants_): the config's as it says; the API's kept;
  // others in the store (a config's of before) keep their jobs but no token.
  std::string slurm_instance;
  for (const auto& [key, value] : snap.meta) {
    if (key == "slurm_instance") slurm_instance = value;
    if (key == "rounds") rounds_ = std::stoull(value);  // the count goes on over restarts
    if (key.rfind("node_token:", 0) == 0) node_tokens_[key.substr(11)] = value;
    if (key.rfind("drain_reason:", 0) == 0 && !value.empty()) drain_reason_[key.substr(13)] = value;
    if (key.rfind("tenant_slot:", 0) == 0) tenant_slot_[key.substr(12)] = std::stoi(value);
    if (key.rfind("slurm_job:", 0) == 0) slurm_ids_[key.substr(10)] = std::stoll(value);
    if (key.rfind("tenant:", 0) != 0) continue;
    const json stored = json::parse(value);
    TenantConfig tc{stored.at("name"), stored.at("weight"), stored.at("token"), "",
                    config_.quotas};  // in no config: the default quotas
    if (config_tenants_.count(tc.name)) continue;  // the config's, as it says
    if (stored.value("source", "") == "api") {
      api_tenants_.insert(tc.name);
    } else {
      log::warn("tenant_token_disabled",
                {{"tenant", tc.name},
                 {"why", "in the store from an earlier config but in none now: its jobs stay, "
                         "its token no longer works (fairgpu tenant adds it through the API)"}});
      tc.token.clear();
    }
    tenant_index_[tc.name] = config_.tenants.size();
    config_.tenants.push_back(std::move(tc));
  }
  {
    std::vector<std::uint64_t> tickets;
    for (const TenantConfig& tc : config_.tenants) {
      slot_of(tc.name, &tickets);
      tickets.push_back(store_->put(tenant_record(tc)));  // the store agrees with the rule
    }
    if (!tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  }
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
    if (l.status == "ended") {
      // The chargeback counter's ended runs, as Store::runs reads them.
      if (l.reason == "not_started") continue;
      auto job = job_index_.find(l.job);
      std::string type = l.gpu_type;
      if (auto n = nodes_.find(l.node); type.empty() && n != nodes_.end()) type = n->second.s.gpu_type;
      const double stop = l.stopped >= 0 ? l.stopped : l.end;
      ended_gpu_seconds_[{job != job_index_.end() ? jobs_[job->second].s.tenant : "", type}] +=
          std::max(0.0, stop - l.start) * static_cast<double>(l.devices.size());
      continue;
    }
    if (auto n = nodes_.find(l.node); l.gpu_type.empty() && l.status != "pending" && n != nodes_.end())
      l.gpu_type = n->second.s.gpu_type;  // a run from before the type was recorded
    auto it = job_index_.find(l.job);
    if (it != job_index_.end() && l.status != "revoking") jobs_[it->second].lease = l.gang;
    leases_[l.id] = std::move(l);
  }
  refresh_ready_types();
  rebuild_catalogue();
  rebuild_needed_ = true;

  if (slurm_) {
    adopt_slurm_jobs(slurm_instance);
    return;
  }
  agents_ = std::make_unique<AgentExecutor>(config_, static_cast<LeaseHost&>(*this), clock_);
  agents_->set_log_relay(&log_relay_);
  executor_ = agents_.get();
  for (const auto& [name, n] : nodes_) agents_->adopt_node(name, n.s.state == "lost", t);
  // The executor carries on with the runs the store has started (their
  // activation is durable) and, for agents, stops the revoked ones as their
  // agents report them.
  std::set<std::int64_t> started;  // gangs with an active part
  for (const auto& [id, l] : leases_)
    if (l.status == "active") started.insert(l.gang);
  std::vector<RunStart> starts;
  for (std::int64_t gang : started)
    if (leases_.count(gang)) starts.push_back(run_start(gang, {}));
  executor_->apply(starts, revoking_leases(), t);
}

Manager::~Manager() { stop(); }

// ---------------------------------------------------------------- helpers

Caller Manager::authenticate(std::string_view header) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (header.substr(0, kBearer.size()) != kBearer) return {};
  std::lock_guard lock(mu_);  // tenants may be added at run time
  const std::string_view token = header.substr(kBearer.size());
  if (token.empty()) return {};
  if (same_secret(token, config_.admin_token)) return {Caller::Role::kAdmin, "", ""};
  for (const auto& [node, node_token] : node_tokens_)
    if (same_secret(token, node_token)) return {Caller::Role::kAgent, "", node};
  for (const TenantConfig& t : config_.tenants)
    if (same_secret(token, t.token)) return {Caller::Role::kTenant, t.name, ""};
  return {};
}

int Manager::slot_of(const std::string& tenant, std::vector<std::uint64_t>* tickets) {
  auto it = tenant_slot_.find(tenant);
  if (it != tenant_slot_.end()) return it->second;
  int next = 0;
  for (const auto& [name, slot] : tenant_slot_) next = std::max(next, slot + 1);
  tenant_slot_[tenant] = next;
  const std::uint64_t ticket =
      store_->put(StoredMeta{"tenant_slot:" + tenant, std::to_string(next)});
  if (tickets) tickets->push_back(ticket);
  return next;
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

json Manager::job_json(const JobEntry& e, const PendingContext& ctx) const {
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
            {"pending", pending_reason(e, ctx)},
            {"lease", nullptr},
            {"node", nullptr},
            {"nodes", json::array()},
            {"gpu_type", nullptr}};
  if (slurm_) {  // the held Slurm job that runs it (null until submitted)
    auto id = slurm_ids_.find(s.id);
    j["slurm_job"] = id == slurm_ids_.end() ? json(nullptr) : json(id->second);
  }
  if (e.lease) {
    const StoredLease& l = leases_.at(e.lease);
    j["lease"] = l.id;
    j["node"] = l.node;
    for (std::int64_t id : part_ids(l.gang)) j["nodes"].push_back(leases_.at(id).node);
    if (auto n = nodes_.find(l.node); n != nodes_.end()) j["gpu_type"] = n->second.s.gpu_type;
  }
  add_grant_json(e, j);
  add_regimes_json(e, j);
  return j;
}

std::uint64_t Manager::persist(const JobEntry& e) { return store_->put(e.s); }
std::uint64_t Manager::persist(const StoredLease& l) { return store_->put(l); }
std::uint64_t Manager::persist(const NodeEntry& n) { return store_->put(n.s); }

double Manager::interval() const { return interval_.load(); }

// ---------------------------------------------------------------- profiles

void Manager::refresh_ready_types() {
  ready_types_.clear();
  ready_pool_.clear();
  ready_largest_.clear();
  ready_node_gpus_.clear();
  for (const auto& [name, n] : nodes_) {
    if (n.s.state != "ready") continue;
    const int devices = static_cast<int>(n.s.devices.size());
    ready_types_.insert(n.s.gpu_type);
    ready_pool_[n.s.gpu_type] += devices;
    ready_largest_[n.s.gpu_type] = std::max(ready_largest_[n.s.gpu_type], devices);
    ready_node_gpus_[n.s.gpu_type].push_back(devices);
  }
}

StoredMeta Manager::tenant_record(const TenantConfig& t) const {
  return StoredMeta{"tenant:" + t.name, json{{"name", t.name},
                                             {"weight", t.weight},
                                             {"token", t.token},
                                             {"source", api_tenants_.count(t.name) ? "api" : "config"}}
                                            .dump()};
}

// The job as the policy sees it: of its regime's type or its own, in its
// tenant's profile entry (manager_profiles.cc).
JobSpec Manager::spec_of(const JobEntry& e) const {
  JobSpec spec;
  spec.id = e.s.id;
  spec.tenant = e.s.tenant;
  spec.job_type = profile_type(e.s.tenant, e.regime_type.empty() ? e.s.job_type : e.regime_type);
  spec.workers = e.s.workers;
  spec.arrival_s = e.s.submitted_at;
  spec.iterations = e.s.iterations;
  spec.weight = e.s.weight;
  return spec;
}

double Manager::gang_rate(const JobTypeProfile* p, const std::string& type, int workers) const {
  auto largest = ready_largest_.find(type);
  const bool spread = largest == ready_largest_.end() || workers > largest->second;
  return p ? p->rate(type, workers, spread) : 0.0;
}

bool Manager::ready_type_holds(const std::string& type, int workers) const {
  auto pool = ready_pool_.find(type);
  if (pool == ready_pool_.end()) return false;
  if (executor_ != nullptr && executor_->gangs_on_one_node())
    return ready_largest_.at(type) >= workers;
  if (executor_ != nullptr && executor_->gangs_spread_evenly())
    return holds_gang_evenly(ready_node_gpus_.at(type), workers);
  return pool->second >= workers;
}

// A job the policy may plan for now: queued or running, profiled, and the
// ready GPUs of some type it runs on can hold its whole gang (on one node or
// spread over several; on one node where the executor keeps gangs on one, as
// bind_model then requires; evenly where it spreads gangs evenly).
// O(GPU types), O(ready nodes) where gangs spread evenly.
bool Manager::schedulable(const JobEntry& e) const {
  if (e.s.state != "queued" && e.s.state != "running") return false;
  if (!launchable(e)) return false;
  if (!fully_profiled(e.s.tenant, e.s.job_type)) return false;
  const JobTypeProfile* p = catalogue_.find(profile_type(e.s.tenant, e.s.job_type));
  for (const auto& pool : ready_pool_)
    if (ready_type_holds(pool.first, e.s.workers) && gang_rate(p, pool.first, e.s.workers) > 0.0)
      return true;
  return false;
}

int Manager::largest_gang() const {
  std::map<std::string, int> pool;
  int largest = 0;
  for (const auto& [name, n] : nodes_)
    largest = std::max(largest, pool[n.s.gpu_type] += static_cast<int>(n.s.devices.size()));
  return largest;
}

bool Manager::registered_type_holds_evenly(int workers) const {
  std::map<std::string, std::vector<int>> node_gpus;
  for (const auto& [name, n] : nodes_)
    node_gpus[n.s.gpu_type].push_back(static_cast<int>(n.s.devices.size()));
  for (const auto& [type, gpus] : node_gpus)
    if (holds_gang_evenly(gpus, workers)) return true;
  return false;
}

Manager::PendingContext Manager::pending_context() const {
  PendingContext ctx;
  ctx.free_pool = ready_pool_;
  for (const auto& [name, n] : nodes_) {
    if (n.s.state == "drained")
      ctx.drained_pool[n.s.gpu_type] += static_cast<int>(n.s.devices.size());
    if (n.s.state == "lost") ctx.lost_pool[n.s.gpu_type] += static_cast<int>(n.s.devices.size());
  }
  for (const auto& [id, l] : leases_) {
    ctx.leased_jobs.insert(l.job);
    auto n = nodes_.find(l.node);
    if (n != nodes_.end() && n->second.s.state == "ready")
      ctx.free_pool[n->second.s.gpu_type] -= static_cast<int>(l.devices.size());
  }
  return ctx;
}

json Manager::pending_reason(const JobEntry& e, const PendingContext& ctx) const {
  auto reason = [](const char* r, std::string detail) {
    return json{{"reason", r}, {"detail", std::move(detail)}};
  };
  if (terminal(e.s.state)) return nullptr;
  if (e.lease) {
    const StoredLease& l = leases_.at(e.lease);
    if (l.status == "active" || l.status == "exited")
      return l.profiling ? reason("Profiling", "profiling run on " + l.node) : json(nullptr);
    return reason("Launching", fmt::format("lease {} on {} waits for the previous run on its "
                                           "devices (or of this job) to stop",
                                           l.id, l.node));
  }
  if (e.s.state == "running") return nullptr;
  const double t = now();
  if (e.not_before > t)
    return reason("NodeLost", fmt::format("its node was lost; relaunched from its checkpoint "
                                          "once the node's runs are fenced, in {:.0f} s",
                                          e.not_before - t));
  if (ctx.leased_jobs.count(e.s.id))
    return reason("Stopping", "its previous run is checkpointing and stopping");
  // GPU types whose ready (then also drained, then also lost) GPUs could
  // hold the gang, on one node or spread.
  const int w = e.s.workers;
  auto pool_of = [](const std::map<std::string, int>& m, const std::string& type) {
    auto it = m.find(type);
    return it == m.end() ? 0 : it->second;
  };
  std::set<std::string> types;
  for (const auto& m : {ready_pool_, ctx.drained_pool, ctx.lost_pool})
    for (const auto& [type, n] : m) types.insert(type);
  bool ready_fit = false, drained_fit = false, lost_fit = false;
  for (const std::string& type : types) {
    const int ready = pool_of(ready_pool_, type), drained = pool_of(ctx.drained_pool, type);
    ready_fit |= ready >= w;
    drained_fit |= ready + drained >= w;
    lost_fit |= ready + drained + pool_of(ctx.lost_pool, type) >= w;
  }
  if (!ready_fit) {
    if (drained_fit)
      return reason("NodeDrained",
                    fmt::format("only with drained nodes are there {} GPUs of one type", w));
    if (lost_fit)
      return reason("NodeLost",
                    fmt::format("only with lost nodes are there {} GPUs of one type", w));
    return reason("Resources", nodes_.empty() ? "no node has registered"
                                              : fmt::format("no GPU type has {} GPUs", w));
  }
  if (executor_ != nullptr && executor_->gangs_spread_evenly()) {
    bool even_fit = false;
    for (const auto& pool : ready_pool_) even_fit |= ready_type_holds(pool.first, w);
    if (!even_fit)
      return reason("Resources", fmt::format("no GPU type's ready nodes hold {} GPUs with the same "
                                             "number on each (Slurm's --gres)",
                                             w));
  }
  if (e.s.state == "profiling")
    return reason("Profiling", "waiting for free devices to measure its job type on");
  // Profiled, and some type has the GPUs: does the job run on one of them?
  const JobTypeProfile* p = catalogue_.find(profile_type(e.s.tenant, e.s.job_type));
  bool runs = false, free_fit = false;
  for (const auto& [type, ready] : ready_pool_) {
    if (ready < w || !(gang_rate(p, type, w) > 0.0)) continue;
    runs = true;
    free_fit |= pool_of(ctx.free_pool, type) >= w;
  }
  if (!runs)
    return reason("Resources", fmt::format("job type {} has no throughput for {} workers on the "
                                           "GPU types that have {} GPUs",
                                           e.s.job_type, w, w));
  // Not yet seen by a scheduling point, with room for it: it waits for the
  // next one. Otherwise the policy's last plan left it out (fair share:
  // its tenant's share went to its other jobs, or to other tenants).
  if (free_fit && e.s.submitted_at > last_point_)
    return reason("Round", "the next scheduling point places it");
  return reason("Priority", "the last scheduling point gave the GPUs to other jobs (fair share)");
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
  ++rebuilds_;
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
  cluster.gangs_on_one_node = executor_ != nullptr && executor_->gangs_on_one_node();
  cluster.gangs_spread_evenly = executor_ != nullptr && executor_->gangs_spread_evenly();
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
    workload.jobs.push_back(spec_of(e));
    members.push_back(i);
  }
  if (cluster.nodes.empty() || workload.jobs.empty()) {
    policy_ = make_round_policy(config_.policy, live_policy_options(config_.policy_options));
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
  policy_ = make_round_policy(config_.policy, live_policy_options(config_.policy_options));
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
    // Every part's devices (a gang over several nodes holds them all).
    std::vector<DeviceRef> devices;
    std::size_t wanted = 0;
    const std::vector<std::int64_t> parts = part_ids(l.gang);
    for (std::int64_t id : parts)
      for (int d : leases_.at(id).devices) {
        ++wanted;
        auto it = device_ref_.find({leases_.at(id).node, d});
        if (it != device_ref_.end()) devices.push_back(it->second);
      }
    if (devices.size() != wanted || static_cast<int>(devices.size()) != j.workers)
      continue;  // its node left the model: the lease is revoked or lost already
    j.state = JobState::kRunning;
    j.devices = devices;
    j.lease_end = l.end;
    j.placement_type = state_.type_of(devices.front());
    j.resources = held_by_parts(parts);
    j.resource_multiplier = sensitivity_multiplier(*model_, j.job_type, devices, j.resources);
    j.rate =
        (parts.size() > 1 ? j.rate_spread[j.placement_type] : j.rate_one_node[j.placement_type]) *
        j.resource_multiplier;
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
  // Slurm: the job joins once it has its Slurm job (tick_slurm admits it
  // then); a rebuild meanwhile would only start a new policy.
  if (!launchable(e)) return;
  if (!model_ || !model_->profiles.index(spec_of(e).job_type) || !schedulable(e)) {
    rebuild_needed_ = true;
    return;
  }
  e.sched = add_job(state_, spec_of(e));
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

std::vector<std::int64_t> Manager::part_ids(std::int64_t gang) const {
  std::vector<std::int64_t> ids;
  // A gang's parts have consecutive ids from the gang id on.
  for (auto it = leases_.lower_bound(gang); it != leases_.end() && it->second.gang == gang; ++it)
    ids.push_back(it->first);
  return ids;
}

std::uint64_t Manager::end_lease(StoredLease& l, std::string_view why) {
  if (l.profiling) rebuild_needed_ = true;  // its devices are reserved in the state
  // The run's record (accounting): a part that never became active was no
  // run; one that did stops now unless it stopped before (an exited part).
  if (l.status == "pending") {
    l.reason = "not_started";
  } else if (l.reason != "not_started") {
    if (l.stopped < 0) l.stopped = std::max(l.start, now());
    if (l.reason.empty()) l.reason = why.empty() ? "ended" : std::string(why);
    auto job = job_index_.find(l.job);
    ended_gpu_seconds_[{job != job_index_.end() ? jobs_[job->second].s.tenant : "",
                        l.gpu_type}] +=
        (l.stopped - l.start) * static_cast<double>(l.devices.size());
  }
  l.status = "ended";
  std::uint64_t ticket = persist(l);
  auto it = job_index_.find(l.job);
  if (it != job_index_.end() && jobs_[it->second].lease == l.gang) jobs_[it->second].lease = 0;
  if (l.rank == 0) rate_watch_.erase(l.gang);
  leases_.erase(l.id);  // l dangles from here
  return ticket;
}

// Asks the agents of every part of the lease's gang to stop their runs (and
// drops launches never sent, and parts whose run already exited).
void Manager::revoke(StoredLease& l, std::vector<std::uint64_t>& tickets) {
  const std::int64_t gang = l.gang;
  auto it = job_index_.find(l.job);
  if (it != job_index_.end() && jobs_[it->second].lease == gang) jobs_[it->second].lease = 0;
  std::vector<std::int64_t> revoked;
  for (std::int64_t id : part_ids(gang)) {
    StoredLease& part = leases_.at(id);
    if (part.status == "pending" || part.status == "exited") {
      tickets.push_back(end_lease(part));
      continue;
    }
    if (part.status == "revoking") continue;
    if (part.profiling) rebuild_needed_ = true;  // its devices are reserved in the state
    part.status = "revoking";
    tickets.push_back(persist(part));
    log::info("revoke", {{"lease", part.id},
                         {"job", part.job},
                         {"node", part.node},
                         {"tenant", it != job_index_.end() ? jobs_[it->second].s.tenant : ""}});
    revoked.push_back(id);
  }
  if (!revoked.empty()) to_executor({}, std::move(revoked));
}

std::vector<std::int64_t> Manager::revoking_leases() const {
  std::vector<std::int64_t> ids;
  for (const auto& [id, l] : leases_)
    if (l.status == "revoking") ids.push_back(id);
  return ids;
}

RunStart Manager::run_start(std::int64_t gang,
                            const std::map<std::int64_t, std::uint64_t>& tickets) const {
  const StoredLease& first = leases_.at(gang);
  RunStart s;
  const JobEntry* job = find_job(first.job);
  if (!job) return s;  // no placement: nothing to start
  const JobEntry& e = *job;
  s.lease = gang;
  s.job = first.job;
  if (auto n = nodes_.find(first.node); n != nodes_.end()) s.gpu_type = n->second.s.gpu_type;
  // Every part is told the type the gang runs at: over nodes of several types,
  // the slowest (docs/design.md §4: a gang runs at its slowest worker's speed, as the
  // simulator charges it). Rank 0's type made a job that paces itself by
  // FAIRGPU_GPU_TYPE (fairgpu-train --speed-map) run a fast+slow gang fast.
  std::size_t slowest = kNone;
  for (std::int64_t id : part_ids(gang)) {
    const StoredLease& p = leases_.at(id);
    Placement place{p.node, p.devices, id, "", 0};
    if (auto n = nodes_.find(p.node); n != nodes_.end()) {
      place.address = n->second.s.address;
      const std::size_t m = n->second.model_index;
      if (model_ && m != kNone && m < model_->cluster.nodes.size() &&
          (slowest == kNone || model_->cluster.nodes[m].type < slowest)) {
        slowest = model_->cluster.nodes[m].type;
        s.gpu_type = model_->cluster.gpu_types[slowest];
      }
    }
    if (auto t = tickets.find(id); t != tickets.end()) place.ticket = t->second;
    place.cpus = p.cpus;
    place.memory_gb = p.memory_gb;
    s.placement.push_back(std::move(place));
  }
  s.spec.job = e.s.id;
  s.spec.tenant = e.s.tenant;
  if (e.command.is_array())
    s.spec.argv = e.command.get<std::vector<std::string>>();
  else
    s.spec.shell_command = e.command.get<std::string>();
  s.spec.env.assign(e.env.begin(), e.env.end());
  s.spec.nodes = static_cast<int>(s.placement.size());
  s.spec.gpus_per_node = static_cast<int>(first.devices.size());
  s.spec.checkpoint_dir = config_.checkpoint_dir + "/" + first.job;
  if (auto slot = tenant_slot_.find(e.s.tenant); slot != tenant_slot_.end())
    s.tenant_slot = slot->second;
  if (auto tenant = tenant_index_.find(e.s.tenant); tenant != tenant_index_.end())
    s.unix_user = config_.tenants[tenant->second].unix_user;
  return s;
}

std::vector<Manager::JobEntry*> Manager::lose_node_parts(const std::string& node,
                                                         std::vector<std::uint64_t>& tickets) {
  std::vector<std::int64_t> on_node;
  for (const auto& [id, l] : leases_)
    if (l.node == node) on_node.push_back(id);
  std::vector<JobEntry*> jobs;
  for (std::int64_t id : on_node) {
    auto it = leases_.find(id);
    if (it == leases_.end()) continue;  // ended with an earlier part of its gang
    StoredLease& l = it->second;
    JobEntry* e = job_index_.count(l.job) ? &jobs_[job_index_.at(l.job)] : nullptr;
    lose_part(l, tickets);  // a part elsewhere stops too
    if (e && std::find(jobs.begin(), jobs.end(), e) == jobs.end()) jobs.push_back(e);
  }
  return jobs;
}

void Manager::lose_part(StoredLease& l, std::vector<std::uint64_t>& tickets) {
  const std::int64_t gang = l.gang;
  tickets.push_back(end_lease(l, "lost"));  // l dangles from here
  const std::vector<std::int64_t> rest = part_ids(gang);
  if (!rest.empty()) revoke(leases_.at(rest.front()), tickets);
}

// Pending leases whose job and devices are free of earlier runs may launch.
void Manager::activate_pending(std::vector<std::uint64_t>& tickets) {
  // What earlier runs still hold: their jobs and their devices. One pass
  // over the leases, then O(devices) per pending lease.
  std::set<std::string> stopping_jobs;
  std::set<std::pair<std::string, int>> held;
  bool any_pending = false;
  for (const auto& [id, l] : leases_) {
    any_pending |= l.status == "pending";
    if (l.status == "pending") continue;
    if (l.status == "revoking") stopping_jobs.insert(l.job);
    for (int d : l.devices) held.insert({l.node, d});
  }
  if (!any_pending) return;
  std::vector<RunStart> starts;
  // A gang's parts activate together, when every one of them may.
  const double t = now();
  for (auto& [id, l] : leases_) {
    if (l.status != "pending" || l.id != l.gang || stopping_jobs.count(l.job)) continue;
    // A job whose earlier run was on a node now lost waits for that node's
    // fence time: its run there may still be alive (issue 30 H8).
    if (const JobEntry* e = find_job(l.job); e && e->not_before > t) continue;
    const std::vector<std::int64_t> parts = part_ids(l.gang);
    bool clear = static_cast<int>(parts.size()) == l.parts;
    for (std::int64_t part : parts) {
      const StoredLease& p = leases_.at(part);
      clear = clear && p.status == "pending";
      for (int d : p.devices) clear = clear && !held.count({p.node, d});
    }
    if (!clear) continue;
    // Each part's start leaves the process once its activation is durable.
    std::map<std::int64_t, std::uint64_t> activated;
    for (std::int64_t part : parts) {
      StoredLease& p = leases_.at(part);
      p.status = "active";
      p.start = now();
      if (auto n = nodes_.find(p.node); n != nodes_.end()) p.gpu_type = n->second.s.gpu_type;
      for (int d : p.devices) held.insert({p.node, d});
      tickets.push_back(persist(p));
      activated[part] = tickets.back();
    }
    starts.push_back(run_start(l.gang, activated));
    log::info("launch", {{"lease", l.gang},
                         {"job", l.job},
                         {"tenant", starts.back().spec.tenant},
                         {"node", l.node},
                         {"devices", l.devices}});
  }
  if (!starts.empty()) to_executor(std::move(starts), {});
}

void Manager::apply_plan(const RoundPlan& plan, std::vector<std::uint64_t>& tickets,
                         bool starts_only) {
  std::map<std::size_t, const Assignment*> by_job;
  for (const Assignment& a : plan.run) by_job[a.job] = &a;
  std::size_t renewed = 0, started = 0, stopped = 0;
  auto same = [](std::vector<DeviceRef> a, std::vector<DeviceRef> b) {
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    return a == b;
  };
  // Stops first: leases that ended and were left out or moved.
  for (std::size_t k : starts_only ? std::vector<std::size_t>{} : state_.running) {
    Job& j = state_.jobs[k];
    if (!state_.lease_ended(j)) continue;
    auto a = by_job.find(k);
    if (a != by_job.end() && same(a->second->devices, j.devices) && same_grant(*a->second, j))
      continue;
    JobEntry& e = jobs_[sched_to_job_[k]];
    settle(e, state_.now);
    log::info(a == by_job.end() ? "lease_preempt" : "lease_move",
              {{"job", e.s.id}, {"tenant", e.s.tenant}, {"lease", e.lease}});
    if (e.lease) revoke(leases_.at(e.lease), tickets);
    state_release(k);
    e.s.state = "queued";
    ++stopped;
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
      ++renewed;
      j.lease_end = a.lease_end;
      for (std::int64_t id : part_ids(e.lease)) {
        StoredLease& l = leases_.at(id);
        l.end = a.lease_end;
        tickets.push_back(persist(l));
      }
      continue;
    }
    // One part lease per node, in the order of the plan's devices; rank 0
    // is the first node (manager.h).
    std::vector<std::pair<std::string, std::vector<int>>> by_node;
    for (DeviceRef d : a.devices) {
      const std::pair<std::string, int>& where = flat_device_[state_.flat(d)];
      auto part = std::find_if(by_node.begin(), by_node.end(),
                               [&where](const auto& p) { return p.first == where.first; });
      if (part == by_node.end()) part = by_node.insert(by_node.end(), {where.first, {}});
      part->second.push_back(where.second);
    }
    const std::int64_t gang = next_lease_;
    take_grant(a, j);
    for (std::size_t r = 0; r < by_node.size(); ++r) {
      StoredLease l;
      l.id = next_lease_++;
      l.gang = gang;
      l.rank = static_cast<int>(r);
      l.parts = static_cast<int>(by_node.size());
      l.job = e.s.id;
      l.node = by_node[r].first;
      l.devices = by_node[r].second;
      l.start = state_.now;
      l.end = a.lease_end;
      l.status = "pending";
      grant_part(j, l);
      leases_[l.id] = l;
      tickets.push_back(persist(l));
    }
    spread_launched_ += by_node.size() > 1;
    e.lease = gang;
    j.state = JobState::kRunning;
    j.devices = a.devices;
    j.lease_end = a.lease_end;
    j.placement_type = state_.type_of(a.devices.front());
    j.rate =
        (by_node.size() > 1 ? j.rate_spread[j.placement_type] : j.rate_one_node[j.placement_type]) *
        j.resource_multiplier;
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
    ++started;
    if (starts_only)  // a mid-round start says so at the end of its line
      log::info("lease_start", {{"job", e.s.id},
                                {"tenant", e.s.tenant},
                                {"lease", gang},
                                {"node", by_node.front().first},
                                {"nodes", by_node.size()},
                                {"workers", a.devices.size()},
                                {"midround", true}});
    else
      log::info("lease_start", {{"job", e.s.id},
                                {"tenant", e.s.tenant},
                                {"lease", gang},
                                {"node", by_node.front().first},
                                {"nodes", by_node.size()},
                                {"workers", a.devices.size()}});
  }
  activate_pending(tickets);
  log::write(started + stopped ? log::Level::kInfo : log::Level::kDebug,
             starts_only ? "midround" : "round",
             {{"round", rounds_ + (starts_only ? 0 : 1)},
              {"started", started},
              {"renewed", renewed},
              {"stopped", stopped},
              {"running", state_.running.size()}});
}

// Profiling leases (manager.h): for each (job type, GPU type) without a
// figure and without a profiling run, the oldest waiting job of that type
// runs there on one node, on devices that are free or whose lease ended.
void Manager::start_profiling(std::vector<std::uint64_t>& tickets) {
  const std::set<std::string>& types = ready_types_;
  // (the tenant's profile entry, gpu type) being profiled: each tenant
  // measures its own (manager_profiles.cc).
  std::set<std::pair<std::string, std::string>> busy;
  std::set<std::string> profiling_jobs;
  for (const auto& [id, l] : leases_) {
    if (!l.profiling) continue;
    profiling_jobs.insert(l.job);
    auto n = nodes_.find(l.node);
    const JobEntry* e = find_job(l.job);
    if (n != nodes_.end() && e)
      busy.insert({e->s.tenant + '\x1f' + e->s.job_type, n->second.s.gpu_type});
  }
  for (JobEntry& e : jobs_) {
    if (e.s.state != "profiling" || profiling_jobs.count(e.s.id)) continue;
    // Its type measured meanwhile on every ready type (by another job's
    // profiling run, its tenant's or a shared figure, or a node of the
    // missing type gone): it waits for the policy now. Only the job whose
    // own run measured it moved before, so the others stayed "profiling"
    // for good (issue 32, defect 1).
    if (fully_profiled(e.s.tenant, e.s.job_type) && e.lease == 0) {
      e.s.state = "queued";
      if (e.sched == kNone) admit(e);
      tickets.push_back(persist(e));
      continue;
    }
    if (e.not_before > now() || !launchable(e)) continue;
    bool stopping = false;
    for (const auto& [id, l] : leases_) stopping |= l.job == e.s.id;
    if (stopping) continue;
    // A profiling run holds GPUs like any other (max_gpus_running); its
    // size is at most the job's gang, which is what is checked.
    const std::int64_t gpu_quota = quotas_of(e.s.tenant).max_gpus_running;
    if (gpu_quota > 0 && gpus_held()[e.s.tenant] + e.s.workers > gpu_quota) continue;
    const JobTypeProfile* p = catalogue_.find(profile_type(e.s.tenant, e.s.job_type));
    const std::string key = e.s.tenant + '\x1f' + e.s.job_type;
    for (const std::string& type : types) {
      if (p && p->rate(type, 1, false) > 0.0) continue;
      if (busy.count({key, type})) continue;
      // A node of this type: the one with the most usable devices.
      const NodeEntry* best = nullptr;
      std::vector<int> best_devices;
      for (const auto& [name, n] : nodes_) {
        if (n.s.state != "ready" || n.s.gpu_type != type) continue;
        std::vector<int> usable;
        for (int d : n.s.devices) {
          // Free, or held by a policy job whose lease ended (preempted below).
          bool ok = true;
          for (const auto& [id, l] : leases_) {
            if (l.node != name || std::find(l.devices.begin(), l.devices.end(), d) == l.devices.end())
              continue;
            const JobEntry* holder = find_job(l.job);
            ok &= !l.profiling && holder && holder->lease == l.gang && holder->sched != kNone &&
                  state_.jobs[holder->sched].state == JobState::kRunning &&
                  state_.lease_ended(state_.jobs[holder->sched]);
          }
          if (ok) usable.push_back(d);
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
      l.gang = l.id;
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
      busy.insert({key, type});
      break;  // one profiling run per job at a time
    }
  }
}

const TenantQuotas& Manager::quotas_of(const std::string& tenant) const {
  static const TenantQuotas kNoQuotas;
  auto it = tenant_index_.find(tenant);
  return it == tenant_index_.end() ? kNoQuotas : config_.tenants[it->second].quotas;
}

std::map<std::string, std::int64_t> Manager::gpus_held() const {
  // A job's leases not yet ended: its current gang, and an older one being
  // revoked (a move or a preemption). The gangs run one after the other (a
  // new lease waits for the job's previous run), so a job holds the larger.
  std::map<std::string, std::map<std::int64_t, std::int64_t>> by_job_gang;
  for (const auto& [id, l] : leases_)
    by_job_gang[l.job][l.gang] += static_cast<std::int64_t>(l.devices.size());
  std::map<std::string, std::int64_t> held;
  for (const auto& [job, gangs] : by_job_gang) {
    const JobEntry* e = find_job(job);
    if (!e) continue;
    std::int64_t most = 0;
    for (const auto& [gang, devices] : gangs) most = std::max(most, devices);
    held[e->s.tenant] += most;
  }
  return held;
}

std::vector<std::size_t> Manager::set_aside_over_gpu_quota() {
  std::vector<std::size_t> aside;
  bool any_quota = false;
  for (const TenantConfig& t : config_.tenants) any_quota |= t.quotas.max_gpus_running > 0;
  if (!any_quota) return aside;
  // In arrival order, each waiting job that fits counts as started: the
  // policy then chooses among jobs that together fit each tenant's quota (a
  // later job set aside when an earlier one is not started waits a round).
  std::map<std::string, std::int64_t> held = gpus_held();
  for (std::size_t k : state_.active) {
    const Job& j = state_.jobs[k];
    if (j.state == JobState::kRunning) continue;
    const JobEntry& e = jobs_[sched_to_job_[k]];
    const std::int64_t quota = quotas_of(e.s.tenant).max_gpus_running;
    if (quota <= 0) continue;
    if (held[e.s.tenant] + j.workers > quota)
      aside.push_back(k);
    else
      held[e.s.tenant] += j.workers;
  }
  if (aside.empty()) return aside;
  // As a job held until its fence time (held_), it is out of the active set;
  // the accounting of the interval before was done with it in.
  for (std::size_t k : aside) {
    std::erase(state_.active, k);
    state_.active_weight -= state_.jobs[k].weight;
    state_.active_workers -= state_.jobs[k].workers;
  }
  state_.changed = true;
  return aside;
}

void Manager::restore_set_aside(const std::vector<std::size_t>& aside) {
  if (aside.empty()) return;
  for (std::size_t k : aside) {
    state_.active.push_back(k);
    state_.active_weight += state_.jobs[k].weight;
    state_.active_workers += state_.jobs[k].workers;
  }
  std::sort(state_.active.begin(), state_.active.end());  // indices follow arrival
  state_.changed = true;
}

void Manager::hold_to_gpu_quotas(RoundPlan& plan) {
  std::map<std::string, std::int64_t> held = gpus_held();
  std::vector<Assignment> kept;
  for (Assignment& a : plan.run) {
    const JobEntry& e = jobs_[sched_to_job_[a.job]];
    const std::int64_t quota = quotas_of(e.s.tenant).max_gpus_running;
    // A running job renewed or moved keeps the GPUs it holds; a reload that
    // lowered the quota stops nothing that runs.
    if (quota > 0 && state_.jobs[a.job].state != JobState::kRunning) {
      std::int64_t job_held = 0;  // a revoked run of the same job still stopping
      for (const auto& [id, l] : leases_)
        if (l.job == e.s.id) job_held += static_cast<std::int64_t>(l.devices.size());
      const std::int64_t after =
          held[e.s.tenant] - job_held + static_cast<std::int64_t>(a.devices.size());
      if (after > quota) {
        log::debug("quota_hold", {{"job", e.s.id},
                                  {"tenant", e.s.tenant},
                                  {"quota", "max_gpus_running"},
                                  {"held", held[e.s.tenant]},
                                  {"limit", quota}});
        continue;
      }
      held[e.s.tenant] = after;
    }
    kept.push_back(std::move(a));
  }
  plan.run = std::move(kept);
}

void Manager::start_midround(std::vector<std::uint64_t>& tickets) {
  const double round_end = next_point_.load();
  if (!model_ || !policy_ || !policy_->starts_midround() || last_point_ < 0 ||
      state_.active.empty() || round_end <= state_.now)
    return;
  const std::vector<DeviceRef> free = placement::unowned_devices(state_);
  if (free.empty()) return;
  RoundPlan plan;
  const std::vector<std::size_t> aside = set_aside_over_gpu_quota();
  plan.run = policy_->midround(state_, free, round_end);
  restore_set_aside(aside);
  validate_plan(plan, state_);
  hold_to_gpu_quotas(plan);
  if (plan.run.empty()) return;
  midround_starts_ += plan.run.size();
  apply_plan(plan, tickets, true);
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
      for (std::size_t k : state_.running) settle(jobs_[sched_to_job_[k]], t);
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
      // Slurm unreachable: the run may not have started; not its failure.
      if (slurm_unreachable_) continue;
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
      const std::vector<std::size_t> aside = set_aside_over_gpu_quota();
      RoundPlan plan;
      try {
        plan = policy_->plan(state_);
      } catch (const std::exception& e) {
        // A policy that fails (a Python policy's exception, docs/python.md)
        // does not stop scheduling: what the last plan runs keeps running,
        // each ended lease renewed on its devices to the next point, where
        // the policy is asked again. Nothing new starts meanwhile.
        ++failed_rounds_;
        log::write(log::Level::kError, "policy_failed", {{"at", t}, {"error", e.what()}});
        plan = RoundPlan{};
        for (std::size_t k : state_.running) {
          const Job& j = state_.jobs[k];
          if (!state_.lease_ended(j)) continue;
          Assignment& a = plan.run.emplace_back();
          a.job = k;
          a.devices = j.devices;
          a.lease_end = t + interval();
          a.resources = j.resources;  // the same grant: a renewal, not a restart
          a.rate_multiplier = j.resource_multiplier;
        }
      }
      restore_set_aside(aside);
      validate_plan(plan, state_);
      state_.changed = false;
      hold_to_gpu_quotas(plan);
      apply_plan(plan, tickets);
    } else {
      activate_pending(tickets);
    }
    ++rounds_;
    record_shares(t);
    last_point_ = t;
    next_point_ = t + interval();  // run() puts it on its grid
    tickets.push_back(store_->put(StoredMeta{"rounds", std::to_string(rounds_)}));
    // Decisions are durable before any agent hears of them: heartbeats wait
    // on mu_, which is held until the commit.
    if (!tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
    last_round_compute_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    round_compute_.observe(last_round_compute_);
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
  policy_->plan(state_);  // not carried out
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Manager::tick() {
  if (slurm_) tick_slurm();
  std::vector<std::uint64_t> tickets;
  std::unique_lock lock(mu_);
  const double t = now();
  if (agents_)
    for (const RunEvent& event : agents_->poll(t))
      if (event.kind == RunEvent::Kind::kNodeLost)
        node_lost(event.node, event.relaunch_at, tickets);
  // Profiling runs need not wait for the next scheduling point: they start on
  // free devices as soon as a job of an unknown type or a new GPU type shows up.
  if (rebuild_needed_) rebuild();
  if (model_) {
    account_interval(state_, t - state_.now);
    state_.now = std::max(state_.now, t);
  }
  start_profiling(tickets);
  start_midround(tickets);
  activate_pending(tickets);
  lock.unlock();
  // Starts wait for their ticket (RunStart), so answering agents before this
  // commit is safe.
  if (!tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
}

void Manager::run() {
  // Checkpoint bytes are measured on a thread of their own (manager.h).
  std::thread meter([this] {
    std::unique_lock lock(run_mu_);
    while (!stopping_) {
      lock.unlock();
      try {
        measure_checkpoints();
      } catch (const std::exception& e) {
        log::warn("checkpoint_measure_failed", {{"error", e.what()}});
      }
      lock.lock();
      run_cv_.wait_for(lock, std::chrono::duration<double>(kCheckpointMeasureS),
                       [&] { return stopping_; });
    }
  });
  // However run() ends, the meter is stopped and joined (run_mu_ is not held
  // here: `lock` below is released first).
  struct JoinMeter {
    Manager& m;
    std::thread& t;
    ~JoinMeter() {
      m.stop();
      t.join();
    }
  } join_meter{*this, meter};
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
        log::write(log::Level::kError, "round_failed", {{"at", next_point}, {"error", e.what()}});
      }
      lock.lock();
      // Keep the grid; skip points missed while the decision ran long.
      while (next_point <= now()) next_point += interval();  // a reload may change it
      next_point_ = next_point;
    }
    if (t >= next_tick) {
      lock.unlock();
      tick();
      lock.lock();
      next_tick = now() + (slurm_ ? config_.slurm.poll_s : config_.heartbeat_s);
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

}  // namespace fairgpu::live
