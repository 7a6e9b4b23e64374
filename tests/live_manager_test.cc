// The live manager in process, on a hand-moved clock, with agents played by
// the test through the same calls the HTTP routes make (docs/live-protocol.md):
// leases and their launch/renew/revoke actions, the pending rule (no job or
// device runs twice), recovery from the store, lost nodes and their fence
// time, profiling of unknown job types, retries, tokens and bad requests.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "fairgpu/input_error.h"
#include "live/manager.h"
#include "test_paths.h"

namespace fairgpu::live {
namespace {

using nlohmann::json;

std::string temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("fairgpu-live-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

class LiveManager : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    // Gavel's format: "mlp" runs 1 it/s on slow, 4 it/s on fast.
    std::ofstream(dir_ + "/profiles.json") << R"json({"slow": {"('mlp', 1)": {"null": 1.0}},
        "fast": {"('mlp', 1)": {"null": 4.0}}})json";
    config_.data_dir = dir_ + "/data";
    config_.checkpoint_dir = dir_ + "/ckpt";
    config_.profiles_file = dir_ + "/profiles.json";
    config_.policy = "oef-coop";
    config_.policy_options.round_s = 60;
    config_.heartbeat_s = 1;
    config_.heartbeat_timeout_s = 5;
    config_.grace_s = 2;
    config_.kill_after_s = 1;
    config_.max_retries = 1;
    config_.profile_iterations = 50;
    config_.admin_token = "admin-token";
    config_.tenants = {{"alice", 1.0, "alice-token", "", {}}, {"bob", 1.0, "bob-token", "", {}}};
  }
  void TearDown() override {
    manager_.reset();
    std::filesystem::remove_all(dir_);
  }
  Manager& start() {
    manager_.reset();
    manager_ = std::make_unique<Manager>(config_, [this] { return now_; });
    return *manager_;
  }
  Caller as(const std::string& token) { return manager_->authenticate("Bearer " + token); }
  // The caller of a node's agent: its token, issued by the admin once.
  Caller agent(const std::string& node) {
    auto& token = node_tokens_[node];
    if (token.empty())
      token = manager_->issue_node_token(as("admin-token"), node)["token"].get<std::string>();
    return as(token);
  }
  json submit(const std::string& token, const std::string& type = "mlp", int workers = 1,
              double iterations = 1000) {
    return manager_->submit(as(token), {{"job_type", type},
                                        {"workers", workers},
                                        {"iterations", iterations},
                                        {"command", {"true"}}});
  }
  std::int64_t reg(const std::string& node, const std::string& type, int gpus) {
    json devices = json::array();
    for (int d = 0; d < gpus; ++d) devices.push_back(d);
    json a = manager_->register_agent(agent(node),
                                      {{"node", node}, {"gpu_type", type}, {"devices", devices}});
    return a["epoch"].get<std::int64_t>();
  }
  // The runs as a vector: `beat(n, e, {running(...)})` is then a one-element
  // list under every compiler (a json parameter reads a single braced element
  // as a copy under clang and as an array under GCC).
  json beat(const std::string& node, std::int64_t epoch, std::vector<json> runs = {}) {
    return manager_->heartbeat(agent(node),
                               {{"node", node}, {"epoch", epoch}, {"runs", json(runs)}});
  }
  static json running(std::int64_t lease, double iterations) {
    return {{"lease", lease}, {"state", "running"}, {"iterations", iterations}};
  }
  static json exited(std::int64_t lease, double iterations, int code, bool revoked) {
    return {{"lease", lease}, {"state", "exited"}, {"iterations", iterations},
            {"exit_code", code},  {"signal", 0},      {"revoked", revoked},
            {"log_tail", code ? "boom" : ""}};
  }
  static std::vector<json> actions(const json& answer, const std::string& kind) {
    std::vector<json> out;
    for (const json& a : answer["actions"])
      if (a["action"] == kind) out.push_back(a);
    return out;
  }
  json job(const std::string& id) { return manager_->job(as("admin-token"), id); }

  std::string dir_;
  ServeConfig config_;
  std::map<std::string, std::string> node_tokens_;
  double now_ = 1000.0;
  std::unique_ptr<Manager> manager_;
};

TEST_F(LiveManager, LeasesLaunchRenewAndFinish) {
  start();
  const auto e_fast = reg("f1", "fast", 2);
  const auto e_slow = reg("s1", "slow", 2);
  std::vector<std::string> ids;
  for (const char* t : {"alice-token", "alice-token", "bob-token", "bob-token"})
    ids.push_back(submit(t)["id"]);
  EXPECT_EQ(job(ids[0])["state"], "queued");
  manager_->schedule();
  for (const auto& id : ids) EXPECT_EQ(job(id)["state"], "running") << id;

  json a = beat("f1", e_fast);
  auto launches = actions(a, "launch");
  ASSERT_EQ(launches.size(), 2u);
  const json& l = launches[0];
  EXPECT_EQ(l["gpu_type"], "fast");
  EXPECT_EQ(l["devices"].size(), 1u);
  EXPECT_EQ(l["checkpoint_dir"], config_.checkpoint_dir + "/" + l["job"].get<std::string>());
  EXPECT_EQ(l["command"], json::array({"true"}));
  // Whom a root agent runs it as (issue 12): the tenant's slot, fixed at
  // start-up in the config's order, and no unix_user unless configured.
  EXPECT_EQ(l["tenant_slot"], l["tenant"] == "alice" ? 0 : 1) << l.dump();
  EXPECT_EQ(l["unix_user"], nullptr);
  EXPECT_NEAR(l["lease_s_left"].get<double>(), 60 + config_.heartbeat_timeout_s, 1e-9);
  EXPECT_EQ(actions(beat("s1", e_slow), "launch").size(), 2u);

  // Running: renewed, progress recorded; the same lease is not launched twice.
  const std::int64_t lease = l["lease"];
  now_ += 10;
  a = beat("f1", e_fast, {running(lease, 40), running(launches[1]["lease"], 40)});
  EXPECT_TRUE(actions(a, "launch").empty());
  ASSERT_EQ(actions(a, "renew").size(), 2u);
  EXPECT_EQ(job(l["job"])["iterations_done"], 40.0);

  // Exit 0 on its own: finished, acknowledged once it is durable.
  now_ += 5;
  a = beat("f1", e_fast, {exited(lease, 1000, 0, false), running(launches[1]["lease"], 60)});
  EXPECT_EQ(a["ack"], json::array({lease}));
  json done = job(l["job"]);
  EXPECT_EQ(done["state"], "finished");
  EXPECT_EQ(done["iterations_done"], 1000.0);
  EXPECT_EQ(done["finished_at"], now_);
}

// Issue 12, defects 10 and 11 and the pending reasons: a gang no node can
// hold is refused at submission (400 naming workers and the largest gang);
// a job that waits says why, squeue-style; lease times are never negative.
TEST_F(LiveManager, ImpossibleGangsAreRefusedAndWaitingJobsSayWhy) {
  start();
  auto error_of = [&](int workers) -> std::string {
    try {
      submit("alice-token", "mlp", workers);
    } catch (const ApiError& e) {
      return std::to_string(e.status()) + " " + e.what();
    }
    return "accepted";
  };
  // No node yet: nothing is known, the job is taken and waits for one.
  const std::string early = submit("bob-token")["id"];
  EXPECT_EQ(job(early)["pending"]["reason"], "Resources");
  EXPECT_EQ(job(early)["pending"]["detail"], "no node has registered");
  const auto ef = reg("f1", "fast", 2);
  const auto es = reg("s1", "slow", 2);
  EXPECT_EQ(error_of(3),
            "400 workers: 3 exceeds the largest gang this cluster can run, 2 (the most GPUs of "
            "one type)");
  EXPECT_EQ(error_of(64),
            "400 workers: 64 exceeds the largest gang this cluster can run, 2 (the most GPUs of "
            "one type)");
  EXPECT_EQ(manager_->jobs(as("admin-token"), "")["jobs"].size(), 1u);
  EXPECT_EQ(job(early)["pending"]["reason"], "Round");  // free devices: the next point
  const std::string pair = submit("alice-token", "mlp", 2)["id"];
  std::vector<std::string> singles;
  for (int i = 0; i < 3; ++i) singles.push_back(submit("bob-token")["id"]);
  manager_->schedule();
  beat("f1", ef);
  beat("s1", es);
  int running = 0, priority = 0;
  const json all = manager_->jobs(as("admin-token"), "");
  for (const json& j : all["jobs"]) {
    if (j["state"] == "running") {
      ++running;
      EXPECT_EQ(j["pending"], nullptr) << j.dump();
    } else {
      EXPECT_EQ(j["pending"]["reason"], "Priority") << j.dump();
      ++priority;
    }
  }
  EXPECT_EQ(running + priority, 5);
  EXPECT_GT(priority, 0);
  // Past the leases' end (the renewal is on its way): 0 s left, not < 0.
  now_ += 75;
  const json cluster = manager_->cluster(as("admin-token"));
  for (const json& n : cluster["nodes"])
    for (const json& h : n["holders"]) EXPECT_EQ(h["lease_end_in_s"], 0.0) << h.dump();
  // Every node drained: the waiting jobs say so.
  manager_->set_drained(as("admin-token"), "f1", true);
  manager_->set_drained(as("admin-token"), "s1", true);
  const json drained = manager_->jobs(as("admin-token"), "");
  for (const json& j : drained["jobs"]) {
    const std::string reason = j["pending"]["reason"];
    EXPECT_TRUE(reason == "NodeDrained" || reason == "Stopping") << j.dump();
  }
}

// Issue 12 item 5: a gang bigger than a node runs as one part lease per node.
// The parts launch together (never one while the other's devices are busy),
// carry the rendezvous, report progress through rank 0, stop together (drain,
// failure of one part), survive a restart, and the job finishes when both
// parts exited cleanly.
TEST_F(LiveManager, GangsOverSeveralNodesRunAsPartsThatStartAndStopTogether) {
  start();
  // f1 names its address; f2's is the one its registration came from.
  json devices = {0, 1};
  const auto e1 =
      manager_
          ->register_agent(
              agent("f1"),
              {{"node", "f1"}, {"gpu_type", "fast"}, {"devices", devices}, {"address", "10.0.0.1"}},
              "192.168.0.1")["epoch"]
          .get<std::int64_t>();
  const auto e2 = manager_
                      ->register_agent(agent("f2"),
                                       {{"node", "f2"}, {"gpu_type", "fast"}, {"devices", devices}},
                                       "10.0.0.2")["epoch"]
                      .get<std::int64_t>();
  std::map<std::string, std::int64_t> epoch = {{"f1", e1}, {"f2", e2}};
  std::map<std::string, std::string> address = {{"f1", "10.0.0.1"}, {"f2", "10.0.0.2"}};
  reg("s1", "slow", 2);
  // The limit is the largest pool of one GPU type (4 fast), not a node (2).
  try {
    submit("alice-token", "mlp", 5);
    ADD_FAILURE() << "5 workers accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(std::string(e.what()),
              "workers: 5 exceeds the largest gang this cluster can run, 4 (the most GPUs of one "
              "type)");
  }
  // Bob's single job holds a fast device; cancelled, its run is stopping
  // when alice's gang is placed.
  manager_->set_drained(as("admin-token"), "s1", true);
  const std::string single = submit("bob-token")["id"];
  manager_->schedule();
  std::string single_node;
  std::int64_t single_lease = 0;
  for (const char* n : {"f1", "f2"})
    for (const json& l : actions(beat(n, epoch[n]), "launch")) {
      single_node = n;
      single_lease = l["lease"];
    }
  ASSERT_NE(single_lease, 0);
  const std::string gang_job = submit("alice-token", "mlp", 4)["id"];
  EXPECT_EQ(job(gang_job)["pending"]["reason"], "Priority");  // bob holds one of the 4
  manager_->cancel(as("bob-token"), single);
  manager_->schedule();
  ASSERT_EQ(job(gang_job)["state"], "running");
  EXPECT_EQ(job(gang_job)["nodes"].size(), 2u) << job(gang_job).dump();
  EXPECT_EQ(job(gang_job)["pending"]["reason"], "Launching");
  // Neither part launches while one part's device is still busy.
  const std::string other_node = single_node == "f1" ? "f2" : "f1";
  EXPECT_TRUE(actions(beat(other_node, epoch[other_node]), "launch").empty());
  EXPECT_TRUE(actions(beat(single_node, epoch[single_node], {running(single_lease, 10)}), "launch")
                  .empty());
  // The old run stops: both parts launch, each on its own node.
  std::map<std::string, json> launch;
  beat(single_node, epoch[single_node], {exited(single_lease, 10, 0, true)});
  for (const char* n : {"f1", "f2"}) {
    auto l = actions(beat(n, epoch[n]), "launch");
    ASSERT_EQ(l.size(), 1u) << n;
    launch[n] = l[0];
  }
  const std::string rank0 = launch["f1"]["rendezvous"]["node_rank"] == 0 ? "f1" : "f2";
  const std::string rank1 = rank0 == "f1" ? "f2" : "f1";
  const std::int64_t gang = launch[rank0]["lease"];
  EXPECT_EQ(launch[rank1]["lease"], gang + 1);
  EXPECT_EQ(job(gang_job)["lease"], gang);
  EXPECT_EQ(job(gang_job)["node"], rank0);
  for (const char* n : {"f1", "f2"}) {
    const json& r = launch[n]["rendezvous"];
    const bool first = n == rank0;
    EXPECT_EQ(r["master_addr"], address[rank0]) << n;
    EXPECT_EQ(r["master_port"], kMasterPortBase + gang % kMasterPortSpan) << n;
    EXPECT_EQ(r["world_size"], 4) << n;
    EXPECT_EQ(r["rank"], first ? 0 : 2) << n;
    EXPECT_EQ(r["node_rank"], first ? 0 : 1) << n;
    EXPECT_EQ(r["nodes"], 2) << n;
    EXPECT_EQ(r["local_world_size"], 2) << n;
    EXPECT_EQ(launch[n]["workers"], 4) << n;
    EXPECT_EQ(launch[n]["devices"].size(), 2u) << n;
    EXPECT_EQ(launch[n]["job"], gang_job) << n;
  }
  // Progress is rank 0's.
  beat(rank1, epoch[rank1], {running(gang + 1, 900)});
  beat(rank0, epoch[rank0], {running(gang, 300)});
  EXPECT_EQ(job(gang_job)["iterations_done"], 300);
  beat(rank1, epoch[rank1], {running(gang + 1, 950)});
  EXPECT_EQ(job(gang_job)["iterations_done"], 300);
  EXPECT_NE(manager_->metrics().find("fairgpu_spread_launched_total 1\n"), std::string::npos);

  // A restart keeps the gang: both parts renewed, nothing relaunched.
  start();
  for (const char* n : {"f1", "f2"}) {
    const std::int64_t id = n == rank0 ? gang : gang + 1;
    json a = beat(n, epoch[n], {running(id, n == rank0 ? 310 : 0)});
    EXPECT_TRUE(actions(a, "launch").empty()) << n << a.dump();
    ASSERT_EQ(actions(a, "renew").size(), 1u) << n << a.dump();
    EXPECT_EQ(actions(a, "renew")[0]["lease"], id);
  }
  manager_->schedule();
  EXPECT_EQ(job(gang_job)["state"], "running");

  // Draining one node revokes both parts.
  manager_->set_drained(as("admin-token"), rank1, true);
  for (const char* n : {"f1", "f2"}) {
    const std::int64_t id = n == rank0 ? gang : gang + 1;
    auto revokes = actions(beat(n, epoch[n], {running(id, 320)}), "revoke");
    ASSERT_EQ(revokes.size(), 1u) << n;
    EXPECT_EQ(revokes[0]["lease"], id);
  }
  beat(rank0, epoch[rank0], {exited(gang, 330, 0, true)});
  beat(rank1, epoch[rank1], {exited(gang + 1, 0, 0, true)});
  EXPECT_EQ(job(gang_job)["state"], "queued");
  EXPECT_EQ(job(gang_job)["iterations_done"], 330);
  EXPECT_EQ(job(gang_job)["pending"]["reason"], "NodeDrained") << job(gang_job).dump();
  manager_->set_drained(as("admin-token"), rank1, false);

  // One part failing stops the other and counts one failure.
  struct Part {
    std::string node;
    std::int64_t lease = 0;
  };
  auto launch_both = [&](Part& p0, Part& p1) {
    now_ += 60;
    manager_->schedule();
    for (const char* n : {"f1", "f2"}) {
      auto l = actions(beat(n, epoch[n]), "launch");
      ASSERT_EQ(l.size(), 1u) << n << job(gang_job).dump();
      Part& p = l[0]["rendezvous"]["node_rank"] == 0 ? p0 : p1;
      p = {n, l[0]["lease"].get<std::int64_t>()};
    }
  };
  Part p0, p1;
  launch_both(p0, p1);
  ASSERT_FALSE(HasFatalFailure());
  beat(p1.node, epoch[p1.node], {exited(p1.lease, 0, 1, false)});
  EXPECT_EQ(job(gang_job)["failures"], 1);
  EXPECT_EQ(job(gang_job)["state"], "queued");
  auto revokes = actions(beat(p0.node, epoch[p0.node], {running(p0.lease, 400)}), "revoke");
  ASSERT_EQ(revokes.size(), 1u);
  EXPECT_EQ(revokes[0]["lease"], p0.lease);
  beat(p0.node, epoch[p0.node], {exited(p0.lease, 400, 0, true)});

  // The job finishes only when every part has exited cleanly.
  launch_both(p0, p1);
  ASSERT_FALSE(HasFatalFailure());
  beat(p1.node, epoch[p1.node], {exited(p1.lease, 0, 0, false)});
  EXPECT_EQ(job(gang_job)["state"], "running");
  json a = beat(p0.node, epoch[p0.node], {running(p0.lease, 900)});
  EXPECT_EQ(actions(a, "renew").size(), 1u) << a.dump();
  EXPECT_TRUE(actions(a, "revoke").empty()) << a.dump();
  beat(p0.node, epoch[p0.node], {exited(p0.lease, 1000, 0, false)});
  EXPECT_EQ(job(gang_job)["state"], "finished");
  EXPECT_EQ(job(gang_job)["failures"], 1);
  EXPECT_EQ(manager_->cluster(as("admin-token"))["nodes"][0]["holders"].size(), 0u);
}

// A gang over nodes of two GPU types runs at its slowest worker's speed (docs/design.md
// §4, as the simulator charges it), so every part's launch names the slowest
// type: a job pacing itself by FAIRGPU_GPU_TYPE (fairgpu-train --speed-map,
// bench/fidelity.sh) ran a fast+slow gang at rank 0's fast speed.
TEST_F(LiveManager, AGangOverTwoGpuTypesIsToldTheSlowerType) {
  // Bob's two jobs leave one GPU of each type, so alice's 2-gang can only
  // mix them. (move=off: bob's slow job stays there.)
  config_.policy_options.set("move", "off");
  start();
  std::map<std::string, std::int64_t> epoch = {{"f1", reg("f1", "fast", 2)},
                                               {"s1", reg("s1", "slow", 2)}};
  manager_->set_drained(as("admin-token"), "f1", true);
  const std::string on_slow = submit("bob-token")["id"];
  ASSERT_NO_THROW(manager_->schedule()) << "schedule 1";
  EXPECT_EQ(actions(beat("s1", epoch["s1"]), "launch").size(), 1u);
  manager_->set_drained(as("admin-token"), "f1", false);
  const std::string on_fast = submit("bob-token")["id"];
  now_ += 60;
  ASSERT_NO_THROW(manager_->schedule()) << "schedule 2";
  EXPECT_EQ(actions(beat("f1", epoch["f1"]), "launch").size(), 1u);
  ASSERT_EQ(job(on_slow)["node"], "s1");
  ASSERT_EQ(job(on_fast)["node"], "f1");
  const std::string gang_job = submit("alice-token", "mlp", 2)["id"];
  now_ += 60;
  ASSERT_NO_THROW(manager_->schedule()) << "schedule 3";
  ASSERT_EQ(job(gang_job)["state"], "running") << job(gang_job).dump();
  ASSERT_EQ(job(gang_job)["nodes"].size(), 2u) << job(gang_job).dump();
  int parts = 0;
  for (const char* n : {"f1", "s1"})
    for (const json& l : actions(beat(n, epoch[n]), "launch")) {
      if (l["job"] != gang_job) continue;  // bob's, not yet reported running
      ++parts;
      EXPECT_EQ(l["gpu_type"], "slow") << n << " (rank " << l["rendezvous"]["rank"] << ")";
    }
  EXPECT_EQ(parts, 2);
}

// A part whose launch is revoked before its node's agent heard of it (the
// other part failed at once) ends at that agent's next heartbeat, which does
// not report it: the job is not left "Stopping" for ever.
TEST_F(LiveManager, AGangPartRevokedBeforeItsLaunchEndsAtItsNodesNextHeartbeat) {
  start();
  const auto e1 = reg("f1", "fast", 2);
  const auto e2 = reg("f2", "fast", 2);
  const std::string id = submit("alice-token", "mlp", 4)["id"];
  manager_->schedule();
  auto l1 = actions(beat("f1", e1), "launch");
  ASSERT_EQ(l1.size(), 1u);
  const std::int64_t lease = l1[0]["lease"];
  beat(
      "f1", e1,
      {{{"lease", lease}, {"state", "launch_failed"}, {"iterations", 0}, {"log_tail", "no exec"}}});
  EXPECT_EQ(job(id)["failures"], 1);
  EXPECT_EQ(job(id)["pending"]["reason"], "Stopping");  // f2's part is revoked
  json a = beat("f2", e2);                              // f2's agent never ran it
  EXPECT_TRUE(actions(a, "launch").empty()) << a.dump();
  EXPECT_NE(job(id)["pending"]["reason"], "Stopping") << job(id).dump();
  now_ += 60;
  manager_->schedule();
  EXPECT_EQ(actions(beat("f1", e1), "launch").size(), 1u);
  EXPECT_EQ(actions(beat("f2", e2), "launch").size(), 1u);
}

// Issue 32, defect 2: one rule for tenants at a start and at a reload. The
// config is the truth for the tenants it names (an API change of one lasts
// until the next start or reload); a tenant made through the API and named
// in no config is kept; a tenant of an earlier config (a reinstall with a
// fresh config) authenticates nobody. Before, a start kept what the API had
// set and every stored token, and a reload dropped the API's tenants.
TEST_F(LiveManager, TenantsFollowOneRuleAtStartAndAtReload) {
  const Caller::Role kNoOne = Caller::Role::kNone;
  auto weight_of = [&](const std::string& name) {
    const json list = manager_->tenants(as("admin-token"))["tenants"];
    for (const json& t : list)
      if (t["name"] == name) return t["weight"].get<double>();
    return -1.0;
  };
  auto api_changes = [&] {
    manager_->set_tenant(as("admin-token"),
                         {{"name", "carol"}, {"weight", 2.0}, {"token", "carol-token"}});
    manager_->set_tenant(as("admin-token"), {{"name", "alice"}, {"weight", 5.0}});
    ASSERT_EQ(weight_of("alice"), 5.0);
    ASSERT_NE(as("carol-token").role, kNoOne);
  };
  start();
  api_changes();
  // A restart and a reload of the same config end in the same place.
  for (const char* how : {"restart", "reload"}) {
    SCOPED_TRACE(how);
    if (std::string(how) == "restart")
      start();
    else
      manager_->reload(config_);
    EXPECT_EQ(weight_of("alice"), 1.0);           // the config's
    EXPECT_NE(as("carol-token").role, kNoOne);   // the API's own, kept
    EXPECT_EQ(weight_of("carol"), 2.0);
    api_changes();
  }
  // A new config with fresh tokens and other tenants (a reinstall): the old
  // config's tokens work no more, after a restart as after a reload.
  const ServeConfig old = config_;
  config_.tenants = {{"default", 1.0, "default-token", "", {}}};
  for (const char* how : {"restart", "reload"}) {
    SCOPED_TRACE(how);
    if (std::string(how) == "restart") {
      start();
    } else {
      config_ = old;
      start();
      config_.tenants = {{"default", 1.0, "default-token", "", {}}};
      manager_->reload(config_);
    }
    EXPECT_EQ(as("alice-token").role, kNoOne);
    EXPECT_EQ(as("bob-token").role, kNoOne);
    EXPECT_NE(as("default-token").role, kNoOne);
    EXPECT_NE(as("carol-token").role, kNoOne);
  }
}

// Issue 32, defect 3: a launch an agent refuses because it is stopping
// (launch_failed with revoked) is the node's event: no failure is counted
// and the job waits for its next lease (before: job_retry failures=1, so a
// rolling restart of agents could fail a user's job).
TEST_F(LiveManager, ALaunchRefusedByAStoppingAgentIsNotTheJobsFailure) {
  start();
  const auto e1 = reg("f1", "fast", 1);
  const std::string id = submit("alice-token")["id"];
  manager_->schedule();
  auto l1 = actions(beat("f1", e1), "launch");
  ASSERT_EQ(l1.size(), 1u);
  const std::int64_t lease = l1[0]["lease"];
  beat("f1", e1,
       {{{"lease", lease},
         {"state", "launch_failed"},
         {"iterations", 0},
         {"revoked", true},
         {"log_tail", "agent shutting down"}}});
  EXPECT_EQ(job(id)["failures"], 0) << job(id).dump();
  EXPECT_EQ(job(id)["state"], "queued");
  now_ += 60;
  manager_->schedule();
  EXPECT_EQ(actions(beat("f1", e1), "launch").size(), 1u);  // launched again
}

// Issue 30, H9's node side: launches a node fails for its own reason
// ("node_fault", e.g. a full disk) never count against the job, and
// node_fault_limit of them in a row drain the node, saying why, so its jobs
// go elsewhere. A launch that works in between starts the count afresh.
TEST_F(LiveManager, ANodeWhoseLaunchesKeepFailingForItsOwnReasonIsDrained) {
  config_.node_fault_limit = 3;
  config_.max_retries = 0;  // one counted failure would fail the job
  start();
  const auto bad = reg("bad", "fast", 1);
  const std::string id = submit("alice-token")["id"];
  auto fail_once = [&] {
    now_ += 60;
    manager_->schedule();
    auto launches = actions(beat("bad", bad), "launch");
    if (launches.size() != 1u) return false;
    beat("bad", bad,
         {{{"lease", launches[0]["lease"]},
           {"state", "launch_failed"},
           {"iterations", 0},
           {"revoked", true},
           {"node_fault", true},
           {"log_tail", "cannot write pid file /state/runs/1/pid"}}});
    return true;
  };
  auto node_state = [&] {
    return manager_->cluster(as("admin-token"))["nodes"][0];
  };
  ASSERT_TRUE(fail_once());
  ASSERT_TRUE(fail_once());
  // A run that does start resets the count.
  now_ += 60;
  manager_->schedule();
  auto launches = actions(beat("bad", bad), "launch");
  ASSERT_EQ(launches.size(), 1u);
  beat("bad", bad, {running(launches[0]["lease"], 1)});
  beat("bad", bad, {exited(launches[0]["lease"], 1, 0, true)});
  ASSERT_TRUE(fail_once());
  ASSERT_TRUE(fail_once());
  EXPECT_EQ(node_state()["state"], "ready") << node_state().dump();
  ASSERT_TRUE(fail_once());
  const json n = node_state();
  EXPECT_EQ(n["state"], "drained") << n.dump();
  EXPECT_NE(n.value("reason", "").find("node faults: 3 launches in a row"), std::string::npos)
      << n.dump();
  EXPECT_NE(n.value("reason", "").find("cannot write pid file"), std::string::npos) << n.dump();
  EXPECT_EQ(job(id)["failures"], 0) << job(id).dump();
  EXPECT_EQ(job(id)["state"], "queued") << job(id).dump();
  // Nothing more goes to the drained node; the job runs on another.
  now_ += 60;
  manager_->schedule();
  EXPECT_TRUE(actions(beat("bad", bad), "launch").empty());
  const auto good = reg("good", "fast", 1);
  now_ += 60;
  manager_->schedule();
  launches = actions(beat("good", good), "launch");
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0]["job"], id);
  // The drain survives a restart (a reason kept, as the admin's).
  start();
  EXPECT_EQ(manager_->cluster(as("admin-token"))["nodes"][0]["state"], "drained");
}

// Review of issue 12: a job whose type has no throughput for its gang on any
// GPU type that could hold it waits with Resources, not Round/Priority.
TEST_F(LiveManager, AJobWithNoThroughputAnywhereSaysResources) {
  std::ofstream(dir_ + "/profiles.json") << R"json({"fast": {"('mlp', 1)": {"null": 4.0},
      "('mlp', 2)": {"null": 0.0}}})json";
  start();
  const auto e = reg("f1", "fast", 2);
  const std::string two = submit("alice-token", "mlp", 2)["id"];
  const std::string one = submit("bob-token", "mlp", 1)["id"];
  EXPECT_EQ(job(two)["state"], "queued");
  json p = job(two)["pending"];
  EXPECT_EQ(p["reason"], "Resources") << p.dump();
  EXPECT_EQ(p["detail"],
            "job type mlp has no throughput for 2 workers on the GPU types that have 2 GPUs");
  EXPECT_EQ(job(one)["pending"]["reason"], "Round");
  manager_->schedule();
  beat("f1", e);
  EXPECT_EQ(job(one)["state"], "running");
  EXPECT_EQ(job(two)["pending"]["reason"], "Resources");
}

TEST_F(LiveManager, NewLeaseWaitsUntilTheDevicesPreviousRunStopped) {
  start();
  const auto e = reg("n1", "fast", 1);
  submit("alice-token");
  submit("bob-token");
  manager_->schedule();
  json a = beat("n1", e);
  auto first = actions(a, "launch");
  ASSERT_EQ(first.size(), 1u);
  const std::int64_t old_lease = first[0]["lease"];
  const std::string first_job = first[0]["job"];

  // At the lease end OEF's rounding gives the one GPU to the other tenant:
  // the old run is revoked, the new lease waits for it to stop.
  now_ += 60;
  manager_->schedule();
  a = beat("n1", e, {running(old_lease, 200)});
  EXPECT_EQ(actions(a, "revoke").size(), 1u);
  EXPECT_TRUE(actions(a, "launch").empty()) << a.dump();
  EXPECT_EQ(job(first_job)["state"], "queued");
  EXPECT_EQ(job(first_job)["preemptions"], 1);

  // Stopped after its checkpoint: acknowledged, and the new run launches.
  now_ += 2;
  a = beat("n1", e, {exited(old_lease, 230, 0, true)});
  EXPECT_EQ(a["ack"], json::array({old_lease}));
  auto second = actions(a, "launch");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_NE(second[0]["job"], first_job);
  EXPECT_EQ(job(first_job)["iterations_done"], 230.0);
  EXPECT_EQ(job(first_job)["state"], "queued");
}

// Work-conserving rounds: a run that finishes mid-round frees its GPU, and
// the next tick starts the waiting job the policy picks next under a lease
// to the round's end; at the round's end the plan renews or revokes it.
TEST_F(LiveManager, AGpuFreedMidRoundGoesToTheNextWaitingJobUntilTheRoundEnds) {
  for (const bool midround : {true, false}) {
    SCOPED_TRACE(midround ? "midround=on" : "midround=off");
    config_.policy = midround ? "oef-coop" : "oef-coop:midround=off";
    config_.tenants[1].weight = 3;  // bob: 3/4 of the GPU once he has a job
    std::filesystem::remove_all(config_.data_dir);
    node_tokens_.clear();
    start();
    const auto e = reg("n1", "fast", 1);
    const std::string a1 = submit("alice-token")["id"], a2 = submit("alice-token")["id"];
    manager_->schedule();  // the round [1000, 1060)
    json answer = beat("n1", e);
    auto launches = actions(answer, "launch");
    ASSERT_EQ(launches.size(), 1u);
    const std::string first = launches[0]["job"];
    const std::string second = first == a1 ? a2 : a1;
    const std::int64_t lease = launches[0]["lease"];
    EXPECT_EQ(job(second)["state"], "queued");

    // Finished at 1020: the GPU is free for the rest of the round.
    now_ += 20;
    beat("n1", e, {exited(lease, 1000, 0, false)});
    EXPECT_EQ(job(first)["state"], "finished");
    manager_->tick();
    if (!midround) {
      EXPECT_EQ(job(second)["state"], "queued");
      continue;
    }
    EXPECT_EQ(job(second)["state"], "running");
    answer = beat("n1", e);
    launches = actions(answer, "launch");
    ASSERT_EQ(launches.size(), 1u);
    EXPECT_EQ(launches[0]["job"], second);
    // Its lease ends with the round (plus the heartbeat timeout agents get).
    EXPECT_NEAR(launches[0]["lease_s_left"].get<double>(), 40 + config_.heartbeat_timeout_s, 1e-9);
    const std::int64_t midround_lease = launches[0]["lease"];

    // Bob (weight 3) submits; at the round's end the plan gives him the GPU:
    // alice's mid-round run is revoked as the plan says.
    now_ += 10;
    const std::string b1 = submit("bob-token")["id"];
    now_ += 30;
    manager_->schedule();
    answer = beat("n1", e, {running(midround_lease, 300)});
    ASSERT_EQ(actions(answer, "revoke").size(), 1u) << answer.dump();
    EXPECT_EQ(actions(answer, "revoke")[0]["lease"], midround_lease);
    EXPECT_EQ(job(second)["state"], "queued");
    EXPECT_EQ(job(b1)["state"], "running");
  }
}

TEST_F(LiveManager, RestartReloadsJobsAndLeasesFromTheStore) {
  start();
  const auto e = reg("n1", "fast", 2);
  auto j1 = submit("alice-token");
  auto j2 = submit("bob-token");
  manager_->schedule();
  auto launches = actions(beat("n1", e), "launch");
  ASSERT_EQ(launches.size(), 2u);
  now_ += 5;
  beat("n1", e, {running(launches[0]["lease"], 10), running(launches[1]["lease"], 20)});

  // A new manager on the same data (as after kill -9): same jobs, same
  // leases, the agent's epoch still valid, its runs renewed, not relaunched.
  start();
  EXPECT_EQ(manager_->jobs(as("admin-token"), "")["jobs"].size(), 2u);
  json a = beat("n1", e, {running(launches[0]["lease"], 30), running(launches[1]["lease"], 40)});
  EXPECT_EQ(actions(a, "renew").size(), 2u);
  EXPECT_TRUE(actions(a, "launch").empty());
  EXPECT_TRUE(actions(a, "revoke").empty());
  EXPECT_EQ(job(j1["id"])["state"], "running");
  manager_->schedule();  // the state rebuilt from the store plans without conflict
  a = beat("n1", e, {running(launches[0]["lease"], 35), running(launches[1]["lease"], 45)});
  EXPECT_TRUE(actions(a, "launch").empty());
  EXPECT_EQ(job(j2["id"])["iterations_done"], 45.0);
}

// Issue 32 item 11: the first round after a restart (a new policy, built
// beside the running jobs) does not reshuffle them. Alice's A1 and A2 run
// on both GPUs, A3 waits; before, the rebuilt placer knew of no quantum and
// started A3, the longest waiting, in place of A2 (a preemption that buys
// alice nothing).
TEST_F(LiveManager, TheFirstRoundAfterARestartKeepsTheJobsThatWereRunning) {
  start();
  const auto e = reg("n1", "slow", 2);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(submit("alice-token", "mlp", 1, 1e5)["id"]);
  manager_->schedule();
  auto launches = actions(beat("n1", e), "launch");
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(job(ids[2])["state"], "queued");
  now_ += 5;
  beat("n1", e, {running(launches[0]["lease"], 5), running(launches[1]["lease"], 5)});

  start();  // kill -9 and a restart on the same store
  now_ += 60;
  beat("n1", e, {running(launches[0]["lease"], 65), running(launches[1]["lease"], 65)});
  manager_->schedule();
  json a = beat("n1", e, {running(launches[0]["lease"], 66), running(launches[1]["lease"], 66)});
  EXPECT_TRUE(actions(a, "revoke").empty()) << a.dump();
  EXPECT_TRUE(actions(a, "launch").empty()) << a.dump();
  EXPECT_EQ(job(ids[0])["state"], "running");
  EXPECT_EQ(job(ids[1])["state"], "running");
  EXPECT_EQ(job(ids[2])["state"], "queued");
  EXPECT_EQ(job(ids[1])["preemptions"], 0);
}

// ---- quotas (issue 30, M3) ---------------------------------------------------

// A call's ApiError as "STATUS message" ("ok" when it succeeds).
std::string api_error(const std::function<void()>& call) {
  try {
    call();
  } catch (const ApiError& e) {
    return std::to_string(e.status()) + " " + e.what();
  }
  return "ok";
}

TEST_F(LiveManager, SubmissionsOverAQuotaAreRefusedAndLeaveNothing) {
  config_.policy = "fifo";
  config_.tenants[0].quotas.max_jobs_queued = 2;
  config_.tenants[0].quotas.max_jobs_active = 3;
  config_.tenants[0].quotas.max_gpus_per_job = 2;
  start();
  // No node yet: jobs wait. Two of alice's may; a third is over the quota.
  const std::string a1 = submit("alice-token")["id"];
  submit("alice-token");
  EXPECT_EQ(api_error([&] { submit("alice-token"); }),
            "400 tenant alice: over its quota max_jobs_queued: 2 jobs waiting, the quota is 2");
  EXPECT_EQ(api_error([&] { submit("alice-token", "mlp", 3); }),
            "400 tenant alice: over its quota max_gpus_per_job: a job of 3 GPUs is over the "
            "quota of 2");
  // Bob has no quota: his submissions go on whatever alice's are.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(api_error([&] { submit("bob-token"); }), "ok");
  // The admin submitting for alice is held to alice's quotas too.
  EXPECT_EQ(api_error([&] {
              manager_->submit(as("admin-token"), {{"job_type", "mlp"},
                                                   {"workers", 1},
                                                   {"iterations", 10},
                                                   {"tenant", "alice"},
                                                   {"command", {"true"}}});
            }).substr(0, 50),
            "400 tenant alice: over its quota max_jobs_queued: ");

  // Alice's two run (fifo, 6 GPUs): none waits, so a third may wait, but a
  // fourth would make four jobs queued or running.
  reg("f1", "fast", 6);
  manager_->schedule();
  EXPECT_EQ(job(a1)["state"], "running");
  EXPECT_EQ(api_error([&] { submit("alice-token"); }), "ok");
  EXPECT_EQ(api_error([&] { submit("alice-token"); }),
            "400 tenant alice: over its quota max_jobs_active: 3 jobs queued or running, the "
            "quota is 3");

  // Nothing of the refused ones was stored: ids are consecutive, and a new
  // manager on the same store finds alice's three and bob's four.
  start();
  const json all = manager_->jobs(as("admin-token"), "")["jobs"];
  ASSERT_EQ(all.size(), 7u) << all.dump();
  std::map<std::string, int> by_tenant;
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i]["id"], fmt::format("j-{:06d}", i + 1));
    ++by_tenant[all[i]["tenant"].get<std::string>()];
  }
  EXPECT_EQ(by_tenant["alice"], 3);
  EXPECT_EQ(by_tenant["bob"], 4);
}

TEST_F(LiveManager, QuotaRefusalsAreCountedInMetrics) {
  config_.tenants[1].quotas.max_gpus_per_job = 1;
  start();
  EXPECT_NE(api_error([&] { submit("bob-token", "mlp", 2); }), "ok");
  EXPECT_NE(api_error([&] { submit("bob-token", "mlp", 4); }), "ok");
  const std::string m = manager_->metrics();
  EXPECT_NE(m.find("# TYPE fairgpu_quota_refusals_total counter\n"), std::string::npos) << m;
  EXPECT_NE(m.find("fairgpu_quota_refusals_total{tenant=\"bob\",quota=\"max_gpus_per_job\"} 2\n"),
            std::string::npos)
      << m;
  EXPECT_EQ(m.find("tenant=\"alice\",quota="), std::string::npos) << m;
}

TEST_F(LiveManager, GpuQuotaHoldsStartsAndAReloadThatLowersItStopsNothing) {
  config_.policy = "fifo";
  config_.tenants[0].quotas.max_gpus_running = 3;
  start();
  const auto e = reg("f1", "fast", 4);
  // Alice: a 2-GPU job and two 1-GPU jobs (4 GPUs, her quota 3); bob: one,
  // after hers. Fifo without the quota would start alice's three.
  const std::string a1 = submit("alice-token", "mlp", 2)["id"];
  const std::string a2 = submit("alice-token")["id"];
  const std::string a3 = submit("alice-token")["id"];
  const std::string b1 = submit("bob-token")["id"];
  manager_->schedule();
  EXPECT_EQ(job(a1)["state"], "running");
  EXPECT_EQ(job(a2)["state"], "running");
  EXPECT_EQ(job(a3)["state"], "queued");  // alice holds 3
  // Another tenant is not held back: a3 is out of the policy's choice, and
  // the GPU fifo would have given it goes to bob's job behind it.
  EXPECT_EQ(job(b1)["state"], "running");
  auto launches = actions(beat("f1", e), "launch");
  ASSERT_EQ(launches.size(), 3u);
  std::map<std::string, std::int64_t> lease_of;
  std::vector<json> runs;
  for (const json& l : launches) {
    lease_of[l["job"].get<std::string>()] = l["lease"].get<std::int64_t>();
    runs.push_back(running(l["lease"], 1));
  }
  now_ += 1;
  beat("f1", e, runs);

  // The quota lowered to 1 (and max_jobs_queued to 1) by a reload: what
  // runs keeps running, renewed on the same leases round after round (fifo's
  // leases run 900 s: three rounds 400 s apart renew them).
  ServeConfig next = config_;
  next.tenants[0].quotas.max_gpus_running = 1;
  next.tenants[0].quotas.max_jobs_queued = 1;
  const json answer = manager_->reload(next);
  EXPECT_NE(answer["changed"].dump().find("tenant alice quotas"), std::string::npos) << answer;
  for (int round = 0; round < 3; ++round) {
    now_ += 400;
    beat("f1", e, runs);
    manager_->schedule();
    json a = beat("f1", e, runs);
    EXPECT_TRUE(actions(a, "revoke").empty()) << a.dump();
    EXPECT_TRUE(actions(a, "launch").empty()) << a.dump();
  }
  EXPECT_EQ(job(a1)["state"], "running");
  EXPECT_EQ(job(a1)["lease"], lease_of[a1]);
  EXPECT_EQ(job(a2)["lease"], lease_of[a2]);
  EXPECT_EQ(job(a3)["state"], "queued");
  // a3 waits: a new submission is over the lowered max_jobs_queued.
  EXPECT_EQ(api_error([&] { submit("alice-token"); }),
            "400 tenant alice: over its quota max_jobs_queued: 1 jobs waiting, the quota is 1");
  EXPECT_EQ(api_error([&] { submit("bob-token"); }), "ok");

  // a1 and a2 finish: alice holds nothing, and a3 (1 GPU) starts.
  now_ += 1;
  beat("f1", e, {exited(lease_of[a1], 1000, 0, false), exited(lease_of[a2], 1000, 0, false),
                 running(lease_of[b1], 2)});
  EXPECT_EQ(job(a1)["state"], "finished");
  now_ += 60;
  manager_->schedule();
  EXPECT_EQ(job(a3)["state"], "running");
}

TEST_F(LiveManager, CheckpointBytesOverTheQuotaRefuseSubmissions) {
  config_.tenants[0].quotas.max_checkpoint_bytes = 1000;
  start();
  const std::string a1 = submit("alice-token")["id"];
  const std::string b1 = submit("bob-token")["id"];
  // What alice's job checkpointed (a file and a nested one), and bob's.
  namespace fs = std::filesystem;
  fs::create_directories(config_.checkpoint_dir + "/" + a1 + "/step-1");
  std::ofstream(config_.checkpoint_dir + "/" + a1 + "/latest.pt") << std::string(600, 'x');
  std::ofstream(config_.checkpoint_dir + "/" + a1 + "/step-1/model.pt") << std::string(500, 'x');
  fs::create_directories(config_.checkpoint_dir + "/" + b1);
  std::ofstream(config_.checkpoint_dir + "/" + b1 + "/latest.pt") << std::string(5000, 'x');
  // Not measured yet: nothing is known, nothing refused.
  EXPECT_EQ(api_error([&] { submit("alice-token"); }), "ok");
  manager_->measure_checkpoints();
  EXPECT_EQ(api_error([&] { submit("alice-token"); }),
            "400 tenant alice: over its quota max_checkpoint_bytes: its checkpoint folders hold "
            "1100 bytes (measured 0 s ago), the quota is 1000");
  EXPECT_EQ(api_error([&] { submit("bob-token"); }), "ok");  // bob has no such quota
  const std::string m = manager_->metrics();
  EXPECT_NE(m.find("fairgpu_tenant_checkpoint_bytes{tenant=\"alice\"} 1100\n"), std::string::npos)
      << m;
  // Her folders cleaned up: measured again, she may submit.
  fs::remove_all(config_.checkpoint_dir + "/" + a1 + "/step-1");
  manager_->measure_checkpoints();
  EXPECT_EQ(api_error([&] { submit("alice-token"); }), "ok");
}

TEST_F(LiveManager, SubmissionIsDurableWhenAcknowledged) {
  start();
  const std::string id = submit("alice-token")["id"];
  // A second connection, as a crash would leave it: the row is there.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((config_.data_dir + "/fairgpu.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT tenant, state FROM jobs WHERE id = ?1", -1, &st, nullptr), SQLITE_OK);
  sqlite3_bind_text(st, 1, id.c_str(), -1, SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "alice");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST_F(LiveManager, LostNodeJobsRelaunchOnlyAfterTheFenceTime) {
  start();
  const auto ea = reg("a", "fast", 1);
  const auto eb = reg("b", "fast", 1);
  const std::string id = submit("alice-token")["id"];
  manager_->schedule();
  json la = beat("a", ea), lb = beat("b", eb);
  const bool on_a = !actions(la, "launch").empty();
  const std::string lost = on_a ? "a" : "b", other = on_a ? "b" : "a";
  const auto e_lost = on_a ? ea : eb, e_other = on_a ? eb : ea;
  const std::int64_t lease = (on_a ? la : lb)["actions"][0]["lease"];
  const double last_heard = now_;

  // The other node keeps beating; the job's node goes silent.
  for (int s = 0; s < 6; ++s) {
    now_ += 1;
    beat(other, e_other);
    manager_->tick();
  }
  EXPECT_EQ(job(id)["state"], "queued");
  const double fence = last_heard + config_.heartbeat_timeout_s + config_.grace_s +
                       config_.kill_after_s + config_.heartbeat_s;
  ASSERT_LT(now_, fence);
  manager_->schedule();
  EXPECT_TRUE(actions(beat(other, e_other), "launch").empty()) << "relaunched before the fence";
  now_ = fence + 0.5;
  manager_->schedule();
  auto relaunch = actions(beat(other, e_other), "launch");
  ASSERT_EQ(relaunch.size(), 1u);
  EXPECT_EQ(relaunch[0]["job"], id);
  EXPECT_NE(relaunch[0]["lease"], lease);

  // The partitioned agent comes back: told its epoch is stale.
  try {
    beat(lost, e_lost, {running(lease, 10)});
    FAIL() << "expected 409";
  } catch (const ApiError& err) {
    EXPECT_EQ(err.status(), 409);
  }
}

// Issue 30 H8: a job being moved off a node that then goes silent waits for
// the lost node's fence time too: its new lease on the other node stays
// pending until then (both runs would write the same checkpoint folder).
TEST_F(LiveManager, AJobMovedOffANodeThatGoesSilentStartsOnlyAfterTheFenceTime) {
  start();
  const auto ea = reg("a", "fast", 1);
  const std::string id = submit("alice-token")["id"];
  manager_->schedule();
  const auto launched = actions(beat("a", ea), "launch");
  ASSERT_EQ(launched.size(), 1u);
  const std::int64_t lease = launched[0]["lease"];
  const auto eb = reg("b", "fast", 1);
  // Drained: revoked on a (it checkpoints and stops), a new lease on b waits
  // for that run to end. a goes silent without reporting it.
  manager_->set_drained(as("admin-token"), "a", true, "");
  beat("a", ea, {running(lease, 10)});
  const double last_heard = now_;
  manager_->schedule();
  for (int s = 0; s < 6; ++s) {
    now_ += 1;
    EXPECT_TRUE(actions(beat("b", eb), "launch").empty()) << "launched while a's run may live";
    manager_->tick();
    manager_->schedule();
  }
  const double fence = last_heard + config_.heartbeat_timeout_s + config_.grace_s +
                       config_.kill_after_s + config_.heartbeat_s;
  ASSERT_LT(now_, fence);
  EXPECT_TRUE(actions(beat("b", eb), "launch").empty()) << "launched before the fence";
  now_ = fence + 0.5;
  manager_->tick();
  manager_->schedule();
  const auto relaunch = actions(beat("b", eb), "launch");
  ASSERT_EQ(relaunch.size(), 1u);
  EXPECT_EQ(relaunch[0]["job"], id);
}

TEST_F(LiveManager, UnknownJobTypeIsProfiledOnEachGpuTypeFirst) {
  start();
  const auto ef = reg("f1", "fast", 1);
  const auto es = reg("s1", "slow", 1);
  const std::string id = submit("alice-token", "newnet")["id"];
  EXPECT_EQ(job(id)["state"], "profiling");
  std::map<std::string, double> measured;
  for (int type_round = 0; type_round < 2; ++type_round) {
    manager_->schedule();
    json af = beat("f1", ef), as_ = beat("s1", es);
    auto lf = actions(af, "launch"), ls = actions(as_, "launch");
    ASSERT_EQ(lf.size() + ls.size(), 1u) << "one profiling run at a time for one job";
    const bool fast = !lf.empty();
    const std::string node = fast ? "f1" : "s1";
    const auto epoch = fast ? ef : es;
    const std::int64_t lease = (fast ? lf : ls)[0]["lease"];
    const double rate = fast ? 8.0 : 2.0;  // what this "GPU" does
    const double base = type_round * 100.0;
    now_ += 3;  // start-up, not timed
    beat(node, epoch, {running(lease, base + 5)});
    now_ += 60 / rate;  // 60 more iterations
    json a = beat(node, epoch, {running(lease, base + 5 + 60)});
    ASSERT_EQ(actions(a, "revoke").size(), 1u) << a.dump();
    now_ += 1;
    beat(node, epoch, {exited(lease, base + 70, 0, true)});
    measured[fast ? "fast" : "slow"] = rate;
  }
  EXPECT_EQ(measured.size(), 2u);
  EXPECT_EQ(job(id)["state"], "queued");
  json p = manager_->profiles(as("alice-token"))["profiles"];
  int found = 0;
  for (const json& row : p)
    if (row["job_type"] == "newnet") {
      ++found;
      EXPECT_EQ(row["source"], "measured");
      EXPECT_NEAR(row["iterations_per_s"].get<double>(), measured[row["gpu_type"]], 1e-9);
    }
  EXPECT_EQ(found, 2);
  EXPECT_EQ(job(id)["iterations_done"], 170.0);
  manager_->schedule();  // now a normal job
  json a = beat("f1", ef);
  json b = beat("s1", es);
  EXPECT_EQ(actions(a, "launch").size() + actions(b, "launch").size(), 1u);
  EXPECT_EQ(job(id)["state"], "running");
}

// Issue 32, defect 1: two jobs of a new type profiled at once, one on each
// GPU type. Each run measures one type; the job whose run ends last finds
// its type fully measured and queues, and so must the other, whose own run
// ended while the other type was still unmeasured (it stayed "profiling"
// for good, its GPUs idle).
TEST_F(LiveManager, EveryJobLeavesProfilingOnceItsTypeIsMeasuredEverywhere) {
  start();
  const auto ef = reg("f1", "fast", 1);
  const auto es = reg("s1", "slow", 1);
  // One tenant's two jobs (measured profiles are per tenant: LiveProfiles).
  const std::string a = submit("alice-token", "newnet")["id"];
  const std::string b = submit("alice-token", "newnet")["id"];
  manager_->schedule();
  const auto lf = actions(beat("f1", ef), "launch"), ls = actions(beat("s1", es), "launch");
  ASSERT_EQ(lf.size(), 1u);
  ASSERT_EQ(ls.size(), 1u);
  ASSERT_NE(lf[0]["job"], ls[0]["job"]) << "one job per GPU type";
  const std::int64_t fast_lease = lf[0]["lease"], slow_lease = ls[0]["lease"];
  // The fast run measures first (8 it/s), then the slow one (2 it/s).
  now_ += 3;
  beat("f1", ef, {running(fast_lease, 5)});
  beat("s1", es, {running(slow_lease, 5)});
  now_ += 60 / 8.0;
  ASSERT_EQ(actions(beat("f1", ef, {running(fast_lease, 65)}), "revoke").size(), 1u);
  now_ += 1;
  beat("f1", ef, {exited(fast_lease, 70, 0, true)});
  manager_->schedule();
  now_ += 60 / 2.0;
  ASSERT_EQ(actions(beat("s1", es, {running(slow_lease, 5 + 60 + 2)}), "revoke").size(), 1u);
  now_ += 1;
  beat("s1", es, {exited(slow_lease, 70, 0, true)});
  now_ += 1;
  manager_->schedule();
  for (const std::string& id : {a, b}) EXPECT_NE(job(id)["state"], "profiling") << id;
  // Both run now, one on each GPU.
  const std::size_t launches =
      actions(beat("f1", ef), "launch").size() + actions(beat("s1", es), "launch").size();
  EXPECT_EQ(launches, 2u);
}

TEST_F(LiveManager, ProfilingRunHoldsItsDeviceOutsideThePolicy) {
  // One node, two GPUs of a type "mlp" has figures for, two mlp jobs on them;
  // then a "newnet" job arrives: at the lease end its profiling run takes one
  // device, and the policy's (validated) plan has only the other, this
  // round and the next.
  start();
  const auto e = reg("f1", "fast", 2);
  for (const char* t : {"alice-token", "bob-token"}) submit(t);
  manager_->schedule();
  ASSERT_EQ(actions(beat("f1", e), "launch").size(), 2u);
  const std::string profiled = submit("alice-token", "newnet")["id"];
  auto check = [&] {
    std::set<int> profiling, policy;
    int profiling_leases = 0;
    const json cluster = manager_->cluster(as("admin-token"));
    for (const json& h : cluster["nodes"][0]["holders"]) {
      if (h["status"] == "revoking") continue;  // earlier runs, stopping
      if (h["profiling"].get<bool>()) {
        profiling.insert(h["device"].get<int>());
        ++profiling_leases;
        EXPECT_EQ(h["job"], profiled);
      } else {
        policy.insert(h["device"].get<int>());
      }
    }
    EXPECT_EQ(profiling_leases, 1) << cluster.dump();
    for (int d : profiling) EXPECT_EQ(policy.count(d), 0u) << "device " << d << " given twice";
    EXPECT_EQ(policy.size(), 1u);
  };
  for (int round = 0; round < 2; ++round) {
    now_ += 60;
    manager_->schedule();
    SCOPED_TRACE(round);
    check();
  }
  EXPECT_EQ(job(profiled)["state"], "profiling");
}

// Issue 12, defect 9: a job that never reports progress while profiled does
// not hold a GPU lease after lease: each profile_timeout_s is a failed
// attempt with its reason, and after max_retries more the job fails.
TEST_F(LiveManager, ProfilingThatNeverReportsProgressTimesOutAndFails) {
  config_.profile_timeout_s = 30;
  start();
  const auto e = reg("f1", "fast", 1);
  const std::string id = submit("alice-token", "newnet")["id"];
  for (int attempt = 0; attempt <= config_.max_retries; ++attempt) {
    SCOPED_TRACE(attempt);
    manager_->schedule();
    auto l = actions(beat("f1", e), "launch");
    ASSERT_EQ(l.size(), 1u);
    const std::int64_t lease = l[0]["lease"];
    EXPECT_EQ(job(id)["state"], "profiling");
    now_ += 29;
    EXPECT_FALSE(actions(beat("f1", e, {running(lease, 0)}), "renew").empty());
    manager_->schedule();  // not yet: 29 s < 30 s
    EXPECT_EQ(job(id)["failures"], attempt);
    now_ += 2;
    manager_->schedule();  // past its time: revoked, one failure more
    EXPECT_EQ(job(id)["failures"], attempt + 1);
    EXPECT_EQ(actions(beat("f1", e, {running(lease, 0)}), "revoke").size(), 1u);
    now_ += 1;
    beat("f1", e, {exited(lease, 0, 0, true)});
  }
  const json j = job(id);
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["failures"], config_.max_retries + 1);
  EXPECT_EQ(j["log_tail"], "no 50 iterations within the 30 s profiling lease");
  EXPECT_NE(j["finished_at"], nullptr);
  now_ += 60;
  manager_->schedule();
  EXPECT_TRUE(actions(beat("f1", e), "launch").empty()) << "a failed job is not profiled again";
}

TEST_F(LiveManager, FailingJobIsRetriedThenFailedWithItsLogTail) {
  start();
  const auto e = reg("n1", "fast", 1);
  const std::string id = submit("alice-token")["id"];
  for (int attempt = 0; attempt <= config_.max_retries; ++attempt) {
    manager_->schedule();
    auto l = actions(beat("n1", e), "launch");
    ASSERT_EQ(l.size(), 1u) << "attempt " << attempt;
    now_ += 1;
    beat("n1", e, {exited(l[0]["lease"], 0, 3, false)});
    now_ += 60;
  }
  json j = job(id);
  EXPECT_EQ(j["state"], "failed");
  EXPECT_EQ(j["failures"], config_.max_retries + 1);
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["log_tail"], "boom");
  manager_->schedule();
  EXPECT_TRUE(actions(beat("n1", e), "launch").empty());
}

// Issue 30, H2: a bad entry in a heartbeat's runs costs that run only. A
// progress count beyond the protocol's 1e15, a launch failure whose log tail
// is over 64 KiB and an entry without a lease were each answered 400 for the
// whole heartbeat, for ever: every run of the node was fenced and the node
// declared lost. Now the rest of the heartbeat is taken (the other tenant's
// run is renewed, its progress recorded, the node stays ready), the bad run
// is stopped and its end counts as a failure naming the field.
TEST_F(LiveManager, ABadRunEntryCostsThatRunOnlyNotTheNodesHeartbeat) {
  start();
  const auto e = reg("f1", "fast", 2);
  const std::string a = submit("alice-token")["id"];
  const std::string b = submit("bob-token")["id"];
  manager_->schedule();
  std::map<std::string, std::int64_t> lease;
  for (const json& l : actions(beat("f1", e), "launch")) lease[l["job"]] = l["lease"];
  ASSERT_EQ(lease.size(), 2u);
  const json huge = {{"lease", lease[a]}, {"state", "running"}, {"iterations", 9999999999999999}};
  auto lease_of = [](const std::vector<json>& list) {
    std::vector<std::int64_t> ids;
    for (const json& x : list) ids.push_back(x["lease"]);
    return ids;
  };
  auto node_state = [&] {
    return manager_->cluster(as("admin-token"))["nodes"][0]["state"].get<std::string>();
  };

  // Beyond the node's heartbeat timeout: the bad entry in every heartbeat.
  for (int s = 1; s <= 8; ++s) {
    now_ += 1;
    const json answer = beat(
        "f1", e, {huge, json{{"lease", "nope"}, {"state", "running"}}, running(lease[b], 10 * s)});
    EXPECT_EQ(lease_of(actions(answer, "revoke")), std::vector<std::int64_t>{lease[a]}) << answer;
    EXPECT_EQ(lease_of(actions(answer, "renew")), std::vector<std::int64_t>{lease[b]}) << answer;
    manager_->tick();
  }
  EXPECT_EQ(job(b)["iterations_done"], 80.0);
  EXPECT_EQ(job(a)["iterations_done"], 0.0) << "nothing of a refused report is taken";
  EXPECT_EQ(node_state(), "ready");
  EXPECT_EQ(job(b)["state"], "running");

  // Stopped as told, it reports a clean revoked exit: still a failure, with
  // the problem as its log tail.
  now_ += 1;
  json answer = beat("f1", e, {exited(lease[a], 30, 0, true), running(lease[b], 90)});
  EXPECT_EQ(answer["ack"], json::array({lease[a]}));
  json ja = job(a);
  EXPECT_EQ(ja["failures"], 1) << ja;
  EXPECT_NE(ja["state"], "running") << ja;
  EXPECT_NE(
      ja["log_tail"].get<std::string>().find("runs[0].iterations: expected a number in 0..1e15"),
      std::string::npos)
      << ja;

  // Its retry fails to launch with a 70 KiB reason: failed for good (one
  // retry allowed), bob's run untouched.
  now_ += 60;
  manager_->schedule();
  auto relaunch = actions(beat("f1", e, {running(lease[b], 100)}), "launch");
  ASSERT_EQ(relaunch.size(), 1u);
  ASSERT_EQ(relaunch[0]["job"], a);
  now_ += 1;
  const std::int64_t retry = relaunch[0]["lease"];
  answer = beat("f1", e,
                {running(lease[b], 110), json{{"lease", retry},
                                              {"state", "launch_failed"},
                                              {"iterations", 0},
                                              {"log_tail", std::string(70 * 1024, 'x')}}});
  EXPECT_EQ(answer["ack"], json::array({retry}));
  EXPECT_EQ(lease_of(actions(answer, "renew")), std::vector<std::int64_t>{lease[b]}) << answer;
  ja = job(a);
  EXPECT_EQ(ja["state"], "failed") << ja;
  EXPECT_EQ(ja["failures"], 2) << ja;
  EXPECT_NE(ja["log_tail"].get<std::string>().find("runs[1].log_tail: longer than 64 KiB"),
            std::string::npos)
      << ja;
  EXPECT_EQ(job(b)["iterations_done"], 110.0);
  EXPECT_EQ(job(b)["state"], "running");
  EXPECT_EQ(node_state(), "ready");

  // The frame itself is still taken whole or refused.
  try {
    manager_->heartbeat(agent("f1"), {{"node", "f1"}, {"epoch", e}, {"runs", "none"}});
    FAIL() << "expected 400";
  } catch (const ApiError& err) {
    EXPECT_EQ(err.status(), 400);
    EXPECT_STREQ(err.what(), "runs: expected an array");
  }
}

TEST_F(LiveManager, TokensMalformedRequestsAndCancel) {
  start();
  const std::string id = submit("alice-token")["id"];
  auto status_of = [](auto&& f) {
    try {
      f();
    } catch (const ApiError& e) {
      return e.status();
    }
    return 200;
  };
  EXPECT_EQ(status_of([&] { manager_->job(as("nope"), id); }), 401);
  EXPECT_EQ(status_of([&] { manager_->job(as("bob-token"), id); }), 403);
  EXPECT_EQ(status_of([&] { manager_->cancel(as("bob-token"), id); }), 403);
  EXPECT_EQ(status_of([&] { manager_->register_agent(as("alice-token"), json::object()); }), 403);
  EXPECT_EQ(manager_->jobs(as("bob-token"), "")["jobs"].size(), 0u);
  EXPECT_EQ(manager_->jobs(as("admin-token"), "")["jobs"].size(), 1u);

  auto message = [&](json body) -> std::string {
    try {
      manager_->submit(as("alice-token"), body);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      return e.what();
    }
    return "accepted";
  };
  json good = {{"job_type", "mlp"}, {"workers", 1}, {"iterations", 10}, {"command", "true"}};
  json b = good;
  b.erase("job_type");
  EXPECT_EQ(message(b), "job_type: missing required field");
  b = good;
  b["workers"] = 1.5;
  EXPECT_NE(message(b).find("workers"), std::string::npos);
  b = good;
  b["iterations"] = -1;
  EXPECT_NE(message(b).find("iterations"), std::string::npos);
  b = good;
  b["command"] = json::array({"a", 3});
  EXPECT_NE(message(b).find("command[1]"), std::string::npos);
  b = good;
  b["env"] = {{"CUDA_VISIBLE_DEVICES", "0"}};
  EXPECT_NE(message(b).find("env.CUDA_VISIBLE_DEVICES"), std::string::npos);
  b = good;
  b["colour"] = "red";
  EXPECT_NE(message(b).find("colour"), std::string::npos);
  EXPECT_EQ(status_of([&] { manager_->submit(as("alice-token"), {{"tenant", "bob"}, {"job_type", "mlp"}, {"workers", 1}, {"iterations", 1}, {"command", "x"}}); }), 403);
  // Nothing half-stored: still one job, in memory and after a restart.
  EXPECT_EQ(manager_->jobs(as("admin-token"), "")["jobs"].size(), 1u);
  start();
  EXPECT_EQ(manager_->jobs(as("admin-token"), "")["jobs"].size(), 1u);

  json c = manager_->cancel(as("alice-token"), id);
  EXPECT_EQ(c["state"], "cancelled");
  EXPECT_EQ(status_of([&] { manager_->cancel(as("alice-token"), id); }), 409);
}

TEST_F(LiveManager, AdminAddsTenantsAndChangesWeights) {
  start();
  auto status_of = [&](const Caller& c, const json& body) {
    try {
      manager_->set_tenant(c, body);
    } catch (const ApiError& e) {
      return e.status();
    }
    return 200;
  };
  EXPECT_EQ(status_of(as("alice-token"), {{"name", "carol"}, {"token", "carol-token"}}), 403);
  EXPECT_EQ(status_of(as("admin-token"), {{"name", "carol"}}), 400);  // a new tenant needs a token
  EXPECT_EQ(status_of(as("admin-token"), {{"name", "carol"}, {"token", "bob-token"}}), 400);
  EXPECT_EQ(status_of(as("admin-token"), {{"name", "carol"}, {"token", "carol-token"}, {"weight", -1}}), 400);
  EXPECT_EQ(status_of(as("admin-token"), {{"name", "carol"}, {"token", "carol-token"}, {"weight", 3}}), 200);
  EXPECT_EQ(status_of(as("admin-token"), {{"name", "alice"}, {"weight", 2}}), 200);
  // The new token works at once; the weights reach the policy's state.
  EXPECT_EQ(as("carol-token").tenant, "carol");
  EXPECT_EQ(manager_->tenants(as("admin-token"))["tenants"][0]["weight"], 2.0);  // alice
  submit("carol-token");
  // After a restart the API's tenant and its weight stay; alice is the
  // config's again (TenantsFollowOneRuleAtStartAndAtReload).
  start();
  EXPECT_EQ(as("carol-token").tenant, "carol");
  std::map<std::string, double> weight;
  const json tenants = manager_->tenants(as("admin-token"));
  for (const json& t : tenants["tenants"]) weight[t["name"]] = t["weight"];
  EXPECT_EQ(weight, (std::map<std::string, double>{{"alice", 1.0}, {"bob", 1.0}, {"carol", 3.0}}));
  EXPECT_EQ(manager_->jobs(as("carol-token"), "")["jobs"].size(), 1u);
}

// Weights outside [kMinWeight, kMaxWeight] are a 400 naming the field (they
// used to be accepted and then fail the share LP at the next scheduling
// point); at the ends of the range the policy plans.
TEST_F(LiveManager, ExtremeWeightsAreRejectedAndTheRangeSchedules) {
  start();
  auto error = [&](auto&& f) -> std::string {
    try {
      f();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      return e.what();
    }
    return "accepted";
  };
  const std::string range = "weight: must be in [0.0001, 10000]";
  for (double w : {1e300, 1e-300, 1e20, 1e-20}) {
    EXPECT_EQ(error([&] {
                manager_->set_tenant(as("admin-token"), {{"name", "alice"}, {"weight", w}});
              }),
              range);
    EXPECT_EQ(error([&] {
                manager_->submit(as("alice-token"), {{"job_type", "mlp"},
                                                     {"workers", 1},
                                                     {"iterations", 10},
                                                     {"command", "true"},
                                                     {"weight", w}});
              }),
              range);
  }
  manager_->set_tenant(as("admin-token"), {{"name", "alice"}, {"weight", 1e-4}});
  manager_->set_tenant(as("admin-token"), {{"name", "bob"}, {"weight", 1e4}});
  const std::int64_t e = reg("f1", "fast", 2);
  submit("alice-token");
  submit("bob-token");
  EXPECT_NO_THROW(manager_->schedule());
  EXPECT_FALSE(actions(beat("f1", e), "launch").empty());
}

// Agents' numbers that do not fit the types they are kept in: a 409 or a
// 400, not an undefined conversion (seen writing tests/fuzz/fuzz_live_api.cc).
TEST_F(LiveManager, OutOfRangeEpochAndDeviceIdsAreAnswered) {
  start();
  reg("f1", "fast", 2);
  for (double epoch : {1e300, -1e300, 1.5}) {
    try {
      manager_->heartbeat(agent("f1"), {{"node", "f1"}, {"epoch", epoch}, {"runs", json::array()}});
      ADD_FAILURE() << "epoch " << epoch << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << e.what();
      EXPECT_EQ(std::string(e.what()), "epoch: expected an integer in 0..9007199254740992");
    }
  }
  for (json device : {json(4294967296LL), json(2147483648LL), json(-1), json(1.5)}) {
    try {
      manager_->register_agent(agent("f2"),
                               {{"node", "f2"}, {"gpu_type", "fast"}, {"devices", {0, device}}});
      ADD_FAILURE() << "device id " << device << " accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(std::string(e.what()), "devices[1]: expected an integer in 0..2147483647");
    }
  }
}

// Issue 12, defects 6 and 7: names that would break the metrics' labels
// are refused (and labels are escaped anyway); NUL bytes cannot reach a
// job's argv or environment.
TEST_F(LiveManager, TenantNamesAreRestrictedAndNulBytesRefused) {
  start();
  auto status_of = [&](const std::function<void()>& call) {
    try {
      call();
    } catch (const ApiError& e) {
      return std::to_string(e.status()) + " " + e.what();
    }
    return std::string("accepted");
  };
  EXPECT_EQ(status_of([&] {
              manager_->set_tenant(as("admin-token"), {{"name", "q\"}x"}, {"token", "token-q-00"}});
            }),
            "400 name: 'q\"}x': only letters, digits, '-', '_' and '.' are allowed");
  auto job_with = [&](const json& command, const json& env) {
    return status_of([&] {
      manager_->submit(as("alice-token"), {{"job_type", "mlp"},
                                           {"workers", 1},
                                           {"iterations", 10},
                                           {"command", command},
                                           {"env", env}});
    });
  };
  const std::string nul("a\0b", 3);
  EXPECT_EQ(job_with(json::array({"true", nul}), json::object()),
            "400 command[1]: must not contain a NUL byte");
  EXPECT_EQ(job_with(nul, json::object()), "400 command: must not contain a NUL byte");
  EXPECT_EQ(job_with("true", {{"K", nul}}), "400 env.K: must not contain a NUL byte");
  EXPECT_EQ(job_with("true", {{nul, "v"}}), "400 env: must not contain a NUL byte");
  EXPECT_EQ(job_with("true", {{"K", "v"}}), "accepted");
  EXPECT_EQ(manager_->jobs(as("admin-token"), "")["jobs"].size(), 1u);
  // Node and GPU type names of agents, too.
  EXPECT_EQ(status_of([&] {
              manager_->register_agent(agent("f1"),
                                       {{"node", "f1"}, {"gpu_type", "x\"}"}, {"devices", {0}}});
            }),
            "400 gpu_type: 'x\"}': only letters, digits, '-', '_' and '.' are allowed");
}

// Issue 12: the launch names the user a root agent runs the job as: the
// tenant's configured unix_user, and its slot, which stays the tenant's
// across restarts whatever the config's order (checkpoints on shared storage
// keep one owner).
TEST_F(LiveManager, LaunchNamesTheTenantsUnixUserAndAStableSlot) {
  config_.tenants[0].unix_user = "alice-unix";
  start();
  auto e = reg("f1", "fast", 2);
  submit("alice-token");
  submit("bob-token");
  manager_->schedule();
  std::map<std::string, json> by_tenant;
  for (const json& l : actions(beat("f1", e), "launch")) by_tenant[l["tenant"]] = l;
  ASSERT_EQ(by_tenant.size(), 2u);
  EXPECT_EQ(by_tenant["alice"]["unix_user"], "alice-unix");
  EXPECT_EQ(by_tenant["bob"]["unix_user"], nullptr);
  EXPECT_EQ(by_tenant["alice"]["tenant_slot"], 0);
  EXPECT_EQ(by_tenant["bob"]["tenant_slot"], 1);
  // Restarted with the tenants in the other order and one more: the same
  // slots, and the new tenant gets the next one.
  std::swap(config_.tenants[0], config_.tenants[1]);
  config_.tenants.push_back({"carol", 1.0, "carol-token", "", {}});
  start();
  e = reg("f1", "fast", 2);
  submit("carol-token");
  now_ += 120;
  manager_->schedule();
  const std::map<std::string, int> want = {{"alice", 0}, {"bob", 1}, {"carol", 2}};
  const auto launches = actions(beat("f1", e), "launch");
  EXPECT_EQ(launches.size(), 2u);
  for (const json& l : launches) EXPECT_EQ(l["tenant_slot"], want.at(l["tenant"])) << l.dump();
}

// Issue 30, low: tokens are compared whole, in a time that does not depend
// on where a guess differs (digests, CRYPTO_memcmp; the timing itself is not
// measured here). An empty secret (an unset metrics_token) matches nothing.
TEST(LiveTokens, SameSecretMatchesTheWholeTokenOnly) {
  const std::string token = "fgn_" + std::string(48, 'a');
  EXPECT_TRUE(same_secret(token, token));
  EXPECT_FALSE(same_secret(token.substr(0, 51) + "b", token));  // the last byte
  EXPECT_FALSE(same_secret("b" + token.substr(1), token));      // the first byte
  EXPECT_FALSE(same_secret(token.substr(0, 51), token));        // a prefix
  EXPECT_FALSE(same_secret(token + "a", token));
  EXPECT_FALSE(same_secret("", ""));
  EXPECT_FALSE(same_secret("x", ""));
  EXPECT_FALSE(same_secret("", token));
}

TEST(LiveConfigNames, TenantNamesAreRestricted) {
  const std::string head = R"({"admin_token": "admin-0000", "tenants": [)";
  try {
    parse_serve_config(head + R"({"name": "q\"}x", "token": "token-q-00"}]})", "serve.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "serve.json: tenants[0].name: 'q\"}x': only letters, digits, '-', '_' and '.' are "
              "allowed");
  }
  const ServeConfig c = parse_serve_config(
      head + R"({"name": "a", "token": "token-a-00", "unix_user": "alice"}]})", "serve.json");
  EXPECT_EQ(c.tenants.at(0).unix_user, "alice");
}

// Issue 12, defect 3: the busy timeout is set before the WAL pragma, so a
// store another connection holds locked for a moment opens instead of
// failing with "database is locked".
TEST(LiveStore, OpensWhileAnotherConnectionHoldsTheLockForAMoment) {
  const std::string dir = temp_dir("store-lock");
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/fairgpu.db").c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    sqlite3_exec(other, "COMMIT", nullptr, nullptr, nullptr);
  });
  std::string error;
  try {
    Store store(dir);
    store.wait(store.put(StoredMeta{"k", "v"}));
  } catch (const std::exception& e) {
    error = e.what();
  }
  release.join();
  sqlite3_close(other);
  EXPECT_EQ(error, "");
  std::filesystem::remove_all(dir);
}

// Issue 12 item 5: a store written before gangs (no nodes.address, no
// leases.gang/rank/parts) opens, reads its leases as gangs of one part, and
// takes the new columns from then on.
TEST(LiveStore, AStoreFromBeforeGangsOpensAndTakesTheNewColumns) {
  const std::string dir = temp_dir("store-old");
  {
    sqlite3* old = nullptr;
    ASSERT_EQ(sqlite3_open((dir + "/fairgpu.db").c_str(), &old), SQLITE_OK);
    const char* schema = R"sql(
      CREATE TABLE nodes (
        name TEXT PRIMARY KEY, gpu_type TEXT NOT NULL, devices TEXT NOT NULL, cpus REAL,
        memory_gb REAL, epoch INTEGER NOT NULL, state TEXT NOT NULL);
      CREATE TABLE leases (
        id INTEGER PRIMARY KEY, job TEXT NOT NULL, node TEXT NOT NULL, devices TEXT NOT NULL,
        start REAL, end REAL, status TEXT NOT NULL, profiling INTEGER, profile_from REAL,
        profile_from_t REAL);
      INSERT INTO nodes VALUES ('n1', 'fast', '[0,1]', 8, 64, 3, 'ready');
      INSERT INTO leases VALUES (7, 'j-000001', 'n1', '[1]', 10, 70, 'active', 0, -1, -1);)sql";
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(old, schema, nullptr, nullptr, &error), SQLITE_OK) << error;
    sqlite3_close(old);
  }
  {
    Store store(dir);
    StoreSnapshot snap = store.load();
    ASSERT_EQ(snap.nodes.size(), 1u);
    EXPECT_EQ(snap.nodes[0].epoch, 3);
    EXPECT_EQ(snap.nodes[0].address, "");
    ASSERT_EQ(snap.leases.size(), 1u);
    const StoredLease& l = snap.leases[0];
    EXPECT_EQ(l.id, 7);
    EXPECT_EQ(l.devices, std::vector<int>{1});
    EXPECT_EQ(l.status, "active");
    EXPECT_EQ(l.gang, 7);
    EXPECT_EQ(l.rank, 0);
    EXPECT_EQ(l.parts, 1);
    StoredLease part = l;
    part.id = 9;
    part.gang = 8;
    part.rank = 1;
    part.parts = 2;
    StoredNode n = snap.nodes[0];
    n.address = "10.1.2.3";
    store.put(n);
    store.wait(store.put(part));
  }
  Store again(dir);  // reopened: nothing left to add
  StoreSnapshot snap = again.load();
  EXPECT_EQ(snap.nodes[0].address, "10.1.2.3");
  ASSERT_EQ(snap.leases.size(), 2u);
  EXPECT_EQ(snap.leases[1].gang, 8);
  EXPECT_EQ(snap.leases[1].rank, 1);
  EXPECT_EQ(snap.leases[1].parts, 2);
  std::filesystem::remove_all(dir);
}

// Issue 12, defect 8: one store, one server.
TEST(LiveStore, ASecondStoreOnTheSameDirIsRefused) {
  const std::string dir = temp_dir("store-twice");
  Store first(dir);
  try {
    Store second(dir);
    ADD_FAILURE() << "a second store opened " << dir;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by another fairgpu serve"), std::string::npos)
        << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST_F(LiveManager, MetricsInPrometheusFormat) {
  // A name from before names were restricted (the config parser refuses it
  // now): its label is escaped.
  config_.tenants.push_back({"q\"}x\\\n", 1.0, "token-q-00", "", {}});
  start();
  reg("f1", "fast", 2);
  submit("alice-token");
  manager_->schedule();
  const std::string m = manager_->metrics();
  EXPECT_NE(m.find("fairgpu_jobs{state=\"running\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("fairgpu_gpus{gpu_type=\"fast\"} 2"), std::string::npos);
  EXPECT_NE(m.find("fairgpu_tenant_gpu_share_ratio{tenant=\"alice\"} 0.5"), std::string::npos);
  EXPECT_NE(m.find("fairgpu_rounds_total 1"), std::string::npos);
  EXPECT_NE(m.find("# TYPE fairgpu_round_compute_seconds histogram"), std::string::npos);
  EXPECT_NE(m.find("fairgpu_round_compute_seconds_count 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("fairgpu_tenant_gpu_share_ratio{tenant=\"q\\\"}x\\\\\\n\"} 0\n"),
            std::string::npos)
      << m;
}

TEST(LiveConfig, QuotasAreReadWithDefaultsAndBadOnesNamed) {
  auto parse = [](const std::string& extra, const std::string& alice_extra = "") {
    return parse_serve_config(R"({"admin_token": "admin-0000", "tenants": [{"name": "a", )"
                              R"("token": "token-a-00")" +
                                  alice_extra + R"(}, {"name": "b", "token": "token-b-00"}])" +
                                  extra + "}",
                              "serve.json");
  };
  auto error = [&](const std::string& extra, const std::string& alice_extra = "") -> std::string {
    try {
      parse(extra, alice_extra);
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  // None given: unlimited. The default applies to every tenant; a tenant's
  // own keys override it one by one.
  EXPECT_EQ(parse("").tenants[0].quotas, TenantQuotas{});
  const ServeConfig c = parse(R"(, "quotas": {"max_jobs_queued": 10, "max_gpus_running": 8})",
                              R"(, "quotas": {"max_gpus_running": 2, "max_gpus_per_job": 0})");
  EXPECT_EQ(c.quotas.max_jobs_queued, 10);
  EXPECT_EQ(c.tenants[0].quotas.max_jobs_queued, 10);
  EXPECT_EQ(c.tenants[0].quotas.max_gpus_running, 2);
  EXPECT_EQ(c.tenants[0].quotas.max_gpus_per_job, 0);
  EXPECT_EQ(c.tenants[1].quotas.max_gpus_running, 8);
  EXPECT_EQ(c.tenants[1].quotas.max_jobs_active, 0);

  EXPECT_EQ(error(R"(, "quotas": {"max_jobs_queued": -1})"),
            "serve.json: quotas.max_jobs_queued: expected an integer in 0..1000000 (0: "
            "unlimited), got -1");
  EXPECT_EQ(error(R"(, "quotas": {"max_jobs_active": "10"})"),
            "serve.json: quotas.max_jobs_active: expected an integer in 0..1000000 (0: "
            "unlimited), got \"10\"");
  EXPECT_EQ(error(R"(, "quotas": {"max_gpus_running": 2.5})"),
            "serve.json: quotas.max_gpus_running: expected an integer in 0..1000000 (0: "
            "unlimited), got 2.5");
  EXPECT_EQ(error("", R"(, "quotas": {"max_gpus_per_job": 100000000000000000000})"),
            "serve.json: tenants[0].quotas.max_gpus_per_job: expected an integer in 0..4096 (0: "
            "unlimited), got 1e+20");
  EXPECT_EQ(error("", R"(, "quotas": {"max_gpus_per_job": 5000})"),
            "serve.json: tenants[0].quotas.max_gpus_per_job: expected an integer in 0..4096 (0: "
            "unlimited), got 5000");
  EXPECT_EQ(error("", R"(, "quotas": {"max_gpus": 1})"),
            "serve.json: tenants[0].quotas.max_gpus: unknown field (expected one of: "
            "max_jobs_queued, max_jobs_active, max_gpus_per_job, max_gpus_running, "
            "max_checkpoint_bytes)");
  EXPECT_EQ(error(R"(, "quotas": {"max_checkpoint_bytes": 1e30})"),
            "serve.json: quotas.max_checkpoint_bytes: expected an integer in "
            "0..1152921504606846976 (0: unlimited), got 1e+30");
  EXPECT_EQ(parse(R"(, "quotas": {"max_checkpoint_bytes": 1099511627776})")
                .tenants[1]
                .quotas.max_checkpoint_bytes,
            std::int64_t{1} << 40);
  EXPECT_EQ(error(R"(, "quotas": [1])"), "serve.json: quotas: expected an object, got array");
}

}  // namespace
}  // namespace fairgpu::live

namespace fairgpu::live {
namespace {

// Relative paths in a config file are the config folder's, not the current
// directory's (issue 18): data_dir, checkpoint_dir (and its default under
// data_dir) and profiles; absolute ones are kept.
TEST(LiveConfig, RelativePathsAreTakenFromTheConfigFolder) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fairgpu-config-" + std::to_string(::getpid()));
  fs::create_directories(dir / "etc");
  const std::string head = R"({"admin_token": "admin-0000",
    "tenants": [{"name": "a", "token": "token-a-00"}], )";
  std::ofstream(dir / "etc" / "serve.json")
      << head << R"("data_dir": "state", "checkpoint_dir": "../shared/ckpt",
                     "profiles": "profiles.json"})";
  const fs::path cwd = fs::current_path();
  fs::current_path(fs::temp_directory_path());  // anywhere but the config's folder
  ServeConfig c =
      read_serve_config("fairgpu-config-" + std::to_string(::getpid()) + "/etc/serve.json");
  fs::current_path(cwd);
  EXPECT_EQ(c.data_dir, (dir / "etc" / "state").string());
  EXPECT_EQ(c.checkpoint_dir, (dir / "shared" / "ckpt").string());
  EXPECT_EQ(c.profiles_file, (dir / "etc" / "profiles.json").string());
  std::ofstream(dir / "etc" / "serve.json") << head << R"("data_dir": "state"})";
  c = read_serve_config((dir / "etc" / "serve.json").string());
  EXPECT_EQ(c.checkpoint_dir, (dir / "etc" / "state" / "checkpoints").string());
  std::ofstream(dir / "etc" / "serve.json")
      << head << R"("data_dir": "/var/lib/fairgpu", "profiles": "/srv/p.json"})";
  c = read_serve_config((dir / "etc" / "serve.json").string());
  EXPECT_EQ(c.data_dir, "/var/lib/fairgpu");
  EXPECT_EQ(c.checkpoint_dir, "/var/lib/fairgpu/checkpoints");
  EXPECT_EQ(c.profiles_file, "/srv/p.json");
  fs::remove_all(dir);
}

TEST(LiveConfig, ExampleParsesAndBadFieldsAreNamed) {
  ServeConfig c = read_serve_config(std::string(FAIRGPU_SOURCE_DIR) + "/examples/serve.json");
  EXPECT_EQ(c.port, 8470);
  EXPECT_EQ(c.policy, "oef-coop");
  EXPECT_EQ(c.policy_options.round_s, 60);
  EXPECT_EQ(c.tenants.size(), 2u);
  auto error = [](const std::string& text) -> std::string {
    try {
      parse_serve_config(text, "serve.json");
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  const std::string tokens = R"("admin_token": "admin-0000", "agent_token": "agent-0000")";
  const std::string tenants = R"("tenants": [{"name": "a", "token": "token-a-00"}])";
  EXPECT_EQ(error("{" + tokens + ", " + tenants + "}"), "accepted");
  EXPECT_EQ(error("{" + tokens + ", " + tenants + R"(, "colour": 1})"),
            "serve.json: colour: unknown field (expected one of: listen, data_dir, checkpoint_dir, "
            "policy, policy_options, round_s, heartbeat_s, heartbeat_timeout_s, grace_s, "
            "kill_after_s, max_retries, node_fault_limit, job_retention_s, profile_iterations, "
            "profile_timeout_s, profiles, "
            "restart_overhead_s, admin_token, admin_token_file, admin_token_env, agent_token, "
            "tenants, quotas, tls, metrics_open, metrics_token, metrics_token_file, metrics_token_env, http, "
            "backend, slurm)");
  EXPECT_EQ(error("{" + tokens + "}"), "serve.json: tenants: missing required field");
  EXPECT_EQ(error("{" + tokens + ", " + tenants + R"(, "job_retention_s": -1})"),
            "serve.json: job_retention_s: expected seconds >= 0");
  EXPECT_EQ(error("{" + tokens +
                  R"(, "tenants": [{"name": "a", "token": "token-a-00", "weight": 1e300}]})"),
            "serve.json: tenants[0].weight: must be in [0.0001, 10000], got 1e+300");
  EXPECT_EQ(error("{" + tokens + ", " + tenants + R"(, "listen": "localhost"})"),
            "serve.json: listen: expected HOST:PORT, got localhost");
  EXPECT_EQ(error("{" + tokens + ", " + tenants + R"(, "grace_s": -3})"),
            "serve.json: grace_s: must be > 0, got -3");
  EXPECT_EQ(error("{" + tokens + ", " + tenants + R"(, "heartbeat_s": 10, "heartbeat_timeout_s": 15})"),
            "serve.json: heartbeat_timeout_s: must be at least twice heartbeat_s");
  EXPECT_EQ(error(R"({"admin_token": "admin-0000", "agent_token": "agent-0000", "tenants": [{"name": "a", "token": "admin-0000"}]})"),
            "serve.json: tenants[0].token: repeats another token");
  EXPECT_NE(error("{" + tokens + ", " + tenants + R"(, "policy": "astraea", "policy_options": {"level": "tenant"}})")
                .find("serve.json: policy_options:"),
            std::string::npos);
}

// ---------------------------------------------------------------- issue 30, M2
// Measured profiles are kept per tenant, bounded, cross-checked and reset by
// the admin (src/live/manager_profiles.cc).

class LiveProfiles : public LiveManager {
 protected:
  void SetUp() override {
    LiveManager::SetUp();
    config_.tenants.push_back({"mallory", 1.0, "mallory-token", "", {}});
    config_.tenants.push_back({"carol", 1.0, "carol-token", "", {}});
  }
  // Drives the job's profiling run on the node's one GPU at `rate` it/s,
  // timed after a first report. Returns the answer to the report
  // that completes the measurement; the run then exits as revoked.
  json profile_at(const std::string& node, std::int64_t epoch, double rate) {
    manager_->schedule();
    auto launches = actions(beat(node, epoch), "launch");
    EXPECT_EQ(launches.size(), 1u);
    if (launches.empty()) return nullptr;
    const std::int64_t lease = launches[0]["lease"];
    now_ += 3;
    beat(node, epoch, {running(lease, 5)});
    const double seconds = std::max(6.0, 60 / rate);  // >= 5 heartbeats and 50 iterations
    now_ += seconds;
    json a = beat(node, epoch, {running(lease, 5 + rate * seconds)});
    now_ += 1;
    beat(node, epoch, {exited(lease, 5 + rate * seconds, 0, true)});
    return a;
  }
  // The figure the policy uses for the tenant's jobs of `type` on `gpu`
  // ("in_use" of GET /v1/profiles as that tenant): {rate, source}, or null.
  json in_use(const std::string& token, const std::string& type, const std::string& gpu) {
    const json answer = manager_->profiles(as(token));
    for (const json& row : answer["in_use"])
      if (row["job_type"] == type && row["gpu_type"] == gpu) return row;
    return nullptr;
  }
  std::vector<json> measured(const std::string& type) {
    std::vector<json> out;
    const json answer = manager_->profiles(as("admin-token"));
    for (const json& row : answer["profiles"])
      if (row["job_type"] == type && row["source"] == "measured") out.push_back(row);
    return out;
  }
};

// The audit's case: mallory's resnet job reports a forged low rate while
// profiled (100 it/s where the GPU does 200). Alice's resnet jobs are not
// scheduled at mallory's figure: they are profiled on their own and run at
// alice's. A tenant without a measurement gets the shared figure only once
// two tenants agree, and the forged one is then outvoted.
TEST_F(LiveProfiles, AForgedProfileChangesOnlyItsOwnTenantsRates) {
  start();
  const auto e = reg("f1", "fast", 1);
  const std::string forged = submit("mallory-token", "resnet", 1, 1e6)["id"];
  ASSERT_EQ(actions(profile_at("f1", e, 100.0), "revoke").size(), 1u);
  EXPECT_EQ(job(forged)["state"], "queued");
  EXPECT_NEAR(in_use("mallory-token", "resnet", "fast")["iterations_per_s"].get<double>(), 100.0,
              1e-9);

  const std::string alices = submit("alice-token", "resnet", 1, 1e6)["id"];
  EXPECT_EQ(job(alices)["state"], "profiling") << "alice's job must not take mallory's figure";
  EXPECT_EQ(in_use("alice-token", "resnet", "fast"), nullptr);
  // Mallory's job holds the GPU until its lease ends; then alice's profiling
  // run takes it.
  manager_->cancel(as("mallory-token"), forged);
  beat("f1", e);
  ASSERT_EQ(actions(profile_at("f1", e, 200.0), "revoke").size(), 1u);
  EXPECT_EQ(job(alices)["state"], "queued");
  json mine = in_use("alice-token", "resnet", "fast");
  EXPECT_NEAR(mine["iterations_per_s"].get<double>(), 200.0, 1e-9) << mine.dump();
  EXPECT_EQ(mine["source"], "own");
  EXPECT_NEAR(in_use("mallory-token", "resnet", "fast")["iterations_per_s"].get<double>(), 100.0,
              1e-9);
  // One tenant's measurement is no one else's figure: carol still profiles.
  EXPECT_EQ(in_use("carol-token", "resnet", "fast"), nullptr);

  // Bob's agrees with alice's: the shared figure is theirs, not mallory's.
  const std::string bobs = submit("bob-token", "resnet", 1, 1e6)["id"];
  EXPECT_EQ(job(bobs)["state"], "profiling");
  manager_->cancel(as("alice-token"), alices);
  beat("f1", e);
  ASSERT_EQ(actions(profile_at("f1", e, 210.0), "revoke").size(), 1u);
  json carols = in_use("carol-token", "resnet", "fast");
  ASSERT_FALSE(carols.is_null());
  EXPECT_NEAR(carols["iterations_per_s"].get<double>(), 205.0, 1e-9) << carols.dump();
  EXPECT_EQ(carols["source"], "shared");
  const std::string carol_job = submit("carol-token", "resnet", 1, 1e6)["id"];
  EXPECT_EQ(job(carol_job)["state"], "queued");
  // A tenant sees its own measurements, not the others'.
  const json alices_view = manager_->profiles(as("alice-token"));
  for (const json& row : alices_view["profiles"])
    if (row["source"] == "measured") {
      EXPECT_EQ(row["tenant"], "alice") << row.dump();
    }
}

// A measurement outside the plausible bounds is refused: one log line
// naming the job, tenant and value, nothing stored, the run a failure of
// the job. mlp's file figures are 1 and 4 it/s: on a third GPU type it may
// measure 0.05..80 it/s; past 1e6 it/s is absurd for any job type.
TEST_F(LiveProfiles, AnImplausibleMeasurementIsRefusedLoggedAndNotStored) {
  start();
  const auto e = reg("m1", "mid", 1);
  const std::string id = submit("mallory-token", "mlp")["id"];
  ASSERT_EQ(job(id)["state"], "profiling");
  ::testing::internal::CaptureStderr();
  json a = profile_at("m1", e, 120.0);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(actions(a, "revoke").size(), 1u) << "the run stops";
  std::vector<std::string> refused;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find("profile_refused") != std::string::npos) refused.push_back(line);
  ASSERT_EQ(refused.size(), 1u) << log;
  EXPECT_NE(refused[0].find("job=" + id), std::string::npos) << refused[0];
  EXPECT_NE(refused[0].find("tenant=mallory"), std::string::npos) << refused[0];
  EXPECT_NE(refused[0].find("iterations_per_s=120"), std::string::npos) << refused[0];
  EXPECT_TRUE(measured("mlp").empty());
  EXPECT_EQ(in_use("mallory-token", "mlp", "mid"), nullptr);
  json j = job(id);
  EXPECT_EQ(j["state"], "profiling");
  EXPECT_EQ(j["failures"], 1);

  // Absurd: a billion iterations a second. The second refusal fails the job
  // (max_retries 1).
  now_ += 10;
  a = profile_at("m1", e, 1e9);
  EXPECT_EQ(actions(a, "revoke").size(), 1u);
  EXPECT_TRUE(measured("mlp").empty());
  EXPECT_EQ(job(id)["state"], "failed");
  EXPECT_NE(manager_->metrics().find("fairgpu_profiles_refused_total 2\n"), std::string::npos);

  // Within the bounds it is kept.
  const std::string ok = submit("mallory-token", "mlp")["id"];
  profile_at("m1", e, 20.0);
  ASSERT_EQ(measured("mlp").size(), 1u);
  EXPECT_EQ(job(ok)["state"], "queued");
}

// The admin forgets a job type's measured profiles (of one tenant, on one
// GPU type, or all); a tenant may not. The job type's waiting jobs are
// profiled again, and the reset holds after a restart.
TEST_F(LiveProfiles, AdminResetsMeasuredProfilesAndTheResetSurvivesARestart) {
  start();
  const auto e = reg("f1", "fast", 1);
  const std::string a1 = submit("alice-token", "newnet")["id"];
  profile_at("f1", e, 8.0);
  manager_->cancel(as("alice-token"), a1);
  beat("f1", e);
  const std::string b1 = submit("bob-token", "newnet")["id"];
  profile_at("f1", e, 2.0);
  ASSERT_EQ(measured("newnet").size(), 2u);
  EXPECT_EQ(job(b1)["state"], "queued");

  try {
    manager_->reset_profiles(as("bob-token"), "newnet", std::nullopt, "");
    ADD_FAILURE() << "a tenant reset profiles";
  } catch (const ApiError& err) {
    EXPECT_EQ(err.status(), 403) << err.what();
  }
  try {
    manager_->reset_profiles(as("admin-token"), "newnet", "carol", "");
    ADD_FAILURE() << "reset of nothing answered";
  } catch (const ApiError& err) {
    EXPECT_EQ(err.status(), 404) << err.what();
    EXPECT_STREQ(err.what(), "profiles newnet: no measured profile of tenant carol");
  }
  ASSERT_EQ(measured("newnet").size(), 2u);

  json r = manager_->reset_profiles(as("admin-token"), "newnet", "bob", "fast");
  EXPECT_EQ(r["removed"], 1);
  ASSERT_EQ(measured("newnet").size(), 1u);
  EXPECT_EQ(measured("newnet")[0]["tenant"], "alice");
  EXPECT_EQ(job(b1)["state"], "profiling") << "measured again";

  start();  // a restart keeps the reset
  ASSERT_EQ(measured("newnet").size(), 1u);
  EXPECT_EQ(measured("newnet")[0]["tenant"], "alice");
  EXPECT_EQ(in_use("bob-token", "newnet", "fast"), nullptr);
  EXPECT_EQ(job(b1)["state"], "profiling");

  r = manager_->reset_profiles(as("admin-token"), "newnet", std::nullopt, "");
  EXPECT_EQ(r["removed"], 1);
  start();
  EXPECT_TRUE(measured("newnet").empty());
  EXPECT_EQ(in_use("alice-token", "newnet", "fast"), nullptr);
}

// Per-tenant measurements are stored: after a restart each tenant's jobs
// use its own figure again. Measurements from before tenants were told apart
// (the old profiles table) are moved over as unattributed and used by all.
TEST_F(LiveProfiles, PerTenantProfilesSurviveARestartAndOldOnesBecomeUnattributed) {
  std::filesystem::create_directories(config_.data_dir);
  {
    sqlite3* old = nullptr;
    ASSERT_EQ(sqlite3_open((config_.data_dir + "/fairgpu.db").c_str(), &old), SQLITE_OK);
    const char* schema = R"sql(
      CREATE TABLE profiles (
        job_type TEXT NOT NULL, gpu_type TEXT NOT NULL, workers INTEGER NOT NULL,
        rate REAL NOT NULL, source TEXT NOT NULL, PRIMARY KEY (job_type, gpu_type, workers));
      INSERT INTO profiles VALUES ('oldnet', 'fast', 1, 6.5, 'measured');)sql";
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(old, schema, nullptr, nullptr, &error), SQLITE_OK) << error;
    sqlite3_close(old);
  }
  start();
  const auto e = reg("f1", "fast", 1);
  json old = in_use("carol-token", "oldnet", "fast");
  ASSERT_FALSE(old.is_null());
  EXPECT_EQ(old["source"], "unattributed");
  EXPECT_NEAR(old["iterations_per_s"].get<double>(), 6.5, 1e-9);
  EXPECT_EQ(submit("carol-token", "oldnet")["state"], "queued");

  const std::string a1 = submit("alice-token", "newnet")["id"];
  profile_at("f1", e, 8.0);
  manager_->cancel(as("alice-token"), a1);
  beat("f1", e);
  submit("bob-token", "newnet");
  profile_at("f1", e, 2.0);

  start();
  EXPECT_NEAR(in_use("alice-token", "newnet", "fast")["iterations_per_s"].get<double>(), 8.0, 1e-9);
  EXPECT_NEAR(in_use("bob-token", "newnet", "fast")["iterations_per_s"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(in_use("carol-token", "newnet", "fast"), nullptr) << "8 and 2 do not agree";
  std::map<std::string, double> by_tenant;
  for (const json& row : measured("newnet")) by_tenant[row["tenant"]] = row["iterations_per_s"];
  EXPECT_EQ(by_tenant, (std::map<std::string, double>{{"alice", 8.0}, {"bob", 2.0}}));
  ASSERT_EQ(measured("oldnet").size(), 1u);
  EXPECT_EQ(measured("oldnet")[0]["tenant"], nullptr);
  EXPECT_EQ(in_use("alice-token", "oldnet", "fast")["source"], "unattributed");
}

// Cross-check: a run whose progress is sustained more than 2x off the rate
// the policy planned it at (mlp: 4 it/s on fast) is logged and counted once.
TEST_F(LiveProfiles, ARunFarOffItsProfileIsLoggedAndCounted) {
  start();
  const auto e = reg("f1", "fast", 1);
  const std::string id = submit("alice-token", "mlp")["id"];
  manager_->schedule();
  auto launches = actions(beat("f1", e), "launch");
  ASSERT_EQ(launches.size(), 1u);
  const std::int64_t lease = launches[0]["lease"];
  now_ += 2;
  beat("f1", e, {running(lease, 4)});
  now_ += 3;  // 4 it/s: as profiled
  beat("f1", e, {running(lease, 16)});
  now_ += 3;
  beat("f1", e, {running(lease, 28)});
  EXPECT_NE(manager_->metrics().find("fairgpu_profile_mismatches_total 0\n"), std::string::npos);
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 30; ++i) {  // then 1 it/s for 30 s: the average falls below 2 it/s
    now_ += 1;
    beat("f1", e, {running(lease, 29 + i)});
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(manager_->metrics().find("fairgpu_profile_mismatches_total 1\n"), std::string::npos);
  std::size_t lines = 0;
  for (std::size_t at = log.find("profile_mismatch"); at != std::string::npos;
       at = log.find("profile_mismatch", at + 1))
    ++lines;
  EXPECT_EQ(lines, 1u) << log;
  EXPECT_NE(log.find("job=" + id), std::string::npos) << log;
  EXPECT_NE(log.find("profile_source=file"), std::string::npos) << log;
}


// A job of a type another of its tenant's jobs measured meanwhile (or, after
// a reset, one of several waiting jobs) leaves `profiling` for the policy.
TEST_F(LiveProfiles, AJobWaitingForItsTypesFigureIsQueuedOnceAnotherJobMeasuredIt) {
  start();
  const auto e = reg("f1", "fast", 1);
  const std::string a1 = submit("alice-token", "newnet", 1, 1e6)["id"];
  const std::string a2 = submit("alice-token", "newnet", 1, 1e6)["id"];
  EXPECT_EQ(job(a2)["state"], "profiling");
  profile_at("f1", e, 8.0);
  manager_->schedule();
  beat("f1", e);
  EXPECT_EQ(job(a1)["state"], "running");
  EXPECT_EQ(job(a2)["state"], "queued");
}
// The round counter (cluster's "round", fairgpu_rounds_total) goes on over a
// restart (issue 32, item 4): it is stored with every scheduling point.
TEST_F(LiveManager, TheRoundCounterSurvivesARestart) {
  start();
  for (int r = 0; r < 3; ++r) manager_->schedule();
  EXPECT_EQ(manager_->cluster(as("admin-token"))["round"], 3);
  start();
  EXPECT_EQ(manager_->cluster(as("admin-token"))["round"], 3);
  EXPECT_NE(manager_->metrics().find("fairgpu_rounds_total 3"), std::string::npos);
  manager_->schedule();
  EXPECT_EQ(manager_->cluster(as("admin-token"))["round"], 4);
}

// The http.* limits are made into listeners and pools at start: a reload
// that changes one keeps what is in force and names the key as needing a
// restart, in the answer and in a warning of its own (issue 30, H3's
// settings).
TEST_F(LiveManager, AReloadNamesTheHttpLimitsThatNeedARestart) {
  start();
  ServeConfig next = config_;
  next.http.workers = config_.http.workers + 1;
  next.http.request_timeout_s = config_.http.request_timeout_s * 2;
  next.max_retries = config_.max_retries + 1;  // reloadable: changed
  ::testing::internal::CaptureStderr();
  const json answer = manager_->reload(next);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(answer["restart_needed"], json({"http.request_timeout_s", "http.workers"})) << answer;
  EXPECT_EQ(answer["changed"], json({"max_retries"})) << answer;
  EXPECT_NE(log.find("reload_needs_restart key=http.workers"), std::string::npos) << log;
  EXPECT_NE(log.find("reload_needs_restart key=http.request_timeout_s"), std::string::npos) << log;
  EXPECT_EQ(manager_->config().http.workers, config_.http.workers);  // kept until a restart
  // The same file again: nothing new to say about the kept max_retries.
  EXPECT_EQ(manager_->reload(next)["changed"], json::array());
}

}  // namespace
}  // namespace fairgpu::live

namespace fairgpu::live {
namespace {

// Accounting on the manager's clock (issue 32, item 6): a job's runs with
// where, how long and why each stopped; usage over windows; the chargeback
// counter as runs accrue; several states and a time window in the listing;
// retention (reloadable) hides old finished jobs from the default listing.
TEST_F(LiveManager, RunsUsageCounterListingFiltersAndRetention) {
  config_.job_retention_s = 3600;
  config_.max_retries = 0;
  start();
  const auto ef = reg("f1", "fast", 2);
  const std::string a = submit("alice-token")["id"];
  const std::string b = submit("bob-token")["id"];
  manager_->schedule();
  json launch = beat("f1", ef);
  ASSERT_EQ(actions(launch, "launch").size(), 2u);
  std::map<std::string, std::int64_t> lease_of;
  for (const json& l : actions(launch, "launch")) lease_of[l["job"]] = l["lease"];
  const double started = now_;
  now_ += 100;
  beat("f1", ef, {running(lease_of[a], 10), running(lease_of[b], 10)});
  // As runs accrue: 100 s each on one fast GPU.
  const std::string metrics = manager_->metrics();
  EXPECT_NE(metrics.find("fairgpu_tenant_gpu_seconds_total{tenant=\"alice\",gpu_type=\"fast\"} 100\n"),
            std::string::npos)
      << metrics;
  // alice's finishes at +150, bob's fails (exit 3) at +200.
  now_ += 50;
  beat("f1", ef, {exited(lease_of[a], 1000, 0, false), running(lease_of[b], 20)});
  now_ += 50;
  beat("f1", ef, {exited(lease_of[b], 20, 3, false)});
  const json runs = job(a)["runs"];
  ASSERT_EQ(runs.size(), 1u) << runs.dump();
  EXPECT_EQ(runs[0]["node"], "f1");
  EXPECT_EQ(runs[0]["gpu_type"], "fast");
  EXPECT_EQ(runs[0]["start"], started);
  EXPECT_EQ(runs[0]["end"], started + 150);
  EXPECT_EQ(runs[0]["reason"], "finished");
  EXPECT_EQ(runs[0]["exit_code"], 0);
  EXPECT_EQ(runs[0]["gpu_seconds"], 150.0);
  const json failed = job(b)["runs"];
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0]["reason"], "failed");
  EXPECT_EQ(failed[0]["exit_code"], 3);

  auto usage = [&](const std::string& token, Manager::UsageQuery q) {
    std::map<std::string, double> out;
    const json answer = manager_->usage(as(token), q);
    for (const json& row : answer["usage"])
      out[row.value("job", row["tenant"].get<std::string>())] = row["gpu_seconds"];
    return out;
  };
  Manager::UsageQuery all;
  EXPECT_EQ(usage("admin-token", all), (std::map<std::string, double>{{"alice", 150}, {"bob", 200}}));
  Manager::UsageQuery window;
  window.since = fmt::format("{}", started + 120);
  window.until = fmt::format("{}", started + 180);
  EXPECT_EQ(usage("admin-token", window),
            (std::map<std::string, double>{{"alice", 30}, {"bob", 60}}));
  window.by = "job";
  EXPECT_EQ(usage("admin-token", window), (std::map<std::string, double>{{a, 30}, {b, 60}}));
  EXPECT_EQ(usage("bob-token", all), (std::map<std::string, double>{{"bob", 200}}));
  Manager::UsageQuery other;
  other.tenant = "alice";
  try {
    manager_->usage(as("bob-token"), other);
    ADD_FAILURE() << "bob saw alice's usage";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 403);
  }
  Manager::UsageQuery bad_time;
  bad_time.since = "last tuesday";
  try {
    manager_->usage(as("admin-token"), bad_time);
    ADD_FAILURE() << "accepted a bad time";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(std::string(e.what()).rfind("since: ", 0), 0u) << e.what();
  }

  // Listing: several states, a window, and retention.
  const std::string c = submit("alice-token")["id"];  // queued or running
  auto listed = [&](Manager::JobsQuery q) {
    std::set<std::string> ids;
    const json answer = manager_->jobs(as("admin-token"), q);
    for (const json& j : answer["jobs"]) ids.insert(j["id"]);
    return ids;
  };
  Manager::JobsQuery q;
  q.state = "finished,failed";
  EXPECT_EQ(listed(q), (std::set<std::string>{a, b}));
  q.state = "finished,nonsense";
  EXPECT_THROW(listed(q), ApiError);
  q.state.clear();
  q.since = fmt::format("{}", now_ + 0.5);  // a and b ended before: left out
  EXPECT_EQ(listed(q), (std::set<std::string>{c}));
  q.since.clear();
  EXPECT_EQ(listed(q), (std::set<std::string>{a, b, c}));
  now_ += 3560;  // a ended 3610 s ago: past retention; b 3560 s ago
  EXPECT_EQ(listed(q), (std::set<std::string>{b, c}));
  q.all = true;
  EXPECT_EQ(listed(q), (std::set<std::string>{a, b, c}));
  q.all = false;
  ServeConfig longer = config_;
  longer.job_retention_s = 7200;
  manager_->reload(longer);
  EXPECT_EQ(listed(q), (std::set<std::string>{a, b, c}));
  EXPECT_EQ(job(a)["state"], "finished");  // one job is always shown
}

// The status page's share history (issue 32, item 8) stays bounded: at 720
// samples pairs merge, and none older than 6 hours is kept; the share and
// the weight's share are each tenant's.
TEST_F(LiveManager, StatusShareHistoryIsBounded) {
  config_.policy = "fifo";
  start();
  reg("f1", "fast", 2);
  submit("alice-token");
  auto points = [&] {
    const std::string page = manager_->status_page();
    const std::string key = "class=\"series\" data-series=\"alice\" data-points=\"";
    const auto at = page.find(key);
    return at == std::string::npos ? -1 : std::stoi(page.substr(at + key.size()));
  };
  for (int i = 0; i < 1000; ++i) {  // 10 s apart: 1000 samples within 6 hours
    now_ += 10;
    manager_->schedule();
  }
  EXPECT_LE(points(), 720);
  EXPECT_GE(points(), 360);
  for (int i = 0; i < 400; ++i) {  // 60 s apart: the first 1000 end up older than 6 hours
    now_ += 60;
    manager_->schedule();
  }
  EXPECT_LE(points(), 361);
  EXPECT_GE(points(), 180);
  const std::string page = manager_->status_page();
  // alice holds one of two GPUs; her weight entitles her to all (bob has no job).
  EXPECT_NE(page.find("<td class=\"num\">0.50</td><td class=\"num\">1.00</td>"), std::string::npos)
      << page;
}

}  // namespace
}  // namespace fairgpu::live
