// The live manager end to end on loopback (issue 5): a real `fairgpu serve`,
// three `fairgpu agent`s of different (emulated) GPU types on this machine,
// jobs submitted with `fairgpu submit` that run `fairgpu-train`, the demo
// SGD workload, which checkpoints on revoke and resumes under its next lease.
//
//  - Two tenants (weights 2 and 1), 20 jobs, oef-coop with 2 s rounds and no
//    quantum (the paper's per-round rounding, so leases turn over): every
//    job finishes with exactly the weights and loss of an uninterrupted run
//    of its seed; jobs are preempted and move across GPU types; while both
//    tenants have backlog their GPU shares follow the policy's 2:1.
//  - Over HTTP: a job type without a profile is profiled on each GPU type
//    first and then runs; a job whose command fails is retried, then failed
//    with its log tail; tokens see only their own jobs; malformed requests
//    get 400 naming the field.
//  - kill -9 of the server mid-run and a restart on the same store; kill -9
//    of an agent and a restart: every job still finishes exactly once with
//    the right result, and a restart loses at most one lease of progress.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "run_binary.h"

namespace fairgpu {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using testing_support::slurp;

// A background process (server or agent) with its output in a log file.
class Daemon {
 public:
  Daemon(std::vector<std::string> argv, fs::path log) : argv_(std::move(argv)), log_(std::move(log)) { start(); }
  ~Daemon() { stop(SIGKILL); }
  void start() {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (auto& a : argv_) args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  void stop(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  const fs::path& log() const { return log_; }

 private:
  std::vector<std::string> argv_;
  fs::path log_;
  pid_t pid_ = -1;
};

const std::string kTrain = FAIRGPU_TRAIN_BINARY;
const std::string kSpeedMap = "slow=1,mid=2,fast=4";
constexpr double kBaseRate = 100;  // it/s on "slow"
constexpr int kCheckpointEvery = 50;

class LiveEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fairgpu-e2e-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) +
            "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // The emulated speeds, as a profile file (what profiling would measure).
    std::ofstream(dir_ / "profiles.json") << R"json({"slow": {"('mlp', 1)": {"null": 100}},
      "mid": {"('mlp', 1)": {"null": 200}}, "fast": {"('mlp', 1)": {"null": 400}}})json";
    json config = {{"listen", "127.0.0.1:0"},
                   {"data_dir", (dir_ / "data").string()},
                   {"checkpoint_dir", (dir_ / "ckpt").string()},
                   {"policy", "oef-coop:quantum=0"},
                   {"round_s", 2},
                   {"heartbeat_s", 0.2},
                   {"heartbeat_timeout_s", 3},
                   {"grace_s", 2},
                   {"kill_after_s", 1},
                   {"profiles", (dir_ / "profiles.json").string()},
                   {"restart_overhead_s", 0.3},
                   {"profile_iterations", 60},
                   {"admin_token", "admin-token"},
                   {"agent_token", "agent-token"},
                   {"tenants",
                    {{{"name", "alice"}, {"weight", 2}, {"token", "alice-token"}},
                     {{"name", "bob"}, {"token", "bob-token"}}}}};
    std::ofstream(dir_ / "serve.json") << config.dump(2);
  }
  void TearDown() override {
    agents_.clear();
    server_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void start_server(int port) {
    fs::remove(dir_ / "port");
    server_ = std::make_unique<Daemon>(
        std::vector<std::string>{FAIRGPU_BINARY, "serve", "--config", (dir_ / "serve.json").string(),
                                 "--port", std::to_string(port), "--port-file", (dir_ / "port").string()},
        dir_ / "server.log");
    for (int i = 0; i < 200 && !fs::exists(dir_ / "port"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    ASSERT_TRUE(fs::exists(dir_ / "port")) << slurp(dir_ / "server.log");
    port_ = std::stoi(slurp(dir_ / "port"));
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void start_agent(const std::string& node, const std::string& gpus) {
    agents_[node] = std::make_unique<Daemon>(
        std::vector<std::string>{FAIRGPU_BINARY, "agent", "--server", url(), "--node", node, "--gpus", gpus,
                                 "--token", "agent-token", "--state-dir", (dir_ / ("agent-" + node)).string()},
        dir_ / ("agent-" + node + ".log"));
  }
  void start_cluster() {
    start_server(0);
    start_agent("a-slow", "slow:2");
    start_agent("a-mid", "mid:2");
    start_agent("a-fast", "fast:2");
  }
  std::vector<std::string> train_command(int seed, int iterations) const {
    return {kTrain, "--iterations", std::to_string(iterations), "--seed", std::to_string(seed),
            "--base-rate", std::to_string(kBaseRate), "--speed-map", kSpeedMap,
            "--checkpoint-every", std::to_string(kCheckpointEvery)};
  }
  std::string submit(const std::string& tenant, int seed, int iterations) {
    std::vector<std::string> args = {"submit", "--server", url(), "--token", tenant + "-token",
                                     "--name", "seed" + std::to_string(seed), "--job-type", "mlp",
                                     "--workers", "1", "--iterations", std::to_string(iterations), "--"};
    for (auto& a : train_command(seed, iterations)) args.push_back(a);
    auto r = testing_support::run_binary(args, scratch());
    EXPECT_EQ(r.status, 0) << r.err;
    std::string id = r.out;
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id;
  }
  fs::path scratch() {
    fs::create_directories(dir_ / "scratch");
    return dir_ / "scratch";
  }
  json get(const std::string& path, const std::string& token = "admin-token") {
    httplib::Client cli("127.0.0.1", port_);
    cli.set_read_timeout(5, 0);
    auto r = cli.Get(path.c_str(), {{"Authorization", "Bearer " + token}});
    if (!r || r->status != 200) return nullptr;
    return json::parse(r->body);
  }
  // Polls until every job is finished (or failed); returns the jobs.
  json wait_all(std::size_t n, double timeout_s, const std::function<void(const json&)>& each = {}) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    json jobs;
    while (std::chrono::steady_clock::now() < deadline) {
      json answer = get("/v1/jobs");
      if (!answer.is_null()) {
        jobs = answer["jobs"];
        if (each) each(jobs);
        std::size_t done = 0;
        for (const json& j : jobs) done += j["state"] == "finished" || j["state"] == "failed";
        if (jobs.size() == n && done == n) return jobs;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "jobs not done in " << timeout_s << " s: " << jobs.dump() << "\nserver log:\n"
                  << slurp(dir_ / "server.log");
    return jobs;
  }
  // The uninterrupted run of a seed, unpaced.
  json reference(int seed, int iterations) {
    const fs::path d = dir_ / ("ref-" + std::to_string(seed));
    fs::create_directories(d);
    std::string cmd = testing_support::quote(kTrain) + " --iterations " + std::to_string(iterations) +
                      " --seed " + std::to_string(seed) + " --checkpoint-dir " +
                      testing_support::quote(d.string()) + " >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return json::parse(slurp(d / "result.json"));
  }
  void expect_results_match(const json& jobs, const std::map<std::string, int>& seed_of, int iterations) {
    for (const json& j : jobs) {
      const std::string id = j["id"];
      ASSERT_EQ(j["state"], "finished") << j.dump();
      const json got = json::parse(slurp(dir_ / "ckpt" / id / "result.json"));
      const json want = reference(seed_of.at(id), iterations);
      EXPECT_EQ(got["weights_checksum"], want["weights_checksum"]) << id;
      EXPECT_EQ(got["final_loss"].get<double>(), want["final_loss"].get<double>()) << id;
      EXPECT_EQ(got["iterations"], iterations) << id;
    }
  }
  // (job, gpu type) of every lease that ran, from the store.
  std::map<std::string, std::set<std::string>> gpu_types_used() {
    std::map<std::string, std::set<std::string>> out;
    sqlite3* db = nullptr;
    sqlite3_open((dir_ / "data" / "fairgpu.db").c_str(), &db);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db,
                       "SELECT leases.job, nodes.gpu_type FROM leases JOIN nodes ON leases.node = "
                       "nodes.name WHERE leases.status = 'ended' AND leases.profiling = 0",
                       -1, &st, nullptr);
    while (sqlite3_step(st) == SQLITE_ROW)
      out[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))].insert(
          reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }

  // Exactly once: one run per job trains to its last iteration and prints its
  // "final loss" (a run relaunched because its exit went unreported when the
  // server or agent died resumes at the last iteration, trains nothing and
  // reports the same result: it does not count); and each run resumed at most
  // one lease of progress (2 s on the slowest type) behind where the run
  // before it got to.
  void expect_each_job_ran_once(std::size_t n) {
    std::map<std::string, std::vector<std::pair<long, fs::path>>> runs;  // job -> (lease, run dir)
    const std::regex launch(R"(launch lease (\d+) job (j-\d+))");
    for (const auto& [node, agent] : agents_) {
      std::string log = slurp(agent->log());
      for (std::sregex_iterator it(log.begin(), log.end(), launch), end; it != end; ++it)
        runs[(*it)[2]].push_back(
            {std::stol((*it)[1]), dir_ / ("agent-" + node) / "runs" / (*it)[1].str()});
    }
    ASSERT_EQ(runs.size(), n);
    const std::regex resumed(R"(resumed from .* at iteration (\d+) of (\d+))");
    int lost_max = 0;
    for (auto& [job, list] : runs) {
      std::sort(list.begin(), list.end());
      int finals = 0;
      long reached = 0;
      for (const auto& [lease, run_dir] : list) {
        const std::string log = slurp(run_dir / "log");
        std::smatch m;
        const bool resumed_done = std::regex_search(log, m, resumed) && m[1] == m[2];
        for (std::size_t at = log.find("final loss:"); at != std::string::npos && !resumed_done;
             at = log.find("final loss:", at + 1))
          ++finals;
        if (std::regex_search(log, m, resumed)) {
          const long from = std::stol(m[1]);
          lost_max = std::max(lost_max, static_cast<int>(reached - from));
          EXPECT_LE(reached - from, static_cast<long>(2 * kBaseRate)) << job << " lease " << lease;
        }
        const std::string progress = slurp(run_dir / "progress");
        if (!progress.empty()) reached = std::max(reached, std::stol(progress));
      }
      EXPECT_EQ(finals, 1) << job;
    }
    std::cout << "most progress lost by one restart: " << lost_max << " iterations\n";
  }
  // Every (node, device) in at most one lease that may be running (active or
  // revoking), read from the store as the server commits it.
  void expect_no_device_shared() {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2((dir_ / "data" / "fairgpu.db").c_str(), &db, SQLITE_OPEN_READONLY,
                        nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      return;  // not created yet
    }
    sqlite3_busy_timeout(db, 2000);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(
            db, "SELECT id, node, devices FROM leases WHERE status IN ('active', 'revoking')", -1,
            &st, nullptr) == SQLITE_OK) {
      std::map<std::pair<std::string, int>, long> holder;
      while (sqlite3_step(st) == SQLITE_ROW) {
        const long lease = sqlite3_column_int64(st, 0);
        const std::string node = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
        for (int d : json::parse(reinterpret_cast<const char*>(sqlite3_column_text(st, 2)))
                         .get<std::vector<int>>()) {
          auto [it, fresh] = holder.emplace(std::make_pair(node, d), lease);
          EXPECT_TRUE(fresh) << node << " device " << d << " held by leases " << it->second
                             << " and " << lease;
        }
      }
      ++device_samples_;
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  int device_samples_ = 0;

  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<Daemon> server_;
  std::map<std::string, std::unique_ptr<Daemon>> agents_;
};

TEST_F(LiveEndToEnd, TwoTenantsTwentyJobsUnderOefCoop) {
  start_cluster();
  constexpr int kIterations = 500;
  std::map<std::string, int> seed_of;
  for (int i = 0; i < 20; ++i) seed_of[submit(i % 2 ? "bob" : "alice", 100 + i, kIterations)] = 100 + i;

  // GPU shares sampled while both tenants have more jobs than half the GPUs.
  double share_sum[2] = {0, 0};
  int samples = 0;
  json jobs = wait_all(20, 120, [&](const json& list) {
    int waiting[2] = {0, 0};
    for (const json& j : list)
      if (j["state"] == "queued" || j["state"] == "running") ++waiting[j["tenant"] == "bob"];
    if (waiting[0] < 4 || waiting[1] < 4) return;
    json t = get("/v1/tenants");
    if (t.is_null()) return;
    for (const json& row : t["tenants"]) share_sum[row["name"] == "bob"] += row["share"].get<double>();
    ++samples;
  });
  ASSERT_FALSE(HasFailure());
  expect_results_match(jobs, seed_of, kIterations);

  int preemptions = 0, restarts = 0;
  for (const json& j : jobs) {
    preemptions += j["preemptions"].get<int>();
    restarts += j["restarts"].get<int>();
  }
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(restarts, 0);
  int moved = 0;
  for (const auto& [job, types] : gpu_types_used()) moved += types.size() > 1;
  EXPECT_GT(moved, 0) << "no job ran on more than one GPU type";

  // Same job type everywhere, weights 2:1: oef-coop's allocation gives alice
  // two thirds of what the two hold (sampled GPU shares, pending launches
  // and start-up included).
  ASSERT_GE(samples, 5);
  const double alice = share_sum[0] / samples, bob = share_sum[1] / samples;
  std::cout << "mean GPU share while both wait: alice " << alice << ", bob " << bob << " (" << samples
            << " samples)\n";
  EXPECT_NEAR(alice / (alice + bob), 2.0 / 3.0, 0.06);
}

TEST_F(LiveEndToEnd, ProfilesUnknownTypesFailsBadCommandsAndIsolatesTokens) {
  start_cluster();
  httplib::Client cli("127.0.0.1", port_);
  auto post = [&](const std::string& token, const json& body) {
    return cli.Post("/v1/jobs", {{"Authorization", "Bearer " + token}}, body.dump(), "application/json");
  };
  // "newnet" has no profile: measured on slow, mid and fast, then scheduled.
  std::vector<std::string> cmd = train_command(7, 1200);
  auto r = post("alice-token", {{"name", "new"}, {"job_type", "newnet"}, {"workers", 1},
                                {"iterations", 1200}, {"command", cmd}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string fresh = json::parse(r->body)["id"];
  EXPECT_EQ(json::parse(r->body)["state"], "profiling");
  // A command that fails: retried max_retries (2) times, then failed.
  r = post("bob-token", {{"name", "broken"}, {"job_type", "mlp"}, {"workers", 1}, {"iterations", 10},
                         {"command", "echo 'no such dataset' >&2; exit 3"}});
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string broken = json::parse(r->body)["id"];

  // Tokens: bob cannot see or cancel alice's job; no token, 401.
  EXPECT_EQ(cli.Get(("/v1/jobs/" + fresh).c_str(), {{"Authorization", "Bearer bob-token"}})->status, 403);
  EXPECT_EQ(cli.Post(("/v1/jobs/" + fresh + "/cancel").c_str(), {{"Authorization", "Bearer bob-token"}}, "", "application/json")->status, 403);
  EXPECT_EQ(cli.Get("/v1/jobs")->status, 401);
  EXPECT_EQ(get("/v1/jobs", "bob-token")["jobs"].size(), 1u);
  // Malformed: 400 with the field named, nothing stored.
  r = post("alice-token", {{"name", "x"}, {"job_type", "mlp"}, {"workers", "two"}, {"iterations", 5}, {"command", "true"}});
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(json::parse(r->body)["error"], "workers: expected a number, got string");
  r = cli.Post("/v1/jobs", {{"Authorization", "Bearer alice-token"}}, "{not json", "application/json");
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(get("/v1/jobs")["jobs"].size(), 2u);

  json jobs = wait_all(2, 90);
  ASSERT_FALSE(HasFailure());
  for (const json& j : jobs) {
    if (j["id"] == broken) {
      EXPECT_EQ(j["state"], "failed");
      EXPECT_EQ(j["failures"], 3);
      EXPECT_EQ(j["exit_code"], 3);
      EXPECT_NE(j["log_tail"].get<std::string>().find("no such dataset"), std::string::npos) << j.dump();
    } else {
      EXPECT_EQ(j["state"], "finished");
      const json got = json::parse(slurp(dir_ / "ckpt" / fresh / "result.json"));
      EXPECT_EQ(got["weights_checksum"], reference(7, 1200)["weights_checksum"]);
    }
  }
  // The measured profile follows the emulated speeds (100, 200, 400 it/s).
  std::map<std::string, double> measured;
  const json profiles = get("/v1/profiles");
  for (const json& p : profiles["profiles"])
    if (p["job_type"] == "newnet" && p["source"] == "measured") measured[p["gpu_type"]] = p["iterations_per_s"];
  ASSERT_EQ(measured.size(), 3u) << profiles.dump();
  EXPECT_NEAR(measured["slow"], 100, 10);
  EXPECT_NEAR(measured["mid"], 200, 20);
  EXPECT_NEAR(measured["fast"], 400, 40);
}

TEST_F(LiveEndToEnd, SurvivesKillNineOfServerAndAgent) {
  start_cluster();
  constexpr int kIterations = 900;
  std::map<std::string, int> seed_of;
  for (int i = 0; i < 12; ++i) seed_of[submit(i % 2 ? "bob" : "alice", 200 + i, kIterations)] = 200 + i;

  // Mid-run: the server dies (kill -9) and comes back on the same port and store.
  for (int i = 0; i < 100; ++i) {
    json j = get("/v1/jobs");
    int progressing = 0;
    if (!j.is_null())
      for (const json& job : j["jobs"]) progressing += job["iterations_done"].get<double>() > 100;
    if (progressing >= 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  server_->stop(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  start_server(port_);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // Then an agent dies (its jobs with it) and comes back later.
  agents_["a-fast"]->stop(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  agents_["a-fast"]->start();

  json jobs = wait_all(12, 150);
  ASSERT_FALSE(HasFailure());
  expect_results_match(jobs, seed_of, kIterations);

  expect_each_job_ran_once(seed_of.size());
}

// Bounded chaos: ten jobs, eight faults drawn from a fixed seed, each a
// kill -9 of the server or of one agent, followed after a short pause by its
// restart (the server on the same port and store). Every job still finishes
// exactly once with the weights of an uninterrupted run, no device is ever in
// two running leases (sampled from the store throughout), and no run resumes
// more than one lease of progress behind the run before it.
TEST_F(LiveEndToEnd, ChaosKillNineOfServerAndAgentsWithRestarts) {
  start_cluster();
  constexpr int kIterations = 1200;
  constexpr int kFaults = 8;
  std::map<std::string, int> seed_of;
  for (int i = 0; i < 10; ++i)
    seed_of[submit(i % 2 ? "bob" : "alice", 300 + i, kIterations)] = 300 + i;
  std::mt19937 rng(13);
  const std::vector<std::string> nodes = {"a-slow", "a-mid", "a-fast"};
  auto pause = [&](int lo_ms, int hi_ms) {
    const auto until =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(std::uniform_int_distribution<int>(lo_ms, hi_ms)(rng));
    while (std::chrono::steady_clock::now() < until) {
      expect_no_device_shared();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  };
  int server_kills = 0, agent_kills = 0;
  for (int f = 0; f < kFaults; ++f) {
    pause(800, 2500);
    const int target =
        std::uniform_int_distribution<int>(0, 5)(rng);  // half the faults: the server
    if (target >= 3) {
      server_->stop(SIGKILL);
      ++server_kills;
      pause(200, 1000);
      start_server(port_);
      ASSERT_FALSE(HasFailure());
    } else {
      agents_[nodes[target]]->stop(SIGKILL);
      ++agent_kills;
      pause(200, 1500);
      agents_[nodes[target]]->start();
    }
  }
  json jobs = wait_all(seed_of.size(), 240, [&](const json&) { expect_no_device_shared(); });
  ASSERT_FALSE(HasFailure());
  expect_results_match(jobs, seed_of, kIterations);
  expect_each_job_ran_once(seed_of.size());
  EXPECT_GT(device_samples_, 20);
  std::cout << "faults: " << server_kills << " server, " << agent_kills
            << " agent kill -9, all survived; " << device_samples_ << " store samples\n";
}

}  // namespace
}  // namespace fairgpu
