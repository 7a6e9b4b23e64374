// Accounting (issue 32, item 6; docs/operator-guide.md "Accounting"): GPU
// usage over a window from the runs the store keeps, each job's runs, and
// the chargeback counter in /metrics.
#include <fmt/format.h>

#include <algorithm>

#include "fairgpu/input_error.h"
#include "live/manager.h"
#include "live/request.h"
#include "live/usage.h"

namespace fairgpu::live {

using nlohmann::json;
using namespace request;

namespace {

json run_json(const StoredRun& r, double now) {
  const double stop = r.stop < 0 ? now : r.stop;
  json j = {{"lease", r.lease},
            {"gang", r.gang},
            {"rank", r.rank},
            {"node", r.node},
            {"gpu_type", r.gpu_type},
            {"devices", r.devices},
            {"start", r.start},
            {"end", r.stop < 0 ? json(nullptr) : json(r.stop)},
            {"gpu_seconds", std::max(0.0, stop - r.start) * static_cast<double>(r.devices.size())},
            {"profiling", r.profiling}};
  if (r.stop < 0) {
    j["reason"] = "running";
  } else {
    j["reason"] = r.reason.empty() ? "ended" : r.reason;
    j["exit_code"] = r.exit_code;
    j["signal"] = r.signal;
  }
  return j;
}

}  // namespace

std::vector<StoredRun> Manager::stored_runs(const RunQuery& q) const {
  // What was decided up to now is read back: wait for it to be durable
  // (a commit). A failing store answers with what it has.
  try {
    store_->wait(store_->last_ticket());
  } catch (const std::exception&) {
  }
  return store_->runs(q);
}

json Manager::job_runs(const std::string& id) const {
  RunQuery q;
  q.job = id;
  json runs = json::array();
  const double t = now();
  for (const StoredRun& r : stored_runs(q)) runs.push_back(run_json(r, t));
  return runs;
}

json Manager::usage(const Caller& c, const UsageQuery& uq) const {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  if (uq.by != "tenant" && uq.by != "job") bad("by", "expected tenant or job");
  RunQuery q;
  q.tenant = uq.tenant;
  if (c.role == Caller::Role::kTenant) {
    if (!uq.tenant.empty() && uq.tenant != c.tenant)
      throw ApiError(403, fmt::format("tenant {}: a tenant token sees its own usage only",
                                      uq.tenant));
    q.tenant = c.tenant;
  }
  const double t = now();
  double since = 0.0, until = t;
  try {
    if (!uq.since.empty()) since = parse_time(uq.since, "since");
    if (!uq.until.empty()) until = parse_time(uq.until, "until");
  } catch (const InputError& e) {
    throw ApiError(400, fmt::format("{}: {}", e.source(), e.problem()));
  }
  if (until < since) bad("until", "before since");
  q.since = since;
  q.until = until;
  const std::vector<StoredRun> runs = stored_runs(q);
  json rows = json::array();
  double total = 0.0;
  for (const UsageRow& r : live::usage(runs, since, until, t, uq.by == "job")) {
    json row = {{"tenant", r.tenant},
                {"gpu_type", r.gpu_type},
                {"gpu_seconds", r.gpu_seconds},
                {"gpu_hours", r.gpu_seconds / 3600.0},
                {"runs", r.runs}};
    if (uq.by == "job") row["job"] = r.job;
    total += r.gpu_seconds;
    rows.push_back(std::move(row));
  }
  return {{"since", since}, {"until", until},  {"now", t},
          {"by", uq.by},    {"usage", rows},    {"gpu_seconds", total}};
}

std::map<std::pair<std::string, std::string>, double> Manager::gpu_seconds_total(double t) const {
  std::map<std::pair<std::string, std::string>, double> seconds = ended_gpu_seconds_;
  for (const auto& [id, l] : leases_) {
    if (l.status != "active" && l.status != "revoking" && l.status != "exited") continue;
    const double stop = l.stopped >= 0 ? l.stopped : std::max(l.start, t);
    auto job = job_index_.find(l.job);
    seconds[{job != job_index_.end() ? jobs_[job->second].s.tenant : "", l.gpu_type}] +=
        (stop - l.start) * static_cast<double>(l.devices.size());
  }
  return seconds;
}

}  // namespace fairgpu::live
