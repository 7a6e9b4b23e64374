// A full disk (issue 30, H9), on a real filesystem that fills up: a tmpfs of
// a few MiB mounted for the test (root, or a user namespace that allows it;
// the tests are skipped, saying so, where mounting is not allowed). The
// store recovers when space returns; a submission it could not commit is
// answered 500 and never runs; a launch that cannot write its pid file is
// the node's fault, not the job's.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "live/manager.h"
#include "live/process.h"
#include "live/store.h"
#include "live_daemon.h"
#include "polling.h"
#include "run_binary.h"
#include "test_paths.h"

namespace fairgpu::live {
namespace {

using nlohmann::json;
using testing_support::wait_for;
namespace fs = std::filesystem;

// A small tmpfs at a fresh folder, unmounted at the end; mounted() false
// (and why) where the machine does not allow it.
class SmallDisk {
 public:
  explicit SmallDisk(const std::string& size) {
    std::string tmpl = (fs::temp_directory_path() / "fairgpu-disk-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return;
    dir_ = tmpl;
    const std::string options = "size=" + size;
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) == 0)
      mounted_ = true;
    else
      why_ = std::string("cannot mount a tmpfs: ") + std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  bool mounted() const { return mounted_; }
  const std::string& why() const { return why_; }
  const fs::path& dir() const { return dir_; }

  // Writes a filler file until the disk is full.
  void fill() {
    const int fd = ::open((dir_ / "filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    const std::string block(64 << 10, 'x');
    while (::write(fd, block.data(), block.size()) > 0) {
    }
    const std::string byte(1, 'x');
    while (::write(fd, byte.data(), 1) > 0) {
    }
    ASSERT_EQ(errno, ENOSPC);
    ::close(fd);
  }
  void free_space() { fs::remove(dir_ / "filler"); }

 private:
  fs::path dir_;
  bool mounted_ = false;
  std::string why_;
};

StoredJob job_row(std::int64_t seq, std::size_t log_bytes) {
  StoredJob j;
  j.seq = seq;
  j.id = "j-" + std::to_string(seq);
  j.tenant = "alice";
  j.job_type = "mlp";
  j.command_json = "[\"true\"]";
  j.state = "queued";
  j.log_tail = std::string(log_bytes, 'l');  // pages the full disk has no room for
  return j;
}

TEST(DiskFull, TheStoreRecoversWhenSpaceReturns) {
  SmallDisk disk("2m");
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  const std::string data = (disk.dir() / "data").string();
  {
    Store store(data);
    store.wait(store.put(job_row(1, 100)));
    disk.fill();
    // The commit fails: the writer hears why.
    const auto ticket = store.put(job_row(2, 256 << 10));
    try {
      store.wait(ticket);
      ADD_FAILURE() << "committed on a full disk";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("full"), std::string::npos) << e.what();
    }
    // Space returns: the next write is committed (the committer tried
    // again), and the row that failed with it.
    disk.free_space();
    const auto later = store.put(job_row(3, 100));
    bool committed = false;
    for (int attempt = 0; attempt < 30 && !committed; ++attempt) {
      try {
        store.wait(later);
        committed = true;
      } catch (const std::runtime_error&) {  // an attempt before the space returned
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    EXPECT_TRUE(committed) << "the store did not recover once space returned";
  }
  Store reopened(data);
  const StoreSnapshot snap = reopened.load();
  ASSERT_EQ(snap.jobs.size(), 3u);
  EXPECT_EQ(snap.jobs[1].log_tail.size(), 256u << 10);
}

TEST(DiskFull, ASubmissionNotStoredIsAnswered500AndNeverRuns) {
  SmallDisk disk("4m");
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  const fs::path dir = disk.dir();
  std::ofstream(dir / "profiles.json") << R"json({"fast": {"('mlp', 1)": {"null": 4.0}}})json";
  ServeConfig config;
  config.data_dir = (dir / "data").string();
  config.checkpoint_dir = (dir / "ckpt").string();
  config.profiles_file = (dir / "profiles.json").string();
  config.policy = "fifo";
  config.policy_options.round_s = 60;
  config.admin_token = "admin-token";
  config.tenants = {{"alice", 1.0, "alice-token", "", {}}};
  double now = 1000.0;
  auto manager = std::make_unique<Manager>(config, [&] { return now; });
  auto as = [&](const std::string& token) { return manager->authenticate("Bearer " + token); };
  const std::string node_token =
      manager->issue_node_token(as("admin-token"), "f1")["token"].get<std::string>();
  const std::int64_t epoch = manager->register_agent(
      as(node_token), {{"node", "f1"}, {"gpu_type", "fast"}, {"devices", {0, 1}}})["epoch"];
  auto submit = [&] {
    return manager->submit(as("alice-token"), {{"job_type", "mlp"},
                                               {"workers", 1},
                                               {"iterations", 100},
                                               {"command", {"true"}},
                                               {"name", std::string(200 << 10, 'n')}});
  };
  auto state = [&](const std::string& id) {
    return manager->job(as("admin-token"), id)["state"].get<std::string>();
  };

  disk.fill();
  std::string lost_id;
  try {
    submit();
    ADD_FAILURE() << "a submission was acknowledged on a full disk";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 500) << e.what();
    EXPECT_NE(std::string(e.what()).find("not stored"), std::string::npos) << e.what();
    lost_id = std::string(e.what()).substr(0, std::string(e.what()).find(' '));
  }
  ASSERT_FALSE(lost_id.empty());
  EXPECT_EQ(state(lost_id), "failed");

  // Space returns: submissions are taken again (within a few retries of
  // the committer), and the refused one never runs.
  disk.free_space();
  std::string ok_id;
  ASSERT_TRUE(wait_for(
      [&] {
        try {
          ok_id = submit()["id"].get<std::string>();
          return true;
        } catch (const ApiError&) {
          return false;
        }
      },
      20));
  manager->schedule();
  json answer = manager->heartbeat(as(node_token),
                                   {{"node", "f1"}, {"epoch", epoch}, {"runs", json::array()}});
  for (const json& a : answer["actions"])
    if (a["action"] == "launch") {
      EXPECT_NE(a["job"], lost_id) << a.dump();
    }
  EXPECT_EQ(state(lost_id), "failed");
  EXPECT_NE(state(ok_id), "failed");

  // After a restart, the store says the same: it was never acted on.
  manager.reset();
  manager = std::make_unique<Manager>(config, [&] { return now; });
  EXPECT_EQ(state(lost_id), "failed");
  EXPECT_NE(
      manager->job(as("admin-token"), lost_id)["log_tail"].get<std::string>().find("not stored"),
      std::string::npos);
}

// The race left by the test above: a submission whose commit has not yet
// failed was already in the policy's state, so a scheduling point in that
// window gave it a lease, whose rows a retry committed once space returned.
// A job is planned only once its submit record is durable.
TEST(DiskFull, ASubmissionIsNotScheduledBeforeItIsDurable) {
  SmallDisk disk("4m");
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  const fs::path dir = disk.dir();
  std::ofstream(dir / "profiles.json") << R"json({"fast": {"('mlp', 1)": {"null": 4.0}}})json";
  ServeConfig config;
  config.data_dir = (dir / "data").string();
  config.checkpoint_dir = (dir / "ckpt").string();
  config.profiles_file = (dir / "profiles.json").string();
  config.policy = "fifo";
  config.policy_options.round_s = 60;
  config.admin_token = "admin-token";
  config.tenants = {{"alice", 1.0, "alice-token", "", {}}};
  double now = 1000.0;
  auto manager = std::make_unique<Manager>(config, [&] { return now; });
  auto as = [&](const std::string& token) { return manager->authenticate("Bearer " + token); };
  const std::string node_token =
      manager->issue_node_token(as("admin-token"), "f1")["token"].get<std::string>();
  const std::int64_t epoch = manager->register_agent(
      as(node_token), {{"node", "f1"}, {"gpu_type", "fast"}, {"devices", {0, 1}}})["epoch"];
  auto submit = [&] {
    return manager->submit(as("alice-token"), {{"job_type", "mlp"},
                                               {"workers", 1},
                                               {"iterations", 100},
                                               {"command", {"true"}},
                                               {"name", std::string(200 << 10, 'n')}});
  };
  auto refused_id = [&] {
    try {
      submit();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 500) << e.what();
      return std::string(e.what()).substr(0, std::string(e.what()).find(' '));
    }
    ADD_FAILURE() << "a submission was acknowledged on a full disk";
    return std::string();
  };

  disk.fill();
  // A first refusal: the committer now waits Store::kRetryS before its next
  // attempt, the window in which the next submission waits for its commit.
  const std::string first = refused_id();
  std::string second;
  std::thread submitter([&] { second = refused_id(); });
  ASSERT_TRUE(wait_for(
      [&] { return manager->jobs(as("admin-token"), "")["jobs"].size() == 2; }, 20));
  try {
    manager->schedule();  // its own commit fails with the submission's
  } catch (const std::runtime_error&) {
  }
  submitter.join();
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(manager->job(as("admin-token"), second)["state"], "failed");

  // Space returns: what was queued is committed; the refused jobs never run.
  disk.free_space();
  std::string ok_id;
  ASSERT_TRUE(wait_for(
      [&] {
        try {
          ok_id = submit()["id"].get<std::string>();
          return true;
        } catch (const ApiError&) {
          return false;
        }
      },
      20));
  manager->schedule();
  bool launched_ok = false;
  for (int beat = 0; beat < 3; ++beat) {
    const json answer = manager->heartbeat(
        as(node_token), {{"node", "f1"}, {"epoch", epoch}, {"runs", json::array()}});
    for (const json& a : answer["actions"])
      if (a["action"] == "launch") {
        EXPECT_NE(a["job"], first) << a.dump();
        EXPECT_NE(a["job"], second) << a.dump();
        launched_ok |= a["job"] == ok_id;
      }
  }
  EXPECT_TRUE(launched_ok) << "the stored submission was not launched";
  manager.reset();
  Store store(config.data_dir);
  const StoreSnapshot snap = store.load();
  for (const StoredLease& l : snap.leases) {
    EXPECT_NE(l.job, first) << "lease " << l.id << " (" << l.status << ")";
    EXPECT_NE(l.job, second) << "lease " << l.id << " (" << l.status << ")";
  }
  for (const StoredJob& j : snap.jobs) {
    if (j.id == first || j.id == second) {
      EXPECT_EQ(j.state, "failed") << j.id;
    }
  }
}

TEST(DiskFull, APidFileThatCannotBeWrittenIsTheNodesFault) {
  SmallDisk disk("1m");
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  std::string tmpl = (fs::temp_directory_path() / "fairgpu-launch-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path logs = tmpl;
  disk.fill();
  LaunchSpec spec;
  spec.argv = {"/bin/sleep", "30"};
  spec.log_path = (logs / "log").string();        // a disk with room
  spec.pid_path = (disk.dir() / "pid").string();  // the full one
  auto p = Process::launch(spec);
  EXPECT_EQ(p->state(), ProcessState::kLaunchFailed);
  EXPECT_NE(p->failure().find("cannot write pid file"), std::string::npos) << p->failure();
  EXPECT_TRUE(p->node_fault());
  // A job's own mistake stays its own.
  LaunchSpec bad;
  bad.argv = {"/nonexistent/fairgpu-no-such-program"};
  bad.log_path = (logs / "log2").string();
  EXPECT_FALSE(Process::launch(bad)->node_fault());
  fs::remove_all(logs);
}

// End to end: an agent whose state dir is a full disk fails every launch
// for the node's reason ("cannot write pid file"). The server drains the
// node after node_fault_limit of them in a row, `fairgpu cluster` says why,
// and the job, never charged a failure (max_retries 0 would fail it at the
// first), runs on another node.
TEST(DiskFull, ANodeThatCannotLaunchIsDrainedAndItsJobRunsElsewhere) {
  SmallDisk disk("2m");
  if (!disk.mounted()) GTEST_SKIP() << disk.why();
  std::string tmpl = (fs::temp_directory_path() / "fairgpu-faults-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  // Jobs run as their tenants' users: the agents' state dirs are passed through.
  fs::permissions(dir, fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
  std::ofstream(dir / "profiles.json") << R"json({"fast": {"('mlp', 1)": {"null": 4.0}}})json";
  const json config = {{"listen", "127.0.0.1:0"},
                       {"data_dir", (dir / "data").string()},
                       {"checkpoint_dir", (dir / "ckpt").string()},
                       {"policy", "fifo"},
                       {"round_s", 1},
                       {"heartbeat_s", 0.2},
                       {"heartbeat_timeout_s", 5},
                       {"max_retries", 0},
                       {"node_fault_limit", 2},
                       {"profiles", (dir / "profiles.json").string()},
                       {"admin_token", "admin-token"},
                       {"tenants", {{{"name", "alice"}, {"token", "alice-token"}}}}};
  std::ofstream(dir / "serve.json") << config.dump(2);
  Daemon server({FAIRGPU_BINARY, "serve", "--config", (dir / "serve.json").string(), "--port-file",
                 (dir / "port").string()},
                dir / "server.log");
  ASSERT_TRUE(wait_for([&] { return fs::exists(dir / "port") && fs::file_size(dir / "port") > 0; },
                       20))
      << server.text();
  const int port = std::stoi(testing_support::slurp(dir / "port"));
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  httplib::Client cli("127.0.0.1", port);
  const httplib::Headers admin = {{"Authorization", "Bearer admin-token"}};
  auto get = [&](const std::string& path) {
    auto r = cli.Get(path, admin);
    return r && r->status == 200 ? json::parse(r->body) : json::object();
  };
  auto node = [&](const std::string& name) {
    for (const json& n : get("/v1/cluster").value("nodes", json::array()))
      if (n["name"] == name) return n;
    return json::object();
  };
  auto agent = [&](const std::string& name, const fs::path& state) {
    auto r = cli.Post("/v1/nodes/" + name + "/token", admin, "", "application/json");
    EXPECT_TRUE(r && r->status == 200);
    const fs::path token = dir / ("token-" + name);
    std::ofstream(token) << json::parse(r->body)["token"].get<std::string>() << "\n";
    fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
    return std::make_unique<Daemon>(
        std::vector<std::string>{FAIRGPU_BINARY, "agent", "--server", url, "--node", name,
                                 "--gpus", "fast:1", "--token-file", token.string(),
                                 "--state-dir", state.string()},
        dir / ("agent-" + name + ".log"));
  };

  auto bad = agent("bad", disk.dir() / "state");
  ASSERT_TRUE(wait_for([&] { return node("bad").value("state", "") == "ready"; }, 20))
      << bad->text();
  disk.fill();
  auto r = testing_support::run_binary({"submit", "--server", url, "--token", "alice-token", "--name", "j",
                                        "--job-type", "mlp", "--workers", "1", "--iterations",
                                        "10", "--", "/bin/true"},
                                       dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find_first_of(" \n"));
  ASSERT_TRUE(wait_for([&] { return node("bad").value("state", "") == "drained"; }, 30))
      << node("bad").dump() << "\n" << bad->text();
  r = testing_support::run_binary({"cluster", "--server", url, "--token", "admin-token"}, dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("node faults: 2 launches in a row"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot write pid file"), std::string::npos) << r.out;
  json job = get("/v1/jobs/" + id);
  EXPECT_EQ(job["failures"], 0) << job.dump();
  EXPECT_NE(job["state"], "failed") << job.dump();

  auto good = agent("good", dir / "state-good");
  ASSERT_TRUE(wait_for([&] { return get("/v1/jobs/" + id).value("state", "") == "finished"; }, 30))
      << get("/v1/jobs/" + id).dump() << "\n" << good->text();
  EXPECT_EQ(get("/v1/jobs/" + id)["failures"], 0);
  good.reset();
  bad.reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fairgpu::live
