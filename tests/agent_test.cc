// `fairgpu agent` (src/live/agent.h; issue 5, docs/design.md §7) against a fake
// server speaking the agent half of docs/live-protocol.md: registration,
// launch with the protocol's environment, progress in heartbeats, exits
// reported until acked, revoke, fencing (server silent, lease not renewed),
// 409 stale epoch, leftovers of an earlier agent, registration retries, and
// the --gpus / nvidia-smi parsing. run_agent runs in a thread with heartbeats
// of 0.1 s and sub-second grace periods; every test checks that no job
// process survives it.
#include "live/agent.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fairgpu/input_error.h"
#include "live/node_resources.h"
#include "live/process.h"
#include "live_daemon.h"
#include "polling.h"
#include "run_binary.h"

namespace fairgpu::live {
namespace {

namespace fs = std::filesystem;
using testing_support::since;
using testing_support::slurp;
using testing_support::wait_for;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kToken = "agent-secret";

// The agent half of the protocol, with knobs: answer status, acks, renewals,
// actions queued for the next heartbeat answer.
class FakeServer {
 public:
  struct State {
    std::vector<json> registrations;
    std::vector<json> heartbeats;  // request bodies, in arrival order
    std::vector<json> pending;     // actions for the next answer
    std::set<std::int64_t> renew;  // leases renewed in every answer
    double renew_s = 0.5;
    bool ack_exits = true;
    std::set<std::int64_t> acked;
    int heartbeat_status = 200;  // 503: the server is failing
    int register_failures = 0;   // answer 503 to that many registrations first
    double heartbeat_timeout_s = 0.6;
    std::int64_t epoch = 0;
  };

  FakeServer() {
    http_.Post("/v1/agents/register", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      if (req.get_header_value("Authorization") != std::string("Bearer ") + kToken)
        return error(res, 401, "bad or missing token");
      s_.registrations.push_back(json::parse(req.body));
      if (s_.register_failures > 0) {
        --s_.register_failures;
        return error(res, 503, "starting up");
      }
      json answer = {{"epoch", ++s_.epoch},
                     {"heartbeat_s", 0.1},
                     {"grace_s", 0.3},
                     {"kill_after_s", 0.3},
                     {"heartbeat_timeout_s", s_.heartbeat_timeout_s}};
      res.set_content(answer.dump(), "application/json");
    });
    http_.Post("/v1/agents/heartbeat", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      if (req.get_header_value("Authorization") != std::string("Bearer ") + kToken)
        return error(res, 401, "bad or missing token");
      json body = json::parse(req.body);
      if (s_.heartbeat_status != 200) return error(res, s_.heartbeat_status, "failing");
      s_.heartbeats.push_back(body);
      if (body.at("epoch") != s_.epoch)
        return error(res, 409, "stale epoch " + body.at("epoch").dump());
      json ack = json::array();
      for (const auto& run : body.at("runs"))
        if (run.at("state") != "running" && s_.ack_exits) {
          ack.push_back(run.at("lease"));
          s_.acked.insert(run.at("lease").get<std::int64_t>());
        }
      json actions = s_.pending;
      s_.pending.clear();
      for (auto lease : s_.renew)
        actions.push_back({{"action", "renew"}, {"lease", lease}, {"lease_s_left", s_.renew_s}});
      res.set_content(json{{"heartbeat_s", 0.1}, {"ack", ack}, {"actions", actions}}.dump(),
                      "application/json");
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    wait_for([this] { return http_.is_running(); }, 5);
  }
  ~FakeServer() {
    http_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Runs `f` on the state under the lock.
  template <class F>
  auto with(F f) {
    std::lock_guard lock(mu_);
    return f(s_);
  }
  // Waits until `pred(state)` holds.
  bool wait(const std::function<bool(State&)>& pred, double timeout_s) {
    return wait_for([&] { return with(pred); }, timeout_s);
  }
  void push(const json& action) {
    with([&](State& s) { s.pending.push_back(action); });
  }

  // The last report of `lease` in a heartbeat, or null.
  json last_report(std::int64_t lease) {
    return with([&](State& s) {
      for (auto hb = s.heartbeats.rbegin(); hb != s.heartbeats.rend(); ++hb)
        for (const auto& run : hb->at("runs"))
          if (run.at("lease") == lease) return run;
      return json();
    });
  }
  std::size_t heartbeat_count() {
    return with([](State& s) { return s.heartbeats.size(); });
  }

 private:
  static void error(httplib::Response& res, int status, const std::string& why) {
    res.status = status;
    res.set_content(json{{"error", why}}.dump(), "application/json");
  }

  httplib::Server http_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  State s_;
};

// run_agent in a thread, its log lines captured.
class AgentThread {
 public:
  void start(AgentOptions options) {
    options.log = [this](const std::string& line) {
      std::lock_guard lock(mu_);
      lines_.push_back(line);
    };
    thread_ = std::thread([this, options] {
      try {
        run_agent(options, stop_);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu_);
        error_ = e.what();
      }
      done_ = true;
    });
  }
  // Sets the stop flag (as SIGTERM's handler does).
  void request_stop() { stop_ = true; }
  // Sets the stop flag and waits for run_agent to return.
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  ~AgentThread() { stop(); }

  bool done() const { return done_; }
  std::string error() {
    std::lock_guard lock(mu_);
    return error_;
  }
  int count_lines(const std::string& part) {
    std::lock_guard lock(mu_);
    int n = 0;
    for (const auto& l : lines_) n += l.find(part) != std::string::npos ? 1 : 0;
    return n;
  }
  std::string lines() {
    std::lock_guard lock(mu_);
    std::string all;
    for (const auto& l : lines_) all += l + "\n";
    return all;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::string error_;
};

// A job that records its environment and pid, reports 1234 iterations,
// checkpoints on SIGUSR1 (writes `usr1`) and otherwise runs forever.
constexpr const char* kJob =
    "trap 'echo usr1 > \"$FAIRGPU_CHECKPOINT_DIR/usr1\"; exit 0' USR1; "
    "echo \"$$ $FAIRGPU_JOB_ID $FAIRGPU_LEASE_ID $FAIRGPU_GPU_TYPE $FAIRGPU_NUM_WORKERS "
    "$CUDA_VISIBLE_DEVICES $MY_VAR $(id -u) $MASTER_ADDR:$MASTER_PORT $WORLD_SIZE $RANK $NODE_RANK "
    "$LOCAL_WORLD_SIZE $FAIRGPU_NUM_NODES\" > \"$FAIRGPU_CHECKPOINT_DIR/env.tmp\"; "
    "echo 1234 > \"$FAIRGPU_PROGRESS_FILE\"; "
    "mv \"$FAIRGPU_CHECKPOINT_DIR/env.tmp\" \"$FAIRGPU_CHECKPOINT_DIR/env\"; "
    "while true; do sleep 0.05; done";

class Agent : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fairgpu-agent-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    // A root agent runs jobs as other users, who must pass through.
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }
  void TearDown() override {
    agent_.stop();
    for (pid_t pgid : pgids_)
      EXPECT_TRUE(wait_for([&] { return !process_group_alive(pgid); }, 2))
          << "job group " << pgid << " survived";
    errno = 0;
    EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
    EXPECT_EQ(errno, ECHILD) << "a child process of the test survived";
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  AgentOptions options() const {
    AgentOptions o;
    o.server_url = server_.url();
    o.token = kToken;
    o.node = "n1";
    o.gpu_type = "v100";
    o.devices = {0, 1, 2, 3};
    o.cpus = 8;
    o.memory_gb = 64;
    // In-process agents: their own cgroup's leaf would take the test process.
    o.cgroup_dir = "none";
    o.state_dir = (dir_ / "state").string();
    o.http_timeout_s = 0.5;
    o.register_retry_s = 0.05;
    o.register_retry_max_s = 0.2;
    o.tick_s = 0.02;
    return o;
  }

  std::string ckpt(const std::string& job) const { return (dir_ / "ckpt" / job).string(); }

  json launch(std::int64_t lease, const std::string& job, json command = kJob,
              double lease_s_left = 30.0) const {
    return {{"action", "launch"},
            {"lease", lease},
            {"job", job},
            {"tenant", "alice"},
            {"tenant_slot", 3},
            {"command", command},
            {"env", {{"MY_VAR", "hello"}}},
            {"devices", {2, 3}},
            {"gpu_type", "v100"},
            {"workers", 4},
            {"rendezvous",
             {{"master_addr", "n0.example"},
              {"master_port", 29517},
              {"world_size", 4},
              {"rank", 2},
              {"node_rank", 1},
              {"nodes", 2},
              {"local_world_size", 2}}},
            {"checkpoint_dir", ckpt(job)},
            {"lease_s_left", lease_s_left}};
  }

  // Waits for the kJob of `job` to start; returns its process group.
  pid_t started(const std::string& job) {
    std::string env = ckpt(job) + "/env";
    if (!wait_for([&] { return fs::exists(env); }, 5)) return -1;
    pid_t pgid = std::stoi(slurp(env));
    pgids_.push_back(pgid);
    return pgid;
  }

  // The uid the kJob of `job` ran as (the 8th word it recorded).
  std::string job_uid(const std::string& job) {
    std::istringstream env(slurp(ckpt(job) + "/env"));
    std::string word;
    for (int i = 0; i < 8; ++i) env >> word;
    return word;
  }

  bool reported(std::int64_t lease, const std::string& state, double timeout_s = 5) {
    return wait_for(
        [&] {
          json r = server_.last_report(lease);
          return !r.is_null() && r.at("state") == state;
        },
        timeout_s);
  }

  bool registered(std::size_t n = 1) {
    return server_.wait([&](FakeServer::State& s) { return s.epoch >= static_cast<int>(n); }, 5);
  }

  fs::path dir_;
  FakeServer server_;
  AgentThread agent_;
  std::vector<pid_t> pgids_;
};

TEST_F(Agent, RegistersAndRunsALaunchWithTheProtocolsEnvironment) {
  agent_.start(options());
  ASSERT_TRUE(registered());
  json reg = server_.with([](FakeServer::State& s) { return s.registrations.at(0); });
  EXPECT_EQ(reg, (json{{"node", "n1"},
                       {"gpu_type", "v100"},
                       {"devices", {0, 1, 2, 3}},
                       {"cpus", 8},
                       {"memory_gb", 64.0}}));

  server_.push(launch(18, "j-000013"));
  pid_t pgid = started("j-000013");
  ASSERT_GT(pgid, 0) << agent_.lines();
  std::istringstream env(slurp(ckpt("j-000013") + "/env"));
  std::string pid, job, lease, type, workers, devices, var, uid, master, world, rank, node_rank,
      local, nodes;
  env >> pid >> job >> lease >> type >> workers >> devices >> var >> uid >> master >> world >>
      rank >> node_rank >> local >> nodes;
  EXPECT_EQ(job, "j-000013");
  EXPECT_EQ(lease, "18");
  EXPECT_EQ(type, "v100");
  EXPECT_EQ(workers, "4");
  EXPECT_EQ(devices, "2,3");
  EXPECT_EQ(var, "hello");
  // The gang's rendezvous, as torchrun reads it.
  EXPECT_EQ(master, "n0.example:29517");
  EXPECT_EQ(world, "4");
  EXPECT_EQ(rank, "2");
  EXPECT_EQ(node_rank, "1");
  EXPECT_EQ(local, "2");
  EXPECT_EQ(nodes, "2");
  // A root agent runs the job as uid_base + the tenant's slot, never as root.
  EXPECT_EQ(uid, geteuid() == 0 ? "200003" : std::to_string(geteuid()));
  EXPECT_EQ(getpgid(pgid), pgid);

  ASSERT_TRUE(wait_for(
      [&] {
        json r = server_.last_report(18);
        return !r.is_null() && r.at("state") == "running" && r.at("iterations") == 1234;
      },
      5))
      << server_.last_report(18);
  EXPECT_EQ(server_.last_report(18).at("job"), "j-000013");
  EXPECT_EQ(agent_.count_lines("agent n1: launch lease 18 job j-000013 on devices 2,3"), 1)
      << agent_.lines();

  // A launch of a lease it already runs is ignored.
  server_.push(launch(18, "j-000013"));
  std::size_t n = server_.heartbeat_count();
  ASSERT_TRUE(server_.wait([&](FakeServer::State& s) { return s.heartbeats.size() >= n + 3; }, 5));
  EXPECT_EQ(agent_.count_lines("launch lease 18"), 1);
  EXPECT_EQ(std::stoi(slurp(ckpt("j-000013") + "/env")), pgid);

  // Stopping the agent stops the job as for revoke and reports it once more.
  agent_.stop();
  EXPECT_EQ(agent_.error(), "");
  EXPECT_FALSE(process_group_alive(pgid));
  EXPECT_EQ(slurp(ckpt("j-000013") + "/usr1"), "usr1\n");
  json last = server_.last_report(18);
  EXPECT_EQ(last.at("state"), "exited");
  EXPECT_EQ(last.at("revoked"), true);
  EXPECT_EQ(last.at("exit_code"), 0);
  EXPECT_EQ(last.at("iterations"), 1234);
  EXPECT_FALSE(fs::exists(dir_ / "state/runs/18/pid"));
}

// Issue 30, H2: what the agent reports stays within the server's bounds (a
// progress count of at most 1e15, a log tail of at most 64 KiB), so that one
// job cannot get its node's every heartbeat refused: a count beyond is
// malformed (the last good one is kept); a launch failure naming a 70 KiB
// argv[0] is cut in the middle.
TEST_F(Agent, ReportsStayWithinTheServersBounds) {
  agent_.start(options());
  ASSERT_TRUE(registered());
  server_.push(
      launch(31, "j-000031",
             "echo 500 > \"$FAIRGPU_PROGRESS_FILE\"; sleep 0.5; "
             "echo 9999999999999999 > \"$FAIRGPU_PROGRESS_FILE\"; "
             "echo $$ > \"$FAIRGPU_CHECKPOINT_DIR/env.tmp\"; "
             "mv \"$FAIRGPU_CHECKPOINT_DIR/env.tmp\" \"$FAIRGPU_CHECKPOINT_DIR/env\"; "
             "while true; do sleep 0.05; done"));
  server_.push(launch(32, "j-000032", json::array({std::string(70 * 1024, 'x')})));
  ASSERT_GT(started("j-000031"), 0) << agent_.lines();  // the huge count is written
  ASSERT_TRUE(reported(32, "launch_failed")) << agent_.lines();
  const std::size_t n = server_.heartbeat_count();
  ASSERT_TRUE(server_.wait([&](FakeServer::State& s) { return s.heartbeats.size() >= n + 3; }, 5));
  EXPECT_EQ(server_.last_report(31).at("iterations"), 500) << server_.last_report(31);
  const std::string tail = server_.last_report(32).at("log_tail").get<std::string>();
  EXPECT_LE(tail.size(), kMaxLogTailBytes);
  EXPECT_EQ(tail.rfind("cannot execute 'xxx", 0), 0u) << tail.substr(0, 100);
  EXPECT_NE(tail.find("bytes in all; the middle cut]"), std::string::npos);
  server_.with([](FakeServer::State& s) {
    for (const json& hb : s.heartbeats)
      for (const json& run : hb.at("runs")) {
        EXPECT_LE(run.at("iterations").get<double>(), 1e15) << run.at("lease");
        if (run.contains("log_tail")) {
          EXPECT_LE(run.at("log_tail").get<std::string>().size(), kMaxLogTailBytes);
        }
      }
  });
}

// Issue 30: a root agent runs a job as uid_base + its tenant's slot, a uid
// with no passwd entry, so Python's getpass.getuser() (torch 2.x calls it at
// import) died with KeyError. USER and LOGNAME now name it, and its HOME is
// its own, writable.
TEST_F(Agent, AJobOfARootAgentKnowsItsUserNameAndHasAWritableHome) {
  if (geteuid() != 0) GTEST_SKIP() << "only a root agent switches users";
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  // No fencing of a slow python start on a busy machine.
  server_.with([](FakeServer::State& s) { s.heartbeat_timeout_s = 30; });
  agent_.start(options());
  ASSERT_TRUE(registered());
  server_.push(
      launch(51, "j-000051",
             "out=\"$FAIRGPU_CHECKPOINT_DIR\"; "
             "/usr/bin/python3 -c 'import getpass; print(getpass.getuser())' > \"$out/user\" 2>&1; "
             "echo \"$USER $LOGNAME $HOME $(id -u)\" > \"$out/ids\"; "
             "echo written > \"$HOME/probe\" && cat \"$HOME/probe\" > \"$out/home\"; "
             "stat -c '%u %a' \"$HOME\" > \"$out/home_mode\""));
  ASSERT_TRUE(reported(51, "exited", 20)) << agent_.lines();
  EXPECT_EQ(server_.last_report(51).at("exit_code"), 0)
      << server_.last_report(51) << agent_.lines();
  const std::string home = (dir_ / "state/runs/51/job").string();
  EXPECT_EQ(slurp(ckpt("j-000051") + "/user"), "fairgpu-run-3\n");
  EXPECT_EQ(slurp(ckpt("j-000051") + "/ids"), "fairgpu-run-3 fairgpu-run-3 " + home + " 200003\n");
  EXPECT_EQ(slurp(ckpt("j-000051") + "/home"), "written\n");
  EXPECT_EQ(slurp(ckpt("j-000051") + "/home_mode"), "200003 700\n");
}

TEST_F(Agent, ExitIsReportedUntilAcked) {
  server_.with([](FakeServer::State& s) { s.ack_exits = false; });
  agent_.start(options());
  ASSERT_TRUE(registered());
  server_.push(launch(5, "j-000001",
                      "echo 77 > \"$FAIRGPU_PROGRESS_FILE\"; echo 'bye from the job'; exit 3"));
  ASSERT_TRUE(reported(5, "exited")) << agent_.lines();
  json r = server_.last_report(5);
  EXPECT_EQ(r.at("exit_code"), 3);
  EXPECT_EQ(r.at("signal"), 0);
  EXPECT_EQ(r.at("revoked"), false);
  EXPECT_EQ(r.at("iterations"), 77);
  EXPECT_EQ(r.at("log_tail"), "bye from the job\n");

  // Reported in every heartbeat while not acked.
  std::size_t n = server_.heartbeat_count();
  ASSERT_TRUE(server_.wait([&](FakeServer::State& s) { return s.heartbeats.size() >= n + 3; }, 5));
  server_.with([&](FakeServer::State& s) {
    for (std::size_t i = n; i < s.heartbeats.size(); ++i)
      EXPECT_EQ(s.heartbeats[i].at("runs").size(), 1u);
    s.ack_exits = true;
  });
  ASSERT_TRUE(server_.wait([](FakeServer::State& s) { return s.acked.count(5) > 0; }, 5));
  n = server_.heartbeat_count();  // sent after the ack was taken
  ASSERT_TRUE(server_.wait([&](FakeServer::State& s) { return s.heartbeats.size() >= n + 2; }, 5));
  server_.with([&](FakeServer::State& s) {
    for (std::size_t i = n; i < s.heartbeats.size(); ++i)
      EXPECT_TRUE(s.heartbeats[i].at("runs").empty()) << s.heartbeats[i];
  });
  EXPECT_EQ(agent_.count_lines("exit lease 5 job j-000001: exited with code 3"), 1);
}

TEST_F(Agent, RevokeSendsUsr1AndReportsARevokedExit) {
  agent_.start(options());
  ASSERT_TRUE(registered());
  server_.push(launch(7, "j-000002"));
  pid_t pgid = started("j-000002");
  ASSERT_GT(pgid, 0);
  ASSERT_TRUE(reported(7, "running"));
  server_.push({{"action", "revoke"}, {"lease", 7}, {"job", "j-000002"}});
  ASSERT_TRUE(reported(7, "exited")) << agent_.lines();
  json r = server_.last_report(7);
  EXPECT_EQ(r.at("revoked"), true);
  EXPECT_EQ(r.at("exit_code"), 0);
  EXPECT_EQ(r.at("signal"), 0);
  EXPECT_EQ(slurp(ckpt("j-000002") + "/usr1"), "usr1\n");
  EXPECT_FALSE(process_group_alive(pgid));
  EXPECT_EQ(agent_.count_lines("revoke lease 7 job j-000002"), 1);
}

TEST_F(Agent, FencesItsJobsWhenTheServerStopsAnswering) {
  agent_.start(options());
  ASSERT_TRUE(registered());
  // A job that ignores SIGUSR1 and SIGTERM: only SIGKILL ends it.
  server_.push(launch(9, "j-000003",
                      "trap '' USR1 TERM; echo $$ > \"$FAIRGPU_CHECKPOINT_DIR/env.tmp\"; "
                      "mv \"$FAIRGPU_CHECKPOINT_DIR/env.tmp\" \"$FAIRGPU_CHECKPOINT_DIR/env\"; "
                      "while true; do sleep 0.05; done"));
  pid_t pgid = started("j-000003");
  ASSERT_GT(pgid, 0);
  ASSERT_TRUE(reported(9, "running"));
  auto silent_from = Clock::now();
  server_.with([](FakeServer::State& s) { s.heartbeat_status = 503; });
  ASSERT_TRUE(wait_for([&] { return !process_group_alive(pgid); }, 5));
  double took = since(silent_from);
  // heartbeat_timeout 0.6 + grace 0.3 + kill_after 0.3, less the time since
  // the last answered heartbeat (< 0.1 s + one request); slack for a busy CI.
  EXPECT_GT(took, 0.6 + 0.3 + 0.3 - 0.25);
  EXPECT_LT(took, 0.6 + 0.3 + 0.3 + 1.0);
  EXPECT_EQ(agent_.count_lines("fence lease 9 job j-000003: no heartbeat answered"), 1)
      << agent_.lines();

  server_.with([](FakeServer::State& s) { s.heartbeat_status = 200; });
  ASSERT_TRUE(reported(9, "exited"));
  json r = server_.last_report(9);
  EXPECT_EQ(r.at("revoked"), true);
  EXPECT_EQ(r.at("signal"), SIGKILL);
  EXPECT_EQ(agent_.count_lines("heartbeat failed: server answered 503"), 1);
}

TEST_F(Agent, FencesAJobWhoseLeaseEndsWithoutRenewal) {
  server_.with([](FakeServer::State& s) { s.renew = {21}; });
  agent_.start(options());
  ASSERT_TRUE(registered());
  server_.push(launch(20, "j-000020", kJob, 0.5));  // never renewed
  server_.push(launch(21, "j-000021", kJob, 0.5));  // renewed (0.5 s) every 0.1 s
  auto launched = Clock::now();
  pid_t ended = started("j-000020");
  pid_t renewed = started("j-000021");
  ASSERT_GT(ended, 0);
  ASSERT_GT(renewed, 0);
  ASSERT_TRUE(reported(20, "exited")) << agent_.lines();
  EXPECT_GT(since(launched), 0.4);
  EXPECT_EQ(server_.last_report(20).at("revoked"), true);
  EXPECT_EQ(slurp(ckpt("j-000020") + "/usr1"), "usr1\n");
  EXPECT_EQ(agent_.count_lines("fence lease 20 job j-000020: lease ended without renewal"), 1);

  // The renewed lease outlives its first 0.5 s several times over.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  EXPECT_TRUE(process_group_alive(renewed));
  EXPECT_EQ(server_.last_report(21).at("state"), "running");
}

TEST_F(Agent, StaleEpochStopsEveryRunThenRegistersAgain) {
  agent_.start(options());
  ASSERT_TRUE(registered());
  server_.push(launch(30, "j-000030"));
  pid_t pgid = started("j-000030");
  ASSERT_GT(pgid, 0);
  ASSERT_TRUE(reported(30, "running"));
  server_.with([](FakeServer::State& s) { ++s.epoch; });  // as if the node was declared lost
  ASSERT_TRUE(registered(3)) << agent_.lines();
  // The agent waited for the job to end before it registered again.
  EXPECT_FALSE(process_group_alive(pgid));
  EXPECT_EQ(slurp(ckpt("j-000030") + "/usr1"), "usr1\n");
  EXPECT_EQ(agent_.count_lines("stale epoch 1 (409: stale epoch 1)"), 1) << agent_.lines();
  // The new epoch's heartbeats carry it and no longer the old runs.
  std::size_t n = server_.heartbeat_count();
  ASSERT_TRUE(server_.wait([&](FakeServer::State& s) { return s.heartbeats.size() >= n + 2; }, 5));
  server_.with([&](FakeServer::State& s) {
    EXPECT_EQ(s.heartbeats.back().at("epoch"), 3);
    EXPECT_TRUE(s.heartbeats.back().at("runs").empty());
  });
  EXPECT_EQ(server_.with([](FakeServer::State& s) { return s.registrations.size(); }), 2u);
}

TEST_F(Agent, ShutdownStopsRunsAndRefusesNewLaunches) {
  agent_.start(options());
  ASSERT_TRUE(registered());
  // Ignores SIGUSR1, so it takes grace_s (0.3 s) to stop: the agent keeps
  // heart-beating meanwhile.
  server_.push(launch(50, "j-000050",
                      "trap '' USR1; echo $$ > \"$FAIRGPU_CHECKPOINT_DIR/env.tmp\"; "
                      "mv \"$FAIRGPU_CHECKPOINT_DIR/env.tmp\" \"$FAIRGPU_CHECKPOINT_DIR/env\"; "
                      "while true; do sleep 0.05; done"));  // env whole once it exists
  pid_t pgid = started("j-000050");
  ASSERT_GT(pgid, 0);
  ASSERT_TRUE(reported(50, "running"));
  agent_.request_stop();
  ASSERT_TRUE(wait_for([&] { return agent_.count_lines("stopping: 1 run(s) to stop") == 1; }, 5));
  server_.push(launch(51, "j-000051"));
  agent_.stop();
  EXPECT_FALSE(process_group_alive(pgid));
  json r = server_.last_report(50);
  EXPECT_EQ(r.at("state"), "exited");
  EXPECT_EQ(r.at("signal"), SIGTERM);
  EXPECT_EQ(r.at("revoked"), true);
  json refused = server_.last_report(51);
  ASSERT_FALSE(refused.is_null()) << agent_.lines();
  EXPECT_EQ(refused.at("state"), "launch_failed");
  EXPECT_EQ(refused.at("log_tail"), "agent shutting down");
  // The node's reason, not the job's: the server counts no failure.
  EXPECT_EQ(refused.value("revoked", false), true);
  EXPECT_FALSE(fs::exists(ckpt("j-000051")));
  EXPECT_EQ(agent_.count_lines("agent n1: stopped"), 1);
}

TEST_F(Agent, LaunchFailuresAreReportedWithTheReason) {
  agent_.start(options());
  ASSERT_TRUE(registered());
  server_.push(launch(40, "j-000040", json::array({(dir_ / "no-such-binary").string()})));
  json bad_device = launch(41, "j-000041");
  bad_device["devices"] = {3, 7};
  server_.push(bad_device);
  json no_command = launch(42, "j-000042");
  no_command.erase("command");
  server_.push(no_command);
  ASSERT_TRUE(reported(40, "launch_failed"));
  ASSERT_TRUE(reported(41, "launch_failed"));
  ASSERT_TRUE(reported(42, "launch_failed"));
  EXPECT_NE(
      server_.last_report(40).at("log_tail").get<std::string>().find("No such file or directory"),
      std::string::npos);
  EXPECT_NE(server_.last_report(41)
                .at("log_tail")
                .get<std::string>()
                .find("7 is not a device of this node"),
            std::string::npos);
  EXPECT_NE(server_.last_report(42).at("log_tail").get<std::string>().find("command"),
            std::string::npos);
  EXPECT_EQ(server_.last_report(40).at("iterations"), 0);

  // Issue 12: a root agent runs no job as root, and a lease_s_left of 1e300
  // or a lease id past 2^53 is no undefined conversion.
  json nobody = launch(43, "j-000043");
  nobody.erase("tenant_slot");
  server_.push(nobody);
  json huge = launch(44, "j-000044", kJob, 1e300);
  server_.push(huge);
  json wild = launch(45, "j-000045");
  wild["lease"] = 18446744073709551615ULL;
  server_.push(wild);
  json zero = launch(47, "j-000047");
  zero["lease"] = 0;  // below the range: parsed as an unsigned integer
  server_.push(zero);
  json big_device = launch(49, "j-000049");
  big_device["devices"] = {2, 2147483648LL};  // past an int: not wrapped to a negative id
  server_.push(big_device);
  ASSERT_TRUE(reported(49, "launch_failed"));
  EXPECT_NE(server_.last_report(49)
                .at("log_tail")
                .get<std::string>()
                .find("2147483648 is not a device id"),
            std::string::npos)
      << server_.last_report(49);
  json ranks = launch(48, "j-000048");
  ranks["rendezvous"]["rank"] = 3;  // 3 + 2 local workers > world size 4
  server_.push(ranks);
  ASSERT_TRUE(reported(48, "launch_failed"));
  EXPECT_NE(server_.last_report(48).at("log_tail").get<std::string>().find("rendezvous"),
            std::string::npos)
      << server_.last_report(48);
  // Neither unix_user nor tenant_slot: a root agent refuses it; an agent
  // that is not root runs every job as itself (docs/live-protocol.md).
  if (geteuid() == 0) {
    ASSERT_TRUE(reported(43, "launch_failed"));
    EXPECT_NE(server_.last_report(43).at("log_tail").get<std::string>().find(
                  "names neither unix_user nor tenant_slot"),
              std::string::npos)
        << server_.last_report(43);
  } else {
    ASSERT_TRUE(reported(43, "running")) << agent_.lines();
    ASSERT_GT(started("j-000043"), 0) << agent_.lines();
    EXPECT_EQ(job_uid("j-000043"), std::to_string(geteuid()));
  }
  // A tenant's unix_user wins over its slot: the job runs as that user.
  json as_nobody = launch(46, "j-000046");
  as_nobody["unix_user"] = "nobody";
  server_.push(as_nobody);
  ASSERT_TRUE(reported(44, "running")) << agent_.lines();
  EXPECT_GT(started("j-000044"), 0);
  // As root the job runs as that user; an agent that is not root cannot
  // switch users and runs it as itself.
  const struct passwd* nobody_user = getpwnam("nobody");
  if (geteuid() != 0 || nobody_user) {
    ASSERT_GT(started("j-000046"), 0) << agent_.lines();
    EXPECT_EQ(job_uid("j-000046"),
              std::to_string(geteuid() == 0 ? nobody_user->pw_uid : geteuid()));
  } else {
    ASSERT_TRUE(reported(46, "launch_failed"));  // root, and no such user here
    EXPECT_NE(server_.last_report(46).at("log_tail").get<std::string>().find("no user 'nobody'"),
              std::string::npos);
  }
  EXPECT_TRUE(wait_for([&] { return agent_.count_lines("ignoring malformed action") == 2; }, 5))
      << agent_.lines();
}

TEST_F(Agent, KillsLeftoversOfAnEarlierAgentBeforeRegistering) {
  auto spawn = [] {
    pid_t child = fork();
    if (child == 0) {
      setpgid(0, 0);
      execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      _exit(127);
    }
    setpgid(child, child);
    wait_for([&] { return process_start_time(child).has_value(); }, 2);
    return child;
  };
  pid_t leftover = spawn();
  pid_t innocent = spawn();  // its pid file is stale: the pid went to another process
  ASSERT_GT(leftover, 0);
  ASSERT_GT(innocent, 0);
  auto runs = dir_ / "state/runs";
  fs::create_directories(runs / "17");
  fs::create_directories(runs / "16");
  std::ofstream(runs / "17/pid") << leftover << ' ' << *process_start_time(leftover) << '\n';
  std::ofstream(runs / "16/pid") << innocent << ' ' << *process_start_time(innocent) + 5 << '\n';

  agent_.start(options());
  ASSERT_TRUE(registered());
  int status = 0;
  // Dead before the registration (the test is its parent, so it waits to be reaped).
  EXPECT_EQ(waitpid(leftover, &status, WNOHANG), leftover);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(fs::exists(runs / "17/pid"));
  EXPECT_FALSE(fs::exists(runs / "16/pid"));
  EXPECT_TRUE(process_group_alive(innocent));
  EXPECT_EQ(agent_.count_lines("killed leftover process group " + std::to_string(leftover) +
                               " (lease 17)"),
            1)
      << agent_.lines();
  kill(innocent, SIGKILL);
  waitpid(innocent, nullptr, 0);
}

// Leftover cgroups of an earlier agent process of this node (stand-in
// directories under --cgroup, which is not the test's own cgroup: nothing
// moves): its runs' cgroups and its leaf go; other nodes' stay.
TEST_F(Agent, RemovesTheCgroupsAndLeafOfAnEarlierAgentOfItsNode) {
  const fs::path cg = dir_ / "cg";
  for (const char* d :
       {"fairgpu-n1-99-lease-3", "fairgpu-agent@n1", "fairgpu-agent@n2", "fairgpu-n2-98-lease-4"})
    fs::create_directories(cg / d);
  AgentOptions o = options();
  o.cgroup_dir = cg.string();
  agent_.start(o);
  ASSERT_TRUE(registered());
  EXPECT_FALSE(fs::exists(cg / "fairgpu-n1-99-lease-3"));
  EXPECT_FALSE(fs::exists(cg / "fairgpu-agent@n1"));
  EXPECT_TRUE(fs::exists(cg / "fairgpu-agent@n2"));
  EXPECT_TRUE(fs::exists(cg / "fairgpu-n2-98-lease-4"));
  EXPECT_EQ(agent_.count_lines("moved into cgroup"), 0) << agent_.lines();
  EXPECT_EQ(agent_.count_lines("memory limits will not be enforced: the memory controller is not "
                               "available in " +
                               cg.string()),
            1)
      << agent_.lines();
}

// Issue 30, M1: a job's process that leaves its session and process group
// (setsid in a double fork) must not outlive its run. These tests need a
// cgroup v2 directory they can make: a child of the hierarchy's root, which
// needs no controller (a run's cgroup only has to hold its processes).
class RunsCgroup {
 public:
  RunsCgroup() {
    const std::string mount = cgroup2_mount();
    if (mount.empty()) {
      skip_ = "no cgroup v2 hierarchy mounted on this machine";
      return;
    }
    const std::string dir =
        fmt::format("{}/fairgpu-agent-test-{}-{}", mount, ::getpid(),
                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
    if (::mkdir(dir.c_str(), 0755) != 0) {
      skip_ = fmt::format("cannot create a cgroup under {}: {}", mount, std::strerror(errno));
      return;
    }
    dir_ = dir;
  }
  // Kills what a failing test left in the runs' cgroups and removes them.
  ~RunsCgroup() {
    if (dir_.empty()) return;
    wait_for(
        [&] {
          std::error_code ec;
          for (const auto& e : fs::directory_iterator(dir_, ec))
            if (e.is_directory()) {
              kill_cgroup(e.path().string());
              ::rmdir(e.path().c_str());
            }
          return ::rmdir(dir_.c_str()) == 0 || errno == ENOENT;
        },
        30);
  }
  const std::string& dir() const { return dir_; }
  const std::string& skip() const { return skip_; }
  // The cgroups in it (the runs').
  int children() const {
    int n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) n += e.is_directory() ? 1 : 0;
    return n;
  }

 private:
  std::string dir_, skip_;
};

// Starts `setsid sleep 1000` in a subshell that then exits (a double fork),
// waits until it runs (as `sleep`, in a session of its own) and records
// "PID START" (START: field 22 of its /proc stat, against pid reuse) in the
// checkpoint dir's `escaped`; then records the job's own pid in `leader`.
constexpr const char* kEscape =
    "d=\"$FAIRGPU_CHECKPOINT_DIR\"; "
    "( setsid sleep 1000 & p=$!; "
    "until read c < /proc/$p/comm && [ \"$c\" = sleep ]; do sleep 0.05; done; "
    "echo \"$p $(cut -d' ' -f22 /proc/$p/stat)\" > \"$d/escaped.tmp\"; "
    "mv \"$d/escaped.tmp\" \"$d/escaped\" ); "
    "echo $$ > \"$d/leader.tmp\"; mv \"$d/leader.tmp\" \"$d/leader\"; ";
// Runs until SIGUSR1.
constexpr const char* kUntilUsr1 = "trap 'exit 0' USR1; while true; do sleep 0.05; done";

// A process recorded by kEscape.
struct Escaped {
  pid_t pid = 0;
  unsigned long long start = 0;
  // Alive, not a zombie, and still the process recorded.
  bool alive() const { return pid > 0 && process_alive(pid) && process_start_time(pid) == start; }
  // Kills it where a failing test left it alive.
  void kill_if_alive() const {
    if (alive()) ::kill(pid, SIGKILL);
  }
};

// Field 6 of /proc/<pid>/stat (the session id); 0 when unreadable.
pid_t session_of(pid_t pid) {
  std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 1));
  std::string state, ppid, pgrp, session;
  rest >> state >> ppid >> pgrp >> session;
  return session.empty() ? 0 : std::stoi(session);
}

// Live processes (not zombies) whose /proc entry `uid` owns.
int processes_of(uid_t uid) {
  int n = 0;
  DIR* proc = ::opendir("/proc");
  if (!proc) return -1;
  while (dirent* e = ::readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    struct stat st {};
    if (::stat(("/proc/" + std::string(e->d_name)).c_str(), &st) == 0 && st.st_uid == uid &&
        process_alive(static_cast<pid_t>(std::atol(e->d_name))))
      ++n;
  }
  ::closedir(proc);
  return n;
}

class AgentRunCgroups : public Agent {
 protected:
  // Nothing here is about fencing: a heartbeat late on a loaded machine must
  // not stop a run before the test has seen its child.
  void SetUp() override {
    Agent::SetUp();
    server_.with([](FakeServer::State& s) { s.heartbeat_timeout_s = 60; });
  }
  json launch(std::int64_t lease, const std::string& job, const json& command = kJob) const {
    return Agent::launch(lease, job, command, 600);
  }
  // The kEscape record of `job`, once written (generous: a loaded machine).
  Escaped escaped(const std::string& job) {
    const std::string path = ckpt(job) + "/escaped";
    Escaped e;
    if (!wait_for([&] { return fs::exists(path); }, 30)) return e;
    std::istringstream in(slurp(path));
    in >> e.pid >> e.start;
    recorded_.push_back(e);
    return e;
  }
  pid_t leader(const std::string& job) {
    const std::string path = ckpt(job) + "/leader";
    if (!wait_for([&] { return fs::exists(path); }, 30)) return -1;
    return std::stoi(slurp(path));
  }
  void TearDown() override {
    agent_.stop();
    for (const Escaped& e : recorded_) e.kill_if_alive();
    Agent::TearDown();
  }

  std::vector<Escaped> recorded_;
};

// The run's end kills its escaped child, however it ends: the job exits, it
// is revoked, the agent stops; and each run is reported ended only once it
// is dead.
TEST_F(AgentRunCgroups, AChildThatLeftTheJobsSessionDiesWithItsRun) {
  RunsCgroup cg;
  if (!cg.skip().empty()) GTEST_SKIP() << cg.skip();
  AgentOptions o = options();
  o.cgroup_dir = cg.dir();
  agent_.start(o);
  ASSERT_TRUE(registered());
  const std::string keep_running = std::string(kEscape) + kUntilUsr1;
  json exits = launch(1, "j-000001", std::string(kEscape) + "exit 0");
  exits["devices"] = {0};
  json revoked = launch(2, "j-000002", keep_running);
  revoked["devices"] = {1};
  json at_stop = launch(3, "j-000003", keep_running);
  server_.push(exits);
  server_.push(revoked);
  server_.push(at_stop);

  const Escaped e1 = escaped("j-000001"), e2 = escaped("j-000002"), e3 = escaped("j-000003");
  ASSERT_GT(e2.pid, 0) << agent_.lines();
  ASSERT_GT(e3.pid, 0) << agent_.lines();
  ASSERT_TRUE(e2.alive());
  EXPECT_EQ(session_of(e2.pid), e2.pid) << "the child left the job's session";

  ASSERT_TRUE(reported(1, "exited", 30)) << agent_.lines();
  EXPECT_EQ(server_.last_report(1).at("exit_code"), 0);
  ASSERT_GT(e1.pid, 0);
  EXPECT_FALSE(e1.alive()) << "run reported ended while the child it left lived";

  ASSERT_TRUE(reported(2, "running", 30));
  ASSERT_TRUE(e2.alive());
  server_.push({{"action", "revoke"}, {"lease", 2}, {"job", "j-000002"}});
  ASSERT_TRUE(reported(2, "exited", 30)) << agent_.lines();
  EXPECT_EQ(server_.last_report(2).at("revoked"), true);
  EXPECT_FALSE(e2.alive()) << "run reported ended while the child it left lived";

  ASSERT_TRUE(e3.alive());
  agent_.stop();  // returns once its runs have ended
  EXPECT_FALSE(e3.alive()) << "the agent stopped while a run's child lived";
  EXPECT_EQ(server_.last_report(3).at("state"), "exited");
  EXPECT_EQ(cg.children(), 0) << "the runs' cgroups are gone with them";
}

// An agent killed with kill -9 takes its jobs' leaders with it (their
// parent-death signal), not a child that left the job's process group. The
// next agent process of the node kills that child (its run's cgroup) before
// it registers.
TEST_F(AgentRunCgroups, ARestartedAgentKillsWhatItsKilledPredecessorsRunLeft) {
  RunsCgroup cg;
  if (!cg.skip().empty()) GTEST_SKIP() << cg.skip();
  const std::vector<std::string> argv = {
      FAIRGPU_BINARY, "agent", "--server",    server_.url(),
      "--node",       "n1",    "--gpus",      "v100:4",
      "--cpus",       "2",     "--memory-gb", "4",
      "--token",      kToken,  "--state-dir", (dir_ / "state").string(),
      "--cgroup",     cg.dir()};
  auto first = std::make_unique<Daemon>(argv, dir_ / "agent1.log");
  ASSERT_TRUE(server_.wait([](FakeServer::State& s) { return s.epoch >= 1; }, 30)) << first->text();
  server_.push(launch(11, "j-000011", std::string(kEscape) + kUntilUsr1));
  const Escaped e = escaped("j-000011");
  const pid_t job = leader("j-000011");
  ASSERT_GT(e.pid, 0) << first->text();
  ASSERT_GT(job, 0);
  ASSERT_TRUE(e.alive());

  first->stop(SIGKILL);
  ASSERT_TRUE(wait_for([&] { return !process_alive(job); }, 30)) << "the leader outlived the agent";
  ASSERT_TRUE(e.alive()) << "the child outside the job's process group survives a kill -9";

  auto second = std::make_unique<Daemon>(argv, dir_ / "agent2.log");
  ASSERT_TRUE(server_.wait([](FakeServer::State& s) { return s.epoch >= 2; }, 30))
      << second->text();
  EXPECT_TRUE(wait_for([&] { return !e.alive(); }, 30)) << second->text();
  // Logged once they are gone: wait for the line too (a loaded machine).
  const std::string killed =
      "killed the processes an earlier agent's run left in cgroup " + cg.dir() + "/fairgpu-n1-";
  EXPECT_TRUE(wait_for([&] { return second->text().find(killed) != std::string::npos; }, 30))
      << second->text();
  EXPECT_EQ(cg.children(), 0) << "the leftover cgroup is removed before the registration";
  EXPECT_EQ(second->stop(SIGTERM), 0) << second->text();
}

// Issue 30, "no pids limit": a job forking until fork fails gets no more
// than --max-pids processes (its user's RLIMIT_NPROC, and pids.max where the
// machine has a cgroup v2 pids controller), and another tenant's job still
// launches on the node beside it.
TEST_F(AgentRunCgroups, AForkBombIsHeldToMaxPidsAndTheNodeStillLaunches) {
  if (geteuid() != 0)
    GTEST_SKIP() << "only a root agent runs a job as a user of its own (RLIMIT_NPROC)";
  constexpr int kMaxPids = 50;
  // A slot (uid --uid-base + slot) of no other test and no earlier run of
  // this one: the kernel counts a user's zombies against RLIMIT_NPROC until
  // they are reaped, and the sleeps a bomb leaves are reaped by init,
  // whenever it gets to them.
  static int runs = 0;
  const int slot = 4000 + static_cast<int>(::getpid() % 10000) * 16 + runs++ % 16;
  const auto bomber = static_cast<uid_t>(200000 + slot);
  RunsCgroup cg;
  AgentOptions o = options();
  o.max_pids = kMaxPids;
  if (cg.skip().empty()) o.cgroup_dir = cg.dir();
  agent_.start(o);
  ASSERT_TRUE(registered());
  // An inner shell starts background sleeps, counting them, until a fork
  // fails (then the shell dies) or 2000 are up; the job then records how
  // the inner shell ended and becomes a sleep itself (exec: no fork).
  const std::string bomb =
      "d=\"$FAIRGPU_CHECKPOINT_DIR\"; "
      "sh -c 'n=0; while [ $n -lt 2000 ]; do sleep 1000 & n=$((n+1)); echo $n > \"$0/started\"; "
      "done' \"$d\"; "
      "echo $? > \"$d/bomb-exit\"; exec sleep 1000";
  json a = launch(21, "j-000021", bomb);
  a["tenant_slot"] = slot;
  a["devices"] = {0};
  server_.push(a);
  ASSERT_TRUE(reported(21, "running", 30)) << agent_.lines();
  const std::string exit_file = ckpt("j-000021") + "/bomb-exit";
  ASSERT_TRUE(wait_for([&] { return !slurp(exit_file).empty(); }, 60)) << agent_.lines();
  const int started = std::stoi(slurp(ckpt("j-000021") + "/started"));
  EXPECT_NE(slurp(exit_file), "0\n") << "no fork failed in " << started << " forks";
  EXPECT_GE(started, 1);
  EXPECT_LE(started, kMaxPids);
  EXPECT_LE(processes_of(bomber), kMaxPids);
  const json limits = server_.last_report(21).value("limits", json());
  EXPECT_NE(limits.dump().find(fmt::format("RLIMIT_NPROC 50 for uid {}", bomber)),
            std::string::npos)
      << limits;

  // The node is still usable: another tenant's job starts beside it.
  json b = launch(22, "j-000022");
  b["devices"] = {1};
  server_.push(b);
  ASSERT_TRUE(wait_for([&] { return fs::exists(ckpt("j-000022") + "/env"); }, 30))
      << agent_.lines();
  ASSERT_TRUE(reported(22, "running", 30));
  for (std::int64_t lease : {21, 22})
    server_.push({{"action", "revoke"}, {"lease", lease}, {"job", "j"}});
  EXPECT_TRUE(reported(21, "exited", 30)) << agent_.lines();
  EXPECT_TRUE(reported(22, "exited", 30)) << agent_.lines();
  EXPECT_TRUE(wait_for([&] { return processes_of(bomber) == 0; }, 30));
}

TEST_F(Agent, RetriesRegistrationUntilTheServerAnswers) {
  server_.with([](FakeServer::State& s) { s.register_failures = 2; });
  agent_.start(options());
  ASSERT_TRUE(registered());
  EXPECT_EQ(server_.with([](FakeServer::State& s) { return s.registrations.size(); }), 3u);
  EXPECT_EQ(agent_.count_lines("cannot register with " + server_.url() +
                               ": server answered 503: starting up; retrying in"),
            2)
      << agent_.lines();
}

TEST_F(Agent, KeepsRetryingAnUnreachableServerUntilStopped) {
  // A port nobody listens on.
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len);
  close(sock);
  AgentOptions o = options();
  o.server_url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  agent_.start(o);
  ASSERT_TRUE(wait_for([&] { return agent_.count_lines("cannot reach the server") >= 3; }, 5))
      << agent_.lines();
  EXPECT_FALSE(agent_.done());
  auto stop_at = Clock::now();
  agent_.stop();
  EXPECT_LT(since(stop_at), 1.0);
  EXPECT_EQ(agent_.error(), "");
}

TEST_F(Agent, RefusedRegistrationIsAnInputError) {
  AgentOptions o = options();
  o.token = "wrong";
  std::atomic<bool> stop{false};
  try {
    run_agent(o, stop);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("401: bad or missing token"), std::string::npos)
        << e.what();
  }
  o = options();
  o.server_url = "ftp://host";
  EXPECT_THROW(run_agent(o, stop), InputError);
  o = options();
  o.devices = {0, 0};
  EXPECT_THROW(run_agent(o, stop), InputError);
}

TEST(AgentGpus, ParsesTheGpusFlag) {
  auto four = parse_gpus_flag("v100:4");
  EXPECT_EQ(four.gpu_type, "v100");
  EXPECT_EQ(four.devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_gpus_flag("k80:0,2,5").devices, (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(parse_gpus_flag("k80:5,").devices, (std::vector<int>{5}));
  for (const char* bad :
       {"v100", ":4", "v100:0", "v100:x", "v100:1,1", "v100:,", "v 100:2", "v100:-1,2"})
    EXPECT_THROW(parse_gpus_flag(bad), InputError) << bad;
}

TEST(AgentGpus, NormalisesNvidiaSmiNames) {
  const std::pair<const char*, const char*> cases[] = {{"Tesla V100-SXM2-16GB", "v100"},
                                                       {"Tesla K80", "k80"},
                                                       {"Tesla P100-PCIE-16GB", "p100"},
                                                       {"NVIDIA A100-SXM4-40GB", "a100"},
                                                       {"NVIDIA H100 80GB HBM3", "h100"},
                                                       {"Tesla T4", "t4"},
                                                       {"NVIDIA GeForce RTX 3090", "rtx3090"},
                                                       {"Quadro RTX 6000", "rtx6000"},
                                                       {"NVIDIA A10G", "a10g"}};
  for (const auto& [name, type] : cases) EXPECT_EQ(normalise_gpu_name(name), type) << name;

  auto gpus = parse_nvidia_smi("0, Tesla V100-SXM2-16GB\n1, Tesla V100-SXM2-16GB\n");
  EXPECT_EQ(gpus.gpu_type, "v100");
  EXPECT_EQ(gpus.devices, (std::vector<int>{0, 1}));
  try {
    parse_nvidia_smi("0, Tesla V100-SXM2-16GB\n1, Tesla T4\n");
    FAIL() << "mixed types accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("several types on this node (t4 on 1; v100 on 0)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(parse_nvidia_smi(""), InputError);
  EXPECT_THROW(parse_nvidia_smi("No devices were found\n"), InputError);
}

}  // namespace
}  // namespace fairgpu::live

namespace fairgpu::live {
namespace {

// `fairgpu agent`'s token (issue 12): from a file only its owner reads, not
// from one others may read; --token and --token-file not both.
TEST(AgentCommand, TokenFileMustBeUnreadableByOthers) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "fairgpu-agent-cmd-XXXXXX").string();
  const std::filesystem::path dir = mkdtemp(tmpl.data());
  const auto file = dir / "token";
  std::ofstream(file) << "fgn_0123456789abcdef\n";
  std::filesystem::permissions(file, std::filesystem::perms::owner_read |
                                         std::filesystem::perms::owner_write |
                                         std::filesystem::perms::others_read);
  const std::vector<std::string> base = {"agent",  "--server", "http://127.0.0.1:1", "--node",
                                         "n1",     "--gpus",   "v100:1",             "--state-dir",
                                         (dir / "state").string()};
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return testing_support::run_binary(args, dir, {}, 20);
  };
  auto r = with({"--token-file", file.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("is readable by others (mode 604): chmod 600 it"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = with({"--token-file", file.string(), "--token", "abcdefgh"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("not both"), std::string::npos) << r.err;
  r = with({});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--token-file: missing"), std::string::npos) << r.err;
  std::filesystem::permissions(
      file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  r = with({"--token-file", file.string(), "--max-pids", "-1"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--max-pids: -1 is not in 0..4194304 (0: no limit)"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fairgpu::live
