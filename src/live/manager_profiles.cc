// Measured throughput profiles in the live manager (issue 30, M2; manager.h
// "Profiling"): a profiling run's measurement is kept per (job type, GPU
// type, tenant), bounded when it is recorded, cross-checked against the
// progress of the runs it schedules, and reset by the admin.
//
// Why per tenant: the rate is read from the job's own progress file, which
// its tenant writes. Were measurements global, one tenant's forged rate
// would set everyone's rates for that job type (a low one halves another
// tenant's throughput under a throughput-aware policy). So the figure the
// policy uses for a job of tenant U on GPU type G is, first found:
//   1. the profiles file's (the operator's; never measured over),
//   2. U's own measurement,
//   3. the shared figure: the median of the one-worker rates of the tenants
//      that measured it, when at least 2 tenants' rates lie within 25% of the
//      median of all of them (then the median of those that do),
//   4. an unattributed measurement (stored before profiles were kept per
//      tenant; it stays in use, as before, until the admin resets it),
//   5. none: U's job is profiled on G (one run per tenant, job type and type).
// A tenant's measurement thus changes only that tenant's rates until another
// tenant's agrees with it; a forged rate hurts the forger alone.
//
// In the catalogue the policy reads, a tenant with own measurements of a job
// type has its own entry, "<job type>\x1f<tenant>" (job types cannot contain
// control characters), copied from the shared one with the tenant's figures
// over it; its jobs are that job type to the policy.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "live/log.h"
#include "live/manager.h"
#include "live/request.h"

namespace fairgpu::live {

using nlohmann::json;
using namespace request;

namespace {

constexpr char kTenantMark = '\x1f';
// Shared figures: tenants' rates within this factor of their median agree.
constexpr double kAgreement = 1.25;
// A measurement more than this factor off the job type's known figures (the
// file's on any GPU type, the shared one on its type) is refused: GPU types
// differ by a few times, not by twenty.
constexpr double kPlausibleFactor = 20.0;
// No training job makes a million iterations a second: a report beyond it
// is a broken or forged progress file.
constexpr double kMaxRate = 1e6;
// Cross-check: a run whose progress over at least kCheckHeartbeats
// heartbeats (timed as a profiling run is) is more than kMismatchFactor off
// the rate the policy planned it at is logged and counted, once per run.
constexpr double kMismatchFactor = 2.0;
constexpr double kCheckHeartbeats = 5.0;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The shared figure of tenants' one-worker rates (rule 3 above), or NaN.
double corroborated(const std::vector<double>& rates) {
  if (rates.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  const double m = median(rates);
  std::vector<double> agree;
  for (double r : rates)
    if (r <= m * kAgreement && r >= m / kAgreement) agree.push_back(r);
  return agree.size() >= 2 ? median(agree) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

bool Manager::file_has(const std::string& job_type, const std::string& gpu_type) const {
  const JobTypeProfile* f = file_profiles_.find(job_type);
  return f && f->consolidated.count(gpu_type);
}

void Manager::rebuild_catalogue() {
  catalogue_ = file_profiles_;
  catalogue_.source =
      config_.profiles_file.empty() ? "measured" : config_.profiles_file + " + measured";
  shared_.clear();
  own_profiles_.clear();
  std::map<std::pair<std::string, std::string>, std::vector<double>> tenant_rates;
  for (const StoredProfile& p : measured_) {
    if (file_has(p.job_type, p.gpu_type)) continue;  // the file's figures win
    const std::pair key{p.job_type, p.gpu_type};
    if (p.tenant.empty()) {
      shared_.emplace(key, SharedProfile{p.workers, p.rate, "unattributed", 0});
      continue;
    }
    tenant_rates[key].push_back(p.rate / p.workers);
    own_profiles_.insert({p.tenant, p.job_type});
  }
  for (const auto& [key, rates] : tenant_rates)
    if (const double r = corroborated(rates); r > 0)
      shared_[key] = SharedProfile{1, r, "shared", static_cast<int>(rates.size())};
  auto entry = [this](const std::string& name) -> JobTypeProfile& {
    for (auto& jt : catalogue_.job_types)
      if (jt.name == name) return jt;
    catalogue_.job_types.push_back({});
    catalogue_.job_types.back().name = name;
    return catalogue_.job_types.back();
  };
  auto put = [](JobTypeProfile& prof, const std::string& gpu_type, int workers, double rate) {
    auto& row = prof.consolidated[gpu_type];
    row.clear();
    row[workers] = rate;
    if (!row.count(1)) row[1] = rate / workers;  // linear scaling assumed (manager.h)
  };
  for (const auto& [key, s] : shared_) put(entry(key.first), key.second, s.workers, s.rate);
  std::vector<JobTypeProfile> own;
  for (const auto& [tenant, type] : own_profiles_) {
    const JobTypeProfile* base = catalogue_.find(type);
    JobTypeProfile mine = base ? *base : JobTypeProfile{};
    mine.name = type + kTenantMark + tenant;
    for (const StoredProfile& p : measured_)
      if (p.tenant == tenant && p.job_type == type && !file_has(p.job_type, p.gpu_type))
        put(mine, p.gpu_type, p.workers, p.rate);
    own.push_back(std::move(mine));
  }
  for (JobTypeProfile& p : own) catalogue_.job_types.push_back(std::move(p));
}

std::string Manager::profile_type(const std::string& tenant, const std::string& job_type) const {
  return own_profiles_.count({tenant, job_type}) ? job_type + kTenantMark + tenant : job_type;
}

bool Manager::fully_profiled(const std::string& tenant, const std::string& job_type) const {
  const JobTypeProfile* p = catalogue_.find(profile_type(tenant, job_type));
  if (!p) return false;
  for (const std::string& type : ready_types_)
    if (!(p->rate(type, 1, false) > 0.0)) return false;
  return true;
}

std::string Manager::waiting_state(const std::string& tenant, const std::string& job_type) const {
  return fully_profiled(tenant, job_type) ? "queued" : "profiling";
}

std::string Manager::profile_source(const std::string& tenant, const std::string& job_type,
                                    const std::string& gpu_type) const {
  if (file_has(job_type, gpu_type)) return "file";
  for (const StoredProfile& p : measured_)
    if (!p.tenant.empty() && p.tenant == tenant && p.job_type == job_type && p.gpu_type == gpu_type)
      return "own";
  auto s = shared_.find({job_type, gpu_type});
  return s != shared_.end() ? s->second.source : "none";
}

bool Manager::record_profile(JobEntry& e, StoredLease& l, const std::string& gpu_type, double rate,
                             Tickets& tickets) {
  const int workers = static_cast<int>(l.devices.size());
  const double one = rate / workers;
  // The job type's known one-worker figures: the file's on any GPU type and
  // the shared one on this type.
  double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
  if (const JobTypeProfile* f = file_profiles_.find(e.s.job_type))
    for (const auto& [type, rows] : f->consolidated)
      if (auto r = rows.find(1); r != rows.end() && r->second > 0) {
        lo = std::min(lo, r->second);
        hi = std::max(hi, r->second);
      }
  if (auto s = shared_.find({e.s.job_type, gpu_type}); s != shared_.end()) {
    lo = std::min(lo, s->second.rate / s->second.workers);
    hi = std::max(hi, s->second.rate / s->second.workers);
  }
  std::string problem;
  if (!std::isfinite(rate) || !(rate > 0))
    problem = "not a positive finite rate";
  else if (rate > kMaxRate)
    problem = fmt::format("above {:g} it/s", kMaxRate);
  else if (hi > 0 && (one < lo / kPlausibleFactor || one > hi * kPlausibleFactor))
    problem = fmt::format(
        "{:.4g} it/s per worker is outside {:.4g}..{:.4g}, {:g}x the job type's "
        "known figures either way",
        one, lo / kPlausibleFactor, hi * kPlausibleFactor, kPlausibleFactor);
  if (!problem.empty()) {
    // Not stored: the run stops and counts as a failure of the job, as a
    // profiling run without a figure does; it is profiled again on retry.
    ++profiles_refused_;
    log::warn("profile_refused",
              {{"job", e.s.id},
               {"tenant", e.s.tenant},
               {"job_type", e.s.job_type},
               {"gpu_type", gpu_type},
               {"workers", workers},
               {"iterations_per_s", std::isfinite(rate) ? json(rate) : json(nullptr)},
               {"problem", problem}});
    revoke(l, tickets);
    ++e.s.failures;
    e.s.log_tail =
        fmt::format("profiling measured {:g} it/s on {}, refused: {}", rate, gpu_type, problem);
    if (e.s.failures > config_.max_retries) {
      e.s.state = "failed";
      e.s.finished_at = now();
    }
    tickets.push_back(persist(e));
    return false;
  }
  StoredProfile p{e.s.job_type, gpu_type, workers, rate, "measured", e.s.tenant};
  std::erase_if(measured_, [&](const StoredProfile& m) {
    return m.job_type == p.job_type && m.gpu_type == p.gpu_type && m.tenant == p.tenant;
  });
  measured_.push_back(p);
  tickets.push_back(store_->put(p));
  log::info("profile_measured", {{"job", e.s.id},
                                 {"tenant", e.s.tenant},
                                 {"job_type", e.s.job_type},
                                 {"gpu_type", gpu_type},
                                 {"workers", workers},
                                 {"iterations_per_s", rate}});
  rebuild_catalogue();
  revoke(l, tickets);  // measured: the run stops
  rebuild_needed_ = true;
  return true;
}

void Manager::cross_check(const JobEntry& e, const StoredLease& l, double iterations, double t) {
  if (l.rank != 0 || l.profiling || e.lease != l.gang || e.sched == kNone || !model_) return;
  const Job& j = state_.jobs[e.sched];
  if (j.state != JobState::kRunning || !(j.rate > 0)) return;
  RateWatch& w = rate_watch_[l.gang];
  if (w.from < 0) {
    if (iterations > 0) {
      w.from = iterations;
      w.from_t = t;
    }
    return;
  }
  if (w.told || t - w.from_t < kCheckHeartbeats * config_.heartbeat_s) return;
  const double observed = (iterations - w.from) / (t - w.from_t);
  if (observed <= j.rate * kMismatchFactor && observed >= j.rate / kMismatchFactor) return;
  w.told = true;
  ++profile_mismatches_;
  auto n = nodes_.find(l.node);
  const std::string gpu_type = n != nodes_.end() ? n->second.s.gpu_type : "";
  log::warn("profile_mismatch",
            {{"job", e.s.id},
             {"tenant", e.s.tenant},
             {"job_type", e.s.job_type},
             {"gpu_type", gpu_type},
             {"lease", l.gang},
             {"observed_iterations_per_s", observed},
             {"profile_iterations_per_s", j.rate},
             {"profile_source", profile_source(e.s.tenant, e.s.job_type, gpu_type)}});
}

json Manager::profiles(const Caller& c) const {
  if (c.role == Caller::Role::kNone) throw ApiError(401, "missing or unknown bearer token");
  const bool admin = c.role == Caller::Role::kAdmin;
  std::lock_guard lock(mu_);
  json list = json::array();
  for (const JobTypeProfile& p : file_profiles_.job_types)
    for (const auto& [type, rows] : p.consolidated)
      for (const auto& [workers, rate] : rows)
        list.push_back({{"job_type", p.name},
                        {"gpu_type", type},
                        {"workers", workers},
                        {"iterations_per_s", rate},
                        {"source", "file"}});
  // Measurements: a tenant sees its own and the unattributed ones, the
  // admin every tenant's.
  for (const StoredProfile& p : measured_) {
    if (!admin && !p.tenant.empty() && p.tenant != c.tenant) continue;
    list.push_back({{"job_type", p.job_type},
                    {"gpu_type", p.gpu_type},
                    {"workers", p.workers},
                    {"iterations_per_s", p.rate},
                    {"source", "measured"},
                    {"tenant", p.tenant.empty() ? json(nullptr) : json(p.tenant)}});
  }
  for (const auto& [key, s] : shared_)
    if (s.source == "shared")
      list.push_back({{"job_type", key.first},
                      {"gpu_type", key.second},
                      {"workers", 1},
                      {"iterations_per_s", s.rate},
                      {"source", "shared"},
                      {"tenants", s.tenants}});
  // What the policy uses for each tenant's jobs of a measured job type (one
  // worker): the caller's, or every tenant's for the admin.
  std::set<std::string> measured_types;
  for (const StoredProfile& p : measured_) measured_types.insert(p.job_type);
  json in_use = json::array();
  for (const TenantConfig& tc : config_.tenants) {
    if (!admin && tc.name != c.tenant) continue;
    for (const std::string& type : measured_types) {
      const JobTypeProfile* p = catalogue_.find(profile_type(tc.name, type));
      if (!p) continue;
      for (const auto& [gpu_type, rows] : p->consolidated)
        if (auto one = rows.find(1); one != rows.end())
          in_use.push_back({{"tenant", tc.name},
                            {"job_type", type},
                            {"gpu_type", gpu_type},
                            {"iterations_per_s", one->second},
                            {"source", profile_source(tc.name, type, gpu_type)}});
    }
  }
  return {{"profiles", list}, {"in_use", in_use}};
}

json Manager::reset_profiles(const Caller& c, const std::string& job_type,
                             const std::optional<std::string>& tenant,
                             const std::string& gpu_type) {
  require(c, {Caller::Role::kAdmin});
  if (tenant && tenant->empty()) bad("tenant", "expected a tenant name");
  std::vector<std::uint64_t> tickets;
  std::size_t removed = 0;
  {
    std::lock_guard lock(mu_);
    auto match = [&](const StoredProfile& p) {
      return p.job_type == job_type && (gpu_type.empty() || p.gpu_type == gpu_type) &&
             (!tenant || p.tenant == *tenant);
    };
    removed = static_cast<std::size_t>(std::count_if(measured_.begin(), measured_.end(), match));
    if (removed == 0)
      throw ApiError(404, fmt::format("profiles {}: no measured profile{}{}", job_type,
                                      tenant ? " of tenant " + *tenant : "",
                                      gpu_type.empty() ? "" : " on " + gpu_type));
    std::erase_if(measured_, match);
    tickets.push_back(store_->put(
        StoredProfileReset{job_type, gpu_type, tenant.value_or(""), !tenant.has_value()}));
    log::info("profiles_reset", {{"job_type", job_type},
                                 {"tenant", tenant ? json(*tenant) : json(nullptr)},
                                 {"gpu_type", gpu_type.empty() ? json(nullptr) : json(gpu_type)},
                                 {"removed", removed}});
    rebuild_catalogue();
    // Waiting jobs that now lack a figure are measured again (as when a new
    // GPU type registers); running ones keep their lease.
    for (JobEntry& e : jobs_)
      if (e.s.state == "queued" && !fully_profiled(e.s.tenant, e.s.job_type)) {
        e.s.state = "profiling";
        tickets.push_back(persist(e));
      }
    rebuild_needed_ = true;
  }
  store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  json answer = {{"job_type", job_type}, {"removed", removed}};
  if (tenant) answer["tenant"] = *tenant;
  if (!gpu_type.empty()) answer["gpu_type"] = gpu_type;
  return answer;
}

std::string Manager::profile_metrics() const {
  return fmt::format(
      "# HELP fairgpu_profiles_refused_total Profiling measurements refused as implausible "
      "(logged as profile_refused).\n"
      "# TYPE fairgpu_profiles_refused_total counter\n"
      "fairgpu_profiles_refused_total {}\n"
      "# HELP fairgpu_profile_mismatches_total Runs whose progress was more than {:g}x off the "
      "rate the policy planned them at (logged as profile_mismatch): poisoned or drifted "
      "profiles.\n"
      "# TYPE fairgpu_profile_mismatches_total counter\n"
      "fairgpu_profile_mismatches_total {}\n",
      profiles_refused_, kMismatchFactor, profile_mismatches_);
}

}  // namespace fairgpu::live
