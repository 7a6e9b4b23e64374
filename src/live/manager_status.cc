// The status page's data (issue 32, item 8): the share history the
// scheduling points record, and what the page shows, gathered from the same
// answers the API gives the admin (docs/operator-guide.md, "Status page").
#include <algorithm>
#include <utility>

#include "fairgpu/provenance.h"
#include "live/log.h"
#include "live/manager.h"
#include "live/request.h"
#include "live/status_page.h"

namespace fairgpu::live {

using nlohmann::json;
using request::terminal;

void Manager::record_shares(double t) {
  // Held: devices of the leases not yet ended, by their job's tenant (what
  // tenants() counts). Entitled: weight over the weights of the tenants
  // with unfinished jobs.
  int total = 0;
  for (const auto& [name, n] : nodes_)
    if (n.s.state == "ready") total += static_cast<int>(n.s.devices.size());
  std::map<std::string, double> held;
  for (const auto& [id, l] : leases_)
    if (const JobEntry* e = find_job(l.job)) held[e->s.tenant] += double(l.devices.size());
  std::set<std::string> waiting;
  if (model_)
    for (std::size_t k : state_.active) waiting.insert(jobs_[sched_to_job_[k]].s.tenant);
  for (const auto& [tenant, n] : held) waiting.insert(tenant);
  double weights = 0.0;
  for (const TenantConfig& tc : config_.tenants)
    if (waiting.count(tc.name)) weights += tc.weight;
  ShareSample sample{t, {}};
  for (const TenantConfig& tc : config_.tenants) {
    auto h = held.find(tc.name);
    sample.share[tc.name] = {total && h != held.end() ? h->second / total : 0.0,
                             weights > 0 && waiting.count(tc.name) ? tc.weight / weights : 0.0};
  }
  share_history_.push_back(std::move(sample));
  while (!share_history_.empty() && share_history_.front().t < t - kShareHistoryS)
    share_history_.pop_front();
  if (share_history_.size() < kShareSamples) return;
  // Full: adjacent pairs merge into one sample (their mean, at the later
  // time), halving the history's size and doubling its step.
  std::deque<ShareSample> merged;
  for (std::size_t i = 0; i + 1 < share_history_.size(); i += 2) {
    ShareSample m{share_history_[i + 1].t, share_history_[i + 1].share};
    for (auto& [tenant, s] : m.share)
      if (auto a = share_history_[i].share.find(tenant); a != share_history_[i].share.end()) {
        s.first = (s.first + a->second.first) / 2;
        s.second = (s.second + a->second.second) / 2;
      }
    merged.push_back(std::move(m));
  }
  if (share_history_.size() % 2) merged.push_back(share_history_.back());
  share_history_ = std::move(merged);
}

std::string Manager::status_page() const {
  const Caller admin{Caller::Role::kAdmin, "", ""};
  json data = cluster(admin);
  data["tenants"] = tenants(admin)["tenants"];
  data["version"] = fairgpu_version();
  data["events"] = log::recent();
  std::lock_guard lock(mu_);
  data["now"] = now();
  // The queue: every job not ended, in submission order, at most
  // kStatusJobs of them (the rest counted).
  constexpr std::size_t kStatusJobs = 500;
  json queue = json::array();
  std::size_t more = 0;
  const PendingContext ctx = pending_context();
  for (const JobEntry& e : jobs_) {
    if (terminal(e.s.state)) continue;
    if (queue.size() == kStatusJobs) {
      ++more;
      continue;
    }
    json j = job_json(e, ctx);
    j.erase("command");  // not shown: may carry what a tenant would not publish
    j.erase("env");
    queue.push_back(std::move(j));
  }
  data["jobs"] = std::move(queue);
  data["jobs_not_shown"] = more;
  json history = json::array();
  for (const ShareSample& s : share_history_) {
    json tenants = json::object();
    for (const auto& [tenant, v] : s.share) tenants[tenant] = {v.first, v.second};
    history.push_back({{"t", s.t}, {"tenants", std::move(tenants)}});
  }
  data["share_history"] = std::move(history);
  return render_status_page(data);
}

}  // namespace fairgpu::live
