// The agent's process supervisor (src/live/process.h; issue 5, docs/design.md §7,
// docs/live-protocol.md "launch" / "revoke"): the SIGUSR1 -> SIGTERM ->
// SIGKILL stop sequence, exit and signal reports, exec failures, the job's
// environment, progress files, log tails, pid files and the parent-death
// signal. Every test runs in a fresh temporary directory and checks that the
// job's process group is gone at the end.
#include "live/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "live/node_resources.h"
#include "polling.h"
#include "run_binary.h"

namespace fairgpu::live {
namespace {

namespace fs = std::filesystem;
using testing_support::since;
using testing_support::slurp;
using testing_support::wait_for;
using Clock = std::chrono::steady_clock;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "fairgpu-process-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Polls until the job ends or `timeout_s` passes; returns the seconds taken.
double poll_until_ended(Process& p, double timeout_s) {
  auto start = Clock::now();
  while (p.state() == ProcessState::kRunning && since(start) < timeout_s) {
    p.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return since(start);
}

LaunchSpec shell(const TempDir& dir, const std::string& script) {
  LaunchSpec spec;
  spec.shell_command = script;
  spec.log_path = dir / "log";
  spec.progress_path = dir / "progress";
  return spec;
}

TEST(Process, StopSequenceEndsAJobThatCheckpointsOnUsr1) {
  TempDir dir;
  auto spec = shell(dir,
                    "trap 'echo checkpointed > \"$MARKER\"; exit 0' USR1; "
                    "echo started > \"$MARKER.started\"; "
                    "while true; do sleep 0.05; done");
  spec.env = {{"MARKER", dir / "marker"}};
  auto p = Process::launch(spec);
  ASSERT_EQ(p->state(), ProcessState::kRunning) << p->failure();
  ASSERT_TRUE(wait_for([&] { return fs::exists(dir / "marker.started"); }, 5));
  pid_t pgid = p->pid();
  EXPECT_EQ(getpgid(pgid), pgid);  // a group of its own
  p->stop(5.0, 5.0);
  double took = poll_until_ended(*p, 5.0);
  ASSERT_EQ(p->state(), ProcessState::kExited);
  EXPECT_LT(took, 2.0);  // SIGUSR1 did it, no SIGTERM 5 s later
  EXPECT_EQ(p->exit_code(), 0);
  EXPECT_EQ(p->signal(), 0);
  EXPECT_TRUE(p->stop_requested());
  EXPECT_EQ(slurp(dir / "marker"), "checkpointed\n");
  EXPECT_FALSE(process_group_alive(pgid));
}

TEST(Process, JobIgnoringUsr1AndTermGetsSigkillAfterGraceAndKillAfter) {
  TempDir dir;
  auto spec = shell(dir,
                    "trap '' USR1 TERM; echo ready > \"$READY\"; "
                    "while true; do sleep 0.05; done");
  spec.env = {{"READY", dir / "ready"}};
  auto p = Process::launch(spec);
  ASSERT_EQ(p->state(), ProcessState::kRunning) << p->failure();
  ASSERT_TRUE(wait_for([&] { return fs::exists(dir / "ready"); }, 5));
  pid_t pgid = p->pid();
  p->stop(0.3, 0.3);
  p->stop(10.0, 10.0);  // idempotent: the first deadlines hold
  double took = poll_until_ended(*p, 5.0);
  ASSERT_EQ(p->state(), ProcessState::kExited);
  EXPECT_GE(took, 0.6);
  EXPECT_LT(took, 2.0);
  EXPECT_EQ(p->signal(), SIGKILL);
  EXPECT_EQ(p->exit_code(), 128 + SIGKILL);
  EXPECT_TRUE(p->stop_requested());
  EXPECT_TRUE(wait_for([&] { return !process_group_alive(pgid); }, 2));
}

TEST(Process, JobEndingOnTermIsStoppedAfterGrace) {
  TempDir dir;
  auto spec = shell(dir, "trap '' USR1; echo ready > \"$READY\"; exec sleep 30");
  spec.env = {{"READY", dir / "ready"}};
  auto p = Process::launch(spec);
  ASSERT_TRUE(wait_for([&] { return fs::exists(dir / "ready"); }, 5));
  p->stop(0.3, 10.0);
  double took = poll_until_ended(*p, 5.0);
  ASSERT_EQ(p->state(), ProcessState::kExited);
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 2.0);
  EXPECT_EQ(p->signal(), SIGTERM);
}

TEST(Process, ReportsExitCodeAndSignal) {
  TempDir dir;
  auto code = Process::launch(shell(dir, "exit 3"));
  poll_until_ended(*code, 5.0);
  ASSERT_EQ(code->state(), ProcessState::kExited);
  EXPECT_EQ(code->exit_code(), 3);
  EXPECT_EQ(code->signal(), 0);
  EXPECT_FALSE(code->stop_requested());

  auto killed = Process::launch(shell(dir, "kill -SEGV $$"));
  poll_until_ended(*killed, 5.0);
  ASSERT_EQ(killed->state(), ProcessState::kExited);
  EXPECT_EQ(killed->signal(), SIGSEGV);
  EXPECT_EQ(killed->exit_code(), 128 + SIGSEGV);

  // A stop after the job ended by itself does not make it revoked.
  auto done = Process::launch(shell(dir, "exit 0"));
  ASSERT_TRUE(wait_for([&] { return !process_group_alive(done->pid()); }, 5));
  done->stop(1.0, 1.0);
  EXPECT_EQ(done->state(), ProcessState::kExited);
  EXPECT_FALSE(done->stop_requested());
}

TEST(Process, ExecFailureIsLaunchFailedWithTheReason) {
  TempDir dir;
  LaunchSpec spec;
  spec.argv = {dir / "no-such-binary", "--flag"};
  spec.log_path = dir / "log";
  auto p = Process::launch(spec);
  EXPECT_EQ(p->state(), ProcessState::kLaunchFailed);
  EXPECT_NE(p->failure().find("no-such-binary"), std::string::npos) << p->failure();
  EXPECT_NE(p->failure().find("No such file or directory"), std::string::npos) << p->failure();
  EXPECT_NE(slurp(dir / "log").find("No such file"), std::string::npos);

  spec.argv = {"fairgpu-no-such-program-on-path"};  // execvp's PATH search
  auto q = Process::launch(spec);
  EXPECT_EQ(q->state(), ProcessState::kLaunchFailed);
  EXPECT_NE(q->failure().find("fairgpu-no-such-program-on-path"), std::string::npos);

  write_file(dir / "not-executable", "#!/bin/sh\n");
  spec.argv = {dir / "not-executable"};
  auto r = Process::launch(spec);
  EXPECT_EQ(r->state(), ProcessState::kLaunchFailed);
  EXPECT_NE(r->failure().find("Permission denied"), std::string::npos) << r->failure();

  spec.argv.clear();
  EXPECT_EQ(Process::launch(spec)->failure(), "empty command");
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);  // every failed child was reaped
}

// Issue 12: a NUL byte would cut an argv word or a variable short at exec
// ("K=V\0X=Y" smuggling in X): the launch fails, naming where, and nothing
// runs.
TEST(Process, NulBytesInTheCommandOrEnvFailTheLaunch) {
  TempDir dir;
  const std::string nul("a\0b", 3);
  auto failure_of = [&](LaunchSpec spec) {
    spec.log_path = dir / "log";
    spec.checkpoint_dir = dir / "ckpt";
    auto p = Process::launch(spec);
    EXPECT_EQ(p->state(), ProcessState::kLaunchFailed);
    return p->failure();
  };
  const std::string marker = dir / "ran";
  LaunchSpec argv;
  argv.argv = {"/bin/sh", "-c", "touch " + marker, nul};
  EXPECT_EQ(failure_of(argv), "command: a NUL byte");
  LaunchSpec shell;
  shell.shell_command = "touch " + marker + std::string("\0; echo", 7);
  EXPECT_EQ(failure_of(shell), "command: a NUL byte");
  LaunchSpec value;
  value.shell_command = "touch " + marker;
  value.env = {{"K", "V" + std::string(1, '\0') + "LD_PRELOAD=x"}};
  EXPECT_EQ(failure_of(value), "env: a NUL byte in a variable");
  LaunchSpec name = value;
  name.env = {{nul, "v"}};
  EXPECT_EQ(failure_of(name), "env: a NUL byte in a variable");
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);  // nothing was forked
}

// The job's environment is clean: the agent's own variables (its token
// among them) never reach it; PATH, HOME and LANG do.
TEST(Process, ArgvCommandSeesJobEnvAndCheckpointDirButNotTheAgentsEnv) {
  TempDir dir;
  setenv("FAIRGPU_TEST_AGENT_VAR", "from-agent", 1);
  setenv("FAIRGPU_TEST_OVERRIDDEN", "agent-value", 1);
  LaunchSpec spec;
  spec.argv = {"sh", "-c",
               "echo \"$FAIRGPU_TEST_AGENT_VAR|$FAIRGPU_TEST_OVERRIDDEN|$FAIRGPU_JOB_ID|"
               "$CUDA_VISIBLE_DEVICES|$1\" > \"$FAIRGPU_CHECKPOINT_DIR/env\"",
               "sh", "arg one"};
  spec.log_path = dir / "log";
  spec.checkpoint_dir = dir / "shared/checkpoints/j-000001";
  spec.env = {{"FAIRGPU_TEST_OVERRIDDEN", "job-value"},
              {"CUDA_VISIBLE_DEVICES", "9"},  // the job's own, overridden below
              {"FAIRGPU_JOB_ID", "j-000001"},
              {"CUDA_VISIBLE_DEVICES", "2,3"},
              {"FAIRGPU_CHECKPOINT_DIR", spec.checkpoint_dir}};
  auto p = Process::launch(spec);
  unsetenv("FAIRGPU_TEST_AGENT_VAR");
  unsetenv("FAIRGPU_TEST_OVERRIDDEN");
  ASSERT_EQ(p->state(), ProcessState::kRunning) << p->failure();
  poll_until_ended(*p, 5.0);
  ASSERT_EQ(p->exit_code(), 0) << p->log_tail();
  EXPECT_EQ(slurp(spec.checkpoint_dir + "/env"), "|job-value|j-000001|2,3|arg one\n");
}

TEST(Process, StdoutAndStderrGoToTheLogAndTheTailIsTheLast2KB) {
  TempDir dir;
  auto p = Process::launch(
      shell(dir,
            "i=0; while [ $i -lt 300 ]; do echo \"line $i of the job\"; i=$((i+1)); done; "
            "echo 'to stderr' >&2"));
  poll_until_ended(*p, 5.0);
  ASSERT_EQ(p->exit_code(), 0);
  std::string log = slurp(dir / "log");
  EXPECT_GT(log.size(), 4000u);
  std::string tail = p->log_tail();
  EXPECT_LE(tail.size(), 2048u);
  EXPECT_GT(tail.size(), 1900u);
  EXPECT_EQ(log.substr(log.size() - tail.size()), tail);
  EXPECT_EQ(tail.rfind("line ", 0), 0u) << "starts at a line: " << tail.substr(0, 20);
  EXPECT_NE(tail.find("line 299 of the job\nto stderr\n"), std::string::npos);

  write_file(dir / "short", "only line\n");
  EXPECT_EQ(read_log_tail(dir / "short"), "only line\n");
  EXPECT_EQ(read_log_tail(dir / "missing"), "");
}

TEST(Process, ProgressFileKeepsTheLastGoodValue) {
  EXPECT_EQ(parse_progress("1234\n"), 1234);
  EXPECT_EQ(parse_progress("  7 "), 7);
  EXPECT_EQ(parse_progress(""), std::nullopt);
  EXPECT_EQ(parse_progress("12a"), std::nullopt);
  EXPECT_EQ(parse_progress("-3"), std::nullopt);
  EXPECT_EQ(parse_progress("1 2"), std::nullopt);
  EXPECT_EQ(parse_progress("1234567890123456789"), std::nullopt);  // beyond 18 digits

  TempDir dir;
  ProgressFile file(dir / "progress");
  EXPECT_EQ(file.read(), 0);  // missing
  write_file(dir / "progress", "120\n");
  EXPECT_EQ(file.read(), 120);
  write_file(dir / "progress", "");  // between the writer's truncate and write
  EXPECT_EQ(file.read(), 120);
  write_file(dir / "progress", "13");  // torn: the start of "1300"
  EXPECT_EQ(file.read(), 120);
  write_file(dir / "progress", "1300");
  EXPECT_EQ(file.read(), 1300);
  write_file(dir / "progress", "garbage");
  EXPECT_EQ(file.read(), 1300);
  fs::remove(dir / "progress");
  EXPECT_EQ(file.read(), 1300);
}

// Issue 30, H2: what an agent reports of a run stays within the bounds the
// server takes: a count beyond 1e15 is malformed; a text is valid UTF-8 of
// at most 64 KiB once JSON-encoded (a byte that is not UTF-8 would be
// written as the 3 bytes of U+FFFD: 30 000 such bytes grow to 90 000).
TEST(Process, ReportsAreBoundedAsTheServerTakesThem) {
  EXPECT_EQ(parse_progress_report("1000000000000000\n")->iterations, kMaxProgressIterations);
  EXPECT_EQ(parse_progress_report("9999999999999999\n"), std::nullopt);
  EXPECT_EQ(parse_progress_report("1000000000000001 64\n"), std::nullopt);

  EXPECT_EQ(fit_report_text("short\n"), "short\n");
  EXPECT_EQ(fit_report_text("a\xff\x62"), "a\xEF\xBF\xBD\x62");  // \x62: b
  for (const std::string& text : {std::string(30000, '\xff'), std::string(70 * 1024, 'x'),
                                  "\xE2\x82\xAC" + std::string(70000, 'y') + "\xE2\x82\xAC"}) {
    const std::string fit = fit_report_text(text);
    EXPECT_LE(fit.size(), kMaxLogTailBytes);
    EXPECT_GT(fit.size(), kMaxLogTailBytes - 100);
    EXPECT_NE(fit.find("bytes in all; the middle cut]"), std::string::npos);
    // Valid UTF-8: the strict encoder takes it as it is.
    const std::string encoded = nlohmann::json(fit).dump();
    EXPECT_EQ(nlohmann::json::parse(encoded).get<std::string>(), fit);
  }
  const std::string euro =
      fit_report_text("\xE2\x82\xAC" + std::string(70000, 'y') + "\xE2\x82\xAC");
  EXPECT_EQ(euro.rfind("\xE2\x82\xAC", 0), 0u);
  EXPECT_EQ(euro.substr(euro.size() - 3), "\xE2\x82\xAC");
}

// The cgroup plumbing on a stand-in hierarchy (plain files where the kernel
// would make them): the decisions of make_run_cgroup and the child's write
// to cgroup.procs. The kernel's side is LiveResources'
// MemoryGrantIsTheJobsCgroupMemoryMax and the Agent tests of run cgroups,
// where the machine allows them.
TEST(Process, RunCgroupLimitsAndCpuAffinityReachTheJob) {
  TempDir dir;
  fs::create_directories(dir / "cg");
  const std::string parent = dir / "cg";
  // A plain folder (no cgroup.procs in what mkdir made): no cgroup, none left.
  RunCgroup plain = make_run_cgroup(parent, "run0", {1 << 20, 64});
  EXPECT_EQ(plain.dir, "");
  EXPECT_NE(plain.problem.find(parent + " is not in a cgroup v2 hierarchy"), std::string::npos)
      << plain.problem;
  EXPECT_FALSE(fs::exists(parent + "/run0"));

  // A cgroup without the controllers: kept all the same, for its processes.
  write_file(parent + "/cgroup.controllers", "cpu io\n");
  fs::create_directories(parent + "/run1");
  write_file(parent + "/run1/cgroup.procs", "");
  RunCgroup bare = make_run_cgroup(parent, "run1", {1 << 20, 64});
  EXPECT_EQ(bare.dir, parent + "/run1") << bare.problem;
  EXPECT_NE(bare.memory_problem.find("the memory controller is not available"), std::string::npos)
      << bare.memory_problem;
  EXPECT_NE(bare.pids_problem.find("the pids controller is not available"), std::string::npos)
      << bare.pids_problem;

  write_file(parent + "/cgroup.controllers", "cpu io memory pids\n");
  write_file(parent + "/cgroup.subtree_control", "");
  fs::create_directories(parent + "/run2");
  write_file(parent + "/run2/cgroup.procs", "");
  RunCgroup missing = make_run_cgroup(parent, "run2", {1 << 20, 0});
  EXPECT_EQ(missing.dir, parent + "/run2");
  EXPECT_NE(missing.memory_problem.find("cannot enable the memory controller"), std::string::npos)
      << missing.memory_problem;
  EXPECT_EQ(missing.pids_problem, "") << "no pids limit asked for";
  EXPECT_EQ(slurp(parent + "/cgroup.subtree_control"), "+memory") << "it asked for it";

  fs::create_directories(parent + "/run3");  // as the kernel makes it: with the controllers' files
  for (const char* f : {"/memory.max", "/memory.swap.max", "/pids.max", "/cgroup.procs"})
    write_file(parent + "/run3" + f, "");
  RunCgroup made = make_run_cgroup(parent, "run3", {std::uint64_t{3} << 30, 4096});
  ASSERT_EQ(made.dir, parent + "/run3") << made.problem;
  EXPECT_EQ(made.memory_problem, "");
  EXPECT_EQ(made.pids_problem, "");
  EXPECT_EQ(slurp(made.dir + "/memory.max"), std::to_string(std::uint64_t{3} << 30));
  EXPECT_EQ(slurp(made.dir + "/memory.swap.max"), "0");
  EXPECT_EQ(slurp(made.dir + "/pids.max"), "4096");

  const std::vector<int> mine = affinity_cpus();
  ASSERT_FALSE(mine.empty());
  auto spec = shell(dir, "grep Cpus_allowed_list /proc/self/status | cut -f2 > \"$OUT\"");
  spec.env = {{"OUT", dir / "seen"}};
  spec.cpu_affinity = {mine.back()};
  spec.cgroup_dir = made.dir;
  auto p = Process::launch(spec);
  ASSERT_EQ(p->state(), ProcessState::kRunning) << p->failure();
  poll_until_ended(*p, 10);
  EXPECT_EQ(p->exit_code(), 0);
  EXPECT_EQ(slurp(dir / "seen"), std::to_string(mine.back()) + "\n");
  EXPECT_EQ(slurp(made.dir + "/cgroup.procs"), "0") << "the job moved itself in before exec";
  spec.cgroup_dir = dir / "nowhere";
  EXPECT_EQ(Process::launch(spec)->state(), ProcessState::kLaunchFailed);
}

// Issue 30, M1, on a stand-in cgroup: the job's leader has exited but its
// cgroup still holds a process (cgroup.events says so), so the run has not
// ended: the cgroup is killed and the job stays running, however long,
// until the cgroup is empty.
TEST(Process, AJobEndsOnlyOnceItsCgroupIsEmpty) {
  TempDir dir;
  const std::string cg = dir / "cg";
  fs::create_directories(cg);
  write_file(cg + "/cgroup.procs", "");
  write_file(cg + "/cgroup.kill", "");
  write_file(cg + "/cgroup.events", "populated 1\nfrozen 0\n");
  auto spec = shell(dir, "exit 3");
  spec.cgroup_dir = cg;
  auto p = Process::launch(spec);
  ASSERT_EQ(p->state(), ProcessState::kRunning) << p->failure();
  ASSERT_TRUE(wait_for(
      [&] {
        p->poll();
        return slurp(cg + "/cgroup.kill") == "1";
      },
      10))
      << "the leader's exit kills the cgroup";
  for (int i = 0; i < 20; ++i) {
    p->poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(p->state(), ProcessState::kRunning) << "ended while its cgroup held a process";
  EXPECT_TRUE(p->leader_exited());
  p->stop(0.0, 0.0);
  EXPECT_FALSE(p->stop_requested()) << "its leader had exited: nothing to revoke";
  write_file(cg + "/cgroup.events", "populated 0\nfrozen 0\n");
  p->poll();
  EXPECT_EQ(p->state(), ProcessState::kExited);
  EXPECT_EQ(p->exit_code(), 3);
}

// kill_cgroup where the kernel has no cgroup.kill (before 5.14): SIGKILL to
// each pid of cgroup.procs; with it, "1" written there and nothing else.
// cgroup_populated reads cgroup.events, else cgroup.procs.
TEST(Process, KillCgroupSignalsEachPidWithoutCgroupKill) {
  TempDir dir;
  const std::string cg = dir / "cg";
  fs::create_directories(cg);
  auto sleeper = [] {
    const pid_t pid = fork();
    if (pid == 0)
      for (;;) pause();
    return pid;
  };
  const pid_t a = sleeper(), b = sleeper();
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  write_file(cg + "/cgroup.procs", std::to_string(a) + "\n" + std::to_string(b) + "\n");
  EXPECT_TRUE(cgroup_populated(cg));
  EXPECT_EQ(kill_cgroup(cg), "");
  for (pid_t pid : {a, b}) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << pid;
  }
  write_file(cg + "/cgroup.procs", "");
  EXPECT_FALSE(cgroup_populated(cg));
  write_file(cg + "/cgroup.events", "populated 1\nfrozen 0\n");
  EXPECT_TRUE(cgroup_populated(cg));
  EXPECT_FALSE(cgroup_populated(dir / "gone"));

  const pid_t c = sleeper();
  write_file(cg + "/cgroup.procs", std::to_string(c) + "\n");
  write_file(cg + "/cgroup.kill", "");
  EXPECT_EQ(kill_cgroup(cg), "");
  EXPECT_EQ(slurp(cg + "/cgroup.kill"), "1");
  EXPECT_EQ(waitpid(c, nullptr, WNOHANG), 0) << "the kernel's cgroup.kill does the killing";
  kill(c, SIGKILL);
  waitpid(c, nullptr, 0);
}

// A restarted agent kills the run cgroups of its node's earlier agent: the
// name must be its node's exactly, not one whose name begins with it.
TEST(Process, RunCgroupNamesNameTheirNodeAndAgent) {
  EXPECT_EQ(run_cgroup_name("n1", 42, 7), "fairgpu-n1-42-lease-7");
  EXPECT_EQ(run_cgroup_agent("fairgpu-n1-42-lease-7", "n1"), 42);
  EXPECT_EQ(run_cgroup_agent("fairgpu-n1-b-42-lease-7", "n1-b"), 42);
  for (const char* other : {"fairgpu-n1-b-42-lease-7", "fairgpu-n1-5-42-lease-7",
                            "fairgpu-agent@n1", "fairgpu-n1-42-lease-", "fairgpu-n1-42-lease-7x",
                            "fairgpu-n1-0-lease-7", "fairgpu-n2-42-lease-7", "fairgpu-n1--lease-7"})
    EXPECT_EQ(run_cgroup_agent(other, "n1"), 0) << other;
}

// Issue 30: where an agent's runs' cgroups go and where the agent itself
// goes first (node_resources.h), on paths and a stand-in hierarchy. The
// kernel's side is LiveCgroup's and LiveResources' tests, where the
// machine allows them.
TEST(Process, AnAgentInTheRunsParentLeavesItForALeafBesideTheRuns) {
  // Its own cgroup: it moves into a leaf of it; runs beside that leaf.
  CgroupPlan p = plan_cgroups("", "/cg/svc", false, "n1");
  EXPECT_EQ(p.runs_parent, "/cg/svc");
  EXPECT_EQ(p.agent_leaf, "/cg/svc/fairgpu-agent@n1");
  // --cgroup naming its own cgroup: the same.
  p = plan_cgroups("/cg/svc/", "/cg/svc", false, "n1");
  EXPECT_EQ(p.runs_parent, "/cg/svc");
  EXPECT_EQ(p.agent_leaf, "/cg/svc/fairgpu-agent@n1");
  // Started in its leaf already (an earlier agent's, by exec): runs beside it.
  p = plan_cgroups("", "/cg/svc/fairgpu-agent@n1", false, "n1");
  EXPECT_EQ(p.runs_parent, "/cg/svc");
  EXPECT_EQ(p.agent_leaf, "");
  // Another cgroup named with --cgroup, or the root (exempt): it stays put.
  p = plan_cgroups("/cg/jobs", "/cg/svc", false, "n1");
  EXPECT_EQ(p.runs_parent, "/cg/jobs");
  EXPECT_EQ(p.agent_leaf, "");
  p = plan_cgroups("", "/cg", true, "n1");
  EXPECT_EQ(p.runs_parent, "/cg");
  EXPECT_EQ(p.agent_leaf, "");
  // none, or no cgroup v2: no limits.
  for (const auto& [configured, own] : {std::pair{"none", "/cg/svc"}, std::pair{"", ""}}) {
    p = plan_cgroups(configured, own, false, "n1");
    EXPECT_EQ(p.runs_parent, "");
    EXPECT_EQ(p.agent_leaf, "");
  }
  // No run cgroup's name (fairgpu-<node>-...) starts with any node's leaf,
  // so leftover cleanup never takes a leaf for a run.
  EXPECT_NE(agent_leaf_name("x").rfind("fairgpu-agent-", 0), 0u);

  TempDir dir;
  const std::string root = dir / "cg", svc = root + "/svc";
  fs::create_directories(svc + "/fairgpu-agent@n1");
  write_file(root + "/cgroup.procs", "");
  write_file(svc + "/cgroup.procs", "");
  write_file(svc + "/cgroup.type", "domain\n");
  EXPECT_TRUE(is_root_cgroup(root));
  EXPECT_FALSE(is_root_cgroup(svc));
  EXPECT_FALSE(is_root_cgroup(dir / "nothing"));
  write_file(svc + "/fairgpu-agent@n1/cgroup.procs", "");
  EXPECT_EQ(move_into_cgroup(svc + "/fairgpu-agent@n1", 4242), "");
  EXPECT_EQ(slurp(svc + "/fairgpu-agent@n1/cgroup.procs"), "4242") << "one pid: its whole process";
  EXPECT_NE(move_into_cgroup(svc + "/elsewhere", 4242).find("cannot move pid 4242"),
            std::string::npos);
  write_file(svc + "/cgroup.controllers", "cpu memory pids\n");
  write_file(svc + "/cgroup.subtree_control", "memory\n");
  EXPECT_EQ(enable_child_controller(svc, "memory"), "") << "already enabled: nothing to write";
  EXPECT_EQ(slurp(svc + "/cgroup.subtree_control"), "memory\n");
  EXPECT_NE(enable_child_controller(svc, "io").find("the io controller is not available in"),
            std::string::npos);
}

TEST(Process, ProgressFileCarriesTheBatchSize) {
  EXPECT_EQ(parse_progress_report("1234 64\n")->batch_size, 64);
  EXPECT_EQ(parse_progress_report("1234 64\n")->iterations, 1234);
  EXPECT_EQ(parse_progress_report("1234\n")->batch_size, 0);
  EXPECT_EQ(parse_progress_report("1234 6"), std::nullopt);  // torn: no newline yet
  EXPECT_EQ(parse_progress_report("1234 0\n"), std::nullopt);
  EXPECT_EQ(parse_progress_report("1234 64 1\n"), std::nullopt);
  EXPECT_EQ(parse_progress_report("1234 2000000000\n"), std::nullopt);

  TempDir dir;
  ProgressFile file(dir / "progress");
  write_file(dir / "progress", "100 32\n");
  EXPECT_EQ(file.read(), 100);
  EXPECT_EQ(file.batch_size(), 32);
  write_file(dir / "progress", "100 64\n");  // the change, reported at the same count
  EXPECT_EQ(file.read(), 100);
  EXPECT_EQ(file.batch_size(), 64);
  write_file(dir / "progress", "90 128\n");  // a smaller count: not taken
  EXPECT_EQ(file.read(), 100);
  EXPECT_EQ(file.batch_size(), 64);
  write_file(dir / "progress", "150 12");  // torn
  EXPECT_EQ(file.read(), 100);
  EXPECT_EQ(file.batch_size(), 64);
  write_file(dir / "progress", "160\n");  // a count alone keeps the batch size
  EXPECT_EQ(file.read(), 160);
  EXPECT_EQ(file.batch_size(), 64);
}

TEST(Process, ReadsTheJobsProgressAndRemovesAStaleFile) {
  TempDir dir;
  write_file(dir / "progress", "999999\n");  // an earlier run's
  auto spec = shell(dir, "echo 40 > \"$P\"; echo written > \"$P.done\"; exec sleep 30");
  spec.env = {{"P", dir / "progress"}};
  auto p = Process::launch(spec);
  ASSERT_EQ(p->state(), ProcessState::kRunning);
  ASSERT_TRUE(wait_for([&] { return fs::exists(dir / "progress.done"); }, 5));
  EXPECT_EQ(p->read_progress(), 40);
  p->stop(0.0, 1.0);
  poll_until_ended(*p, 5.0);
  EXPECT_EQ(p->read_progress(), 40);  // the last word after the job ended
}

TEST(Process, PidFileNamesTheGroupAndGoesAtReap) {
  TempDir dir;
  auto spec = shell(dir, "exec sleep 30");
  spec.pid_path = dir / "pid";
  auto p = Process::launch(spec);
  ASSERT_EQ(p->state(), ProcessState::kRunning);
  std::istringstream in(slurp(dir / "pid"));
  long long pid = 0;
  unsigned long long start = 0;
  ASSERT_TRUE(in >> pid >> start);
  EXPECT_EQ(pid, p->pid());
  EXPECT_EQ(process_start_time(p->pid()), start);
  p->stop(0.0, 0.5);  // SIGUSR1 ends `sleep`
  poll_until_ended(*p, 5.0);
  EXPECT_EQ(p->signal(), SIGUSR1);
  EXPECT_FALSE(fs::exists(dir / "pid"));
}

TEST(Process, StrayChildrenOfAnEndedJobAreKilled) {
  TempDir dir;
  // The job leaves a background child in its group and exits.
  auto spec = shell(dir, "sleep 30 & echo $! > \"$CHILD\"; exit 0");
  spec.env = {{"CHILD", dir / "child"}};
  auto p = Process::launch(spec);
  pid_t pgid = p->pid();
  poll_until_ended(*p, 5.0);
  ASSERT_EQ(p->state(), ProcessState::kExited);
  EXPECT_EQ(p->exit_code(), 0);
  EXPECT_TRUE(fs::exists(dir / "child"));
  EXPECT_TRUE(wait_for([&] { return !process_group_alive(pgid); }, 2));
}

TEST(Process, DestroyingARunningProcessKillsItsGroup) {
  TempDir dir;
  pid_t pgid;
  {
    auto spec = shell(dir, "sleep 30 & sleep 30");
    spec.pid_path = dir / "pid";
    auto p = Process::launch(spec);
    pgid = p->pid();
    ASSERT_TRUE(process_group_alive(pgid));
  }
  EXPECT_FALSE(fs::exists(dir / "pid"));
  EXPECT_TRUE(wait_for([&] { return !process_group_alive(pgid); }, 2));
}

TEST(Process, JobDiesWithAKilledAgent) {
  TempDir dir;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t agent = fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    // A stand-in agent: launches a job, tells its pid, waits to be killed.
    close(fds[0]);
    LaunchSpec spec;
    spec.shell_command = "exec sleep 30";
    spec.log_path = dir / "log";
    auto p = Process::launch(spec);
    pid_t job = p->pid();
    if (write(fds[1], &job, sizeof job) != sizeof job) _exit(1);
    pause();
    _exit(0);
  }
  close(fds[1]);
  pid_t job = -1;
  ASSERT_EQ(read(fds[0], &job, sizeof job), static_cast<ssize_t>(sizeof job));
  close(fds[0]);
  ASSERT_TRUE(process_group_alive(job));
  kill(agent, SIGKILL);
  ASSERT_EQ(waitpid(agent, nullptr, 0), agent);
  EXPECT_TRUE(wait_for([&] { return !process_group_alive(job); }, 2));
}

// Issue 30, H1: a job leads a session of its own, so it has no controlling
// terminal. A stand-in agent takes a pseudo-terminal as its controlling
// terminal (as an agent started from an interactive shell has one) and
// launches a job that tries to open /dev/tty: with only a process group of
// its own (setpgid) the job inherits the terminal and could type into it
// with TIOCSTI; in its own session the open fails with ENXIO. The job's
// session id (field 6 of /proc/<pid>/stat) is its pid.
TEST(Process, JobHasASessionOfItsOwnAndNoControllingTerminal) {
  TempDir dir;
  const std::string out = dir / "out";
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t agent = fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    close(fds[0]);
    // The stand-in agent: a new session whose controlling terminal is a pty
    // (opening the slave without O_NOCTTY as session leader makes it so).
    int report[3] = {0, -1, -1};  // [0]: 1 when the agent has a terminal
    if (setsid() >= 0) {
      const int master = posix_openpt(O_RDWR | O_NOCTTY);
      if (master >= 0 && grantpt(master) == 0 && unlockpt(master) == 0) {
        const int slave = open(ptsname(master), O_RDWR);
        const int tty = open("/dev/tty", O_RDWR);
        report[0] = slave >= 0 && tty >= 0 ? 1 : 0;
      }
    }
    LaunchSpec spec;
    spec.shell_command =
        "if (exec 3</dev/tty) 2>\"$OUT.err\"; then echo opened; else echo refused; fi > \"$OUT\"; "
        "awk '{print $6}' /proc/$$/stat > \"$OUT.sid\"";
    spec.env = {{"OUT", out}};
    spec.log_path = dir / "log";
    auto p = Process::launch(spec);
    report[1] = p->pid();
    report[2] = static_cast<int>(getsid(p->pid()));
    poll_until_ended(*p, 20.0);
    if (write(fds[1], report, sizeof report) != sizeof report) _exit(1);
    _exit(p->state() == ProcessState::kExited && p->exit_code() == 0 ? 0 : 3);
  }
  close(fds[1]);
  int report[3] = {0, -1, -1};
  ASSERT_EQ(read(fds[0], report, sizeof report), static_cast<ssize_t>(sizeof report));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(agent, &status, 0), agent);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status << " " << slurp(dir / "log");
  ASSERT_EQ(report[0], 1) << "the stand-in agent has no controlling terminal: the check is void";
  const pid_t job = report[1];
  ASSERT_GT(job, 0);
  EXPECT_EQ(report[2], job) << "getsid of the running job";
  EXPECT_EQ(slurp(out + ".sid"), std::to_string(job) + "\n");
  EXPECT_EQ(slurp(out), "refused\n") << slurp(out + ".err");
  EXPECT_NE(slurp(out + ".err").find("No such device or address"), std::string::npos)
      << slurp(out + ".err");  // ENXIO
}

TEST(Process, KillLeftoverGroupChecksTheStartTime) {
  TempDir dir;
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    setpgid(0, 0);
    execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(child, child);
  ASSERT_TRUE(wait_for([&] { return process_start_time(child).has_value(); }, 2));
  auto start = *process_start_time(child);

  write_file(dir / "reused", std::to_string(child) + " " + std::to_string(start + 1) + "\n");
  pid_t pgid = 0;
  EXPECT_EQ(kill_leftover_group(dir / "reused", 1.0, &pgid), LeftoverResult::kPidReused);
  EXPECT_EQ(pgid, child);
  EXPECT_TRUE(process_group_alive(child));

  write_file(dir / "garbage", "not a pid\n");
  EXPECT_EQ(kill_leftover_group(dir / "garbage", 1.0, nullptr), LeftoverResult::kUnreadable);

  write_file(dir / "pid", std::to_string(child) + " " + std::to_string(start) + "\n");
  EXPECT_EQ(kill_leftover_group(dir / "pid", 1.0, nullptr), LeftoverResult::kKilled);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(kill_leftover_group(dir / "pid", 1.0, nullptr), LeftoverResult::kGone);
}

}  // namespace
}  // namespace fairgpu::live
