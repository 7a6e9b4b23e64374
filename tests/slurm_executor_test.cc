// The Slurm executor (src/live/slurm/executor.h) on a scripted Slurm: a
// fake SlurmClient whose jobs move only when a test says so, so each step of
// the lease life cycle (start, revoke + grace + requeuehold, exit, node
// failure and fencing, refused start, restart, slurmctld unreachable part-way
// through a round, strays of a crash between sbatch and the store, CPU and
// memory grants) is checked exactly. The same
// executor against a real Slurm: SlurmCluster.ExecutorRunsRevokesAndRestartsAJob.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "live/log.h"
#include "live/slurm/executor.h"
#include "polling.h"
#include "run_binary.h"

namespace fairgpu::live::slurm {
namespace {

namespace fs = std::filesystem;
using testing_support::slurp;

class FakeSlurm : public SlurmClient {
 public:
  struct Job {
    std::string name;
    JobState state = JobState::kPending;
    bool held = true;
    std::vector<std::string> nodes, pinned;
    int restarts = 0, exit_code = 0;
    std::string comment, user = "fairgpu";
    std::string checkpoint_dir;
    bool launch_fails = false;  // Slurm fails its next run before the wrapper begins
  };

  std::int64_t submit(const SubmitSpec& spec) override {
    if (down) throw SlurmError("sbatch: slurmctld unreachable");
    ++submits;
    const std::int64_t id = next_id_++;
    jobs[id].name = "fairgpu-" + spec.job;
    jobs[id].comment = spec.comment;
    jobs[id].checkpoint_dir = spec.checkpoint_dir;
    if (!spec.run_as_user.empty()) jobs[id].user = spec.run_as_user;
    return id;
  }
  // slurmctld unreachable: every call throws. With fail_after >= 0, the
  // next apply carries out that many commands, then dies (a round cut off).
  std::map<std::int64_t, std::string> apply(const RoundWrites& w) override {
    if (down) throw SlurmError("scontrol: slurmctld unreachable");
    ++apply_calls;
    const std::vector<std::string> cmds = round_commands(w);
    if (fail_after >= 0) {
      const int n = fail_after;
      fail_after = -1;
      RoundWrites done;  // the first n commands of the round, in its order
      int k = 0;
      for (auto id : w.requeue_hold)
        if (k++ < n) done.requeue_hold.push_back(id);
      for (auto id : w.hold)
        if (k++ < n) done.hold.push_back(id);
      for (const auto& p : w.pins)
        if (k++ < n) done.pins.push_back(p);
      if (!w.release.empty() && k++ < n) done.release = w.release;
      apply(done);
      throw SlurmError("scontrol: no answer within 30 s");
    }
    for (const auto& c : cmds) commands.push_back(c);
    std::map<std::int64_t, std::string> refused;
    for (auto id : w.requeue_hold) {
      Job& j = jobs.at(id);
      j.state = JobState::kPending;
      j.held = true;
      j.nodes.clear();
      ++j.restarts;
    }
    for (auto id : w.hold) jobs.at(id).held = true;
    for (const auto& p : w.pins) {
      if (refuse_pins.count(p.job)) {
        refused[p.job] = "Requested node configuration is not available";
        continue;
      }
      jobs.at(p.job).pinned = p.nodes;
    }
    for (auto id : w.release) jobs.at(id).held = false;
    return refused;
  }
  std::map<std::int64_t, std::string> signal_checkpoint(
      const std::vector<std::int64_t>& ids) override {
    if (down) throw SlurmError("scancel: slurmctld unreachable");
    signalled.insert(signalled.end(), ids.begin(), ids.end());
    return {};
  }
  std::map<std::int64_t, std::string> cancel(const std::vector<std::int64_t>& ids) override {
    if (down) throw SlurmError("scancel: slurmctld unreachable");
    for (auto id : ids) {
      jobs.at(id).state = JobState::kCancelled;
      cancelled.push_back(id);
    }
    return {};
  }
  JobsSnapshot read_jobs() override {
    if (down) throw SlurmError("squeue: slurmctld unreachable");
    ++reads;
    JobsSnapshot s;
    s.unreadable = unreadable;
    for (const auto& [id, j] : jobs) {
      JobDetail d;
      d.job_id = id;
      d.name = j.name;
      d.state = j.state;
      d.held = j.state == JobState::kPending && j.held;
      d.nodes = j.nodes;
      d.required_nodes = j.pinned;
      d.restarts = j.restarts;
      d.exit_code = j.exit_code;
      d.comment = j.comment;
      d.user = j.user;
      for (const auto& n : j.nodes) d.per_node.push_back({n, "v100", per_node_indices[id]});
      s.detail[id] = d;
    }
    return s;
  }
  void set_node_drained(const std::string& node, bool drained) override {
    commands.push_back("update NodeName=" + node + (drained ? " State=DRAIN" : " State=RESUME"));
  }
  std::vector<NodeInfo> read_nodes() override {
    if (down) throw SlurmError("scontrol: slurmctld unreachable");
    ++node_reads;
    return nodes;
  }

  // Slurm's scheduler: released, pinned, pending jobs start on their pin,
  // and their wrapper begins (the began mark names the run file's lease).
  void schedule() {
    for (auto& [id, j] : jobs) {
      if (j.state == JobState::kPending && !j.held && !j.pinned.empty()) {
        j.state = JobState::kRunning;
        j.nodes = j.pinned;
        if (j.launch_fails || j.checkpoint_dir.empty()) continue;
        std::ifstream run(run_file_path(j.checkpoint_dir));
        std::string line;
        while (std::getline(run, line))
          if (line.rfind("FAIRGPU_LEASE_ID=", 0) == 0)
            std::ofstream(began_file_path(j.checkpoint_dir)) << line.substr(17) << "\n";
      }
    }
  }

  std::map<std::int64_t, Job> jobs;
  std::vector<NodeInfo> nodes;
  std::map<std::int64_t, std::vector<int>> per_node_indices;
  std::set<std::int64_t> refuse_pins;
  std::map<std::int64_t, std::string> unreadable;  // lines of scontrol that do not read
  std::vector<std::string> commands;
  std::vector<std::int64_t> signalled, cancelled;
  int apply_calls = 0, reads = 0, node_reads = 0, submits = 0;
  bool down = false;
  int fail_after = -1;

 private:
  std::int64_t next_id_ = 100;
};

NodeInfo node(const std::string& name, const std::string& state, const std::string& type,
              int gpus) {
  NodeInfo n;
  n.name = name;
  const auto plus = state.find('+');
  n.base_state = state.substr(0, plus);
  if (plus != std::string::npos) n.flags.push_back(state.substr(plus + 1));
  n.gres.push_back({"gpu", type, gpus, {}});
  n.cpus = 8;
  n.memory_mb = 16000;
  n.partitions = {"main"};
  return n;
}

class SlurmExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fairgpu-slurm-exec-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fake_.nodes = {node("n1", "IDLE", "v100", 4), node("n2", "IDLE", "p100", 4)};
  }
  void TearDown() override { fs::remove_all(dir_); }

  ExecutorJob job(const std::string& id) {
    ExecutorJob j;
    j.job = id;
    j.shell_command = "true";
    j.checkpoint_dir = (dir_ / id).string();
    j.progress_file = (dir_ / id / "progress").string();
    fs::create_directories(j.checkpoint_dir);
    return j;
  }
  static RunStart start(std::int64_t lease, const std::string& job, const std::string& node,
                        const std::string& type = "v100") {
    return RunStart{lease, job, type, {{node, {0}}}};
  }
  std::string pin(std::int64_t id, const std::string& node) {
    return "update JobId=" + std::to_string(id) + " NodeList=" + node +
           " StartTime=now NumNodes=1-1 TresPerNode=gres:gpu:1";
  }
  static std::vector<RunEvent> of_kind(const std::vector<RunEvent>& events, RunEvent::Kind k) {
    std::vector<RunEvent> out;
    for (const auto& e : events)
      if (e.kind == k) out.push_back(e);
    return out;
  }

  fs::path dir_;
  FakeSlurm fake_;
  SlurmExecutor exec_{fake_, SlurmExecutorOptions{"main", 10}};
};

TEST_F(SlurmExecutorTest, StartsOfARoundArePinnedAndReleasedThroughOneScontrol) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  const std::int64_t b = std::stoll(exec_.admit(job("b")));
  EXPECT_TRUE(fake_.jobs.at(a).held);
  exec_.apply({start(1, "a", "n1"), start(2, "b", "n2", "p100")}, {}, 0);
  EXPECT_EQ(fake_.apply_calls, 1);
  EXPECT_EQ(fake_.commands, (std::vector<std::string>{
                                "update JobId=" + std::to_string(a) + " NodeList=n1 StartTime=now NumNodes=1-1 TresPerNode=gres:gpu:1",
                                "update JobId=" + std::to_string(b) + " NodeList=n2 StartTime=now NumNodes=1-1 TresPerNode=gres:gpu:1",
                                "release " + std::to_string(a) + "," + std::to_string(b)}));
  EXPECT_EQ(slurp(dir_ / "b" / ".fairgpu-run"), "FAIRGPU_LEASE_ID=2\nFAIRGPU_GPU_TYPE=p100\nFAIRGPU_GPUS_PER_NODE=1\nMASTER_PORT=29502\n");
  // Not running until Slurm says so.
  EXPECT_TRUE(of_kind(exec_.poll(1), RunEvent::Kind::kRunning).empty());
  fake_.schedule();
  const auto running = of_kind(exec_.poll(2), RunEvent::Kind::kRunning);
  ASSERT_EQ(running.size(), 2u);
  EXPECT_EQ(running[0].lease, 1);
  EXPECT_EQ(running[0].nodes, (std::vector<std::string>{"n1"}));
  EXPECT_EQ(running[1].nodes, (std::vector<std::string>{"n2"}));
  // A renewal is no call: polls write nothing more.
  exec_.poll(3);
  EXPECT_EQ(fake_.apply_calls, 1);
  EXPECT_EQ(fake_.node_reads, 0);  // nodes are read only while a run waits on a failed node
}

TEST_F(SlurmExecutorTest, RevokeSignalsNowRequeueHoldsAfterGraceAndEndsWhenHeld) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  std::ofstream(dir_ / "a" / "progress") << "40\n";
  const auto progress = of_kind(exec_.poll(2), RunEvent::Kind::kProgress);
  ASSERT_EQ(progress.size(), 1u);
  EXPECT_EQ(progress[0].iterations, 40);

  exec_.apply({}, {1}, 100);
  EXPECT_EQ(fake_.signalled, (std::vector<std::int64_t>{a}));
  EXPECT_TRUE(exec_.poll(109).empty());  // within the grace period: nothing
  EXPECT_EQ(fake_.jobs.at(a).state, JobState::kRunning);
  // A new lease for the job before its run ended (the lease manager's bug)
  // fails that lease alone, never launched; the revoke goes on.
  EXPECT_NO_THROW(exec_.apply({start(2, "a", "n2")}, {}, 109));
  const auto ended = of_kind(exec_.poll(110.5), RunEvent::Kind::kEnded);
  EXPECT_EQ(fake_.commands.back(), "requeuehold " + std::to_string(a));
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].lease, 2);
  EXPECT_TRUE(ended[0].launch_failed);
  EXPECT_EQ(ended[0].detail, "start of job a whose previous run has not ended");
  EXPECT_EQ(ended[1].lease, 1);
  EXPECT_TRUE(ended[1].revoked);
  // Held again: the next lease pins it elsewhere.
  exec_.apply({start(3, "a", "n2", "p100")}, {}, 111);
  fake_.schedule();
  const auto running = of_kind(exec_.poll(112), RunEvent::Kind::kRunning);
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].lease, 3);
  EXPECT_EQ(running[0].nodes, (std::vector<std::string>{"n2"}));
}

// Issue 34 item 3: the Slurm state of every run the executor waits on is
// logged (slurm_run_state) once per change, so that a stuck revoke shows
// what Slurm said of it; an unchanged state and an idle job log nothing.
TEST_F(SlurmExecutorTest, TheSlurmStateOfAWaitedRunIsLoggedWhenItChanges) {
  auto lines = [](const std::string& job) {
    std::vector<nlohmann::json> out;
    for (const auto& e : log::recent())
      if (e["event"] == "slurm_run_state" && e["fields"]["job"] == job) out.push_back(e["fields"]);
    return out;
  };
  const std::int64_t a = std::stoll(exec_.admit(job("logged")));
  exec_.poll(0);  // idle (held by design): nothing
  EXPECT_TRUE(lines("logged").empty());
  exec_.apply({start(1, "logged", "n1")}, {}, 0);
  exec_.poll(1);  // starting: released, not yet running
  exec_.poll(1.5);
  fake_.schedule();
  exec_.poll(2);
  exec_.poll(3);  // running, as before: nothing new
  exec_.apply({}, {1}, 100);
  exec_.poll(101);   // revoking, still running on n1
  exec_.poll(110.5);  // requeuehold sent, held again
  auto got = lines("logged");
  ASSERT_EQ(got.size(), 5u) << nlohmann::json(got).dump();
  EXPECT_EQ(got[0]["phase"], "starting");
  EXPECT_EQ(got[0]["state"], "PENDING");
  EXPECT_EQ(got[0]["held"], false);
  EXPECT_EQ(got[0]["slurm_job"], a);
  EXPECT_EQ(got[0]["lease"], 1);
  EXPECT_EQ(got[1]["phase"], "starting");
  EXPECT_EQ(got[1]["state"], "RUNNING");
  EXPECT_EQ(got[1]["nodes"], "n1");
  EXPECT_EQ(got[2]["phase"], "running");
  EXPECT_EQ(got[3]["phase"], "revoking");
  EXPECT_EQ(got[3]["state"], "RUNNING");
  EXPECT_EQ(got[4]["phase"], "requeued");
  EXPECT_EQ(got[4]["state"], "PENDING");
  EXPECT_EQ(got[4]["held"], true);
  // Slurm forgot the job (a slurmctld that lost its state): said so.
  exec_.apply({start(2, "logged", "n1")}, {}, 111);
  fake_.jobs.erase(a);
  exec_.poll(112);
  got = lines("logged");
  ASSERT_EQ(got.size(), 6u) << nlohmann::json(got).dump();
  EXPECT_EQ(got[5]["state"], "GONE");
  EXPECT_EQ(got[5]["lease"], 2);
}

// Issue 34 item 3: slurmctld killed with -9 can come back without jobs it
// had not saved. Such a job's run ends as revoked (never as the job's
// failure) and the job is submitted again, its new id handed to the
// manager; a run that had done its work ends as finished; a new job that
// takes a lost job's id (Slurm numbers from its saved state) is not
// mistaken for it.
TEST_F(SlurmExecutorTest, AJobSlurmLostIsSubmittedAgainAndItsRunEndsAsRevoked) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  const std::int64_t b = std::stoll(exec_.admit(job("b")));
  exec_.apply({start(1, "a", "n1"), start(2, "b", "n2", "p100")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  std::ofstream(dir_ / "a" / "progress") << "10\n";
  std::ofstream(dir_ / "b" / "progress") << "10\n";
  exec_.poll(2);
  // c's run did its work just before Slurm lost the jobs.
  ExecutorJob with_total = job("c");
  with_total.iterations = 10;
  const std::int64_t c = std::stoll(exec_.admit(with_total));
  exec_.apply({start(3, "c", "n1")}, {}, 3);
  fake_.schedule();
  exec_.poll(4);
  std::ofstream(dir_ / "c" / "progress") << "10\n";
  fake_.jobs.erase(a);
  fake_.jobs.erase(c);
  fake_.jobs[b].name = "someone-else";  // b's id now another job's
  const auto ended = of_kind(exec_.poll(5), RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 3u);
  for (const RunEvent& e : ended) {
    SCOPED_TRACE(e.job);
    if (e.job == "c") {
      EXPECT_FALSE(e.revoked);
      EXPECT_EQ(e.exit_code, 0);
    } else {
      EXPECT_TRUE(e.revoked);
      EXPECT_FALSE(e.launch_failed);
    }
  }
  const auto again = exec_.take_resubmitted();
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(fake_.submits, 5);
  std::map<std::string, std::int64_t> id_of(again.begin(), again.end());
  EXPECT_EQ(exec_.slurm_id("a"), id_of.at("a"));
  EXPECT_EQ(exec_.slurm_id("b"), id_of.at("b"));
  EXPECT_TRUE(fake_.jobs.at(id_of.at("a")).held);
  EXPECT_TRUE(exec_.take_resubmitted().empty());
  // The next lease runs the new Slurm job.
  exec_.apply({start(4, "a", "n2", "p100")}, {}, 6);
  EXPECT_EQ(fake_.commands[fake_.commands.size() - 2], pin(id_of.at("a"), "n2"));
  fake_.schedule();
  const auto running = of_kind(exec_.poll(7), RunEvent::Kind::kRunning);
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].lease, 4);
}

// A move waits for the revoked run's end: a run that checkpointed and exited
// on the signal is requeued held at the next poll, and its end reported in
// that poll, not when the grace period is over.
TEST_F(SlurmExecutorTest, ARevokedRunThatExitedIsRequeueHeldBeforeTheGracePeriodEnds) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  exec_.apply({}, {1}, 100);
  EXPECT_TRUE(exec_.poll(100.5).empty());         // still running: nothing
  fake_.jobs.at(a).state = JobState::kCompleted;  // checkpointed, exited 0
  fake_.jobs.at(a).nodes.clear();
  const auto ended = of_kind(exec_.poll(101), RunEvent::Kind::kEnded);
  EXPECT_EQ(fake_.commands.back(), "requeuehold " + std::to_string(a));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].lease, 1);
  EXPECT_TRUE(ended[0].revoked);
  EXPECT_EQ(ended[0].detail, "revoked");
  EXPECT_TRUE(fake_.jobs.at(a).held);
  // Its next lease starts at once; the grace period's end changes nothing.
  exec_.apply({start(2, "a", "n2", "p100")}, {}, 102);
  EXPECT_TRUE(of_kind(exec_.poll(111), RunEvent::Kind::kEnded).empty());
  fake_.schedule();
  const auto running = of_kind(exec_.poll(112), RunEvent::Kind::kRunning);
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].lease, 2);
}

// A revoked run that reached its total but was killed on its way out (the
// checkpoint signal before its exit; Slurm: FAILED, 0:10) is a revoked run:
// requeue-held to run again from its checkpoint, not the job's failure.
TEST_F(SlurmExecutorTest, ARevokedRunKilledAfterItsLastIterationIsRequeuedNotFailed) {
  ExecutorJob spec = job("a");
  spec.iterations = 300;
  const std::int64_t a = std::stoll(exec_.admit(spec));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  std::ofstream(dir_ / "a" / "progress") << "300\n";
  exec_.apply({}, {1}, 100);
  exec_.poll(100.5);
  fake_.jobs.at(a).state = JobState::kFailed;  // killed by SIGUSR1
  fake_.jobs.at(a).nodes.clear();
  const auto ended = of_kind(exec_.poll(101), RunEvent::Kind::kEnded);
  EXPECT_EQ(fake_.commands.back(), "requeuehold " + std::to_string(a));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_TRUE(ended[0].revoked);
  EXPECT_EQ(ended[0].detail, "revoked");
}

TEST_F(SlurmExecutorTest, AFinishedRunEndsOnceWithSlurmsExitCode) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  fake_.jobs.at(a).state = JobState::kFailed;
  fake_.jobs.at(a).exit_code = 3;
  const auto ended = of_kind(exec_.poll(2), RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].exit_code, 3);
  EXPECT_FALSE(ended[0].revoked);
  EXPECT_EQ(ended[0].detail, "FAILED");
  EXPECT_TRUE(exec_.poll(3).empty());
}

// Issue 34 item 3: a run Slurm started without its GPUs, refused by its
// wrapper (exit kNoGpuExitCode with its lease id in the mark), is requeued
// held and reported ended as a revoked run (the job waits for its next
// lease, no failure counted), up to kMaxNoGpuRuns in a row; the same exit
// code without the mark, or past the bound, is the job's own failure.
TEST_F(SlurmExecutorTest, ARunStartedWithoutItsGpusIsRequeuedNotFailed) {
  const ExecutorJob spec = job("a");
  const std::int64_t a = std::stoll(exec_.admit(spec));
  auto refused_run = [&](std::int64_t lease, double t, bool marked) {
    exec_.apply({start(lease, "a", "n1")}, {}, t);
    fake_.schedule();
    exec_.poll(t + 1);
    if (marked) std::ofstream(no_gpu_file_path(spec.checkpoint_dir)) << lease << "\n";
    fake_.jobs.at(a).state = JobState::kFailed;
    fake_.jobs.at(a).exit_code = kNoGpuExitCode;
    return of_kind(exec_.poll(t + 2), RunEvent::Kind::kEnded);
  };
  for (int run = 0; run < 3; ++run) {
    const auto ended = refused_run(1 + run, 10.0 * run, true);
    ASSERT_EQ(ended.size(), 1u) << run;
    EXPECT_TRUE(ended[0].revoked) << run;
    EXPECT_NE(ended[0].detail.find("without its GPUs"), std::string::npos) << ended[0].detail;
    EXPECT_EQ(fake_.jobs.at(a).state, JobState::kPending);  // requeued, held
    EXPECT_TRUE(fake_.jobs.at(a).held);
  }
  // A fourth in a row: the job's failure (the mark is the job's to write).
  auto ended = refused_run(4, 40.0, true);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].revoked);
  EXPECT_EQ(ended[0].exit_code, kNoGpuExitCode);
  // Without the mark (the job's own exit 75): its failure too.
  ended = refused_run(5, 50.0, false);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].revoked);
}

// A run Slurm failed before its wrapper began (no began mark for its lease:
// seen when Slurm relaunched a requeued job on the node it had just left,
// exit 1 and no output) is requeued held and reported ended as a revoked
// run, up to three in a row; a run that began and failed is the job's
// failure.
TEST_F(SlurmExecutorTest, ARunSlurmFailedBeforeItBeganIsRequeuedNotFailed) {
  const ExecutorJob spec = job("a");
  const std::int64_t a = std::stoll(exec_.admit(spec));
  auto failed_run = [&](std::int64_t lease, double t, bool began) {
    exec_.apply({start(lease, "a", "n1")}, {}, t);
    fake_.jobs.at(a).launch_fails = !began;
    fake_.schedule();
    exec_.poll(t + 1);
    fake_.jobs.at(a).state = JobState::kFailed;
    fake_.jobs.at(a).exit_code = 1;
    return of_kind(exec_.poll(t + 2), RunEvent::Kind::kEnded);
  };
  for (int run = 0; run < 3; ++run) {
    const auto ended = failed_run(1 + run, 10.0 * run, false);
    ASSERT_EQ(ended.size(), 1u) << run;
    EXPECT_TRUE(ended[0].revoked) << run;
    EXPECT_NE(ended[0].detail.find("before its command started"), std::string::npos)
        << ended[0].detail;
    EXPECT_EQ(fake_.jobs.at(a).state, JobState::kPending);  // requeued, held
    EXPECT_TRUE(fake_.jobs.at(a).held);
  }
  // A fourth in a row: the job's failure (the mark is the job's to write).
  auto ended = failed_run(4, 40.0, false);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].revoked);
  EXPECT_EQ(ended[0].exit_code, 1);
  // A run that began: its failure is the job's, whatever came before.
  const std::int64_t b = std::stoll(exec_.admit(job("b")));
  exec_.apply({start(5, "b", "n2", "p100")}, {}, 50);
  fake_.schedule();
  exec_.poll(51);
  fake_.jobs.at(b).state = JobState::kFailed;
  fake_.jobs.at(b).exit_code = 1;
  ended = of_kind(exec_.poll(52), RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].revoked);
  EXPECT_EQ(ended[0].detail, "FAILED");
}

// Issue 30 H4: a job whose run failed is retried: its final Slurm job is
// requeued held, pinned and released in one exchange (before: the start
// threw out of apply and the round's later starts never reached Slurm).
TEST_F(SlurmExecutorTest, ARetryOfAFailedRunRequeuesItsSlurmJobAndStartsItAgain) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  exec_.admit(job("b"));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  fake_.jobs.at(a).state = JobState::kFailed;
  fake_.jobs.at(a).exit_code = 3;
  ASSERT_EQ(of_kind(exec_.poll(2), RunEvent::Kind::kEnded).size(), 1u);
  fake_.commands.clear();
  exec_.apply({start(2, "a", "n1"), start(3, "b", "n2", "p100")}, {}, 3);
  ASSERT_GE(fake_.commands.size(), 3u);
  EXPECT_EQ(fake_.commands.front(), "requeuehold " + std::to_string(a));
  EXPECT_EQ(fake_.jobs.at(a).pinned, std::vector<std::string>{"n1"});
  fake_.schedule();
  const auto events = exec_.poll(4);
  const auto running = of_kind(events, RunEvent::Kind::kRunning);
  ASSERT_EQ(running.size(), 2u);  // the retry and the other job of the round
  EXPECT_TRUE(of_kind(events, RunEvent::Kind::kEnded).empty());
  EXPECT_EQ(fake_.jobs.at(a).state, JobState::kRunning);
}

// Issue 30 H5: a start whose run file cannot be written (the job made it a
// directory) fails that run alone, reported ended as never launched; the
// round's other starts go on, and the job's leftovers at the temporary
// name change nothing.
TEST_F(SlurmExecutorTest, AStartWhoseRunFileCannotBeWrittenFailsThatRunAlone) {
  exec_.admit(job("a"));
  const std::int64_t b = std::stoll(exec_.admit(job("b")));
  fs::create_directories(dir_ / "a" / ".fairgpu-run" / "x");
  fs::create_directories(dir_ / "b" / ".fairgpu-run.tmp");
  exec_.apply({start(1, "a", "n1"), start(2, "b", "n2", "p100")}, {}, 0);
  EXPECT_EQ(fake_.jobs.at(b).pinned, std::vector<std::string>{"n2"});
  EXPECT_EQ(slurp(dir_ / "b" / ".fairgpu-run"), "FAIRGPU_LEASE_ID=2\nFAIRGPU_GPU_TYPE=p100\nFAIRGPU_GPUS_PER_NODE=1\nMASTER_PORT=29502\n");
  fake_.schedule();
  const auto events = exec_.poll(1);
  const auto ended = of_kind(events, RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].lease, 1);
  EXPECT_TRUE(ended[0].launch_failed);
  EXPECT_NE(ended[0].detail.find(".fairgpu-run"), std::string::npos) << ended[0].detail;
  ASSERT_EQ(of_kind(events, RunEvent::Kind::kRunning).size(), 1u);
  EXPECT_EQ(of_kind(events, RunEvent::Kind::kRunning)[0].lease, 2);
  // No temporary file left behind.
  for (const auto& entry : fs::directory_iterator(dir_ / "a"))
    EXPECT_EQ(entry.path().filename().string().find(".fairgpu-run."), std::string::npos)
        << entry.path();
}

// Issue 30 H7: a line of another user's job that does not read never stops
// the exchange; one of fairgpu's own does (its state is unknown).
TEST_F(SlurmExecutorTest, OnlyAnUnreadableLineOfItsOwnJobsFailsAPoll) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  fake_.unreadable[9999] = "scontrol show job: job 9999: JobState: unknown job state 'BOGUS'";
  const auto running = of_kind(exec_.poll(1), RunEvent::Kind::kRunning);
  ASSERT_EQ(running.size(), 1u);
  fake_.unreadable[a] = "scontrol show job: job " + std::to_string(a) + ": ExitCode: not E:S";
  EXPECT_THROW(exec_.poll(2), SlurmError);
}

TEST_F(SlurmExecutorTest, ARunRequeuedByANodeFailureEndsOnlyWhenTheNodeRespondsAgain) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  // n1 stops responding; Slurm requeues the job, not held, still pinned.
  fake_.nodes[0] = node("n1", "DOWN+NOT_RESPONDING", "v100", 4);
  FakeSlurm::Job& j = fake_.jobs.at(a);
  j.state = JobState::kPending;
  j.held = false;
  j.nodes.clear();
  ++j.restarts;
  EXPECT_TRUE(exec_.poll(2).empty());
  EXPECT_EQ(fake_.commands.back(), "hold " + std::to_string(a));  // it must not start on its own
  EXPECT_TRUE(j.held);
  // The processes may still run on n1: however long it takes, no kEnded.
  EXPECT_TRUE(exec_.poll(1000).empty());
  EXPECT_TRUE(exec_.nodes().size() == 1u && exec_.nodes()[0].name == "n2");
  // slurmd is back, but a process of the run still holds its fence (the
  // node answers before its slurmd has killed what was left): no kEnded.
  fake_.nodes[0] = node("n1", "IDLE", "v100", 4);
  const std::string fence = fence_file_path((dir_ / "a").string());
  const pid_t leftover = ::fork();
  if (leftover == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec 9>>'" + fence + "' && flock -s 9 && exec sleep 60").c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(leftover, 0);
  ASSERT_TRUE(testing_support::wait_for([&] { return !run_processes_gone((dir_ / "a").string()); },
                                        30));
  EXPECT_TRUE(of_kind(exec_.poll(1001), RunEvent::Kind::kEnded).empty());
  // Killed: now the run has ended.
  ::kill(leftover, SIGKILL);
  ::waitpid(leftover, nullptr, 0);
  const auto ended = of_kind(exec_.poll(1001), RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].lease, 1);
  EXPECT_TRUE(ended[0].revoked);  // not the job's failure
  EXPECT_EQ(ended[0].detail, "node failure: requeued by Slurm");
  exec_.apply({start(2, "a", "n2", "p100")}, {}, 1002);  // held: may start again
}

TEST_F(SlurmExecutorTest, ARefusedStartIsRequeueHeldAndEndsAsNeverStarted) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  fake_.refuse_pins.insert(a);
  exec_.apply({start(1, "a", "n9")}, {}, 0);
  const auto ended = of_kind(exec_.poll(1), RunEvent::Kind::kEnded);
  EXPECT_EQ(fake_.commands.back(), "requeuehold " + std::to_string(a));
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_FALSE(ended[0].revoked);
  EXPECT_EQ(ended[0].exit_code, -1);
  EXPECT_NE(ended[0].detail.find("start refused by Slurm"), std::string::npos);
}

TEST_F(SlurmExecutorTest, NodesLeaveOutForeignGpusAndNodesThatCannotTakeJobs) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  fake_.per_node_indices[a] = {1};
  // n1: GPUs 0 (someone else's job) and 1 (fairgpu's) in use.
  fake_.nodes[0].gres_used.push_back({"gpu", "v100", 2, {0, 1}});
  NodeInfo drained = node("n3", "IDLE+DRAIN", "k80", 4);
  NodeInfo two_types = node("n4", "IDLE", "k80", 2);
  two_types.gres.push_back({"gpu", "v100", 2, {}});
  NodeInfo elsewhere = node("n5", "IDLE", "k80", 4);
  elsewhere.partitions = {"other"};
  fake_.nodes.push_back(drained);
  fake_.nodes.push_back(two_types);
  fake_.nodes.push_back(elsewhere);
  const auto nodes = exec_.nodes();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].name, "n1");
  EXPECT_EQ(nodes[0].gpu_type, "v100");
  EXPECT_EQ(nodes[0].devices, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(nodes[1].devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(nodes[1].cpus, 8);
}

// nodes() reads the node, then the jobs: a fairgpu run that ends between the
// two reads leaves its GPU in the node's GRES in use while its job is already
// COMPLETED, which looked like another user's job: the node shrank for one
// tick, the lease on that GPU was revoked, and the model was rebuilt twice.
// A GPU counts as taken when two reads in a row see it taken.
TEST_F(SlurmExecutorTest, AGpuCountsAsTakenByAnotherJobOnlyWhenTwoReadsInARowSeeIt) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  fake_.per_node_indices[a] = {0};
  fake_.nodes[0].gres_used = {{"gpu", "v100", 1, {0}}};
  EXPECT_EQ(exec_.nodes()[0].devices, (std::vector<int>{0, 1, 2, 3}));  // fairgpu's run
  // The run ends between the node read and the jobs read.
  fake_.jobs.at(a).state = JobState::kCompleted;
  EXPECT_EQ(exec_.nodes()[0].devices, (std::vector<int>{0, 1, 2, 3}));
  fake_.nodes[0].gres_used.clear();
  EXPECT_EQ(exec_.nodes()[0].devices, (std::vector<int>{0, 1, 2, 3}));
  // Another user's job on GPU 2, and one Slurm lists without indices: taken
  // from the second read that sees them on.
  fake_.nodes[0].gres_used = {{"gpu", "v100", 1, {2}}, {"gpu", "v100", 1, {}}};
  EXPECT_EQ(exec_.nodes()[0].devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(exec_.nodes()[0].devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(exec_.nodes()[0].devices, (std::vector<int>{0, 1}));
  fake_.nodes[0].gres_used.clear();  // gone: free at once
  EXPECT_EQ(exec_.nodes()[0].devices, (std::vector<int>{0, 1, 2, 3}));
}

TEST_F(SlurmExecutorTest, AfterARestartAdoptedJobsAreReconciledWithSlurm) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  const std::int64_t b = std::stoll(exec_.admit(job("b")));
  exec_.apply({start(1, "a", "n1"), start(2, "b", "n2", "p100")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  // fairgpu restarts; meanwhile b was requeued held (its revoke went through).
  FakeSlurm::Job& jb = fake_.jobs.at(b);
  jb.state = JobState::kPending;
  jb.held = true;
  SlurmExecutor again(fake_, SlurmExecutorOptions{"main", 10});
  again.adopt(job("a"), std::to_string(a), 1);
  again.adopt(job("b"), std::to_string(b), 2);
  EXPECT_THROW(again.adopt(job("c"), "12x", 3), SlurmError);
  const auto ended = of_kind(again.poll(5), RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 1u);  // b's run is over; a still runs under lease 1
  EXPECT_EQ(ended[0].lease, 2);
  fake_.jobs.at(a).state = JobState::kCompleted;
  const auto done = of_kind(again.poll(6), RunEvent::Kind::kEnded);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].lease, 1);
  EXPECT_EQ(done[0].exit_code, 0);
  again.apply({start(3, "b", "n1")}, {}, 7);  // b is held: it may start
}

// After a restart serve sends again the revokes it had decided. A run whose
// requeuehold went through before fairgpu was killed is held already: its
// end is reported at the next poll, even with its work done (no requeue is
// due then, and before it stayed revoking for good, holding its GPU).
TEST_F(SlurmExecutorTest, ARevokeSentAgainAfterARestartEndsARunAlreadyHeldAgain) {
  ExecutorJob spec = job("a");
  spec.iterations = 100;
  const std::int64_t a = std::stoll(exec_.admit(spec));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  std::ofstream(spec.progress_file) << "100\n";
  fake_.jobs.at(a).state = JobState::kPending;
  fake_.jobs.at(a).held = true;
  SlurmExecutor again(fake_, SlurmExecutorOptions{"main", 10});
  again.adopt(spec, std::to_string(a), 1);
  again.apply({}, {1}, 5);
  auto ended = of_kind(again.poll(6), RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].lease, 1);
  EXPECT_TRUE(ended[0].revoked);
}

TEST_F(SlurmExecutorTest, ARoundCutOffBetweenPinsAndReleaseIsRedoneAtTheNextPoll) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  const std::int64_t b = std::stoll(exec_.admit(job("b")));
  // scontrol dies after the two pins: both jobs pinned, still held.
  fake_.fail_after = 2;
  EXPECT_THROW(exec_.apply({start(1, "a", "n1"), start(2, "b", "n2", "p100")}, {}, 0), SlurmError);
  EXPECT_TRUE(fake_.jobs.at(a).held && fake_.jobs.at(b).held);
  EXPECT_EQ(fake_.jobs.at(a).pinned, (std::vector<std::string>{"n1"}));
  // slurmctld down for a while: polls fail, nothing is reported or lost.
  fake_.down = true;
  EXPECT_THROW(exec_.poll(1), SlurmError);
  EXPECT_THROW(exec_.poll(2), SlurmError);
  fake_.down = false;
  fake_.commands.clear();
  EXPECT_TRUE(exec_.poll(3).empty());
  EXPECT_EQ(fake_.commands,
            (std::vector<std::string>{pin(a, "n1"), pin(b, "n2"),
                                      "release " + std::to_string(a) + "," + std::to_string(b)}));
  fake_.schedule();
  const auto running = of_kind(exec_.poll(4), RunEvent::Kind::kRunning);
  ASSERT_EQ(running.size(), 2u);
  EXPECT_EQ(running[0].lease, 1);
  EXPECT_EQ(running[1].lease, 2);
  // Once released, a poll sends nothing more.
  fake_.commands.clear();
  exec_.poll(5);
  EXPECT_TRUE(fake_.commands.empty());
}

TEST_F(SlurmExecutorTest, ARevokeAndACancelThatFailedAreRedoneOnceSlurmAnswers) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  const std::int64_t b = std::stoll(exec_.admit(job("b")));
  exec_.apply({start(1, "a", "n1"), start(2, "b", "n2", "p100")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  // The revoke's signal and its requeuehold after the grace period, and a
  // cancel, all while slurmctld is down.
  fake_.down = true;
  exec_.apply({}, {1}, 10);  // the signal is best effort: no throw
  EXPECT_NO_THROW(exec_.cancel("b"));
  EXPECT_THROW(exec_.poll(21), SlurmError);  // requeuehold due, not sent
  EXPECT_EQ(fake_.jobs.at(a).state, JobState::kRunning);
  EXPECT_EQ(fake_.jobs.at(b).state, JobState::kRunning);
  fake_.down = false;
  // Slurm shows a still running, b not cancelled: both sent again.
  EXPECT_TRUE(exec_.poll(22).empty());
  EXPECT_EQ(fake_.jobs.at(a).state, JobState::kPending);
  EXPECT_TRUE(fake_.jobs.at(a).held);
  EXPECT_EQ(fake_.jobs.at(a).restarts, 1);
  EXPECT_EQ(fake_.cancelled, (std::vector<std::int64_t>{b}));
  const auto ended = of_kind(exec_.poll(23), RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].lease, 1);
  EXPECT_TRUE(ended[0].revoked);
  EXPECT_EQ(ended[1].lease, 2);
  EXPECT_EQ(ended[1].detail, "cancelled");
  EXPECT_EQ(fake_.cancelled.size(), 1u);  // once
}

TEST_F(SlurmExecutorTest, AnEndSeenByAPollWhoseWritesFailIsReportedByTheNext) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  const std::int64_t b = std::stoll(exec_.admit(job("b")));
  exec_.apply({start(1, "a", "n1")}, {}, 0);
  fake_.schedule();
  exec_.poll(1);
  // a finishes; b (idle) was released by someone else, so the poll must
  // write (hold b), and that write fails.
  fake_.jobs.at(a).state = JobState::kCompleted;
  fake_.jobs.at(b).held = false;
  fake_.fail_after = 0;
  EXPECT_THROW(exec_.poll(2), SlurmError);
  const auto ended = of_kind(exec_.poll(3), RunEvent::Kind::kEnded);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].lease, 1);
  EXPECT_EQ(ended[0].exit_code, 0);
  EXPECT_TRUE(fake_.jobs.at(b).held);
}

TEST_F(SlurmExecutorTest, AStrayOfThisInstanceIsTakenOverOthersCancelledForeignOnesLeft) {
  SlurmExecutor exec(fake_, SlurmExecutorOptions{"main", 10, "fairgpu-instance=t1",
                                                 {"fairgpu", "bob-unix"}, "fairgpu"});
  // What a crash between sbatch and the store left: a's held job (and a
  // second one, from a retried sbatch that timed out but went through), b's
  // (b is no longer stored: cancelled; it ran as its tenant's unix_user),
  // another instance's, another user's, and a finished one of a.
  auto add = [&](const std::string& name, const std::string& comment, const std::string& user,
                 JobState state) {
    const std::int64_t id = fake_.submit(SubmitSpec{});
    fake_.jobs.at(id) = FakeSlurm::Job{};
    fake_.jobs.at(id).name = name;
    fake_.jobs.at(id).comment = comment;
    fake_.jobs.at(id).user = user;
    fake_.jobs.at(id).state = state;
    return id;
  };
  const std::int64_t a1 = add("fairgpu-a", "fairgpu-instance=t1", "fairgpu", JobState::kPending);
  const std::int64_t a2 = add("fairgpu-a", "fairgpu-instance=t1", "fairgpu", JobState::kPending);
  const std::int64_t b = add("fairgpu-b", "fairgpu-instance=t1", "bob-unix", JobState::kPending);
  const std::int64_t other = add("fairgpu-a", "fairgpu-instance=t2", "fairgpu", JobState::kPending);
  const std::int64_t spoof = add("fairgpu-a", "fairgpu-instance=t1", "mallory", JobState::kPending);
  add("fairgpu-a", "fairgpu-instance=t1", "fairgpu", JobState::kCompleted);
  const int submits = fake_.submits;
  exec.poll(0);
  EXPECT_EQ(exec.strays().size(), 2u);
  // a is admitted (its id was never stored): its held job is taken over.
  EXPECT_EQ(exec.admit(job("a")), std::to_string(a1));
  EXPECT_EQ(fake_.submits, submits);
  EXPECT_EQ(exec.cancel_strays(), (std::vector<std::int64_t>{a2, b}));
  EXPECT_EQ(fake_.jobs.at(a2).state, JobState::kCancelled);
  EXPECT_EQ(fake_.jobs.at(b).state, JobState::kCancelled);
  EXPECT_EQ(fake_.jobs.at(other).state, JobState::kPending);
  EXPECT_EQ(fake_.jobs.at(spoof).state, JobState::kPending);
  // The taken-over job runs as a submitted one would.
  exec.poll(1);
  exec.apply({start(1, "a", "n1")}, {}, 2);
  EXPECT_EQ(fake_.commands.back(), "release " + std::to_string(a1));
  fake_.schedule();
  EXPECT_EQ(of_kind(exec.poll(3), RunEvent::Kind::kRunning).size(), 1u);
  // New jobs carry the tag; nothing is a stray any more.
  const std::int64_t c = std::stoll(exec.admit(job("c")));
  EXPECT_EQ(fake_.jobs.at(c).comment, "fairgpu-instance=t1");
  exec.poll(4);
  EXPECT_TRUE(exec.strays().empty());

  // Issue 30 H6: a tenant's run-as user submits a job with the tag and the
  // name of another tenant's next job. It is a stray, but the job it names
  // runs as the submitter: it is submitted anew, not taken over, and the
  // impostor is cancelled as a stray.
  const std::int64_t impostor =
      add("fairgpu-d", "fairgpu-instance=t1", "bob-unix", JobState::kPending);
  exec.poll(5);
  ASSERT_EQ(exec.strays().count("d"), 1u);
  const int before = fake_.submits;
  EXPECT_NE(exec.admit(job("d")), std::to_string(impostor));
  EXPECT_EQ(fake_.submits, before + 1);
  EXPECT_EQ(exec.cancel_strays(), (std::vector<std::int64_t>{impostor}));
  // bob's own job (its run-as user) would have been taken over.
  const std::int64_t own = add("fairgpu-e", "fairgpu-instance=t1", "bob-unix", JobState::kPending);
  exec.poll(6);
  ExecutorJob e = job("e");
  e.run_as_user = "bob-unix";
  EXPECT_EQ(exec.admit(e), std::to_string(own));
}

TEST_F(SlurmExecutorTest, ARunsCpuAndMemoryGrantGoWithItsPin) {
  const std::int64_t a = std::stoll(exec_.admit(job("a")));
  RunStart s = start(1, "a", "n1");
  // Rounded down to whole CPUs and MB: the grants of a node never add up to
  // more than it has (three thirds of 8000 MB: 2666 MB each).
  s.placement[0].cpus = 2.5;
  s.placement[0].memory_gb = 8000.0 / 1024 / 3;
  exec_.apply({s}, {}, 0);
  EXPECT_EQ(fake_.commands.front(), pin(a, "n1") + " NumCPUs=2 MinMemoryNode=2666");
}

TEST_F(SlurmExecutorTest, NodesRegisteringAfterAControllerRestartAreSettlingNotLost) {
  fake_.nodes.push_back(node("n3", "UNKNOWN", "k80", 4));
  fake_.nodes.push_back(node("n4", "DOWN+NOT_RESPONDING", "k80", 4));
  fake_.nodes.push_back(node("n5", "UNKNOWN+NOT_RESPONDING", "k80", 4));
  EXPECT_EQ(exec_.nodes().size(), 2u);
  EXPECT_EQ(exec_.settling_nodes(), (std::set<std::string>{"n3"}));
}

}  // namespace
}  // namespace fairgpu::live::slurm
