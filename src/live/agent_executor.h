// fairgpu's own agents as the lease manager's executor (docs/live-protocol.md,
// docs/executors.md). The protocol is pull-style: agents register and send
// heartbeats; the answer to a heartbeat carries the launches, renewals and
// revocations. So this executor:
//   - checks registrations and heartbeats (a registration, and a
//     heartbeat's frame, is taken whole or answered 400 having changed
//     nothing; a bad entry of a heartbeat's runs costs that run only: it is
//     stopped if it runs and its end counts as a failure with the problem as
//     its log tail), and hands what they report to the
//     lease manager (LeaseHost) under its lock: a registration (a new epoch
//     ends the node's old runs), runs reported running (the verdict: renew,
//     or revoke) and ended runs;
//   - keeps the starts apply() gave it and sends each, as a launch with the
//     gang's rendezvous, in the answers to its node until the agent reports
//     the run, once the start's store ticket is durable;
//   - tells the lease manager about revoked leases an agent no longer
//     reports (they never ran there, or their end was acked);
//   - declares a node lost when its heartbeat is overdue: its runs are fenced
//     by the agent grace + kill_after + one heartbeat after its timeout, and
//     relaunchable from then on (poll(): kNodeLost).
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "live/config.h"
#include "live/executor.h"
#include "live/log_relay.h"

namespace fairgpu::live {

struct Caller;

class AgentExecutor : public Executor {
 public:
  AgentExecutor(const ServeConfig& config, LeaseHost& host, std::function<double()> clock);

  // The agents' calls (docs/live-protocol.md); each throws ApiError. `peer`
  // is the address the request came from: the node's address when the body
  // names none.
  nlohmann::json register_agent(const Caller& c, const nlohmann::json& body,
                                const std::string& peer);
  nlohmann::json heartbeat(const Caller& c, const nlohmann::json& body);

  // A node the store knows after a restart: its heartbeat deadline starts now
  // (its agent kept running while the manager was down).
  void adopt_node(const std::string& node, bool lost, double now);
  // Relays tenants' log reads over the heartbeats (the manager's; outlives
  // this executor).
  void set_log_relay(LogRelay* relay) { relay_ = relay; }

  // Executor. Agents push their nodes (LeaseHost::node_up), need no handle
  // per job, and stop runs through heartbeat answers (revokes and cancels
  // need no call here).
  std::vector<ExecutorNode> nodes() override;
  std::string admit(const ExecutorJob&) override { return ""; }
  void adopt(const ExecutorJob&, const std::string&, std::int64_t) override {}
  void apply(const std::vector<RunStart>& starts, const std::vector<std::int64_t>& revokes,
             double now) override;
  void cancel(const std::string&) override {}
  std::vector<RunEvent> poll(double now) override;

 private:
  struct Node {
    double last_heard = 0;
    bool lost = false;
    ExecutorNode registered;
  };
  struct Launch {
    std::string node;
    nlohmann::json action;  // without lease_s_left, added when sent
    std::uint64_t ticket = 0;
  };

  ServeConfig config_;
  LeaseHost& host_;
  std::function<double()> clock_;
  std::map<std::string, Node> nodes_;
  std::map<std::int64_t, Launch> launches_;  // by part lease, until the agent reports it
  // Running runs whose report was refused, by lease, until their end is
  // reported (then a failure with this problem). Not kept over a restart:
  // such a run then ends as revoked.
  struct Refused {
    std::string node, problem;
  };
  std::map<std::int64_t, Refused> refused_;
  LogRelay* relay_ = nullptr;
};

}  // namespace fairgpu::live
