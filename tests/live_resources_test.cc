// CPUs and memory in the live manager (issue 15 item 4): a real `fairgpu
// serve` and `fairgpu agent`; jobs are small shell commands that write what
// they see (their affinity mask from /proc/self/status, OMP_NUM_THREADS,
// their cgroup's memory.max) into their checkpoint directory.
//  - synergy-tune grants a CPU-sensitive job its best-case 2 CPUs of a
//    2-GPU, 2-CPU node (proportional would be 1): the job runs on 2 cores
//    with OMP_NUM_THREADS=2;
//  - fifo's GPU-proportional grants: two 1-GPU jobs at once get one core
//    each, distinct; where no memory cgroup can be made the job still
//    finishes and its status says "memory limit not enforced";
//  - where this machine lets the test make a cgroup v2 with the memory
//    controller, the job's cgroup has memory.max = its grant.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fairgpu/input_error.h"
#include "live/node_resources.h"
#include "live_daemon.h"
#include "polling.h"
#include "run_binary.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using testing_support::slurp;

// Writes what the job sees, then runs ~1.5 s (so that two jobs overlap),
// reporting progress.
const char* kSeeWhatIHold = R"sh(out="$FAIRGPU_CHECKPOINT_DIR/seen"
grep Cpus_allowed_list /proc/self/status | cut -f2 > "$out"
echo "${OMP_NUM_THREADS:-unset}" >> "$out"
cg=$(sed -n 's/^0:://p' /proc/self/cgroup)
cat "${CG_MOUNT:-/nonexistent}$cg/memory.max" >> "$out" 2>/dev/null || echo none >> "$out"
i=0; while [ $i -lt 15 ]; do i=$((i+1)); echo $i > "$FAIRGPU_PROGRESS_FILE"; sleep 0.1; done)sh";

// Synergy's profiles.json format (src/trace/synergy_input.cc), two models on
// a 1..2 CPUs/GPU and 1..2 GB/GPU grid: `hog` runs 1.8x faster with 2 CPUs
// per GPU (its best case: 2 CPUs, 1 GB), `flat` is insensitive.
const char* kProfiles = R"json({
  "cpu_grid_per_gpu": [1, 2], "mem_grid_gb_per_gpu": [1, 2],
  "by_cpus_per_gpu": {"3": {
    "hog": {"cpu_per_gpu": 2, "mem_gb_per_gpu": 1, "speedup": 1.8, "iter_time_s": 0.01,
            "iter_time_base_s": 0.01, "tput": [[1, 1], [1.8, 1.8]]},
    "flat": {"cpu_per_gpu": 1, "mem_gb_per_gpu": 1, "speedup": 1, "iter_time_s": 0.01,
             "iter_time_base_s": 0.01, "tput": [[1, 1], [1, 1]]}}}})json";

class LiveResources : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::vector<int> mine = live::affinity_cpus();
    if (mine.size() < 2) GTEST_SKIP() << "needs 2 CPUs in this process's affinity mask";
    cores_ = std::to_string(mine[0]) + "," + std::to_string(mine[1]);
    dir_ = fs::temp_directory_path() /
           ("fairgpu-res-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    agent_.reset();
    server_.reset();
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }

  // `cgroup`: the agent's --cgroup ("" = none given: its own cgroup);
  // `join`: a cgroup the agent is started in (it writes itself to its
  // cgroup.procs, then execs).
  void start(const std::string& policy, const std::string& cgroup,
             const std::string& profiles = kProfiles, const std::string& join = "") {
    std::ofstream(dir_ / "profiles.json") << profiles;
    json config = {{"listen", "127.0.0.1:0"},
                   {"data_dir", (dir_ / "data").string()},
                   {"checkpoint_dir", (dir_ / "ckpt").string()},
                   {"policy", policy},
                   {"round_s", 1},
                   {"heartbeat_s", 0.2},
                   {"heartbeat_timeout_s", 3},
                   {"grace_s", 2},
                   {"kill_after_s", 1},
                   {"profiles", (dir_ / "profiles.json").string()},
                   {"restart_overhead_s", 0.1},
                   {"admin_token", "admin-token"},
                   {"tenants", {{{"name", "alice"}, {"token", "alice-token"}}}}};
    std::ofstream(dir_ / "serve.json") << config.dump(2);
    server_ = std::make_unique<Daemon>(
        std::vector<std::string>{FAIRGPU_BINARY, "serve", "--config",
                                 (dir_ / "serve.json").string(), "--port", "0", "--port-file",
                                 (dir_ / "port").string()},
        dir_ / "server.log");
    ASSERT_TRUE(testing_support::wait_for([&] { return fs::exists(dir_ / "port"); }, 10))
        << slurp(dir_ / "server.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the port written whole
    port_ = std::stoi(slurp(dir_ / "port"));
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Post("/v1/nodes/n1/token", {{"Authorization", "Bearer admin-token"}}, "",
                      "application/json");
    ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");
    std::ofstream(dir_ / "token") << json::parse(r->body)["token"].get<std::string>() << "\n";
    fs::permissions(dir_ / "token", fs::perms::owner_read | fs::perms::owner_write);
    // 2 GPUs, 2 CPUs (this process's first two cores), 4 GB.
    std::vector<std::string> argv = {FAIRGPU_BINARY, "agent",
                                     "--server",     "http://127.0.0.1:" + std::to_string(port_),
                                     "--node",       "n1",
                                     "--gpus",       "v100:2",
                                     "--cpus",       "2",
                                     "--cpu-list",   cores_,
                                     "--memory-gb",  "4",
                                     "--token-file", (dir_ / "token").string(),
                                     "--state-dir",  (dir_ / "agent").string()};
    if (!cgroup.empty()) argv.insert(argv.end(), {"--cgroup", cgroup});
    if (!join.empty())
      argv.insert(argv.begin(), {"/bin/sh", "-c",
                                 "echo $$ > " + testing_support::quote(join + "/cgroup.procs") +
                                     " && exec \"$0\" \"$@\""});
    agent_ = std::make_unique<Daemon>(argv, dir_ / "agent.log");
  }
  std::string submit(const std::string& job_type, int workers, const json& env = json::object(),
                     const json& command = kSeeWhatIHold, int iterations = 15) {
    httplib::Client cli("127.0.0.1", port_);
    json body = {{"name", "job"},      {"job_type", job_type},     {"workers", workers},
                 {"command", command}, {"iterations", iterations}, {"env", env}};
    auto r = cli.Post("/v1/jobs", {{"Authorization", "Bearer alice-token"}}, body.dump(),
                      "application/json");
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : "no answer");
    return r && r->status == 201 ? json::parse(r->body)["id"].get<std::string>() : "";
  }
  json job(const std::string& id) {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Get(("/v1/jobs/" + id).c_str(), {{"Authorization", "Bearer admin-token"}});
    return r && r->status == 200 ? json::parse(r->body) : json(nullptr);
  }
  // Polls the jobs until all are finished; keeps the last running view of
  // each (its grant and limits).
  std::map<std::string, json> run_to_end(const std::vector<std::string>& ids) {
    std::map<std::string, json> running;
    const bool done = testing_support::wait_for(
        [&] {
          std::size_t finished = 0;
          for (const auto& id : ids) {
            json j = job(id);
            if (j.is_null()) return false;
            last_[id] = j;
            if (j["state"] == "running" && j["limits"].is_string()) running[id] = j;
            finished += j["state"] == "finished";
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          return finished == ids.size();
        },
        30);
    EXPECT_TRUE(done) << slurp(dir_ / "server.log") << slurp(dir_ / "agent.log");
    return running;
  }
  // The job's own report: affinity list, OMP_NUM_THREADS, memory.max.
  std::vector<std::string> seen(const std::string& id) {
    std::vector<std::string> lines;
    std::ifstream in(dir_ / "ckpt" / id / "seen");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  // The job `id` (of the "flat" kind, granted 2 GiB) ran with its memory
  // limit enforced: memory.max of its cgroup, as it read it, is its grant.
  void expect_memory_max_is_the_grant(std::map<std::string, json>& running,
                                      const std::string& id) {
    ASSERT_TRUE(running.count(id));
    EXPECT_EQ(running[id]["limits"].get<std::string>().find("memory limit not enforced"),
              std::string::npos)
        << running[id]["limits"];
    const auto lines = seen(id);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[2], std::to_string(2ull << 30)) << "memory.max of the job's cgroup";
  }

  std::map<std::string, json> last_;  // each job's last view
  fs::path dir_;
  std::string cores_;
  int port_ = 0;
  std::unique_ptr<Daemon> server_, agent_;
};

TEST(NodeResources, PicksTheLeastUsedCoresAndParsesCpuLists) {
  EXPECT_EQ(live::parse_cpu_list("0-2,5, 7-8"), (std::vector<int>{0, 1, 2, 5, 7, 8}));
  EXPECT_EQ(live::cpu_list_text({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_THROW(live::parse_cpu_list("3-1"), InputError);
  EXPECT_THROW(live::parse_cpu_list("a"), InputError);
  EXPECT_THROW(live::parse_cpu_list("0-1024"), InputError);
  const std::vector<int> cores = {2, 3, 4, 5};
  // 2 granted, cores 2 and 3 taken by another job: 4 and 5.
  EXPECT_EQ(live::pick_cores(cores, {{2, 1}, {3, 1}}, 2.0), (std::vector<int>{4, 5}));
  // More than the node has: every core; a fraction rounds, at least one.
  EXPECT_EQ(live::pick_cores(cores, {}, 9.0), cores);
  EXPECT_EQ(live::pick_cores(cores, {{2, 1}}, 0.3), (std::vector<int>{3}));
  EXPECT_EQ(live::pick_cores(cores, {{2, 2}, {3, 1}, {4, 1}, {5, 1}}, 2.6),
            (std::vector<int>{3, 4, 5}));
}

TEST_F(LiveResources, SynergyTuneGrantsACpuHungryJobItsBestCaseCores) {
  start("synergy-tune", "none");
  const std::string id = submit("hog", 1);
  auto running = run_to_end({id});
  ASSERT_TRUE(running.count(id)) << "never seen running with its limits";
  // Best case 2 CPUs and 1 GB for its one GPU (proportional: 1 CPU, 2 GB).
  EXPECT_EQ(running[id]["cpus"], 2.0) << running[id].dump();
  EXPECT_EQ(running[id]["memory_gb"], 1.0);
  const auto lines = seen(id);
  ASSERT_EQ(lines.size(), 3u) << slurp(dir_ / "agent.log");
  EXPECT_EQ(live::parse_cpu_list(lines[0]).size(), 2u) << lines[0];
  EXPECT_EQ(lines[1], "2");
}

TEST_F(LiveResources, AChangedGrantIsANewPlacement) {
  // synergy-tune re-places every job each round: `hog` alone holds both CPUs;
  // once `flat` arrives TUNE shrinks it to its proportional 1 CPU to fit the
  // newcomer. Same GPU, other CPUs: a restart under a new lease, pinned to
  // one core, not a renewal that would leave it on both.
  start("synergy-tune", "none");
  const json slow = std::string(kSeeWhatIHold) + "; sleep 1";
  const std::string hog = submit("hog", 1, json::object(), slow);
  ASSERT_TRUE(testing_support::wait_for(
      [&] {
        json j = job(hog);
        return !j.is_null() && j["state"] == "running" && j["cpus"] == 2.0 &&
               j["iterations_done"].get<double>() > 0;
      },
      15))
      << slurp(dir_ / "server.log");
  const std::string flat = submit("flat", 1, json::object(), slow);
  run_to_end({hog, flat});
  EXPECT_GE(last_[hog]["restarts"].get<int>(), 1) << last_[hog].dump();
  // Its leases, from the store: 2 CPUs, then 1 beside `flat` (then maybe 2
  // again once flat has finished, a lease its end may beat).
  std::vector<double> grants;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir_ / "data" / "fairgpu.db").c_str(), &db, SQLITE_OPEN_READONLY,
                            nullptr),
            SQLITE_OK);
  sqlite3_busy_timeout(db, 2000);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT cpus FROM leases WHERE job = ?1 ORDER BY id", -1, &st, nullptr);
  sqlite3_bind_text(st, 1, hog.c_str(), -1, SQLITE_TRANSIENT);
  while (sqlite3_step(st) == SQLITE_ROW) grants.push_back(sqlite3_column_double(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  ASSERT_GE(grants.size(), 2u);
  EXPECT_EQ(grants.front(), 2.0);
  EXPECT_EQ(grants[1], 1.0);
  const auto hog_seen = seen(hog), flat_seen = seen(flat);
  ASSERT_EQ(hog_seen.size(), 3u);
  ASSERT_EQ(flat_seen.size(), 3u);
  EXPECT_EQ(hog_seen[1], "1") << "its last run's OMP_NUM_THREADS";
  EXPECT_EQ(live::parse_cpu_list(hog_seen[0]).size(), 1u) << hog_seen[0];
  EXPECT_NE(hog_seen[0], flat_seen[0]) << "the two ran on distinct cores";
}

TEST_F(LiveResources, ProportionalGrantsPinJobsToDistinctCoresAndNeverFailForMemory) {
  // A directory that is no cgroup: the memory limit cannot be applied there.
  fs::create_directories(dir_ / "not-a-cgroup");
  start("fifo", (dir_ / "not-a-cgroup").string());
  // 2.5 s each: they overlap however late the second is placed (a round, 1 s).
  const json slow = std::string(kSeeWhatIHold) + "; sleep 1";
  const std::string a = submit("flat", 1, json::object(), slow),
                    b = submit("flat", 1, json::object(), slow);
  auto running = run_to_end({a, b});
  std::vector<std::vector<int>> masks;
  for (const auto& id : {a, b}) {
    ASSERT_TRUE(running.count(id)) << id << " never seen running with its limits";
    EXPECT_EQ(running[id]["cpus"], 1.0) << running[id].dump();
    EXPECT_EQ(running[id]["memory_gb"], 2.0);
    EXPECT_NE(running[id]["limits"].get<std::string>().find("memory limit not enforced: "),
              std::string::npos)
        << running[id]["limits"];
    const auto lines = seen(id);
    ASSERT_EQ(lines.size(), 3u);
    masks.push_back(live::parse_cpu_list(lines[0]));
    EXPECT_EQ(masks.back().size(), 1u) << lines[0];
    EXPECT_EQ(lines[1], "1");
  }
  // They ran at once (fifo, 2 GPUs), on distinct cores.
  EXPECT_NE(masks[0], masks[1]);
  // A 2-GPU job afterwards: both cores, two threads.
  const std::string c = submit("flat", 2);
  run_to_end({c});
  const auto lines = seen(c);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(live::parse_cpu_list(lines[0]).size(), 2u) << lines[0];
  EXPECT_EQ(lines[1], "2");
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  for (std::string w; in >> w;)
    if (w == word) return true;
  return false;
}

// The "0::" line of /proc/PID/cgroup: the process's cgroup v2 path.
std::string cgroup_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  return "";
}

// A fresh cgroup v2 directory P whose children can have `controller`
// (memory where the hierarchy has it, else another: cgroup v2's
// no-internal-processes rule is the same for every domain controller): a
// child of the nearest ancestor of this process's cgroup that enables it
// for its children (the root does it itself: it is exempt from the rule).
// `skip` says why there is none; the destructor removes P and its children
// once the processes put there are gone.
struct CgroupSandbox {
  std::string mount, parent, controller, skip;
  bool enabled_at_root = false;  // undone at the end
  CgroupSandbox() {
    mount = live::cgroup2_mount();
    if (mount.empty()) {
      skip = "no cgroup v2 hierarchy mounted on this machine";
      return;
    }
    if (::geteuid() != 0) {
      skip = "not root: cannot make cgroups";
      return;
    }
    const std::string all = slurp(fs::path(mount) / "cgroup.controllers");
    for (const char* c : {"memory", "pids", "io", "hugetlb", "cpu"})
      if (has_word(all, c)) {
        controller = c;
        break;
      }
    if (controller.empty()) {
      skip = "no domain controller in the cgroup v2 hierarchy at " + mount + " ('" + all + "')";
      return;
    }
    fs::path a = live::own_cgroup_dir();
    while (a.string().size() > mount.size() &&
           !has_word(slurp(a / "cgroup.subtree_control"), controller))
      a = a.parent_path();
    if (a.string().size() <= mount.size()) {
      a = mount;
      if (!has_word(slurp(a / "cgroup.subtree_control"), controller)) {
        std::ofstream(a / "cgroup.subtree_control") << "+" << controller;
        if (!has_word(slurp(a / "cgroup.subtree_control"), controller)) {
          skip = "cannot enable " + controller + " for the children of " + mount;
          return;
        }
        enabled_at_root = true;
      }
    }
    parent = (a / ("fairgpu-cgtest-" + std::to_string(::getpid()))).string();
    if (::mkdir(parent.c_str(), 0755) != 0) {
      skip = "cannot create a cgroup under " + a.string() + ": " + std::strerror(errno);
      parent.clear();
    }
  }
  ~CgroupSandbox() {
    if (parent.empty()) return;
    testing_support::wait_for(
        [&] {
          std::error_code ec;
          std::vector<fs::path> dirs;
          for (const auto& e : fs::recursive_directory_iterator(parent, ec))
            if (e.is_directory()) dirs.push_back(e.path());
          for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) ::rmdir(it->c_str());
          return ::rmdir(parent.c_str()) == 0 || errno == ENOENT;
        },
        5);
    // Best effort: refused while another cgroup still uses it.
    if (enabled_at_root)
      std::ofstream(fs::path(mount) / "cgroup.subtree_control") << "-" << controller;
  }
  // The path /proc/PID/cgroup names for `dir`.
  std::string rel(const std::string& dir) const { return dir.substr(mount.size()); }
};

pid_t spawn_sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0)
    for (;;) ::pause();
  return pid;
}

// Kills and waits for a child once (then 0: its pid may be reused).
void reap(pid_t& pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  pid = 0;
}

// Issue 30: on a GPU machine the agent's cgroup held the agent, so the
// kernel refused the memory controller for its children (EBUSY). The
// agent's steps on the kernel, with a stand-in process as the agent and
// another for a process some other program left in the same cgroup.
TEST(LiveCgroup, AnAgentMovedToALeafLetsTheRunsBesideItHaveControllers) {
  CgroupSandbox sb;
  if (!sb.skip.empty()) GTEST_SKIP() << sb.skip;
  pid_t agent = spawn_sleeper(), other = spawn_sleeper();
  struct Reap {
    pid_t &a, &b;
    ~Reap() { reap(a), reap(b); }
  } reap_both{agent, other};
  for (pid_t p : {agent, other}) {
    std::ofstream(sb.parent + "/cgroup.procs") << p;
    ASSERT_EQ(cgroup_of(p), sb.rel(sb.parent)) << p;
  }
  // Where the bug was: a cgroup holding processes cannot enable it.
  EXPECT_NE(live::enable_child_controller(sb.parent, sb.controller).find(std::strerror(EBUSY)),
            std::string::npos);

  const live::CgroupPlan plan =
      live::plan_cgroups("", sb.parent, live::is_root_cgroup(sb.parent), "n1");
  EXPECT_EQ(plan.runs_parent, sb.parent);
  ASSERT_EQ(plan.agent_leaf, sb.parent + "/fairgpu-agent@n1");
  ASSERT_EQ(live::move_into_cgroup(plan.agent_leaf, agent), "");
  EXPECT_EQ(cgroup_of(agent), sb.rel(plan.agent_leaf));
  // The other program's process is still in the way, and named.
  const std::string busy = live::enable_child_controller(sb.parent, sb.controller);
  EXPECT_NE(busy.find("1 process live there: " + std::to_string(other) + " "), std::string::npos)
      << busy;
  reap(other);
  ASSERT_EQ(live::enable_child_controller(sb.parent, sb.controller), "");
  if (sb.controller == "memory") {
    const live::RunCgroup run = live::make_run_cgroup(sb.parent, "fairgpu-n1-1-lease-1",
                                                      {std::uint64_t{1} << 30, 0});
    ASSERT_EQ(run.problem, "");
    ASSERT_EQ(run.memory_problem, "");
    EXPECT_EQ(slurp(fs::path(run.dir) / "memory.max"),
              std::to_string(std::uint64_t{1} << 30) + "\n");
  } else {
    const std::string run = sb.parent + "/fairgpu-n1-1-lease-1";
    ASSERT_EQ(::mkdir(run.c_str(), 0755), 0);
    EXPECT_TRUE(has_word(slurp(fs::path(run) / "cgroup.controllers"), sb.controller));
  }
}

// The same through a real agent started alone in a cgroup (as a systemd
// unit or a container's main process): it moves to its leaf, and where the
// hierarchy has the memory controller, the job gets memory.max = its grant.
TEST_F(LiveResources, AnAgentAloneInItsCgroupMovesToALeafAndItsJobsGetMemoryMax) {
  CgroupSandbox sb;
  if (!sb.skip.empty()) GTEST_SKIP() << sb.skip;
  struct StopAgent {  // before the sandbox goes: the agent is in it
    std::unique_ptr<Daemon>& agent;
    ~StopAgent() { agent.reset(); }
  } stop_agent{agent_};
  start("fifo", "", kProfiles, sb.parent);
  const std::string leaf = sb.parent + "/fairgpu-agent@n1";
  ASSERT_TRUE(testing_support::wait_for(
      [&] { return agent_->text().find("moved into cgroup " + leaf) != std::string::npos; }, 10))
      << agent_->text();
  EXPECT_EQ(cgroup_of(agent_->pid()), sb.rel(leaf));
  EXPECT_EQ(slurp(fs::path(sb.parent) / "cgroup.procs"), "");
  if (!has_word(slurp(fs::path(sb.parent) / "cgroup.controllers"), "memory")) {
    // Logged just after the move (a loaded machine can put a read between).
    const std::string off =
        "memory limits will not be enforced: the memory controller is not available in " +
        sb.parent;
    EXPECT_TRUE(testing_support::wait_for(
        [&] { return agent_->text().find(off) != std::string::npos; }, 10))
        << agent_->text();
    GTEST_SKIP() << "the move checked; no memory controller in cgroup v2 here to check memory.max";
  }
  const std::string id = submit("flat", 1, {{"CG_MOUNT", sb.mount}});
  auto running = run_to_end({id});
  expect_memory_max_is_the_grant(running, id);
}

TEST_F(LiveResources, MemoryGrantIsTheJobsCgroupMemoryMax) {
  // A cgroup v2 directory the agent may use: a child of the hierarchy's root
  // (which may enable controllers for its children while holding processes).
  const std::string mount = live::cgroup2_mount();
  if (mount.empty()) GTEST_SKIP() << "no cgroup v2 hierarchy mounted on this machine";
  std::string controllers = slurp(fs::path(mount) / "cgroup.subtree_control");
  if (controllers.find("memory") == std::string::npos)
    GTEST_SKIP() << "the memory controller is not enabled for children of " << mount
                 << " (cgroup.subtree_control: '" << controllers << "')";
  const fs::path parent = fs::path(mount) / ("fairgpu-test-" + std::to_string(::getpid()));
  if (::mkdir(parent.c_str(), 0755) != 0)
    GTEST_SKIP() << "cannot create a cgroup under " << mount << ": " << std::strerror(errno);
  start("fifo", parent.string());
  const std::string id = submit("flat", 1, {{"CG_MOUNT", mount}});
  auto running = run_to_end({id});
  // The agent removes the run's cgroup a tick after the run ended.
  testing_support::wait_for([&] { return ::rmdir(parent.c_str()) == 0 || errno == ENOENT; }, 5);
  expect_memory_max_is_the_grant(running, id);
}

// Issue 14 item 5: fairgpu-train follows a batch-size schedule and reports
// it in its progress file; the manager, running shockwave, learns of the
// change when the job reaches it and plans the job at the new regime's
// rate; the job finishes with the result of an uninterrupted run.
TEST_F(LiveResources, ShockwaveSeesTheBatchSizeChangeWhenTheJobReportsIt) {
  start("shockwave", "none",
        R"json({"v100": {"('mlp (batch size 32)', 1)": {"null": 200},
                         "('mlp (batch size 64)', 1)": {"null": 120}}})json");
  // 4096 samples: an epoch is 128 steps at batch 32, 64 at batch 64; the
  // change is at epoch 2 = step 256 of 400.
  const std::vector<std::string> train = {FAIRGPU_TRAIN_BINARY,
                                          "--iterations",
                                          "400",
                                          "--seed",
                                          "5",
                                          "--batch-schedule",
                                          "0:32,2:64",
                                          "--base-rate",
                                          "200",
                                          "--checkpoint-every",
                                          "50"};
  const std::string id = submit("mlp (batch size 32)", 1, json::object(), train, 400);
  run_to_end({id});
  const json& j = last_[id];
  ASSERT_EQ(j["state"], "finished") << j.dump();
  EXPECT_EQ(j["batch_size"], 64);
  EXPECT_EQ(j["regime_job_type"], "mlp (batch size 64)");
  ASSERT_EQ(j["regimes"].size(), 2u) << j.dump();
  EXPECT_EQ(j["regimes"][0]["batch_size"], 32);
  EXPECT_LT(j["regimes"][0]["iteration"].get<double>(), 256.0);  // first report, before the change
  EXPECT_EQ(j["regimes"][1]["batch_size"], 64);
  // Seen when the job reached it (the agent reads the file every heartbeat:
  // up to 0.2 s = 40 steps later), never before.
  EXPECT_GE(j["regimes"][1]["iteration"].get<double>(), 256.0);
  EXPECT_LE(j["regimes"][1]["iteration"].get<double>(), 400.0);
  httplib::Client cli("127.0.0.1", port_);
  auto metrics = cli.Get("/metrics", {{"Authorization", "Bearer admin-token"}});
  ASSERT_TRUE(metrics && metrics->status == 200);
  EXPECT_NE(metrics->body.find("fairgpu_regime_changes_total 1\n"), std::string::npos)
      << metrics->body;
  // The result of an uninterrupted, unpaced run with the same schedule.
  const fs::path ref = dir_ / "ref";
  fs::create_directories(ref);
  const std::string cmd =
      testing_support::quote(FAIRGPU_TRAIN_BINARY) +
      " --iterations 400 --seed 5 --batch-schedule 0:32,2:64 --checkpoint-dir " +
      testing_support::quote(ref.string()) + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const json got = json::parse(slurp(dir_ / "ckpt" / id / "result.json"));
  const json want = json::parse(slurp(ref / "result.json"));
  EXPECT_EQ(got["weights_checksum"], want["weights_checksum"]);
  EXPECT_EQ(got["final_loss"], want["final_loss"]);
}

}  // namespace
}  // namespace fairgpu
