// The live manager's API for tenants and the admin (docs/live-protocol.md):
// submit, list, show and cancel jobs, tenants, cluster, drain, profiles, and
// the Prometheus metrics.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "fairgpu/input_error.h"
#include "fairgpu/provenance.h"
#include "live/log.h"
#include "live/manager.h"
#include "live/random_hex.h"
#include "live/request.h"
#include "live/usage.h"

namespace fairgpu::live {

using nlohmann::json;
using namespace request;

// ---------------------------------------------------------------- tenants' API

json Manager::submit(const Caller& c, const json& body) {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  if (!body.is_object()) bad("(body)", "expected a JSON object");
  static const std::set<std::string> allowed = {"name",       "job_type", "workers", "command",
                                                "iterations", "env",      "weight",  "tenant"};
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
    if (!weight_in_range(s.weight)) bad("weight", weight_range_text());
  }
  auto cmd = body.find("command");
  if (cmd == body.end()) bad("command", "missing required field");
  if (cmd->is_string()) {
    if (cmd->get<std::string>().empty()) bad("command", "must not be empty");
    no_nul(cmd->get<std::string>(), "command");
  } else if (cmd->is_array()) {
    if (cmd->empty()) bad("command", "must not be empty");
    for (std::size_t i = 0; i < cmd->size(); ++i) {
      if (!(*cmd)[i].is_string()) bad(fmt::format("command[{}]", i), "expected a string");
      no_nul((*cmd)[i].get<std::string>(), fmt::format("command[{}]", i));
    }
    if ((*cmd)[0].get<std::string>().empty()) bad("command[0]", "must not be empty");
  } else {
    bad("command", "expected an argv array or a shell string");
  }
  e.command = *cmd;
  if (auto env = body.find("env"); env != body.end()) {
    if (!env->is_object()) bad("env", "expected an object of strings");
    for (const auto& [k, v] : env->items()) {
      if (!v.is_string()) bad("env." + k, "expected a string");
      no_nul(k, "env");
      if (k.empty() || k.find('=') != std::string::npos) bad("env." + k, "bad variable name");
      no_nul(v.get<std::string>(), "env." + k);
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
  s.command_json = e.command.dump();
  s.env_json = json(e.env).dump();

  std::uint64_t ticket;
  json answer;
  {
    std::lock_guard lock(mu_);
    if (!tenant_index_.count(s.tenant)) bad("tenant", "unknown tenant '" + s.tenant + "'");
    // A gang no GPU type's pool can hold is refused: admitted, it can always
    // run on one type (over as many nodes as it needs); the placer may still
    // run it over adjacent types meanwhile (docs/live-protocol.md, "Where a
    // gang runs"). Every registered
    // node counts, drained or lost ones too: they may come back. With no
    // node yet, nothing is known.
    if (const int largest = largest_gang(); largest > 0 && s.workers > largest)
      bad("workers", fmt::format("{} exceeds the largest gang this cluster can run, {} (the most "
                                 "GPUs of one type)",
                                 s.workers, largest));
    // Where the executor spreads a gang only evenly (Slurm's --gres counts
    // GPUs per node), a gang no type's nodes can hold so would wait for ever.
    if (executor_ != nullptr && executor_->gangs_spread_evenly() && !nodes_.empty() &&
        !registered_type_holds_evenly(s.workers))
      bad("workers", fmt::format("{} GPUs never run here: a gang over several nodes takes the same "
                                 "number of GPUs on each (Slurm's --gres), and no GPU type has "
                                 "k nodes of {}/k GPUs for a k that divides {}",
                                 s.workers, s.workers, s.workers));
    // The tenant's quotas, checked before anything is stored: a refused
    // submission leaves no trace but its count in /metrics.
    const TenantQuotas& quotas = quotas_of(s.tenant);
    if (quotas.max_gpus_per_job > 0 && s.workers > quotas.max_gpus_per_job)
      refuse_over_quota(s.tenant, "max_gpus_per_job",
                        fmt::format("a job of {} GPUs is over the quota of {}", s.workers,
                                    quotas.max_gpus_per_job));
    if (quotas.max_checkpoint_bytes > 0) {
      auto measured = checkpoint_bytes_.find(s.tenant);
      if (measured != checkpoint_bytes_.end() && measured->second >= quotas.max_checkpoint_bytes)
        refuse_over_quota(
            s.tenant, "max_checkpoint_bytes",
            fmt::format("its checkpoint folders hold {} bytes (measured {:.0f} s ago), the quota "
                        "is {}",
                        measured->second, now() - checkpoints_measured_at_,
                        quotas.max_checkpoint_bytes));
    }
    if (quotas.max_jobs_queued > 0 || quotas.max_jobs_active > 0) {
      std::int64_t waiting = 0, active = 0;
      for (const JobEntry& other : jobs_) {
        if (other.s.tenant != s.tenant || terminal(other.s.state)) continue;
        ++active;
        waiting += other.s.state != "running";
      }
      if (quotas.max_jobs_queued > 0 && waiting >= quotas.max_jobs_queued)
        refuse_over_quota(s.tenant, "max_jobs_queued",
                          fmt::format("{} jobs waiting, the quota is {}", waiting,
                                      quotas.max_jobs_queued));
      if (quotas.max_jobs_active > 0 && active >= quotas.max_jobs_active)
        refuse_over_quota(s.tenant, "max_jobs_active",
                          fmt::format("{} jobs queued or running, the quota is {}", active,
                                      quotas.max_jobs_active));
    }
    s.seq = static_cast<std::int64_t>(jobs_.size()) + 1;
    s.id = fmt::format("j-{:06d}", s.seq);
    if (s.name.empty()) s.name = s.id;
    // Arrival order is submission order (the state keeps jobs by arrival).
    s.submitted_at = last_submitted_ = std::max(last_submitted_, now());
    s.state = waiting_state(s.tenant, s.job_type);
    job_index_[s.id] = jobs_.size();
    jobs_.push_back(std::move(e));
    JobEntry& added = jobs_.back();
    added.stored = false;  // the policy sees it once durable, below
    ++submissions_;
    ticket = persist(added);
    answer = job_json(added);
    log::info("submit", {{"job", added.s.id},
                         {"tenant", added.s.tenant},
                         {"name", added.s.name},
                         {"job_type", added.s.job_type},
                         {"workers", added.s.workers},
                         {"state", added.s.state}});
  }
  try {
    store_->wait(ticket);  // durable before acknowledged
  } catch (const std::exception& error) {
    // Not committed (a full disk: issue 30, H9): the caller hears 500, so
    // the job must never run. The store tries its row again when space
    // returns; it is ended here first (it was never launchable, so no lease
    // names it), and that row follows it.
    const std::string id = answer["id"].get<std::string>();
    not_stored(id, error.what());
    throw ApiError(500, fmt::format("{} not stored ({}): it will not run; submit it again once "
                                    "the server's disk has room",
                                    id, error.what()));
  }
  // Durable: the job joins the scheduling (unless cancelled meanwhile).
  std::lock_guard lock(mu_);
  JobEntry& added = job_by_id(answer["id"].get<std::string>());
  added.stored = true;
  if (!terminal(added.s.state)) {
    if (slurm_) to_admit_.push_back(added.s.id);  // sbatch --hold at the next tick
    if (added.s.state == "queued" && added.sched == kNone) admit(added);
  }
  return answer;
}

void Manager::not_stored(const std::string& id, const std::string& why) {
  std::lock_guard lock(mu_);
  JobEntry& e = job_by_id(id);
  if (terminal(e.s.state)) return;
  std::vector<std::uint64_t> tickets;
  state_finish(e);
  if (e.lease) revoke(leases_.at(e.lease), tickets);
  if (slurm_)
    out_cancels_.push_back(e.s.id);
  else
    executor_->cancel(e.s.id);
  e.s.state = "failed";
  e.s.finished_at = now();
  e.s.log_tail = "not stored when submitted (answered 500, never run): " + why;
  persist(e);
  log::warn("submit_not_stored", {{"job", e.s.id}, {"tenant", e.s.tenant}, {"error", why}});
}

void Manager::refuse_over_quota(const std::string& tenant, const std::string& quota,
                                const std::string& detail) {
  ++quota_refusals_[{tenant, quota}];
  log::info("quota_refused", {{"tenant", tenant}, {"quota", quota}, {"detail", detail}});
  throw ApiError(400, fmt::format("tenant {}: over its quota {}: {}", tenant, quota, detail));
}

void Manager::measure_checkpoints() {
  std::lock_guard one_at_a_time(measure_mu_);
  std::vector<std::pair<std::string, std::string>> jobs;  // (job, tenant), read under mu_
  std::set<std::string> measured_tenants;
  std::string root;
  {
    std::lock_guard lock(mu_);
    root = config_.checkpoint_dir;
    for (const TenantConfig& t : config_.tenants)
      if (t.quotas.max_checkpoint_bytes > 0) measured_tenants.insert(t.name);
    for (const JobEntry& e : jobs_)
      if (measured_tenants.count(e.s.tenant)) jobs.emplace_back(e.s.id, e.s.tenant);
  }
  // The walk without mu_: the API and the rounds go on meanwhile.
  namespace fs = std::filesystem;
  std::map<std::string, std::int64_t> bytes;
  for (const std::string& t : measured_tenants) bytes[t] = 0;
  for (const auto& [job, tenant] : jobs) {
    std::error_code ec;
    const fs::path folder = fs::path(root) / job;
    if (!fs::is_directory(fs::symlink_status(folder, ec))) continue;
    for (fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied,
                                             ec),
         end;
         !ec && it != end; it.increment(ec)) {
      std::error_code size_ec;
      if (it->is_regular_file(size_ec) && !it->is_symlink(size_ec)) {
        const auto size = it->file_size(size_ec);
        if (!size_ec) bytes[tenant] += static_cast<std::int64_t>(size);
      }
    }
  }
  std::lock_guard lock(mu_);
  checkpoint_bytes_ = std::move(bytes);
  checkpoints_measured_at_ = now();
}

json Manager::jobs(const Caller& c, const std::string& state_filter) const {
  JobsQuery q;
  q.state = state_filter;
  q.all = true;  // as before retention: every job
  return jobs(c, q);
}

json Manager::jobs(const Caller& c, const JobsQuery& q) const {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  static const std::set<std::string> kStates = {"profiling", "queued",    "running",
                                                "finished",  "failed",    "cancelled"};
  std::set<std::string> states;
  for (std::size_t pos = 0; !q.state.empty() && pos <= q.state.size();) {
    std::size_t comma = q.state.find(',', pos);
    if (comma == std::string::npos) comma = q.state.size();
    const std::string one = q.state.substr(pos, comma - pos);
    if (!kStates.count(one))
      bad("state", fmt::format("unknown state '{}' (valid: profiling, queued, running, finished, "
                               "failed, cancelled; several comma-separated)",
                               one));
    states.insert(one);
    pos = comma + 1;
  }
  const double t = now();
  double since = -1e300, until = 1e300;
  try {
    if (!q.since.empty()) since = parse_time(q.since, "since");
    if (!q.until.empty()) until = parse_time(q.until, "until");
  } catch (const InputError& e) {
    throw ApiError(400, fmt::format("{}: {}", e.source(), e.problem()));
  }
  // Retention: a job that ended job_retention_s ago leaves the default
  // listing; `all` or a time window lists it (it stays in the store).
  const bool retained_only = !q.all && q.since.empty() && q.until.empty();
  std::lock_guard lock(mu_);
  const double cutoff = t - config_.job_retention_s;
  json list = json::array();
  const PendingContext ctx = pending_context();  // once, not per job
  for (const JobEntry& e : jobs_) {
    if (c.role == Caller::Role::kTenant && e.s.tenant != c.tenant) continue;
    if (!states.empty() && !states.count(e.s.state)) continue;
    const bool ended = terminal(e.s.state) && e.s.finished_at >= 0;
    if (retained_only && ended && e.s.finished_at < cutoff) continue;
    // In the window: submitted before its end and not ended before its start.
    if (e.s.submitted_at >= until || (ended && e.s.finished_at < since)) continue;
    list.push_back(job_json(e, ctx));
  }
  return {{"jobs", list}};
}

json Manager::job(const Caller& c, const std::string& id) const {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  json j;
  {
    std::lock_guard lock(mu_);
    const JobEntry* e = find_job(id);
    if (!e) throw ApiError(404, "job " + id + ": no such job");
    check_owner(c, *e);
    j = job_json(*e);
  }
  j["runs"] = job_runs(id);  // the store's, outside mu_
  return j;
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
    if (slurm_)
      out_cancels_.push_back(e.s.id);  // sent at the next tick
    else
      executor_->cancel(e.s.id);
    e.s.state = "cancelled";
    e.s.finished_at = now();
    tickets.push_back(persist(e));
    log::info("cancel", {{"job", e.s.id}, {"tenant", e.s.tenant}});
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

json Manager::set_tenant(const Caller& c, const json& body) {
  require(c, {Caller::Role::kAdmin});
  if (!body.is_object()) bad("(body)", "expected a JSON object");
  for (const auto& [key, value] : body.items())
    if (key != "name" && key != "weight" && key != "token") bad(key, "unknown field");
  const std::string name = need_name(body, "name");
  std::vector<std::uint64_t> tickets;
  json answer;
  {
    std::lock_guard lock(mu_);
    auto it = tenant_index_.find(name);
    TenantConfig t =
        it == tenant_index_.end() ? TenantConfig{name, 1.0, "", "", config_.quotas}
                                  : config_.tenants[it->second];
    if (body.contains("weight")) {
      t.weight = need_number(body, "weight");
      if (!weight_in_range(t.weight)) bad("weight", weight_range_text());
    }
    if (body.contains("token") || it == tenant_index_.end()) {
      const std::string token = need_string(body, "token");
      if (token.size() < 8) bad("token", "must be at least 8 characters");
      bool taken = token == config_.admin_token;
      for (const TenantConfig& other : config_.tenants)
        taken |= other.name != name && other.token == token;
      for (const auto& [node, node_token] : node_tokens_) taken |= node_token == token;
      if (taken) bad("token", "is another tenant's or a reserved token");
      t.token = token;
    }
    if (it == tenant_index_.end()) {
      tenant_index_[name] = config_.tenants.size();
      config_.tenants.push_back(t);
    } else {
      config_.tenants[it->second] = t;
    }
    // A tenant the config names stays the config's: this change lasts until
    // the next start or reload reads the file again (manager.h).
    if (!config_tenants_.count(name)) api_tenants_.insert(name);
    rebuild_needed_ = true;  // the policy's tenants and weights
    slot_of(name, &tickets);
    tickets.push_back(store_->put(tenant_record(t)));
    answer = {{"name", t.name}, {"weight", t.weight}};
  }
  store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  return answer;
}

json Manager::cluster(const Caller& c) const {
  if (c.role == Caller::Role::kNone) throw ApiError(401, "missing or unknown bearer token");
  std::lock_guard lock(mu_);
  const double t = now();
  // A tenant sees its own leases only, and no epochs: another tenant's job
  // ids and lease ids, and the node epochs, are for the admin and agents.
  const bool tenant = c.role == Caller::Role::kTenant;
  json nodes = json::array();
  for (const auto& [name, n] : nodes_) {
    json holders = json::array();
    int busy = 0;
    for (const auto& [id, l] : leases_) {
      if (l.node != name) continue;
      const JobEntry* e = find_job(l.job);
      if (l.status == "active" || l.status == "revoking")
        busy += static_cast<int>(l.devices.size());
      if (tenant && (!e || e->s.tenant != c.tenant)) continue;
      for (int d : l.devices)
        holders.push_back({{"device", d},
                           {"job", l.job},
                           {"tenant", e ? e->s.tenant : ""},
                           {"lease", l.id},
                           {"status", l.status},
                           {"profiling", l.profiling},
                           // Past the end (a renewal on its way, a run
                           // stopping): 0, not a negative time.
                           {"lease_end_in_s", std::max(0.0, l.end - t)}});
    }
    json node = {
        {"name", name},           {"gpu_type", n.s.gpu_type},
        {"devices", n.s.devices}, {"devices_busy", busy},
        {"cpus", n.s.cpus},       {"memory_gb", n.s.memory_gb},
        {"state", n.s.state},     {"last_heartbeat_s_ago", std::max(0.0, t - n.last_heard)},
        {"holders", holders}};
    if (!tenant) node["epoch"] = n.s.epoch;
    if (auto why = drain_reason_.find(name); why != drain_reason_.end())
      node["reason"] = why->second;
    nodes.push_back(std::move(node));
  }
  return {
      {"round", rounds_}, {"policy", config_.policy}, {"round_s", interval()}, {"nodes", nodes}};
}

void Manager::evict_node(const std::string& node, Tickets& tickets) {
  std::vector<std::int64_t> on_node;
  for (const auto& [id, l] : leases_)
    if (l.node == node) on_node.push_back(id);
  for (std::int64_t id : on_node) {
    auto l = leases_.find(id);
    if (l == leases_.end()) continue;  // ended with an earlier part of its gang
    StoredLease& lease = l->second;
    JobEntry* e = job_index_.count(lease.job) ? &jobs_[job_index_.at(lease.job)] : nullptr;
    revoke(lease, tickets);  // the whole gang
    if (e && e->s.state == "running") {
      e->s.state = waiting_state(e->s.tenant, e->s.job_type);
      tickets.push_back(persist(*e));
    }
  }
}

json Manager::set_drained(const Caller& c, const std::string& node, bool drained,
                          const std::string& reason) {
  require(c, {Caller::Role::kAdmin});
  std::vector<std::uint64_t> tickets;
  json answer;
  {
    std::lock_guard lock(mu_);
    auto it = nodes_.find(node);
    if (it == nodes_.end()) throw ApiError(404, "node " + node + ": no such node");
    NodeEntry& n = it->second;
    set_node_drained(n, drained, reason, tickets);
    answer = {{"name", node}, {"state", n.s.state}};
    if (drained && !reason.empty()) answer["reason"] = reason;
  }
  store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  return answer;
}

void Manager::set_node_drained(NodeEntry& n, bool drained, const std::string& reason,
                               Tickets& tickets) {
  const std::string& node = n.s.name;
  if (drained && n.s.state == "ready") {
    n.s.state = "drained";
    refresh_ready_types();
    evict_node(node, tickets);  // drain evicts: every run on the node checkpoints and stops now
  } else if (!drained && n.s.state == "drained") {
    n.s.state = "ready";
  }
  n.faults = 0;  // counted afresh from here
  // The reason stays while the node is drained ("" after an undrain).
  const std::string why = drained ? reason : "";
  if (why.empty())
    drain_reason_.erase(node);
  else
    drain_reason_[node] = why;
  tickets.push_back(store_->put(StoredMeta{"drain_reason:" + node, why}));
  log::info(drained ? "drain" : "undrain", {{"node", node}, {"reason", why}});
  if (slurm_) out_drains_[node] = drained;  // sent to Slurm by the next tick
  refresh_ready_types();  // undrained
  tickets.push_back(persist(n));
  rebuild_needed_ = true;
}

json Manager::issue_node_token(const Caller& c, const std::string& node) {
  require(c, {Caller::Role::kAdmin});
  if (auto problem = name_problem(node); !problem.empty())
    bad("node", "'" + node + "': " + problem);
  const std::string token = "fgn_" + random_hex(24);  // 192 random bits from the kernel
  std::uint64_t ticket;
  {
    std::lock_guard lock(mu_);
    node_tokens_[node] = token;
    ticket = store_->put(StoredMeta{"node_token:" + node, token});
  }
  store_->wait(ticket);
  return {{"node", node}, {"token", token}};
}

// ---------------------------------------------------------------- metrics

// A Prometheus label value: backslash, double quote and newline escaped
// (names are restricted too, but stored ones may predate that).
namespace {
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
}  // namespace

bool Manager::metrics_allowed(std::string_view header) const {
  constexpr std::string_view kBearer = "Bearer ";
  std::lock_guard lock(mu_);  // a reload may change the tokens
  if (config_.metrics_open) return true;
  if (header.substr(0, kBearer.size()) != kBearer) return false;
  const std::string_view token = header.substr(kBearer.size());
  return !token.empty() &&
         (same_secret(token, config_.admin_token) || same_secret(token, config_.metrics_token));
}

std::string Manager::metrics() const {
  std::lock_guard lock(mu_);
  std::string out;
  const double t = now();
  // Every family opens with its HELP and TYPE lines, then its samples.
  auto family = [&](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  auto line = [&](const std::string& name, const std::string& labels, double v) {
    out += labels.empty() ? fmt::format("{} {}\n", name, v)
                          : fmt::format("{}{{{}}} {}\n", name, labels, v);
  };
  // Cumulative buckets, +Inf, _sum and _count of `values`.
  auto histogram = [&](const char* name, const char* help, const std::vector<double>& values) {
    static constexpr double kBuckets[] = {1, 5, 15, 60, 300, 900, 3600, 14400, 86400};
    family(name, "histogram", help);
    double sum = 0.0;
    for (double v : values) sum += v;
    for (double le : kBuckets)
      line(fmt::format("{}_bucket", name), fmt::format("le=\"{}\"", le),
           static_cast<double>(
               std::count_if(values.begin(), values.end(), [le](double v) { return v <= le; })));
    line(fmt::format("{}_bucket", name), "le=\"+Inf\"", static_cast<double>(values.size()));
    line(fmt::format("{}_sum", name), "", sum);
    line(fmt::format("{}_count", name), "", static_cast<double>(values.size()));
  };

  family("fairgpu_build_info", "gauge", "Always 1; the version of this fairgpu serve.");
  line("fairgpu_build_info", fmt::format("version=\"{}\"", label(fairgpu_version())), 1);

  family("fairgpu_jobs", "gauge", "Jobs by state.");
  std::map<std::string, int> by_state;
  for (const char* st : {"profiling", "queued", "running", "finished", "failed", "cancelled"})
    by_state[st] = 0;
  for (const JobEntry& e : jobs_) ++by_state[e.s.state];
  for (const auto& [st, n] : by_state) line("fairgpu_jobs", fmt::format("state=\"{}\"", st), n);

  family("fairgpu_quota_refusals_total", "counter",
         "Submissions refused because they were over one of the tenant's quotas.");
  for (const auto& [key, n] : quota_refusals_)
    line("fairgpu_quota_refusals_total",
         fmt::format("tenant=\"{}\",quota=\"{}\"", label(key.first), key.second),
         static_cast<double>(n));

  // Counted as runs accrue (a running run up to now), from the store's
  // runs at start: it carries on across a restart (usage.h).
  family("fairgpu_tenant_gpu_seconds_total", "counter",
         "GPU-seconds the tenant's runs have held, by GPU type.");
  for (const auto& [key, seconds] : gpu_seconds_total(t))
    line("fairgpu_tenant_gpu_seconds_total",
         fmt::format("tenant=\"{}\",gpu_type=\"{}\"", label(key.first), label(key.second)),
         seconds);

  family("fairgpu_tenant_checkpoint_bytes", "gauge",
         "Bytes of the tenant's checkpoint folders as last measured (tenants with "
         "max_checkpoint_bytes).");
  for (const auto& [tenant, n] : checkpoint_bytes_)
    line("fairgpu_tenant_checkpoint_bytes", fmt::format("tenant=\"{}\"", label(tenant)),
         static_cast<double>(n));

  // Queue wait: submission to first start; duration: submission to the end
  // (finished, failed or cancelled).
  std::vector<double> waits, durations;
  for (const JobEntry& e : jobs_) {
    if (e.s.started_at >= 0) waits.push_back(std::max(0.0, e.s.started_at - e.s.submitted_at));
    if (terminal(e.s.state) && e.s.finished_at >= 0)
      durations.push_back(std::max(0.0, e.s.finished_at - e.s.submitted_at));
  }
  histogram("fairgpu_job_queue_wait_seconds",
            "Seconds from a job's submission to its first start, over started jobs.", waits);
  histogram("fairgpu_job_duration_seconds",
            "Seconds from a job's submission to its end, over finished, failed and cancelled jobs.",
            durations);

  std::map<std::string, int> gpus, busy;
  for (const auto& [name, n] : nodes_)
    if (n.s.state == "ready") gpus[n.s.gpu_type] += static_cast<int>(n.s.devices.size());
  for (const auto& [id, l] : leases_)
    if (l.status == "active" || l.status == "revoking")
      if (auto n = nodes_.find(l.node); n != nodes_.end())
        busy[n->second.s.gpu_type] += static_cast<int>(l.devices.size());
  family("fairgpu_gpus", "gauge", "GPUs of ready nodes by type.");
  for (const auto& [type, n] : gpus)
    line("fairgpu_gpus", fmt::format("gpu_type=\"{}\"", label(type)), n);
  family("fairgpu_gpus_busy", "gauge", "GPUs held by a run by type.");
  for (const auto& [type, n] : gpus)
    line("fairgpu_gpus_busy", fmt::format("gpu_type=\"{}\"", label(type)),
         busy.count(type) ? busy.at(type) : 0);

  // Per node: 1 for its current state, its devices and how long ago it was
  // last heard from.
  family("fairgpu_node_state", "gauge", "1 for each node's current state (ready, drained, lost).");
  for (const auto& [name, n] : nodes_)
    for (const char* st : {"ready", "drained", "lost"})
      line("fairgpu_node_state",
           fmt::format("node=\"{}\",gpu_type=\"{}\",state=\"{}\"", label(name), label(n.s.gpu_type),
                       st),
           n.s.state == st ? 1 : 0);
  family("fairgpu_node_devices", "gauge", "GPUs a node registered.");
  for (const auto& [name, n] : nodes_)
    line("fairgpu_node_devices", fmt::format("node=\"{}\"", label(name)),
         static_cast<double>(n.s.devices.size()));
  // A time, not an age (Prometheus convention): alert on
  // time() - fairgpu_node_last_heartbeat_timestamp_seconds.
  family("fairgpu_node_last_heartbeat_timestamp_seconds", "gauge",
         "When a node's agent was last heard from (registration or heartbeat), in seconds "
         "since the epoch.");
  for (const auto& [name, n] : nodes_)
    line("fairgpu_node_last_heartbeat_timestamp_seconds", fmt::format("node=\"{}\"", label(name)),
         n.last_heard);

  int total = 0;
  for (const auto& [type, n] : gpus) total += n;
  family("fairgpu_tenant_normalised_throughput", "gauge",
         "Expected progress of a tenant's running jobs in GPU-equivalents of the slowest type "
         "(OEF §6.1.4).");
  std::string share;
  for (const TenantConfig& tc : config_.tenants) {
    double throughput = 0.0;
    int held = 0;
    for (const JobEntry& e : jobs_) {
      if (e.s.tenant != tc.name || !e.lease) continue;
      held += e.s.workers;
      if (e.sched != kNone && model_) {
        const Job& j = state_.jobs[e.sched];
        if (j.state == JobState::kRunning && j.ref_rate > 0) throughput += j.normalised_rate();
      }
    }
    line("fairgpu_tenant_normalised_throughput", fmt::format("tenant=\"{}\"", label(tc.name)),
         throughput);
    share += fmt::format("fairgpu_tenant_gpu_share_ratio{{tenant=\"{}\"}} {}\n", label(tc.name),
                         total ? double(held) / total : 0.0);
  }
  family("fairgpu_tenant_gpu_share_ratio", "gauge",
         "Fraction (0 to 1) of the ready GPUs a tenant's leases hold.");
  out += share;
  // Each decision's time, not the last one's: a histogram (its _sum is the
  // seconds spent deciding, its _count the decisions).
  out += round_compute_.exposition("fairgpu_round_compute_seconds",
                                   "Seconds each scheduling decision took.");
  family("fairgpu_last_scheduling_point_timestamp_seconds", "gauge",
         "When the last scheduling point ran, in seconds since the epoch (0: none yet).");
  line("fairgpu_last_scheduling_point_timestamp_seconds", "", std::max(0.0, last_point_));
  const std::pair<const char*, const char*> counters_help[] = {
      {"fairgpu_rounds_total", "Scheduling points run."},
      {"fairgpu_submissions_total", "Jobs submitted."},
      {"fairgpu_preemptions_total", "Leases the policy left out (jobs stopped to wait)."},
      {"fairgpu_failed_rounds_total", "Scheduling points that failed (and were retried)."},
      {"fairgpu_spread_launched_total", "Gangs launched over more than one node."},
      {"fairgpu_midround_starts_total",
       "Jobs started between scheduling points on GPUs that freed up (work-conserving rounds)."},
      {"fairgpu_regime_changes_total", "Batch-size regime changes jobs reported."},
      {"fairgpu_store_transactions_total", "Transactions committed to the store."},
      {"fairgpu_policy_rebuilds_total",
       "Times the model, state and policy were made anew (nodes came or went, a profile "
       "arrived); the new policy starts without what the old one kept between rounds."}};
  const double counter_values[] = {
      static_cast<double>(rounds_),          static_cast<double>(submissions_),
      static_cast<double>(preemptions_),     static_cast<double>(failed_rounds_.load()),
      static_cast<double>(spread_launched_), static_cast<double>(midround_starts_),
      static_cast<double>(regime_changes_),  static_cast<double>(store_->transactions()),
      static_cast<double>(rebuilds_)};
  for (std::size_t i = 0; i < std::size(counters_help); ++i) {
    family(counters_help[i].first, "counter", counters_help[i].second);
    line(counters_help[i].first, "", counter_values[i]);
  }
  out += profile_metrics();  // manager_profiles.cc
  if (slurm_) {
    family("fairgpu_slurm_exchanges_total", "counter",
           "Exchanges with Slurm (polls and applied rounds).");
    line("fairgpu_slurm_exchanges_total", "", static_cast<double>(slurm_polls_));
    family("fairgpu_slurm_errors_total", "counter",
           "Exchanges with Slurm that failed (retried at the next tick).");
    line("fairgpu_slurm_errors_total", "", static_cast<double>(slurm_errors_));
    out += slurm_exchange_.exposition("fairgpu_slurm_exchange_seconds",
                                      "Seconds each exchange with Slurm took.");
    family("fairgpu_slurm_jobs", "gauge", "Slurm jobs fairgpu holds for its jobs.");
    line("fairgpu_slurm_jobs", "", static_cast<double>(slurm_ids_.size()));
  }
  return out;
}

}  // namespace fairgpu::live
