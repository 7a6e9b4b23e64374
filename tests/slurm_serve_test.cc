// `fairgpu serve` with `"backend": "slurm"` (issue 16) end to end against a
// real slurmctld and three slurmds (scripts/slurm-cluster.sh: n1 v100, n2
// p100, n3 k80, two GPUs each), one cluster for the suite, which CMake runs
// as one ctest entry (SlurmServe). Skipped, with the reason, only when
// Slurm's programs are not installed.
//
//  - Two tenants (weights 2 and 1), 20 fairgpu-train jobs under oef-coop with
//    2 s rounds and no quantum: every job finishes once (one Slurm job each)
//    with the weights and loss of an uninterrupted run of its seed, jobs are
//    preempted and move across GPU types, and while both tenants have
//    backlog their GPU shares follow the policy's 2:1. Meanwhile: the slurmd
//    of n2 is killed with -9 and restarted, n3 is drained in Slurm (its runs
//    leave the plan) and resumed, fairgpu serve is killed with -9 and
//    restarted on its store, a job fails with exit 3, a job is cancelled.
//  - Bad config: no Slurm controller answering, an unknown partition: exit
//    2 with one line.
//  - Serve as root: a tenant's jobs run as its unix_user and cannot read
//    the store; a unix_user Slurm cannot run jobs as is refused (exit 2).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "contended_share.h"
#include "fairgpu/input_error.h"
#include "live/config.h"
#include "run_binary.h"
#include "slurm_cluster.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using testing_support::quote;
using testing_support::SlurmTestCluster;
using testing_support::slurp;

const std::string kTrain = FAIRGPU_TRAIN_BINARY;
constexpr int kIterations = 300;

// `fairgpu serve` in the background, its output in a log file.
class Server {
 public:
  Server(const fs::path& config, const fs::path& port_file, const fs::path& log) {
    fs::remove(port_file);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execl(FAIRGPU_BINARY, FAIRGPU_BINARY, "serve", "--config", config.c_str(), "--port", "0",
              "--port-file", port_file.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 400 && !fs::exists(port_file); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    if (fs::exists(port_file)) port_ = std::stoi(slurp(port_file));
  }
  ~Server() { kill(SIGKILL); }
  void kill(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, sig);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

class SlurmServe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new SlurmTestCluster();
    cluster_->start("n1:v100:2,n2:p100:2,n3:k80:2");
  }
  static void TearDownTestSuite() {
    const bool clean = cluster_->stop();
    EXPECT_TRUE(clean) << "daemons left behind: " << cluster_->stop_log();
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    if (!cluster_->skip_reason().empty()) GTEST_SKIP() << cluster_->skip_reason();
    ASSERT_EQ(cluster_->error(), "");
    dir_ =
        fs::path(cluster_->dir()) / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "profiles.json") << R"json({"k80": {"('mlp', 1)": {"null": 100}},
      "p100": {"('mlp', 1)": {"null": 200}}, "v100": {"('mlp', 1)": {"null": 400}}})json";
  }
  // A failure leaves what a reader needs to find its cause in the test's
  // output: the server's log and the end of every Slurm daemon's log (the
  // cluster's folder is gone once the suite stops).
  void TearDown() override {
    server_.reset();
    if (!HasFailure()) return;
    std::cout << "server log (" << dir_ / "server.log" << "):\n" << slurp(dir_ / "server.log");
    for (const auto& entry : fs::directory_iterator(fs::path(cluster_->dir()) / "log")) {
      const std::string text = slurp(entry.path());
      std::cout << "--- last lines of " << entry.path() << ":\n"
                << text.substr(text.size() > 6000 ? text.size() - 6000 : 0);
    }
  }

  json config(const json& slurm) const {
    return {{"listen", "127.0.0.1:0"},
            {"data_dir", (dir_ / "data").string()},
            {"checkpoint_dir", (dir_ / "ckpt").string()},
            {"policy", policy_},
            {"round_s", 2},
            {"grace_s", 1},
            {"max_retries", 0},
            {"profiles", (dir_ / "profiles.json").string()},
            {"restart_overhead_s", 0.3},
            {"admin_token", "admin-token"},
            {"tenants", tenants_},
            {"backend", "slurm"},
            {"slurm", slurm}};
  }
  std::string policy_ = "oef-coop:quantum=0";
  json good_slurm() const {
    return {{"partition", "main"}, {"conf", cluster_->conf()}, {"poll_s", 0.3}};
  }
  void start_server(const json& slurm = nullptr) {
    std::ofstream(dir_ / "serve.json") << config(slurm.is_null() ? good_slurm() : slurm).dump(2);
    server_ = std::make_unique<Server>(dir_ / "serve.json", dir_ / "port", dir_ / "server.log");
    ASSERT_NE(server_->port(), 0) << slurp(dir_ / "server.log");
  }
  httplib::Result call(const std::string& method, const std::string& path, const json& body,
                       const std::string& token) {
    httplib::Client cli("127.0.0.1", server_->port());
    cli.set_read_timeout(10, 0);
    const httplib::Headers auth = {{"Authorization", "Bearer " + token}};
    if (method == "GET") return cli.Get(path.c_str(), auth);
    return cli.Post(path.c_str(), auth, body.dump(), "application/json");
  }
  json get(const std::string& path) {
    auto r = call("GET", path, nullptr, "admin-token");
    if (!r || r->status != 200) return nullptr;
    return json::parse(r->body);
  }
  std::string submit(const std::string& tenant, const json& command, double iterations) {
    auto r = call(
        "POST", "/v1/jobs",
        {{"job_type", "mlp"}, {"workers", 1}, {"iterations", iterations}, {"command", command}},
        tenant + "-token");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<std::string>() : "";
  }
  std::vector<std::string> train_command(int seed) const {
    return {kTrain,
            "--iterations",
            std::to_string(kIterations),
            "--seed",
            std::to_string(seed),
            "--base-rate",
            "100",
            "--speed-map",
            "k80=1,p100=2,v100=4",
            "--checkpoint-every",
            "50"};
  }
  // Polls (every 0.2 s, sampling the store each time) until `done` holds
  // for the job list; returns the last list.
  json wait_jobs(double timeout_s, const std::function<bool(const json&)>& done) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    json jobs;
    while (std::chrono::steady_clock::now() < deadline) {
      expect_no_device_shared();
      if (json answer = get("/v1/jobs"); !answer.is_null()) {
        jobs = answer["jobs"];
        if (done(jobs)) return jobs;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "not done in " << timeout_s << " s: " << jobs.dump() << "\nserver log:\n"
                  << slurp(dir_ / "server.log");
    return jobs;
  }
  json job_of(const json& jobs, const std::string& id) {
    for (const json& j : jobs)
      if (j["id"] == id) return j;
    return nullptr;
  }
  json reference(int seed) {
    const fs::path d = dir_ / ("ref-" + std::to_string(seed));
    fs::create_directories(d);
    const std::string cmd = quote(kTrain) + " --iterations " + std::to_string(kIterations) +
                            " --seed " + std::to_string(seed) + " --checkpoint-dir " +
                            quote(d.string()) + " >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return json::parse(slurp(d / "result.json"));
  }
  // Rows of a query on the store (read-only, while the server writes).
  std::vector<std::vector<std::string>> query(const std::string& sql) {
    std::vector<std::vector<std::string>> rows;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2((dir_ / "data" / "fairgpu.db").c_str(), &db, SQLITE_OPEN_READONLY,
                        nullptr) != SQLITE_OK) {
      sqlite3_close(db);
      return rows;
    }
    sqlite3_busy_timeout(db, 2000);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK)
      while (sqlite3_step(st) == SQLITE_ROW) {
        std::vector<std::string> row;
        for (int c = 0; c < sqlite3_column_count(st); ++c) {
          const unsigned char* text = sqlite3_column_text(st, c);
          row.push_back(text ? reinterpret_cast<const char*>(text) : "");
        }
        rows.push_back(std::move(row));
      }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
  }
  // Every (node, device) in at most one lease that may be running.
  void expect_no_device_shared() {
    std::map<std::pair<std::string, int>, std::string> holder;
    for (const auto& row :
         query("SELECT id, node, devices FROM leases WHERE status IN ('active', 'revoking')"))
      for (int d : json::parse(row[2]).get<std::vector<int>>()) {
        auto [it, fresh] = holder.emplace(std::make_pair(row[1], d), row[0]);
        EXPECT_TRUE(fresh) << row[1] << " device " << d << " held by leases " << it->second
                           << " and " << row[0];
      }
  }
  // squeue's jobs by name: name -> (Slurm id, state).
  std::multimap<std::string, std::pair<std::string, std::string>> slurm_jobs() {
    const std::string cmd = "SLURM_CONF=" + quote(cluster_->conf()) +
                            " squeue -h -t all -o '%j|%i|%T' >" +
                            quote((dir_ / "squeue").string()) + " 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "squeue");
    std::multimap<std::string, std::pair<std::string, std::string>> out;
    std::istringstream in(slurp(dir_ / "squeue"));
    for (std::string line; std::getline(in, line);) {
      const auto a = line.find('|'), b = line.rfind('|');
      if (a == std::string::npos || a == b) continue;
      out.insert({line.substr(0, a), {line.substr(a + 1, b - a - 1), line.substr(b + 1)}});
    }
    return out;
  }
  bool scontrol(const std::string& args) {
    const std::string cmd =
        "SLURM_CONF=" + quote(cluster_->conf()) + " scontrol " + args + " >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  }
  // kill -9 of a node's slurmd, and the same slurmd started again.
  void kill_and_restart_slurmd(const std::string& node) {
    const fs::path pid_file = fs::path(cluster_->dir()) / ("slurmd-" + node + ".pid");
    const pid_t pid = std::stoi(slurp(pid_file));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    for (int i = 0; i < 100 && ::kill(pid, 0) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const std::string cmd = "env FAIRGPU_SLURM_TEST_CLUSTER=" + quote(cluster_->dir()) +
                            " SLURM_CONF=" + quote(cluster_->conf()) + " " +
                            quote(testing_support::find_program("slurmd")) + " -f " +
                            quote(cluster_->conf()) + " -N " + node;
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }

  // Runs a statement on the store (fairgpu serve stopped).
  void exec_sql(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ / "data" / "fairgpu.db").c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error ? error : "") << ": " << sql;
    sqlite3_free(error);
    sqlite3_close(db);
  }
  // A Slurm command's output (SLURM_CONF set), "" when it fails (a test
  // failure when `must`).
  std::string slurm_output(const std::string& command, bool must = true) {
    const fs::path out = dir_ / "command.out";
    const std::string cmd = "SLURM_CONF=" + quote(cluster_->conf()) + " " + command + " >" +
                            quote(out.string()) + " 2>&1";
    const int status = std::system(cmd.c_str());
    if (must) {
      EXPECT_EQ(status, 0) << command << ": " << slurp(out);
    }
    return status == 0 ? slurp(out) : "";
  }
  std::string slurmctld_pid_file() const { return cluster_->dir() + "/slurmctld.pid"; }

  json tenants_ = {{{"name", "alice"}, {"weight", 2}, {"token", "alice-token"}},
                   {{"name", "bob"}, {"token", "bob-token"}}};
  static SlurmTestCluster* cluster_;
  fs::path dir_;
  std::unique_ptr<Server> server_;
};

SlurmTestCluster* SlurmServe::cluster_ = nullptr;

TEST_F(SlurmServe, TwentyJobsTwoTenantsWithFaultsFinishOnceWithTheReferenceWeights) {
  start_server();
  std::map<std::string, int> seed_of;
  for (int i = 0; i < 20; ++i)
    seed_of[submit(i % 2 ? "bob" : "alice", train_command(100 + i), kIterations)] = 100 + i;
  const std::string failing = submit("bob", "echo 'no such dataset' >&2; exit 3", 10);
  const std::string cancelled = submit("alice", "exec sleep 600", 1e6);

  // The cluster as Slurm has it (from the first tick on): three nodes, two
  // GPUs each.
  json cluster;
  wait_jobs(20, [&](const json&) {
    cluster = get("/v1/cluster");
    return cluster["nodes"].size() == 3;
  });
  ASSERT_EQ(cluster["nodes"].size(), 3u) << cluster.dump();
  for (const json& n : cluster["nodes"]) EXPECT_EQ(n["devices"].size(), 2u) << n.dump();

  // Once the long job runs: cancelled (Slurm cancels its job).
  wait_jobs(30, [&](const json& jobs) { return job_of(jobs, cancelled)["state"] == "running"; });
  ASSERT_FALSE(HasFailure());
  auto r = call("POST", "/v1/jobs/" + cancelled + "/cancel", json::object(), "alice-token");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");

  // A slurmd killed with -9 and restarted: its jobs' processes kept running.
  kill_and_restart_slurmd("n2");

  // n3 drained in Slurm: it leaves the plan, its runs are revoked; resumed,
  // it comes back.
  ASSERT_TRUE(scontrol("update NodeName=n3 State=DRAIN Reason=fairgpu-test"));
  wait_jobs(20, [&](const json&) {
    const json c = get("/v1/cluster");
    for (const json& n : c["nodes"])
      if (n["name"] == "n3") return n["state"] != "ready" && n["devices_busy"] == 0;
    return false;
  });
  ASSERT_FALSE(HasFailure());
  ASSERT_TRUE(scontrol("update NodeName=n3 State=RESUME"));
  wait_jobs(20, [&](const json&) {
    const json c = get("/v1/cluster");
    for (const json& n : c["nodes"])
      if (n["name"] == "n3") return n["state"] == "ready";
    return false;
  });

  ASSERT_FALSE(HasFailure());
  // fairgpu serve killed with -9 mid-run, restarted on its store.
  server_->kill(SIGKILL);
  start_server();

  const json jobs = wait_jobs(120, [&](const json& list) {
    if (list.size() != 22) return false;
    for (const json& j : list)
      if (j["state"] != "finished" && j["state"] != "failed" && j["state"] != "cancelled")
        return false;
    return true;
  });
  ASSERT_FALSE(HasFailure());

  // Every job: one Slurm job, which ended as the job did.
  const auto in_slurm = slurm_jobs();
  for (const json& j : jobs) {
    const std::string id = j["id"];
    ASSERT_EQ(in_slurm.count("fairgpu-" + id), 1u) << id << ": " << slurp(dir_ / "squeue");
    const auto& [slurm_id, state] = in_slurm.find("fairgpu-" + id)->second;
    EXPECT_EQ(j["slurm_job"].get<std::int64_t>(), std::stoll(slurm_id)) << id;
    if (id == failing) {
      EXPECT_EQ(j["state"], "failed") << j.dump();
      EXPECT_EQ(j["exit_code"], 3);
      EXPECT_NE(j["log_tail"].get<std::string>().find("no such dataset"), std::string::npos)
          << j.dump();
      EXPECT_EQ(state, "FAILED");
    } else if (id == cancelled) {
      EXPECT_EQ(j["state"], "cancelled") << j.dump();
      EXPECT_EQ(state, "CANCELLED");
    } else {
      EXPECT_EQ(j["state"], "finished") << j.dump();
      EXPECT_EQ(state, "COMPLETED") << id;
      const json got = json::parse(slurp(dir_ / "ckpt" / id / "result.json"));
      const json want = reference(seed_of.at(id));
      EXPECT_EQ(got["weights_checksum"], want["weights_checksum"]) << id;
      EXPECT_EQ(got["final_loss"].get<double>(), want["final_loss"].get<double>()) << id;
      EXPECT_EQ(got["iterations"], kIterations) << id;
    }
  }

  // Checkpoint moves: preempted jobs, some of which ran on two GPU types.
  int preemptions = 0;
  for (const json& j : jobs) preemptions += j["preemptions"].get<int>();
  EXPECT_GT(preemptions, 0);
  std::map<std::string, std::set<std::string>> types;
  for (const auto& row : query("SELECT leases.job, nodes.gpu_type FROM leases JOIN nodes ON "
                               "leases.node = nodes.name WHERE leases.profiling = 0 AND "
                               "leases.status = 'ended'"))
    types[row[0]].insert(row[1]);
  int moved = 0;
  for (const auto& [job, used] : types) moved += used.size() > 1;
  EXPECT_GT(moved, 0) << "no job ran on more than one GPU type";
  // Work-conserving rounds on Slurm: GPUs freed between scheduling points
  // went to waiting jobs at once (issue 28 item 4).
  EXPECT_NE(slurp(dir_ / "server.log").find(" midround=true"), std::string::npos)
      << "no mid-round start";

  // Weights 2:1, one job type: while both tenants have more than four
  // unfinished jobs, alice holds two thirds of the GPU time of the leases
  // the server committed (tests/contended_share.h).
  std::vector<testing_support::JobSpan> spans;
  for (const auto& row : query("SELECT tenant, submitted_at, finished_at FROM jobs"))
    spans.push_back({row[0], std::stod(row[1]), std::stod(row[2])});
  std::vector<testing_support::LeaseSpan> leases;
  for (const auto& row : query("SELECT jobs.tenant, leases.devices, leases.start, leases.end FROM "
                               "leases JOIN jobs ON leases.job = jobs.id WHERE "
                               "leases.profiling = 0 AND leases.status != 'pending'"))
    leases.push_back({row[0], static_cast<double>(json::parse(row[1]).size()), std::stod(row[2]),
                      std::stod(row[3])});
  const auto held = testing_support::held_while_contended(
      testing_support::contended_intervals(spans, 5), leases);
  ASSERT_GT(held.seconds, 4.0) << "both tenants waited for less than two rounds";
  const double alice = held.gpu_seconds.count("alice") ? held.gpu_seconds.at("alice") : 0.0;
  const double bob = held.gpu_seconds.count("bob") ? held.gpu_seconds.at("bob") : 0.0;
  std::cout << "GPU-seconds while both wait (" << held.seconds << " s): alice " << alice
            << ", bob " << bob << "; alice's share " << alice / (alice + bob) << "\n";
  EXPECT_NEAR(alice / (alice + bob), 2.0 / 3.0, 0.08);
}

// The faults of issue 16 beyond those above, on their own cluster (ctest
// entry SlurmServeFaults): slurmctld stopped mid-run and started again on its
// saved state, and a crash between sbatch and the store.
// The papers' rounds (midround=off): the crash below needs jobs that wait in
// the queue when fairgpu dies, which work-conserving rounds leave too few of.
class SlurmServeFaults : public SlurmServe {
 protected:
  SlurmServeFaults() { policy_ = "oef-coop:quantum=0:midround=off"; }
};

//  - slurmctld stops (SIGTERM, as `systemctl stop` does) while jobs run and
//    rounds keep deciding; it stays down for several polls, during which a
//    job is submitted, and a running job cancelled: the API answers, the
//    failed exchanges are counted, no node is lost and no job fails. Started
//    again (same StateSaveLocation), it still has its jobs; nodes that
//    register again (UNKNOWN for a few seconds) are not lost either.
//    fairgpu is killed with -9 before slurmctld is back: restarted, it
//    follows the cancelled job's run to its end and cancels it in Slurm.
//  - Then fairgpu is killed with -9 again, and what a crash right after sbatch
//    leaves is made: a queued job's stored Slurm id is removed (its held
//    Slurm job exists), a held job of this fairgpu (its instance tag) that
//    no stored job owns is added, and a held job of another instance with
//    the same name. Restarted, fairgpu takes the first over (no second Slurm
//    job), cancels the orphan, and leaves the other instance's job alone.
//  - Every job finishes exactly once with the weights of an uninterrupted
//    run; the cancelled one is CANCELLED in Slurm.
TEST_F(SlurmServeFaults, ControllerRestartAndCrashAfterSbatchEveryJobFinishesOnce) {
  // fairgpu's commands read a copy of slurm.conf whose MessageTimeout makes
  // them give up on a stopped slurmctld in about 2 s (9 s by default); the
  // daemons keep the original.
  std::string conf = slurp(cluster_->conf());
  conf += "MessageTimeout=3\n";
  std::ofstream(dir_ / "client.conf") << conf;
  json slurm = good_slurm();
  slurm["conf"] = (dir_ / "client.conf").string();
  start_server(slurm);
  auto train = [&](int seed) {
    std::vector<std::string> argv = train_command(seed);
    argv[6] = "25";  // --base-rate: 3 to 12 s a job, so that jobs run across the outage
    return argv;
  };
  std::map<std::string, int> seed_of;
  // The job cancelled below trains 40 to 150 s: it is still running, or held,
  // when the cancel can reach Slurm again.
  std::vector<std::string> slow = train(199);
  slow[6] = "2";
  const std::string victim = submit("alice", slow, kIterations), victim_tenant = "alice";
  for (int i = 1; i < 10; ++i)
    seed_of[submit(i % 2 ? "bob" : "alice", train(200 + i), kIterations)] = 200 + i;
  auto runs_of_victim = [&]() {  // its leases not ended, in the store
    const auto rows =
        query("SELECT COUNT(*) FROM leases WHERE job = '" + victim + "' AND status != 'ended'");
    return rows.empty() ? -1 : std::stoi(rows[0][0]);
  };
  auto victim_runs_in_slurm = [&](const json& list) {
    for (const json& j : list)
      if (j["id"] == victim && j["state"] == "running" && j["slurm_job"].is_number())
        return slurm_output(
                   "squeue -h -j " + std::to_string(j["slurm_job"].get<std::int64_t>()) + " -o %T",
                   false)
                   .rfind("RUNNING", 0) == 0;
    return false;
  };

  // Sampled at every wait: no node lost, no job failed.
  std::set<std::string> lost_nodes, failed_jobs;
  auto sample = [&](const json& jobs) {
    for (const json& j : jobs)
      if (j["state"] == "failed") failed_jobs.insert(j["id"].get<std::string>());
    const json c = get("/v1/cluster");
    if (c.is_null()) return;
    for (const json& n : c["nodes"])
      if (n["state"] != "ready") lost_nodes.insert(n["name"].get<std::string>());
  };
  auto errors_total = [&]() {
    auto r = call("GET", "/metrics", nullptr, "admin-token");
    if (!r || r->status != 200) return -1.0;
    const auto at = r->body.find("\nfairgpu_slurm_errors_total ");
    return at == std::string::npos ? -1.0 : std::stod(r->body.substr(at + 28));
  };
  json jobs = wait_jobs(60, [&](const json& list) {
    sample(list);
    int running = 0;
    for (const json& j : list) running += j["state"] == "running";
    return running >= 4 && victim_runs_in_slurm(list);
  });
  ASSERT_FALSE(HasFailure());

  // slurmctld stopped.
  const pid_t ctld = std::stoi(slurp(slurmctld_pid_file()));
  ASSERT_EQ(::kill(ctld, SIGTERM), 0);
  for (int i = 0; i < 200 && ::kill(ctld, 0) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_NE(::kill(ctld, 0), 0) << "slurmctld did not stop";
  const double errors_before = errors_total();
  const std::string late = submit("alice", train(210), kIterations);
  seed_of[late] = 210;
  auto r = call("POST", "/v1/jobs/" + victim + "/cancel", json::object(), victim_tenant + "-token");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  // Down for three failed exchanges at least; the API answers throughout.
  int answers = 0;
  wait_jobs(60, [&](const json& list) {
    sample(list);
    ++answers;
    return errors_total() >= errors_before + 3;
  });
  ASSERT_FALSE(HasFailure());
  std::cout << "slurmctld down: " << errors_total() - errors_before << " failed exchanges, "
            << answers << " API answers\n";
  EXPECT_GT(answers, 3);
  EXPECT_TRUE(lost_nodes.empty()) << "nodes lost while slurmctld was down";
  EXPECT_TRUE(failed_jobs.empty());
  EXPECT_FALSE(get("/v1/jobs/" + late)["slurm_job"].is_number());  // not submitted yet

  // fairgpu killed while slurmctld is down: the cancel, and the revoke of
  // the victim's run, never reached Slurm. Restarted below, it must follow
  // that run to its end (its GPUs stay taken until then) and cancel it.
  server_->kill(SIGKILL);
  // Its run (revoked at the cancel) cannot have ended: Slurm was down.
  ASSERT_GE(runs_of_victim(), 1) << victim
                                 << "'s run ended before fairgpu was killed; server log:\n"
                                 << slurp(dir_ / "server.log");

  // slurmctld started again on its saved state: its jobs are still there.
  const std::string start_ctld = "env FAIRGPU_SLURM_TEST_CLUSTER=" + quote(cluster_->dir()) +
                                 " SLURM_CONF=" + quote(cluster_->conf()) + " " +
                                 quote(testing_support::find_program("slurmctld")) + " -f " +
                                 quote(cluster_->conf()) + " -i";
  ASSERT_EQ(std::system(start_ctld.c_str()), 0);
  // serve refuses to start without a controller that answers; and it starts
  // once the nodes have registered again (UNKNOWN for a few seconds), as
  // before: a run Slurm started within a second or two of its restart got no
  // GPU index (SLURM_GPUS_ON_NODE 0; "GRES: empty index list").
  for (int i = 0; i < 240; ++i) {
    const std::string states = slurm_output("sinfo -h -N -o '%T'", false);
    if (!states.empty() && states.find("unknown") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  start_server(slurm);
  // Once the late job has its Slurm job, and nodes have registered again.
  wait_jobs(60, [&](const json& list) {
    sample(list);
    return get("/v1/jobs/" + late)["slurm_job"].is_number() &&
           slurm_output("sinfo -h -N -o '%T'", false).find("unknown") == std::string::npos;
  });
  ASSERT_FALSE(HasFailure());
  // The cancelled job's run has ended: its GPU is the plan's again.
  wait_jobs(60, [&](const json& list) {
    sample(list);
    return runs_of_victim() == 0;
  });
  ASSERT_FALSE(HasFailure()) << victim << "'s run never ended";

  // fairgpu killed; what a crash right after sbatch leaves, made by hand.
  server_->kill(SIGKILL);
  const auto instance = query("SELECT value FROM meta WHERE key = 'slurm_instance'");
  ASSERT_EQ(instance.size(), 1u);
  const std::string tag = instance[0][0];
  EXPECT_EQ(tag.rfind("fairgpu-instance=", 0), 0u) << tag;
  std::string taken;  // queued, no lease in force, held in Slurm
  std::string taken_slurm_id;
  for (const auto& row : query("SELECT jobs.id, meta.value FROM jobs JOIN meta ON meta.key = "
                               "'slurm_job:' || jobs.id WHERE jobs.state = 'queued' AND NOT "
                               "EXISTS (SELECT 1 FROM leases WHERE leases.job = jobs.id AND "
                               "leases.status != 'ended')")) {
    if (slurm_output("squeue -h -j " + row[1] + " -o '%T|%r'").rfind("PENDING|", 0) == 0) {
      taken = row[0];
      taken_slurm_id = row[1];
      break;
    }
  }
  ASSERT_NE(taken, "") << "no queued job to lose its Slurm id";
  std::cout << "job " << taken << " loses its stored Slurm id " << taken_slurm_id << "\n";
  exec_sql("DELETE FROM meta WHERE key = 'slurm_job:" + taken + "'");
  auto held_job = [&](const std::string& name, const std::string& comment) {
    std::string out = slurm_output("sbatch --parsable --hold --partition=main --job-name=" + name +
                                   " --comment=" + comment + " --output=/dev/null --wrap 'exit 0'");
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  };
  const std::string orphan = held_job("fairgpu-j-999999", tag);
  const std::string foreign = held_job("fairgpu-" + taken, "fairgpu-instance=0123456789abcdef");
  start_server(slurm);

  jobs = wait_jobs(150, [&](const json& list) {
    sample(list);
    if (list.size() != 11) return false;
    for (const json& j : list)
      if (j["state"] != "finished" && j["state"] != "cancelled") return false;
    return true;
  });
  ASSERT_FALSE(HasFailure());
  EXPECT_TRUE(lost_nodes.empty()) << "lost: " << *lost_nodes.begin();
  EXPECT_TRUE(failed_jobs.empty()) << "failed: " << *failed_jobs.begin();

  // fairgpu's Slurm jobs (this instance's tag): one per job, none else.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>>
      ours;                                     // name -> id, state
  std::map<std::string, std::string> state_of;  // Slurm id -> state
  std::istringstream lines(slurm_output("squeue -h -t all -o '%j|%i|%T|%k'"));
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '|');) f.push_back(x);
    ASSERT_EQ(f.size(), 4u) << line;
    state_of[f[1]] = f[2];
    if (f[3] == tag) ours[f[0]].push_back({f[1], f[2]});
  }
  EXPECT_EQ(state_of[orphan], "CANCELLED");
  EXPECT_EQ(state_of[foreign], "PENDING");
  for (const json& j : jobs) {
    const std::string id = j["id"];
    const auto& mine = ours["fairgpu-" + id];
    ASSERT_EQ(mine.size(), 1u) << id << " has " << mine.size()
                               << " Slurm jobs: " << slurp(dir_ / "command.out")
                               << "\nserver log:\n"
                               << slurp(dir_ / "server.log");
    EXPECT_EQ(std::to_string(j["slurm_job"].get<std::int64_t>()), mine[0].first) << id;
    if (id == taken) {
      EXPECT_EQ(mine[0].first, taken_slurm_id) << "submitted again";
    }
    if (id == victim) {
      EXPECT_EQ(j["state"], "cancelled");
      EXPECT_EQ(mine[0].second, "CANCELLED");
      continue;
    }
    EXPECT_EQ(j["state"], "finished") << j.dump();
    EXPECT_EQ(mine[0].second, "COMPLETED") << id;
    const fs::path result = dir_ / "ckpt" / id / "result.json";
    if (!fs::exists(result)) {
      ADD_FAILURE() << id << ": no result.json; job " << j.dump() << "\nits log:\n"
                    << slurp(dir_ / "ckpt" / (id + ".log")) << "\nserver log:\n"
                    << slurp(dir_ / "server.log");
      continue;
    }
    const json got = json::parse(slurp(result));
    const json want = reference(seed_of.at(id));
    EXPECT_EQ(got["weights_checksum"], want["weights_checksum"]) << id;
    EXPECT_EQ(got["final_loss"].get<double>(), want["final_loss"].get<double>()) << id;
  }
  slurm_output("scancel " + foreign);
}

// Issue 34 item 3: slurmctld killed with -9 (no shutdown, its last state
// saves may be lost) during a round, and again while a revoke is in flight
// (a node drained through fairgpu, a lease of it still revoking), each time
// started again by scripts/slurm-cluster.sh start-ctld: every job finishes
// exactly once (one Slurm job, COMPLETED, one completed run in its log) with
// the weights of an uninterrupted run, and the server's log shows the Slurm
// state of the runs it waited on (slurm_run_state).
TEST_F(SlurmServeFaults, ControllerKilledDuringARoundAndARevokeEveryJobFinishesOnce) {
  std::string conf = slurp(cluster_->conf());
  conf += "MessageTimeout=3\n";  // commands give up on a dead slurmctld in about 2 s
  std::ofstream(dir_ / "client.conf") << conf;
  json slurm = good_slurm();
  slurm["conf"] = (dir_ / "client.conf").string();
  start_server(slurm);
  std::map<std::string, int> seed_of;
  for (int i = 0; i < 8; ++i) {
    std::vector<std::string> argv = train_command(300 + i);
    argv[6] = "25";  // --base-rate: 3 to 12 s a run, so that runs span the kills
    seed_of[submit(i % 2 ? "bob" : "alice", argv, kIterations)] = 300 + i;
  }
  auto errors_total = [&]() {
    auto r = call("GET", "/metrics", nullptr, "admin-token");
    if (!r || r->status != 200) return -1.0;
    const auto at = r->body.find("\nfairgpu_slurm_errors_total ");
    return at == std::string::npos ? -1.0 : std::stod(r->body.substr(at + 28));
  };
  // kill -9, one failed exchange at least, started again by the script; back
  // once every node has registered again.
  auto kill_and_restart_ctld = [&](const std::string& when) {
    const pid_t ctld = std::stoi(slurp(slurmctld_pid_file()));
    const double before = errors_total();
    ASSERT_EQ(::kill(ctld, SIGKILL), 0);
    for (int i = 0; i < 200 && ::kill(ctld, 0) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    wait_jobs(60, [&](const json&) { return errors_total() >= before + 1; });
    ASSERT_FALSE(HasFailure()) << when;
    const std::string cmd = quote(testing_support::source_path("scripts/slurm-cluster.sh")) +
                            " start-ctld " + quote(cluster_->dir()) + " >" +
                            quote((dir_ / "start-ctld.out").string()) + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "start-ctld.out");
    wait_jobs(60, [&](const json&) {
      const std::string states = slurm_output("sinfo -h -N -o '%T'", false);
      return !states.empty() && states.find("unknown") == std::string::npos;
    });
    ASSERT_FALSE(HasFailure()) << when;
    std::cout << "slurmctld killed " << when << "\n";
  };
  auto running = [&](const json& list) {
    int n = 0;
    for (const json& j : list) n += j["state"] == "running";
    return n;
  };
  wait_jobs(60, [&](const json& list) { return running(list) >= 3; });
  ASSERT_FALSE(HasFailure());
  kill_and_restart_ctld("during a round");

  // A node drained through fairgpu: its runs are revoked; killed while one
  // of those leases is still revoking.
  std::string node;
  wait_jobs(60, [&](const json&) {
    const auto rows = query("SELECT node FROM leases WHERE status = 'active' AND profiling = 0");
    if (!rows.empty()) node = rows[0][0];
    return !node.empty();
  });
  ASSERT_FALSE(HasFailure());
  auto r = call("POST", "/v1/nodes/" + node + "/drain", json::object(), "admin-token");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  wait_jobs(30, [&](const json&) {
    return !query("SELECT id FROM leases WHERE status = 'revoking'").empty();
  });
  ASSERT_FALSE(HasFailure());
  kill_and_restart_ctld("while a revoke is in flight");
  r = call("POST", "/v1/nodes/" + node + "/undrain", json::object(), "admin-token");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");

  const json jobs = wait_jobs(240, [&](const json& list) {
    return list.size() == 8 && std::all_of(list.begin(), list.end(), [](const json& j) {
             return j["state"] == "finished" || j["state"] == "failed";
           });
  });
  ASSERT_FALSE(HasFailure());
  // This server's Slurm jobs (its instance tag; the suite's earlier tests
  // left jobs of the same names): one per job, COMPLETED.
  const auto instance = query("SELECT value FROM meta WHERE key = 'slurm_instance'");
  ASSERT_EQ(instance.size(), 1u);
  std::map<std::string, std::vector<std::string>> ours;  // name -> states
  std::istringstream lines(slurm_output("squeue -h -t all -o '%j|%T|%k'"));
  for (std::string line; std::getline(lines, line);) {
    const auto a = line.find('|'), b = line.rfind('|');
    if (a != b && line.substr(b + 1) == instance[0][0])
      ours[line.substr(0, a)].push_back(line.substr(a + 1, b - a - 1));
  }
  for (const json& j : jobs) {
    const std::string id = j["id"];
    SCOPED_TRACE(id);
    EXPECT_EQ(j["state"], "finished") << j.dump() << "\n" << slurp(dir_ / "server.log");
    EXPECT_EQ(ours["fairgpu-" + id], std::vector<std::string>{"COMPLETED"});
    // Each run appends to the job's log; a completed run ends with its checksum.
    const std::string log = slurp(dir_ / "ckpt" / (id + ".log"));
    std::size_t completions = 0;
    for (auto at = log.find("weights checksum: "); at != std::string::npos;
         at = log.find("weights checksum: ", at + 1))
      ++completions;
    EXPECT_EQ(completions, 1u) << log;
    const fs::path result = dir_ / "ckpt" / id / "result.json";
    ASSERT_TRUE(fs::exists(result)) << log;
    const json got = json::parse(slurp(result));
    const json want = reference(seed_of.at(id));
    EXPECT_EQ(got["weights_checksum"], want["weights_checksum"]);
    EXPECT_EQ(got["final_loss"].get<double>(), want["final_loss"].get<double>());
  }
  const std::string log = slurp(dir_ / "server.log");
  EXPECT_NE(log.find("slurm_run_state"), std::string::npos);
  std::size_t lost = 0;
  for (auto at = log.find(" slurm_job_lost "); at != std::string::npos;
       at = log.find(" slurm_job_lost ", at + 1))
    ++lost;
  std::cout << "jobs Slurm lost and fairgpu submitted again: " << lost << "\n";
}

// A job submitted to the Slurm backend joins the policy's state as one
// submitted to the agents does: once it is a held Slurm job, with no rebuild.
// A rebuild makes a new policy, which forgets what the one in force keeps
// between rounds (oef-coop: when it last solved, the shares it holds), so
// the plans drifted from the simulator's (bench/fidelity.sh: 30 preemptions
// where the simulator made 7).
TEST_F(SlurmServe, SubmissionsJoinThePolicyWithoutARebuild) {
  start_server();
  auto rebuilds = [&]() -> long {
    auto r = call("GET", "/metrics", nullptr, "admin-token");
    if (!r || r->status != 200) return -1;
    const std::string key = "\nfairgpu_policy_rebuilds_total ";
    const auto at = r->body.find(key);
    return at == std::string::npos ? -1 : std::stol(r->body.substr(at + key.size()));
  };
  const json sleeper = {"/bin/sh", "-c", "exec sleep 1"};
  const std::string first = submit("alice", sleeper, 10);
  // The first job makes the model (nodes and a job type): rebuilt then.
  wait_jobs(20, [&](const json& jobs) { return job_of(jobs, first)["state"] == "finished"; });
  const long before = rebuilds();
  ASSERT_GE(before, 1);
  std::vector<std::string> later;
  for (int i = 0; i < 4; ++i) {
    later.push_back(submit(i % 2 ? "bob" : "alice", sleeper, 10));
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // each at its own tick
  }
  const json jobs = wait_jobs(30, [&](const json& all) {
    return std::all_of(later.begin(), later.end(), [&](const std::string& id) {
      return job_of(all, id)["state"] == "finished";
    });
  });
  for (const std::string& id : later) EXPECT_GT(job_of(jobs, id)["slurm_job"].get<long>(), 0) << id;
  EXPECT_EQ(rebuilds(), before) << slurp(dir_ / "server.log");
}

// Issue 34: three 2-GPU nodes of one type, so that a gang larger than a node
// has a pool to run in (the SlurmServe cluster's nodes are of three types).
class SlurmServeGangs : public SlurmServe {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new SlurmTestCluster();
    cluster_->start("n1:v100:2,n2:v100:2,n3:v100:2");
  }
  // Submits `workers` GPUs of a job that writes, on every node, the
  // variables it was started with to rank.<NODE_RANK> in its checkpoint
  // folder (rank 0 reports its work done), after `sleep_s` seconds.
  std::string submit_env_writer(const std::string& tenant, int workers, int sleep_s = 0) {
    const std::string script =
        "sleep " + std::to_string(sleep_s) + "; f=\"$FAIRGPU_CHECKPOINT_DIR/rank.$NODE_RANK\"; "
        "env | grep -E '^(MASTER_ADDR|MASTER_PORT|WORLD_SIZE|RANK|NODE_RANK|LOCAL_WORLD_SIZE|"
        "FAIRGPU_NUM_NODES|FAIRGPU_NUM_WORKERS|FAIRGPU_LEASE_ID|SLURMD_NODENAME|"
        "CUDA_VISIBLE_DEVICES|SLURM_STEP_GPUS|SLURM_JOB_GPUS|SLURM_JOB_ID)=' >\"$f.tmp\"; mv \"$f.tmp\" \"$f\"; "
        "if [ \"$RANK\" = 0 ]; then echo 10 >\"$FAIRGPU_PROGRESS_FILE\"; fi; exit 0";
    auto r = call("POST", "/v1/jobs",
                  {{"job_type", "mlp"},
                   {"workers", workers},
                   {"iterations", 10},
                   {"command", {"/bin/sh", "-c", script}}},
                  tenant + "-token");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<std::string>() : "";
  }
  // rank.<r> of a job as a map (empty when missing).
  std::map<std::string, std::string> rank_env(const std::string& job, int rank) {
    std::map<std::string, std::string> m;
    std::istringstream in(slurp(dir_ / "ckpt" / job / ("rank." + std::to_string(rank))));
    for (std::string line; std::getline(in, line);)
      if (const auto eq = line.find('='); eq != std::string::npos)
        m[line.substr(0, eq)] = line.substr(eq + 1);
    return m;
  }
};

// Issue 34 item 1: a 4-GPU and a 6-GPU gang on 2-GPU nodes are accepted and
// each runs as one Slurm job over 2 and 3 nodes, one process per node with
// the rendezvous the agents give (docs/job-protocol.md).
TEST_F(SlurmServeGangs, GangsLargerThanANodeRunOverNodesWithTheAgentsRendezvous) {
  start_server();
  const std::string four = submit_env_writer("alice", 4);
  const std::string six = submit_env_writer("bob", 6);
  ASSERT_FALSE(four.empty());
  ASSERT_FALSE(six.empty());
  const json jobs = wait_jobs(90, [&](const json& all) {
    return job_of(all, four)["state"] == "finished" && job_of(all, six)["state"] == "finished";
  });
  for (const auto& [job, workers] : {std::pair<std::string, int>{four, 4}, {six, 6}}) {
    SCOPED_TRACE(job);
    const int nodes = workers / 2;
    std::set<std::string> seen_nodes;
    std::string addr, port, slurm_job;
    for (int r = 0; r < nodes; ++r) {
      auto env = rank_env(job, r);
      ASSERT_FALSE(env.empty()) << "rank " << r << " wrote nothing\n" << slurp(dir_ / "server.log");
      EXPECT_EQ(env["WORLD_SIZE"], std::to_string(workers));
      EXPECT_EQ(env["FAIRGPU_NUM_WORKERS"], std::to_string(workers));
      EXPECT_EQ(env["FAIRGPU_NUM_NODES"], std::to_string(nodes));
      EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
      EXPECT_EQ(env["NODE_RANK"], std::to_string(r));
      EXPECT_EQ(env["RANK"], std::to_string(2 * r));
      EXPECT_EQ(env["MASTER_PORT"],
                std::to_string(29500 + std::stoll(env["FAIRGPU_LEASE_ID"]) % 1000));
      EXPECT_FALSE(env["MASTER_ADDR"].empty());
      if (r == 0) {
        addr = env["MASTER_ADDR"];
        port = env["MASTER_PORT"];
        slurm_job = env["SLURM_JOB_ID"];
      }
      // One rendezvous, one Slurm job, a node each.
      EXPECT_EQ(env["MASTER_ADDR"], addr);
      EXPECT_EQ(env["MASTER_PORT"], port);
      EXPECT_EQ(env["SLURM_JOB_ID"], slurm_job);
      seen_nodes.insert(env["SLURMD_NODENAME"]);
    }
    EXPECT_EQ(seen_nodes.size(), static_cast<std::size_t>(nodes));
    EXPECT_EQ(slurm_job, std::to_string(job_of(jobs, job)["slurm_job"].get<long>()));
  }
  // 5 GPUs fit the 6 the nodes have, but not the same count on each: Slurm
  // could never run it, so it is refused, not left waiting for ever.
  auto r = call("POST", "/v1/jobs",
                {{"job_type", "mlp"}, {"workers", 5}, {"iterations", 10},
                 {"command", {"/bin/sh", "-c", "exit 0"}}},
                "alice-token");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("workers"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("same number of GPUs on each"), std::string::npos) << r->body;
}

// Issue 34 item 2: Slurm 22.05 picks each job's GPU indices itself, so the
// manager relabels a run's leases with the indices Slurm gave it. Runs of
// 1, 2 and 4 GPUs (some overlapping, of two tenants) write the devices they
// were given (CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS) on every node; each
// must equal the devices the store gives its lease part there, and no
// device is ever in two leases that may run (sampled throughout).
TEST_F(SlurmServeGangs, EveryRunHoldsTheDevicesTheStoreSaysItHolds) {
  start_server();
  std::vector<std::string> jobs_in;
  for (int i = 0; i < 10; ++i) {
    const int workers = i % 5 == 4 ? 4 : i % 3 == 2 ? 2 : 1;
    jobs_in.push_back(submit_env_writer(i % 2 ? "bob" : "alice", workers, 1 + i % 4));
  }
  wait_jobs(120, [&](const json& all) {
    return std::all_of(jobs_in.begin(), jobs_in.end(),
                       [&](const std::string& id) { return job_of(all, id)["state"] == "finished"; });
  });
  ASSERT_FALSE(HasFailure());
  int compared = 0;
  for (const std::string& id : jobs_in) {
    SCOPED_TRACE(id);
    for (int r = 0; r < 3; ++r) {
      auto env = rank_env(id, r);
      if (env.empty()) continue;
      const std::string lease = env["FAIRGPU_LEASE_ID"];
      const auto rows = query("SELECT devices FROM leases WHERE gang = " + lease + " AND node = '" +
                              env["SLURMD_NODENAME"] + "'");
      ASSERT_EQ(rows.size(), 1u) << "lease " << lease << " on " << env["SLURMD_NODENAME"];
      std::string held;
      for (int d : json::parse(rows[0][0]).get<std::vector<int>>())
        held += (held.empty() ? "" : ",") + std::to_string(d);
      EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], held) << "lease " << lease;
      // srun's steps (a gang's ranks) have SLURM_STEP_GPUS; the batch step
      // (a run on one node) SLURM_JOB_GPUS.
      const std::string slurm_gpus =
          env.count("SLURM_STEP_GPUS") ? env["SLURM_STEP_GPUS"] : env["SLURM_JOB_GPUS"];
      EXPECT_EQ(slurm_gpus, held) << "lease " << lease;
      ++compared;
    }
  }
  EXPECT_GE(compared, 10);
  const std::string log = slurp(dir_ / "server.log");
  std::size_t adopted = 0;
  for (auto at = log.find(" slurm_devices_adopted "); at != std::string::npos;
       at = log.find(" slurm_devices_adopted ", at + 1))
    ++adopted;
  std::cout << compared << " runs' devices compared; " << adopted
            << " relabelled to Slurm's indices\n";
}

// Issue 34 item 2, the case the plan and Slurm disagree on: a running job
// whose lease names the other GPU of its node (as a store written before
// this fix could: the plan's ids counted GPUs), so that the plan puts the
// next job on the GPU Slurm has given the first. Slurm gives the new run
// the other one: the two leases swap names, and each run's
// CUDA_VISIBLE_DEVICES is what the store says it holds. A third job, started
// mid-round once the second has ended, takes the GPU the second held, not
// the one the first job still holds.
TEST_F(SlurmServeGangs, ADeviceSlurmGaveAnotherRunChangesPlacesInThePlan) {
  ASSERT_TRUE(scontrol("update NodeName=n2,n3 State=DRAIN Reason=fairgpu-test"));
  start_server();
  auto job_writing_env = [&](const std::string& tenant, int sleep_s) {
    const std::string script =
        "env | grep -E '^(CUDA_VISIBLE_DEVICES|FAIRGPU_LEASE_ID|SLURMD_NODENAME)=' "
        ">\"$FAIRGPU_CHECKPOINT_DIR/rank.0\"; sleep " + std::to_string(sleep_s) +
        "; echo 10 >\"$FAIRGPU_PROGRESS_FILE\"";
    auto r = call("POST", "/v1/jobs",
                  {{"job_type", "mlp"}, {"workers", 1}, {"iterations", 10},
                   {"command", {"/bin/sh", "-c", script}}},
                  tenant + "-token");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<std::string>() : "";
  };
  const std::string first = job_writing_env("alice", 30);
  wait_jobs(60, [&](const json&) { return !rank_env(first, 0).empty(); });
  ASSERT_FALSE(HasFailure());
  const std::string given = rank_env(first, 0)["CUDA_VISIBLE_DEVICES"];
  ASSERT_TRUE(given == "0" || given == "1") << given;
  const std::string other = given == "0" ? "1" : "0";
  server_->kill(SIGKILL);
  exec_sql("UPDATE leases SET devices = '[" + other + "]' WHERE job = '" + first +
           "' AND status != 'ended'");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  start_server();
  const std::string second = job_writing_env("bob", 3);
  wait_jobs(60, [&](const json&) { return !rank_env(second, 0).empty(); });
  ASSERT_FALSE(HasFailure());
  const std::string third = job_writing_env("bob", 1);
  wait_jobs(90, [&](const json& all) {
    return job_of(all, first)["state"] == "finished" &&
           job_of(all, second)["state"] == "finished" && job_of(all, third)["state"] == "finished";
  });
  ASSERT_FALSE(HasFailure());
  for (const std::string& id : {first, second, third}) {
    auto env = rank_env(id, 0);
    const auto rows = query("SELECT devices FROM leases WHERE gang = " + env["FAIRGPU_LEASE_ID"]);
    ASSERT_EQ(rows.size(), 1u) << id;
    EXPECT_EQ(rows[0][0], "[" + env["CUDA_VISIBLE_DEVICES"] + "]") << id << "\n"
                                                                    << slurp(dir_ / "server.log");
  }
  EXPECT_EQ(rank_env(second, 0)["CUDA_VISIBLE_DEVICES"], other);
  // Started while the first job still ran (on `given`).
  EXPECT_LT(job_of(get("/v1/jobs")["jobs"], third)["started_at"].get<double>(),
            job_of(get("/v1/jobs")["jobs"], first)["finished_at"].get<double>());
  EXPECT_EQ(rank_env(third, 0)["CUDA_VISIBLE_DEVICES"], other);
  EXPECT_NE(slurp(dir_ / "server.log").find("slurm_devices_adopted"), std::string::npos);
  ASSERT_TRUE(scontrol("update NodeName=n2,n3 State=RESUME"));
}

// Issue 34's target: on 2-GPU nodes, a 4-GPU and a 6-GPU fairgpu-train gang
// each run over several nodes, are revoked by a drain of one of their nodes
// (checkpoint, requeue), resume from their checkpoint once it is undrained
// and finish with the weights and loss of an uninterrupted run; every rank
// reported the rendezvous it was given.
TEST_F(SlurmServeGangs, TrainGangsDrainedMidRunResumeWithTheWeightsOfAnUninterruptedRun) {
  start_server();
  // Every node ready first (the test before resumes two it drained; a
  // submission checks the gang against the ready nodes' GPUs of one type).
  wait_jobs(60, [&](const json&) {
    const json c = get("/v1/cluster");
    if (c.is_null() || c["nodes"].size() != 3) return false;
    for (const json& n : c["nodes"])
      if (n["state"] != "ready") return false;
    return true;
  });
  ASSERT_FALSE(HasFailure());
  for (const auto& [workers, seed] : {std::pair<int, int>{4, 401}, {6, 402}}) {
    SCOPED_TRACE(std::to_string(workers) + " GPUs");
    std::vector<std::string> argv = train_command(seed);
    argv[6] = "4";  // --base-rate: long enough to be drained mid-run
    auto r = call("POST", "/v1/jobs",
                  {{"job_type", "mlp"}, {"workers", workers}, {"iterations", kIterations},
                   {"command", argv}},
                  "alice-token");
    ASSERT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    const std::string id = json::parse(r->body)["id"];
    // Running over its nodes, past its first checkpoint (every 50).
    json job;
    wait_jobs(120, [&](const json& all) {
      job = job_of(all, id);
      return job["state"] == "running" && job["iterations_done"].get<double>() >= 60;
    });
    ASSERT_FALSE(HasFailure());
    ASSERT_EQ(job["nodes"].size(), static_cast<std::size_t>(workers / 2)) << job.dump();
    const std::string node = job["nodes"].back();
    r = call("POST", "/v1/nodes/" + node + "/drain", json::object(), "admin-token");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    wait_jobs(60, [&](const json& all) { return job_of(all, id)["state"] == "queued"; });
    ASSERT_FALSE(HasFailure());
    r = call("POST", "/v1/nodes/" + node + "/undrain", json::object(), "admin-token");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    job = job_of(wait_jobs(180, [&](const json& all) {
                   return job_of(all, id)["state"] == "finished";
                 }),
                 id);
    ASSERT_FALSE(HasFailure());
    EXPECT_GE(job["restarts"], 1) << job.dump();
    EXPECT_EQ(job["failures"], 0) << job.dump();
    const std::string log = slurp(dir_ / "ckpt" / (id + ".log"));
    EXPECT_NE(log.find("resumed from"), std::string::npos) << log;
    for (int rank = 0; rank < workers / 2; ++rank)
      EXPECT_NE(log.find("WORLD_SIZE=" + std::to_string(workers) + " RANK=" +
                         std::to_string(2 * rank) + " NODE_RANK=" + std::to_string(rank) +
                         " LOCAL_WORLD_SIZE=2"),
                std::string::npos)
          << "rank " << rank << ":\n"
          << log;
    const json got = json::parse(slurp(dir_ / "ckpt" / id / "result.json"));
    const json want = reference(seed);
    EXPECT_EQ(got["weights_checksum"], want["weights_checksum"]);
    EXPECT_EQ(got["final_loss"].get<double>(), want["final_loss"].get<double>());
  }
}

// Issue 34 item 4 and issue 32 item 5: a tenant's "account" is its jobs'
// Slurm account (what sacct charges; the test cluster has no accounting
// database, so the job's Account field is read); `fairgpu logs
// --checkpoint-dir` prints a job's output; `fairgpu drain` drains the node
// in Slurm too (sinfo shows it) and undrain resumes it; a tenant reads its
// own job's log through the server, another tenant gets 403 (issue 32 item 7).
TEST_F(SlurmServeGangs, AccountsLogsAndDrainReachSlurm) {
  tenants_[0]["account"] = "team-alice";
  start_server();
  const std::string a = submit("alice", {"/bin/sh", "-c", "echo hello from $FAIRGPU_JOB_ID"}, 10);
  const std::string b = submit("bob", {"/bin/sh", "-c", "exit 0"}, 10);
  json jobs = wait_jobs(60, [&](const json& all) {
    return job_of(all, a)["state"] == "finished" && job_of(all, b)["state"] == "finished";
  });
  auto account_of = [&](const std::string& job) {
    const std::string shown = slurm_output(
        "scontrol -o show job " + std::to_string(job_of(jobs, job)["slurm_job"].get<long>()));
    const auto at = shown.find(" Account=");
    return at == std::string::npos ? std::string("(none)")
                                   : shown.substr(at + 9, shown.find(' ', at + 9) - at - 9);
  };
  EXPECT_EQ(account_of(a), "team-alice");
  EXPECT_NE(account_of(b), "team-alice");

  // The operator's view of a job's output on this backend.
  const fs::path scratch = dir_ / "cli";
  fs::create_directories(scratch);
  auto logs = testing_support::run_binary(
      {"logs", a, "--checkpoint-dir", (dir_ / "ckpt").string()}, scratch, {}, 30);
  EXPECT_EQ(logs.status, 0) << logs.err;
  EXPECT_EQ(logs.out, "hello from " + a + "\n");
  auto missing = testing_support::run_binary(
      {"logs", "j-999999", "--checkpoint-dir", (dir_ / "ckpt").string()}, scratch, {}, 30);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.err.find("j-999999.log"), std::string::npos) << missing.err;
  auto escape = testing_support::run_binary(
      {"logs", "../serve", "--checkpoint-dir", (dir_ / "ckpt").string()}, scratch, {}, 30);
  EXPECT_EQ(escape.status, 2) << escape.out;
  // Issue 32 item 7: a tenant reads its own job's log through the server
  // (from <checkpoint_dir>/<job>.log); another tenant is refused (403) and
  // sees none of it, over the CLI and the API.
  const std::string url = "http://127.0.0.1:" + std::to_string(server_->port());
  auto own = testing_support::run_binary(
      {"logs", a, "--server", url, "--token", "alice-token"}, scratch, {}, 30);
  EXPECT_EQ(own.status, 0) << own.err;
  EXPECT_EQ(own.out, "hello from " + a + "\n");
  auto other = testing_support::run_binary(
      {"logs", a, "--server", url, "--token", "bob-token"}, scratch, {}, 30);
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.err.find("403"), std::string::npos) << other.err;
  EXPECT_TRUE(other.out.empty()) << other.out;
  auto refused = call("GET", "/v1/jobs/" + a + "/log", nullptr, "bob-token");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403) << refused->body;
  EXPECT_EQ(refused->body.find("hello from"), std::string::npos) << refused->body;
  auto mine = call("GET", "/v1/jobs/" + a + "/log", nullptr, "alice-token");
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->status, 200) << mine->body;
  EXPECT_EQ(json::parse(mine->body)["source"], "slurm") << mine->body;
  EXPECT_EQ(json::parse(mine->body)["size"], ("hello from " + a + "\n").size()) << mine->body;

  // Drain and undrain reach Slurm: sinfo shows them.
  auto sinfo_state = [&](const std::string& node) {
    std::string state = slurm_output("sinfo -h -N -n " + node + " -o %T", false);
    while (!state.empty() && (state.back() == '\n' || state.back() == ' ')) state.pop_back();
    return state;
  };
  auto wait_state = [&](const std::string& node, const std::function<bool(const std::string&)>& ok) {
    std::string state;
    for (int i = 0; i < 150; ++i) {
      state = sinfo_state(node);
      if (ok(state)) return state;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << node << " in Slurm: " << state << "\n" << slurp(dir_ / "server.log");
    return state;
  };
  auto r = call("POST", "/v1/nodes/n2/drain", json::object(), "admin-token");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  wait_state("n2", [](const std::string& s) { return s.rfind("drain", 0) == 0; });
  const std::string reason = slurm_output("sinfo -h -N -n n2 -o %E");
  EXPECT_EQ(reason, "fairgpu\n");
  // fairgpu keeps it drained, not lost (Slurm no longer offers it).
  std::this_thread::sleep_for(std::chrono::seconds(1));
  json cluster = get("/v1/cluster");
  for (const json& n : cluster["nodes"])
    if (n["name"] == "n2") {
      EXPECT_EQ(n["state"], "drained") << n.dump();
    }
  r = call("POST", "/v1/nodes/n2/undrain", json::object(), "admin-token");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
  wait_state("n2", [](const std::string& s) { return s == "idle"; });
  // And jobs run there again: a 6-GPU gang needs every node.
  const std::string six = submit_env_writer("bob", 6);
  jobs = wait_jobs(60, [&](const json& all) { return job_of(all, six)["state"] == "finished"; });
  EXPECT_EQ(job_of(jobs, six)["state"], "finished");
}

// Serve as root: a tenant's jobs run as its unix_user (sbatch --uid), in a
// checkpoint directory of theirs, and cannot read serve's store; a tenant
// without one runs as root (logged). A unix_user Slurm cannot run jobs as
// (unknown, root) is refused: exit 2, one line.
TEST_F(SlurmServe, ATenantsJobsRunAsItsUnixUserAndCannotReadTheStore) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (sbatch --uid)";
  const passwd* nobody = ::getpwnam("nobody");
  if (!nobody) GTEST_SKIP() << "no user 'nobody'";
  // The job reaches its checkpoint directory through the test's folders.
  for (fs::path p = dir_; p != p.root_path(); p = p.parent_path())
    fs::permissions(p, fs::perms::others_exec, fs::perm_options::add);
  tenants_ = {{{"name", "alice"}, {"token", "alice-token"}, {"unix_user", "nobody"}},
              {{"name", "bob"}, {"token", "bob-token"}}};
  start_server();
  const std::string store = (dir_ / "data" / "fairgpu.db").string();
  const std::string probe = "id -un >\"$FAIRGPU_CHECKPOINT_DIR/who\"; if cat " + quote(store) +
                            " >/dev/null 2>&1; then echo read; else echo refused; fi "
                            ">>\"$FAIRGPU_CHECKPOINT_DIR/who\"";
  const std::string a = submit("alice", json{"/bin/sh", "-c", probe}, 10);
  const std::string b = submit("bob", json{"/bin/sh", "-c", probe}, 10);
  const json jobs = wait_jobs(40, [&](const json& all) {
    return job_of(all, a)["state"] == "finished" && job_of(all, b)["state"] == "finished";
  });
  EXPECT_EQ(slurp(dir_ / "ckpt" / a / "who"), "nobody\nrefused\n");
  EXPECT_EQ(slurp(dir_ / "ckpt" / b / "who"), "root\nread\n");
  // Slurm's owner of the job, and the files that became the tenant's.
  const std::string cmd = "SLURM_CONF=" + quote(cluster_->conf()) + " scontrol -o show job " +
                          std::to_string(job_of(jobs, a)["slurm_job"].get<long>()) + " >" +
                          quote((dir_ / "show").string()) + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_NE(slurp(dir_ / "show").find(" UserId=nobody("), std::string::npos)
      << slurp(dir_ / "show");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "ckpt" / a).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody->pw_uid);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat((dir_ / "ckpt" / (a + ".log")).c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, nobody->pw_uid);
  EXPECT_NE(slurp(dir_ / "server.log").find("slurm_jobs_run_as_root"), std::string::npos);
  server_.reset();

  // A unix_user that Slurm cannot run jobs as: refused before anything starts.
  for (const char* user : {"no-such-user-fairgpu", "root"}) {
    tenants_[0]["unix_user"] = user;
    fs::remove_all(dir_ / "data");
    std::ofstream(dir_ / "bad.json") << config(good_slurm()).dump();
    auto r = testing_support::run_binary({"serve", "--config", (dir_ / "bad.json").string()}, dir_,
                                         {}, 60);
    EXPECT_EQ(r.status, 2) << user;
    EXPECT_NE(r.err.find("tenants[0].unix_user: "), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "data" / "fairgpu.db")) << user;
  }
}

TEST_F(SlurmServe, BadSlurmConfigExitsTwoWithOneLine) {
  auto serve = [&](const json& slurm) {
    std::ofstream(dir_ / "bad.json") << config(slurm).dump();
    return testing_support::run_binary({"serve", "--config", (dir_ / "bad.json").string()}, dir_,
                                       {}, 60);
  };
  // An unknown partition.
  json slurm = good_slurm();
  slurm["partition"] = "nosuch";
  auto r = serve(slurm);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("slurm.partition: no partition 'nosuch' in Slurm"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  // No controller answering: slurm.conf naming a port nobody listens on.
  std::string conf = slurp(cluster_->conf());
  const auto at = conf.find("SlurmctldPort=");
  ASSERT_NE(at, std::string::npos);
  conf.replace(at, conf.find('\n', at) - at, "SlurmctldPort=9");
  std::ofstream(dir_ / "dead.conf") << conf;
  slurm = good_slurm();
  slurm["conf"] = (dir_ / "dead.conf").string();
  slurm["timeout_s"] = 3;
  r = serve(slurm);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("slurm: no Slurm controller answers"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  // A slurm.conf that is not there.
  slurm = good_slurm();
  slurm["conf"] = (dir_ / "missing.conf").string();
  r = serve(slurm);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("slurm.conf: cannot read"), std::string::npos) << r.err;
  // Nothing was started: no store written.
  EXPECT_FALSE(fs::exists(dir_ / "data" / "fairgpu.db"));
}

// The config's backend keys, read strictly (no cluster needed).
TEST(SlurmServeConfig, BackendKeysAreReadAndBadOnesNamed) {
  const std::string base =
      R"("admin_token": "admin-0000", "tenants": [{"name": "a", "token": "token-a-00"}])";
  auto parse = [&](const std::string& extra) {
    return live::parse_serve_config("{" + base + extra + "}", "serve.json");
  };
  auto error = [&](const std::string& extra) {
    try {
      parse(extra);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(parse("").backend, "agents");
  const live::ServeConfig c = parse(
      R"(, "backend": "slurm", "slurm": {"partition": "gpu", "conf": "/etc/slurm/slurm.conf",
      "poll_s": 0.5, "timeout_s": 5, "sbatch": "/opt/slurm/bin/sbatch"})");
  EXPECT_EQ(c.backend, "slurm");
  EXPECT_EQ(c.slurm.partition, "gpu");
  EXPECT_EQ(c.slurm.conf, "/etc/slurm/slurm.conf");
  EXPECT_EQ(c.slurm.poll_s, 0.5);
  EXPECT_EQ(c.slurm.timeout_s, 5);
  EXPECT_EQ(c.slurm.sbatch, "/opt/slurm/bin/sbatch");
  EXPECT_EQ(c.slurm.scontrol, "scontrol");
  EXPECT_EQ(error(R"(, "backend": "lsf")"),
            "serve.json: backend: expected agents or slurm, got 'lsf'");
  EXPECT_EQ(error(R"(, "backend": "slurm")"),
            "serve.json: slurm: missing required field (backend slurm needs {\"partition\": ...})");
  EXPECT_EQ(error(R"(, "slurm": {"partition": "gpu"})"),
            "serve.json: slurm: only with \"backend\": \"slurm\"");
  EXPECT_EQ(error(R"(, "backend": "slurm", "slurm": {"conf": "x"})"),
            "serve.json: slurm.partition: missing required field");
  EXPECT_EQ(error(R"(, "backend": "slurm", "slurm": {"partition": "gpu", "poll_s": 0})"),
            "serve.json: slurm.poll_s: must be > 0, got 0");
  EXPECT_NE(error(R"(, "backend": "slurm", "slurm": {"partition": "gpu", "queue": "x"})")
                .find("serve.json: slurm.queue: unknown field"),
            std::string::npos);
  // A tenant's Slurm account (issue 34 item 4): a name, or one line.
  const std::string bad_account =
      R"({"admin_token": "admin-0000", "backend": "slurm", "slurm": {"partition": "main"},
      "tenants": [{"name": "a", "token": "token-a-00", "account": "a b"}]})";
  try {
    live::parse_serve_config(bad_account, "serve.json");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "serve.json: tenants[0].account: 'a b': only letters, digits, '-', '_' and '.' are "
              "allowed");
  }
}

// The example Slurm-backend config is checked in operator_views_test.cc
// (OperatorExamples.SlurmServeConfigIsValid).

}  // namespace
}  // namespace fairgpu
