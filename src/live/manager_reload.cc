// `kill -HUP` of `fairgpu serve`: the config read again and applied to the
// running manager (see Manager::reload in manager.h).
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "live/log.h"
#include "live/manager.h"

namespace fairgpu::live {

using nlohmann::json;

json Manager::reload(const ServeConfig& next) {
  // The new policy first: a bad one changes nothing.
  std::unique_ptr<RoundPolicy> policy = make_round_policy(next.policy, live_policy_options(next.policy_options));
  if (slurm_) check_slurm_run_as(next);  // a user Slurm cannot run jobs as changes nothing
  json changed = json::array(), restart = json::array();
  std::lock_guard lock(mu_);
  auto differs = [&](const char* what, bool d, json* list) {
    if (d) list->push_back(what);
  };
  differs("listen", next.host != config_.host || next.port != config_.port, &restart);
  differs("data_dir", next.data_dir != config_.data_dir, &restart);
  differs("checkpoint_dir", next.checkpoint_dir != config_.checkpoint_dir, &restart);
  differs("tls", next.tls_cert != config_.tls_cert || next.tls_key != config_.tls_key, &restart);
  differs("profiles", next.profiles_file != config_.profiles_file, &restart);
  differs("heartbeat_s", next.heartbeat_s != config_.heartbeat_s, &restart);
  differs("heartbeat_timeout_s", next.heartbeat_timeout_s != config_.heartbeat_timeout_s, &restart);
  differs("grace_s", next.grace_s != config_.grace_s, &restart);
  differs("kill_after_s", next.kill_after_s != config_.kill_after_s, &restart);
  differs("profile_iterations", next.profile_iterations != config_.profile_iterations, &restart);
  differs("profile_timeout_s", next.profile_timeout_s != config_.profile_timeout_s, &restart);
  differs("restart_overhead_s", next.restart_overhead_s != config_.restart_overhead_s, &restart);
  // The HTTP front's limits size its listeners, pools and queues, made at
  // start: a change waits for a restart, each key named in a warning of its
  // own so that the operator sees the file and the server disagree.
  auto http_key = [&](const char* key, double now_value, double next_value) {
    if (now_value == next_value) return;
    restart.push_back(key);
    log::warn("reload_needs_restart",
              {{"key", key},
               {"in_force", now_value},
               {"in_config", next_value},
               {"why", "the HTTP front's listeners and pools are made at start: restart serve"}});
  };
  http_key("http.request_timeout_s", config_.http.request_timeout_s, next.http.request_timeout_s);
  http_key("http.max_connections_per_peer", config_.http.max_connections_per_peer,
           next.http.max_connections_per_peer);
  http_key("http.workers", config_.http.workers, next.http.workers);
  http_key("http.queue", config_.http.queue, next.http.queue);
  http_key("http.agent_workers", config_.agent_workers, next.agent_workers);
  if (next.agent_host != config_.agent_host || next.agent_port != config_.agent_port) {
    restart.push_back("http.agent_listen");
    log::warn("reload_needs_restart",
              {{"key", "http.agent_listen"},
               {"why", "the agents' listener is bound at start: restart serve"}});
  }

  auto settings = [](const RoundPolicyOptions& o) {
    std::vector<std::string> out;
    for (const auto& s : o.settings) out.push_back(s.policy + ":" + s.key + "=" + s.value);
    return out;
  };
  const bool policy_changed = next.policy != config_.policy ||
                              next.policy_options.level != config_.policy_options.level ||
                              next.policy_options.round_s != config_.policy_options.round_s ||
                              settings(next.policy_options) != settings(config_.policy_options) ||
                              next.policy.rfind("py:", 0) == 0;  // its file may have changed
  if (policy_changed) {
    policy_ = std::move(policy);
    interval_ = policy_->interval();
    config_.policy = next.policy;
    config_.policy_options = next.policy_options;
    changed.push_back("policy");
  }
  differs("admin_token", next.admin_token != config_.admin_token, &changed);
  differs("metrics_token", next.metrics_token != config_.metrics_token, &changed);
  differs("metrics_open", next.metrics_open != config_.metrics_open, &changed);
  differs("max_retries", next.max_retries != config_.max_retries, &changed);
  differs("node_fault_limit", next.node_fault_limit != config_.node_fault_limit, &changed);
  config_.admin_token = next.admin_token;
  config_.metrics_token = next.metrics_token;
  config_.metrics_open = next.metrics_open;
  config_.max_retries = next.max_retries;
  config_.node_fault_limit = next.node_fault_limit;
  differs("job_retention_s", next.job_retention_s != config_.job_retention_s, &changed);
  config_.job_retention_s = next.job_retention_s;

  // Tenants: the rule of a start (manager.h, config_tenants_). The file's
  // win over what the API set before for every tenant it names; the API's
  // own tenants stay; the store keeps the result, so a restart agrees.
  std::vector<std::uint64_t> tickets;
  std::set<std::string> in_file;
  for (const TenantConfig& t : next.tenants) {
    in_file.insert(t.name);
    api_tenants_.erase(t.name);  // named in the config now: the config's
    auto it = tenant_index_.find(t.name);
    if (it == tenant_index_.end()) {
      tenant_index_[t.name] = config_.tenants.size();
      config_.tenants.push_back(t);
      changed.push_back("tenant " + t.name + " added");
    } else {
      TenantConfig& old = config_.tenants[it->second];
      if (old.weight != t.weight)
        changed.push_back(fmt::format("tenant {} weight {} -> {}", t.name, old.weight, t.weight));
      if (old.token != t.token) changed.push_back("tenant " + t.name + " token");
      if (old.unix_user != t.unix_user) changed.push_back("tenant " + t.name + " unix_user");
      if (old.quotas != t.quotas) changed.push_back("tenant " + t.name + " quotas");
      old = t;
    }
    slot_of(t.name, &tickets);
    tickets.push_back(store_->put(tenant_record(t)));
  }
  // Quotas: new submissions and starts are held to them; what runs goes on.
  config_.quotas = next.quotas;
  for (TenantConfig& t : config_.tenants)
    if (!in_file.count(t.name) && t.quotas != next.quotas) {
      t.quotas = next.quotas;  // added by the API: the file's default
      changed.push_back("tenant " + t.name + " quotas");
    }
  config_tenants_ = in_file;
  for (TenantConfig& t : config_.tenants)
    if (!in_file.count(t.name) && !api_tenants_.count(t.name) && !t.token.empty()) {
      t.token.clear();  // authenticates nobody; its jobs stay
      tickets.push_back(store_->put(tenant_record(t)));
      changed.push_back("tenant " + t.name + " left out: its token no longer works");
    }
  rebuild_needed_ = true;  // the policy's tenants, weights and options
  if (!tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
  log::info("reload",
            {{"changed", changed}, {"restart_needed", restart}, {"leases", leases_.size()}});
  return {{"changed", changed}, {"restart_needed", restart}};
}

}  // namespace fairgpu::live
