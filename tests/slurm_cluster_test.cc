// The Slurm client layer (src/live/slurm/client.h) against a real
// slurmctld and three slurmds (scripts/slurm-cluster.sh: n1 v100, n2 p100,
// n3 k80, four GPUs each), one cluster for the whole suite. CMake runs this
// suite as one ctest entry (SlurmCluster), so the cluster starts once.
// Skipped, with the reason, only when Slurm's programs are not installed.
//
// Timeouts are generous (a release takes about 1 s, up to 4 s under load
// before the script runs): the tests assert what Slurm did, not how fast.
#include "slurm_cluster.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "fairgpu/input_error.h"
#include "live/slurm/client.h"
#include "live/slurm/command.h"
#include "live/slurm/executor.h"
#include "polling.h"
#include "run_binary.h"

namespace fairgpu::live::slurm {
namespace {

namespace fs = std::filesystem;
using testing_support::SlurmTestCluster;
using testing_support::slurp;

constexpr double kWaitS = 60;

class SlurmCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new SlurmTestCluster();
    cluster_->start("n1:v100:4,n2:p100:4,n3:k80:4");
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
    SlurmSettings s;
    s.partition = "main";
    s.conf = cluster_->conf();
    s.timeout_s = 30;
    client_.emplace(s);
  }

  // A job dir under the cluster's dir, fresh for each test.
  std::string job_dir(const std::string& name) {
    const std::string d = cluster_->dir() + "/jobs/" +
                          ::testing::UnitTest::GetInstance()->current_test_info()->name() + "-" +
                          name;
    fs::remove_all(d);
    return d;
  }

  SubmitSpec spec(const std::string& job, const std::string& command, int gpus) {
    SubmitSpec s;
    s.job = job;
    s.shell_command = command;
    s.gpus_per_node = gpus;
    s.checkpoint_dir = job_dir(job);
    s.log_path = s.checkpoint_dir + ".log";
    return s;
  }

  // Polls Slurm (every 0.2 s) until `pred` holds for job `id`.
  std::optional<JobDetail> wait_job(std::int64_t id,
                                    const std::function<bool(const JobDetail&)>& pred,
                                    double timeout_s = kWaitS) {
    const auto start = std::chrono::steady_clock::now();
    std::optional<JobDetail> last;
    while (testing_support::since(start) < timeout_s) {
      const JobsSnapshot snap = client_->read_jobs();
      auto it = snap.detail.find(id);
      if (it != snap.detail.end()) {
        last = it->second;
        if (pred(it->second)) return last;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "job " << id << " did not reach the expected state in " << timeout_s
                  << " s; last: " << (last ? job_state_name(last->state) : "not listed") << " "
                  << (last ? last->reason : "");
    return std::nullopt;
  }

  static bool wait_file(const std::string& path, double timeout_s = kWaitS) {
    return testing_support::wait_for([&] { return fs::exists(path) && fs::file_size(path) > 0; },
                                     timeout_s);
  }

  static std::string scontrol(const std::string& args) {
    CommandSpec c;
    c.argv = {"/bin/sh", "-c", "scontrol " + args};
    c.env = {{"SLURM_CONF", cluster_->conf()}};
    c.merge_stderr = true;
    return run_command(c).out;
  }

  static SlurmTestCluster* cluster_;
  std::optional<CommandLineSlurm> client_;
};

SlurmTestCluster* SlurmCluster::cluster_ = nullptr;

// Reads "KEY=value" lines.
std::map<std::string, std::string> read_env_file(const std::string& path) {
  std::map<std::string, std::string> m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

const char* kReportEnv =
    "for v in FAIRGPU_JOB_ID FAIRGPU_LEASE_ID FAIRGPU_GPU_TYPE FAIRGPU_NUM_WORKERS "
    "CUDA_VISIBLE_DEVICES SLURM_GPUS_ON_NODE SLURMD_NODENAME SLURM_RESTART_COUNT MODE; do "
    "eval \"echo $v=\\$$v\"; done >\"$FAIRGPU_CHECKPOINT_DIR/env.$SLURM_RESTART_COUNT.tmp\"; "
    "mv \"$FAIRGPU_CHECKPOINT_DIR/env.$SLURM_RESTART_COUNT.tmp\" "
    "\"$FAIRGPU_CHECKPOINT_DIR/env.${SLURM_RESTART_COUNT:-0}\"; ";

TEST_F(SlurmCluster, HeldJobPinnedAndReleasedRunsOnItsNodeWithItsGpus) {
  SubmitSpec s = spec("pin1", std::string(kReportEnv) + "sleep 60", 2);
  s.env = {{"MODE", "a b'c"}};
  const std::int64_t id = client_->submit(s);
  // Held at submission: it does not start by itself.
  auto d = wait_job(id, [](const JobDetail& j) { return j.state == JobState::kPending; });
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->held);
  EXPECT_EQ(d->name, "fairgpu-pin1");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  d = wait_job(id, [](const JobDetail&) { return true; });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->state, JobState::kPending) << "a held job started";

  write_run_file(s.checkpoint_dir, 11, "p100");
  RoundWrites w;
  w.pins = {{id, {"n2"}}};
  w.release = {id};
  EXPECT_TRUE(client_->apply(w).empty());
  d = wait_job(id, [](const JobDetail& j) { return j.state == JobState::kRunning; });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->nodes, (std::vector<std::string>{"n2"}));
  EXPECT_EQ(d->required_nodes, (std::vector<std::string>{"n2"}));
  ASSERT_EQ(d->per_node.size(), 1u);
  EXPECT_EQ(d->per_node[0].gpu_type, "p100");
  EXPECT_EQ(d->per_node[0].indices.size(), 2u);

  ASSERT_TRUE(wait_file(s.checkpoint_dir + "/env.0"));
  auto env = read_env_file(s.checkpoint_dir + "/env.0");
  EXPECT_EQ(env["FAIRGPU_JOB_ID"], "pin1");
  EXPECT_EQ(env["FAIRGPU_LEASE_ID"], "11");
  EXPECT_EQ(env["FAIRGPU_GPU_TYPE"], "p100");
  EXPECT_EQ(env["FAIRGPU_NUM_WORKERS"], "2");
  EXPECT_EQ(env["SLURMD_NODENAME"], "n2");
  EXPECT_EQ(env["SLURM_GPUS_ON_NODE"], "2");
  EXPECT_EQ(env["MODE"], "a b'c");
  if (cluster_->gpu_devices() == "char") {
    // Character devices: Slurm hands the job exactly the indices it shows.
    std::string expect;
    for (int i : d->per_node[0].indices) expect += (expect.empty() ? "" : ",") + std::to_string(i);
    EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], expect);
  }
  // The node shows the GPUs taken.
  for (const NodeInfo& n : client_->read_nodes()) {
    if (n.name == "n2") {
      EXPECT_EQ(n.gpus_used(), 2);
    }
  }
  EXPECT_TRUE(client_->cancel({id}).empty());
  d = wait_job(id, [](const JobDetail& j) { return j.state == JobState::kCancelled; });
  ASSERT_TRUE(d);
}

TEST_F(SlurmCluster, PreemptSignalsCheckpointRequeueHoldsAndRepinsElsewhere) {
  // The job checkpoints on SIGUSR1 (the whole job gets it: --full) and
  // reports which run it is, after its trap is set (a report before it would
  // let the signal kill the shell).
  const std::string cmd =
      "trap 'echo ${SLURM_RESTART_COUNT:-0} >\"$FAIRGPU_CHECKPOINT_DIR/ckpt\"; exit 0' USR1; " +
      std::string(kReportEnv) + "while :; do sleep 0.1; done";
  SubmitSpec s = spec("pre1", cmd, 1);
  const std::int64_t id = client_->submit(s);
  write_run_file(s.checkpoint_dir, 21, "v100");
  RoundWrites w;
  w.pins = {{id, {"n1"}}};
  w.release = {id};
  EXPECT_TRUE(client_->apply(w).empty());
  // Launching until the job has reported (a signal before its script runs is lost).
  ASSERT_TRUE(wait_file(s.checkpoint_dir + "/env.0"));
  EXPECT_TRUE(client_->signal_checkpoint({id}).empty());
  ASSERT_TRUE(wait_file(s.checkpoint_dir + "/ckpt")) << "no checkpoint written";
  EXPECT_EQ(slurp(s.checkpoint_dir + "/ckpt"), "0\n");
  // After the grace period: requeuehold, whatever state the job reached.
  RoundWrites r;
  r.requeue_hold = {id};
  EXPECT_TRUE(client_->apply(r).empty());
  auto d = wait_job(id, [](const JobDetail& j) { return j.state == JobState::kPending && j.held; });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->restarts, 1);
  // The next lease: another node, another GPU type, pinned then released
  // (StartTime=now overrides the 121 s a requeue sets).
  write_run_file(s.checkpoint_dir, 22, "k80");
  RoundWrites next;
  next.pins = {{id, {"n3"}}};
  next.release = {id};
  EXPECT_TRUE(client_->apply(next).empty());
  d = wait_job(id, [](const JobDetail& j) { return j.state == JobState::kRunning; });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->nodes, (std::vector<std::string>{"n3"}));
  ASSERT_TRUE(wait_file(s.checkpoint_dir + "/env.1"));
  auto env = read_env_file(s.checkpoint_dir + "/env.1");
  EXPECT_EQ(env["FAIRGPU_LEASE_ID"], "22");
  EXPECT_EQ(env["FAIRGPU_GPU_TYPE"], "k80");
  EXPECT_EQ(env["SLURMD_NODENAME"], "n3");
  client_->cancel({id});
  ASSERT_TRUE(wait_job(id, [](const JobDetail& j) { return is_final(j.state); }));
}

TEST_F(SlurmCluster, ExitThreeIsFailedWithThreeAndARefusalStaysWithItsJob) {
  SubmitSpec s = spec("exit3", "exit 3", 1);
  const std::int64_t id = client_->submit(s);
  write_run_file(s.checkpoint_dir, 31, "v100");
  // One round with a job Slurm does not know: only that job is refused.
  const std::int64_t unknown = 99999999;
  RoundWrites w;
  w.pins = {{unknown, {"n1"}}, {id, {"n1"}}};
  w.release = {unknown, id};
  const auto refusals = client_->apply(w);
  EXPECT_EQ(refusals.size(), 1u);
  EXPECT_EQ(refusals.count(unknown), 1u);
  EXPECT_EQ(refusals.count(id), 0u) << refusals.at(id);
  auto d = wait_job(id, [](const JobDetail& j) { return is_final(j.state); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->state, JobState::kFailed);
  EXPECT_EQ(d->exit_code, 3);
  EXPECT_EQ(d->exit_signal, 0);
}

TEST_F(SlurmCluster, DrainedNodeLeavesTheUsableNodesAndComesBack) {
  auto usable = [&](const std::string& name) {
    for (const NodeInfo& n : client_->read_nodes())
      if (n.name == name) return n.usable();
    ADD_FAILURE() << name << " not listed";
    return false;
  };
  const auto nodes = client_->read_nodes();
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[2].gpu_type(), "k80");
  EXPECT_EQ(nodes[2].gpu_count(), 4);
  EXPECT_EQ(nodes[2].cpus, 4);
  EXPECT_EQ(nodes[2].memory_mb, 8000);
  EXPECT_TRUE(usable("n3"));
  scontrol("update NodeName=n3 State=DRAIN Reason=fairgpu-test");
  EXPECT_FALSE(usable("n3"));
  scontrol("update NodeName=n3 State=RESUME");
  EXPECT_TRUE(testing_support::wait_for([&] { return usable("n3"); }, kWaitS));
}

TEST_F(SlurmCluster, JobsSubmittedOutsideFairgpuAreCapacityTaken) {
  CommandSpec c;
  c.argv = {"sbatch",
            "--parsable",
            "--nodes=1",
            "--gres=gpu:3",
            "--nodelist=n1",
            "--output=/dev/null",
            "--job-name=someone-else",
            "--wrap=sleep 60"};
  c.env = {{"SLURM_CONF", cluster_->conf()}};
  const CommandResult r = run_command(c);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::int64_t foreign = parse_sbatch_output(r.out);
  ASSERT_TRUE(wait_job(foreign, [](const JobDetail& j) { return j.state == JobState::kRunning; }));
  // squeue lists it with what it holds; the node shows its GPUs used.
  const JobsSnapshot snap = client_->read_jobs();
  bool listed = false;
  for (const QueueEntry& e : snap.queue) {
    if (e.job_id != foreign) continue;
    listed = true;
    EXPECT_EQ(e.state, JobState::kRunning);
    EXPECT_EQ(e.nodes, (std::vector<std::string>{"n1"}));
    EXPECT_EQ(e.gpus_per_node, 3);
  }
  EXPECT_TRUE(listed);
  for (const NodeInfo& n : client_->read_nodes()) {
    if (n.name == "n1") {
      EXPECT_EQ(n.gpus_used(), 3);
      EXPECT_EQ(n.gpu_count() - n.gpus_used(), 1);
    }
  }
  client_->cancel({foreign});
  ASSERT_TRUE(wait_job(foreign, [](const JobDetail& j) { return is_final(j.state); }));
}

// Issue 30 H7: any Slurm user's job named 'x JobState=BOGUS' once failed
// every read of the jobs (and so all scheduling) until it aged out.
TEST_F(SlurmCluster, AForeignJobWithAHostileNameNeverFailsARead) {
  CommandSpec c;
  c.argv = {"sbatch", "--parsable", "--hold", "--output=/dev/null",
            "--job-name=x JobState=BOGUS", "--wrap=true"};
  c.env = {{"SLURM_CONF", cluster_->conf()}};
  const CommandResult r = run_command(c);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::int64_t foreign = parse_sbatch_output(r.out);
  JobsSnapshot snap;
  ASSERT_NO_THROW(snap = client_->read_jobs());
  EXPECT_EQ(snap.detail.count(foreign), 0u);
  ASSERT_EQ(snap.unreadable.count(foreign), 1u);
  EXPECT_NE(snap.unreadable.at(foreign).find("BOGUS"), std::string::npos)
      << snap.unreadable.at(foreign);
  client_->cancel({foreign});
}

TEST_F(SlurmCluster, UnreachableControllerIsAOneLineErrorWithinTheTimeout) {
  // The cluster's configuration with a port nothing listens on.
  std::string conf = slurp(cluster_->conf());
  const auto at = conf.find("SlurmctldPort=");
  ASSERT_NE(at, std::string::npos);
  conf.replace(at, conf.find('\n', at) - at, "SlurmctldPort=9");
  const std::string bad = cluster_->dir() + "/unreachable.conf";
  std::ofstream(bad) << conf;
  SlurmSettings s;
  s.conf = bad;
  s.timeout_s = 3;
  CommandLineSlurm client(s);
  const auto start = std::chrono::steady_clock::now();
  try {
    client.read_nodes();
    ADD_FAILURE() << "read_nodes answered without a controller";
  } catch (const SlurmError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_EQ(what.rfind("scontrol: ", 0), 0u) << what;
  }
  EXPECT_LT(testing_support::since(start), 20.0);  // killed at its deadline, not left hanging
}

TEST_F(SlurmCluster, ABatchOrCancelThatCannotReachSlurmctldFailsAsAWhole) {
  // No controller at that port; Slurm's commands give up in about 1 s
  // (MessageTimeout=2), well within fairgpu's timeout: their own message
  // says so for each job, which must not read as that job's refusal.
  std::string conf = slurp(cluster_->conf());
  const auto at = conf.find("SlurmctldPort=");
  ASSERT_NE(at, std::string::npos);
  conf.replace(at, conf.find('\n', at) - at, "SlurmctldPort=9");
  conf += "MessageTimeout=2\n";
  const std::string bad = cluster_->dir() + "/unreachable-fast.conf";
  std::ofstream(bad) << conf;
  SlurmSettings s;
  s.conf = bad;
  s.timeout_s = 15;
  CommandLineSlurm client(s);
  RoundWrites w;
  w.hold = {1};
  w.pins = {{2, {"n1"}}};
  w.release = {2};
  for (const std::function<void()>& call :
       std::vector<std::function<void()>>{[&] { client.apply(w); },
                                          [&] {
                                            client.cancel({1, 2});
                                          }}) {
    try {
      call();
      ADD_FAILURE() << "answered without a controller";
    } catch (const SlurmError& e) {
      EXPECT_NE(std::string(e.what()).find("slurmctld unreachable"), std::string::npos) << e.what();
    }
  }
}

TEST_F(SlurmCluster, ALongCommandInABatchIsReadBackAndItsRefusalKeptToItsJob) {
  // scontrol echoes each command of a batch through readline: a line as
  // wide as the terminal (80 columns) came back with cursor movements, and
  // the batch could not be read back.
  SubmitSpec s = spec("long1", "exit 0", 1);
  const std::int64_t id = client_->submit(s);
  const std::int64_t unknown = 99999999, unknown_short = 9999;
  RoundWrites w;
  RoundWrites::Pin far{unknown, {}};
  for (int i = 0; i < 40; ++i) far.nodes.push_back(i % 2 ? "n2" : "n1");
  far.cpus = 2;
  far.memory_mb_per_node = 4000;
  w.pins = {far, {unknown_short, {"n1"}, 2, 40}, {id, {"n1"}, 2, 4000}};
  const auto refusals = client_->apply(w);
  EXPECT_GT(round_commands(w)[0].size(), 150u);
  EXPECT_EQ(std::string("scontrol: ").size() + round_commands(w)[1].size(), 80u);
  EXPECT_EQ(refusals.size(), 2u);
  EXPECT_EQ(refusals.count(unknown), 1u);
  EXPECT_EQ(refusals.count(unknown_short), 1u);
  EXPECT_EQ(refusals.count(id), 0u) << refusals.at(id);
  const JobsSnapshot snap = client_->read_jobs();
  ASSERT_TRUE(snap.detail.count(id));
  EXPECT_EQ(snap.detail.at(id).required_nodes, (std::vector<std::string>{"n1"}));
  client_->cancel({id});
}

TEST_F(SlurmCluster, BadConfigurationIsRefusedInOneLine) {
  client_->check();  // the suite's own settings are good
  SlurmSettings s = client_->settings();
  s.partition = "nosuch";
  try {
    CommandLineSlurm(s).check();
    ADD_FAILURE() << "an unknown partition passed the check";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "slurm: partition: no partition 'nosuch' in Slurm");
  }
  s.partition = "main";
  s.conf = cluster_->dir() + "/missing.conf";
  try {
    CommandLineSlurm client(s);
    ADD_FAILURE() << "a missing slurm.conf was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "slurm: conf: cannot read " + s.conf);
  }
}

TEST_F(SlurmCluster, AGangRunsOneTaskPerPinnedNode) {
  // Two nodes of different types, one GPU each: the wrapper runs the command
  // once per node through srun.
  SubmitSpec s = spec("gang1",
                      "echo \"$SLURMD_NODENAME $FAIRGPU_NUM_WORKERS $FAIRGPU_LEASE_ID "
                      "$SLURM_GPUS_ON_NODE\" >\"$FAIRGPU_CHECKPOINT_DIR/task.$SLURM_PROCID\"",
                      1);
  s.nodes = 2;
  const std::int64_t id = client_->submit(s);
  write_run_file(s.checkpoint_dir, 41, "v100");
  RoundWrites w;
  w.pins = {{id, {"n1", "n2"}}};
  w.release = {id};
  EXPECT_TRUE(client_->apply(w).empty());
  auto d = wait_job(id, [](const JobDetail& j) { return is_final(j.state); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->state, JobState::kCompleted) << slurp(s.log_path);
  EXPECT_EQ(d->nodes, (std::vector<std::string>{"n1", "n2"}));
  std::set<std::string> lines;
  for (const char* task : {"/task.0", "/task.1"}) {
    std::string line = slurp(s.checkpoint_dir + task);
    lines.insert(line);
  }
  EXPECT_EQ(lines, (std::set<std::string>{"n1 2 41 1\n", "n2 2 41 1\n"}));
}

// Issue 34 item 1: a job submitted with one GPU on one node takes each
// run's shape at its pin (NumNodes, TresPerNode): two nodes of two GPUs, one
// task per node with the agents' rendezvous, then one node of one GPU.
TEST_F(SlurmCluster, APinReshapesTheJobAndEachTaskGetsItsRendezvous) {
  const std::string cmd =
      "for v in MASTER_ADDR MASTER_PORT WORLD_SIZE RANK NODE_RANK LOCAL_WORLD_SIZE "
      "FAIRGPU_NUM_NODES FAIRGPU_NUM_WORKERS SLURMD_NODENAME; do eval \"echo $v=\\$$v\"; done "
      ">\"$FAIRGPU_CHECKPOINT_DIR/rank.${SLURM_RESTART_COUNT:-0}.$NODE_RANK\"";
  SubmitSpec s = spec("shape1", cmd, 1);
  const std::int64_t id = client_->submit(s);
  write_run_file(s.checkpoint_dir, 1042, "v100", 2, 29542);
  RoundWrites w;
  RoundWrites::Pin pin;
  pin.job = id;
  pin.nodes = {"n1", "n2"};
  pin.gpus_per_node = 2;
  w.pins = {pin};
  w.release = {id};
  EXPECT_TRUE(client_->apply(w).empty());
  auto d = wait_job(id, [](const JobDetail& j) { return is_final(j.state); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->state, JobState::kCompleted) << slurp(s.log_path);
  EXPECT_EQ(d->nodes, (std::vector<std::string>{"n1", "n2"}));
  for (int r = 0; r < 2; ++r) {
    auto env = read_env_file(s.checkpoint_dir + "/rank.0." + std::to_string(r));
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1") << r;
    EXPECT_EQ(env["MASTER_PORT"], "29542");
    EXPECT_EQ(env["WORLD_SIZE"], "4");
    EXPECT_EQ(env["FAIRGPU_NUM_WORKERS"], "4");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(env["FAIRGPU_NUM_NODES"], "2");
    EXPECT_EQ(env["NODE_RANK"], std::to_string(r));
    EXPECT_EQ(env["RANK"], std::to_string(2 * r));
    EXPECT_EQ(env["SLURMD_NODENAME"], r == 0 ? "n1" : "n2");
  }
  // The next run: one GPU on one node (requeued held, reshaped, released).
  RoundWrites again;
  again.requeue_hold = {id};
  EXPECT_TRUE(client_->apply(again).empty());
  ASSERT_TRUE(
      wait_job(id, [](const JobDetail& j) { return j.state == JobState::kPending && j.held; }));
  write_run_file(s.checkpoint_dir, 1043, "k80", 1, 29543);
  RoundWrites next;
  pin.nodes = {"n3"};
  pin.gpus_per_node = 1;
  next.pins = {pin};
  next.release = {id};
  EXPECT_TRUE(client_->apply(next).empty());
  d = wait_job(id, [](const JobDetail& j) { return is_final(j.state); });
  ASSERT_TRUE(d);
  EXPECT_EQ(d->state, JobState::kCompleted) << slurp(s.log_path);
  EXPECT_EQ(d->nodes, (std::vector<std::string>{"n3"}));
  auto env = read_env_file(s.checkpoint_dir + "/rank.1.0");
  EXPECT_EQ(env["WORLD_SIZE"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "1");
  EXPECT_EQ(env["RANK"], "0");
  EXPECT_EQ(env["FAIRGPU_NUM_NODES"], "1");
  EXPECT_EQ(env["MASTER_PORT"], "29543");
  EXPECT_FALSE(fs::exists(s.checkpoint_dir + "/rank.1.1"));
}

TEST_F(SlurmCluster, ExecutorRunsRevokesAndRestartsAJob) {
  // The job checkpoints on SIGUSR1 and exits 0; its second run fails with 3;
  // its third (a retry of the failed run) finishes.
  ExecutorJob j;
  j.job = "exec1";
  j.checkpoint_dir = job_dir("exec1");
  j.progress_file = j.checkpoint_dir + "/progress";
  j.log_path = j.checkpoint_dir + ".log";
  j.shell_command =
      "if [ \"$FAIRGPU_LEASE_ID\" = 3 ]; then echo 3 >\"$FAIRGPU_CHECKPOINT_DIR/retried\"; exit 0; fi; "
      "if [ -e \"$FAIRGPU_CHECKPOINT_DIR/ckpt\" ]; then exit 3; fi; "
      "trap 'echo $FAIRGPU_LEASE_ID >\"$FAIRGPU_CHECKPOINT_DIR/ckpt\"; exit 0' USR1; "
      "echo 5 >\"$FAIRGPU_PROGRESS_FILE\"; while :; do sleep 0.1; done";
  SlurmExecutor exec(*client_, SlurmExecutorOptions{"main", 1.0});
  exec.admit(j);
  const auto start = std::chrono::steady_clock::now();
  auto now = [&] { return testing_support::since(start); };
  // Polls until an event of `kind` for `lease` comes; returns it.
  auto wait_event = [&](RunEvent::Kind kind, std::int64_t lease) -> std::optional<RunEvent> {
    while (now() < kWaitS) {
      for (const RunEvent& e : exec.poll(now()))
        if (e.kind == kind && e.lease == lease) return e;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "no event of kind " << static_cast<int>(kind) << " for lease " << lease;
    return std::nullopt;
  };
  exec.apply({RunStart{1, "exec1", "v100", {{"n1", {0}}}}}, {}, now());
  auto running = wait_event(RunEvent::Kind::kRunning, 1);
  ASSERT_TRUE(running);
  EXPECT_EQ(running->nodes, (std::vector<std::string>{"n1"}));
  // Launching until its first progress report.
  auto progress = wait_event(RunEvent::Kind::kProgress, 1);
  ASSERT_TRUE(progress);
  EXPECT_EQ(progress->iterations, 5);
  exec.apply({}, {1}, now());
  auto ended = wait_event(RunEvent::Kind::kEnded, 1);
  ASSERT_TRUE(ended);
  EXPECT_TRUE(ended->revoked);
  EXPECT_EQ(slurp(j.checkpoint_dir + "/ckpt"), "1\n");  // checkpointed under lease 1
  // Next lease on another GPU type: it runs there and fails with 3.
  exec.apply({RunStart{2, "exec1", "k80", {{"n3", {0}}}}}, {}, now());
  ended = wait_event(RunEvent::Kind::kEnded, 2);
  ASSERT_TRUE(ended);
  EXPECT_FALSE(ended->revoked);
  EXPECT_EQ(ended->exit_code, 3);
  const JobsSnapshot snap = client_->read_jobs();
  const JobDetail& d = snap.detail.at(exec.slurm_id("exec1"));
  EXPECT_EQ(d.nodes, (std::vector<std::string>{"n3"}));
  EXPECT_EQ(d.restarts, 1);
  // A retry of the failed run (issue 30 H4): its FAILED Slurm job is
  // requeued, pinned and released again, and runs to its end.
  exec.apply({RunStart{3, "exec1", "v100", {{"n1", {0}}}}}, {}, now());
  ended = wait_event(RunEvent::Kind::kEnded, 3);
  ASSERT_TRUE(ended);
  EXPECT_FALSE(ended->revoked);
  EXPECT_FALSE(ended->launch_failed) << ended->detail;
  EXPECT_EQ(ended->exit_code, 0) << ended->detail;
  EXPECT_EQ(slurp(j.checkpoint_dir + "/retried"), "3\n");
}

TEST_F(SlurmCluster, ExecutorGivesEachRunItsCpuAndMemoryGrant) {
  // Each run records what Slurm allocated it; SIGUSR1 ends it.
  ExecutorJob j;
  j.job = "grant1";
  j.checkpoint_dir = job_dir("grant1");
  j.progress_file = j.checkpoint_dir + "/progress";
  j.log_path = j.checkpoint_dir + ".log";
  j.shell_command =
      "echo \"$FAIRGPU_LEASE_ID $SLURM_CPUS_ON_NODE $SLURM_MEM_PER_NODE\" "
      ">>\"$FAIRGPU_CHECKPOINT_DIR/grants\"; trap 'exit 0' USR1; "
      "echo \"$FAIRGPU_LEASE_ID\" >\"$FAIRGPU_PROGRESS_FILE\"; while :; do sleep 0.1; done";
  SlurmExecutor exec(*client_, SlurmExecutorOptions{"main", 1.0});
  exec.admit(j);
  const auto start = std::chrono::steady_clock::now();
  auto now = [&] { return testing_support::since(start); };
  // A run's progress is its lease id, written after its grant line: the
  // second run's progress event must not come from the first run's file
  // (on a loaded machine it did, and the second run was revoked before it
  // wrote its line).
  auto wait_event = [&](RunEvent::Kind kind, std::int64_t lease) {
    while (now() < kWaitS) {
      for (const RunEvent& e : exec.poll(now()))
        if (e.kind == kind && e.lease == lease &&
            (kind != RunEvent::Kind::kProgress || e.iterations == static_cast<double>(lease)))
          return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    ADD_FAILURE() << "no event of kind " << static_cast<int>(kind) << " for lease " << lease;
    return false;
  };
  // `scontrol -o show job` of the job while each run ran.
  std::vector<std::string> allocations;
  // Synergy's grant of a run: CPUs and memory (GB) on its node.
  auto run = [&](std::int64_t lease, const std::string& node, double cpus, double memory_gb) {
    Placement p{node, {0}};
    p.cpus = cpus;
    p.memory_gb = memory_gb;
    exec.apply({RunStart{lease, "grant1", "", {p}}}, {}, now());
    ASSERT_TRUE(wait_event(RunEvent::Kind::kProgress, lease));
    // What Slurm's allocation says.
    CommandSpec show;
    show.argv = {"scontrol", "-o", "show", "job", std::to_string(exec.slurm_id("grant1"))};
    show.env.emplace_back("SLURM_CONF", cluster_->conf());
    show.timeout_s = 30;
    const CommandResult shown = run_command(show);
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    allocations.push_back(shown.out);
    exec.apply({}, {lease}, now());
    ASSERT_TRUE(wait_event(RunEvent::Kind::kEnded, lease));
  };
  run(1, "n2", 3, 1.5);
  run(2, "n3", 2, 1);
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_NE(allocations[0].find(" NumCPUs=3 "), std::string::npos) << allocations[0];
  EXPECT_NE(allocations[0].find(" TRES=cpu=3,mem=1.50G,"), std::string::npos) << allocations[0];
  EXPECT_NE(allocations[1].find(" NumCPUs=2 "), std::string::npos) << allocations[1];
  EXPECT_NE(allocations[1].find(" TRES=cpu=2,mem=1G,"), std::string::npos) << allocations[1];
  // What each run saw: its lease, CPUs and memory (MB) on its node.
  EXPECT_EQ(slurp(j.checkpoint_dir + "/grants"), "1 3 1536\n2 2 1024\n");
}

// Last in the suite: it takes about 36 s (Slurm marks a node whose slurmd
// stopped answering DOWN after 26-31 s here with SlurmdTimeout=10; 3 was no
// faster) and restarts a slurmd.
TEST_F(SlurmCluster, ExecutorEndsARunOnADownNodeOnlyOnceItsProcessesAreGone) {
  // slurmd of n2 killed with -9 while the job runs there: Slurm marks n2
  // DOWN and requeues the job (not held), but the job's processes keep
  // running. The executor holds the job and reports the run ended only when
  // slurmd is back and has killed them.
  ExecutorJob j;
  j.job = "down1";
  j.checkpoint_dir = job_dir("down1");
  j.progress_file = j.checkpoint_dir + "/progress";
  j.log_path = j.checkpoint_dir + ".log";
  j.shell_command =
      "echo $$ >\"$FAIRGPU_CHECKPOINT_DIR/pid.$FAIRGPU_LEASE_ID\"; "
      "echo 1 >\"$FAIRGPU_PROGRESS_FILE\"; exec sleep 600";
  SlurmExecutor exec(*client_, SlurmExecutorOptions{"main", 1.0});
  exec.admit(j);
  const auto start = std::chrono::steady_clock::now();
  auto now = [&] { return testing_support::since(start); };
  std::vector<RunEvent> ends;
  auto poll = [&] {
    for (const RunEvent& e : exec.poll(now()))
      if (e.kind == RunEvent::Kind::kEnded) ends.push_back(e);
  };
  exec.apply({RunStart{1, "down1", "p100", {{"n2", {0}}}}}, {}, now());
  ASSERT_TRUE(wait_file(j.checkpoint_dir + "/pid.1"));
  const pid_t run = std::stoi(slurp(j.checkpoint_dir + "/pid.1"));
  auto alive = [](pid_t pid) {
    if (::kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    return !(close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z');
  };
  const std::string slurmd_pid_file = cluster_->dir() + "/slurmd-n2.pid";
  const pid_t slurmd = std::stoi(slurp(slurmd_pid_file));
  ASSERT_EQ(::kill(slurmd, SIGKILL), 0);
  // Until Slurm shows n2 DOWN and the job requeued, then 3 s more: the
  // processes run on, the job is held, the run has not ended.
  std::optional<double> down_at;
  while (now() < 90 && (!down_at || now() < *down_at + 3)) {
    poll();
    if (!down_at)
      for (const NodeInfo& n : client_->read_nodes())
        if (n.name == "n2" && n.base_state == "DOWN") down_at = now();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  ASSERT_TRUE(down_at) << "n2 not DOWN within 90 s";
  std::cout << "n2 DOWN " << *down_at << " s after its slurmd was killed\n";
  const JobDetail d = client_->read_jobs().detail.at(exec.slurm_id("down1"));
  EXPECT_EQ(d.state, JobState::kPending);
  EXPECT_TRUE(d.held);
  EXPECT_TRUE(alive(run)) << "the run's processes are gone: nothing to check";
  EXPECT_TRUE(ends.empty()) << "ended while its processes still run: " << ends[0].detail;
  for (const ExecutorNode& n : exec.nodes()) EXPECT_NE(n.name, "n2");

  // slurmd back: it kills what was left; then, and only then, the run ends.
  const std::string restart =
      "env FAIRGPU_SLURM_TEST_CLUSTER=" + cluster_->dir() + " SLURM_CONF=" + cluster_->conf() +
      " " + testing_support::find_program("slurmd") + " -f " + cluster_->conf() + " -N n2";
  ASSERT_EQ(std::system(restart.c_str()), 0);
  bool was_alive_at_end = true;
  while (now() < *down_at + 60 && ends.empty()) {
    poll();
    if (!ends.empty()) was_alive_at_end = alive(run);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_FALSE(was_alive_at_end) << "reported ended while its processes ran";
  EXPECT_EQ(ends[0].lease, 1);
  EXPECT_TRUE(ends[0].revoked);  // not the job's failure
  EXPECT_EQ(ends[0].detail, "node failure: requeued by Slurm");
  // Held and fenced no more: its next lease runs it elsewhere.
  exec.apply({RunStart{2, "down1", "v100", {{"n1", {0}}}}}, {}, now());
  EXPECT_TRUE(wait_file(j.checkpoint_dir + "/pid.2"));
  client_->cancel({exec.slurm_id("down1")});
  // n2 back in service for whatever runs after this test.
  EXPECT_TRUE(testing_support::wait_for(
      [&] {
        for (const NodeInfo& n : client_->read_nodes())
          if (n.name == "n2") return n.usable();
        return false;
      },
      kWaitS));
}

}  // namespace
}  // namespace fairgpu::live::slurm
