// Parsers of Slurm 22.05's command output (src/live/slurm/parse.h), on
// outputs captured from the test cluster of scripts/slurm-cluster.sh
// (tests/data/slurm/: a held job, a requeued-held job whose name holds
// " JobState=COMPLETED", a 2-node job, exit 3, a cancelled job, a drained
// node) and on hand-made lines for what that cluster cannot show (a DOWN
// node, odd host lists), plus the one-line errors of bad input.
#include <gtest/gtest.h>
#include <cstdlib>
#include <unistd.h>
#include <sys/wait.h>
#include <fstream>
#include <filesystem>

#include <map>
#include <string>
#include <vector>

#include "fairgpu/input_error.h"
#include "live/slurm/client.h"
#include "live/slurm/parse.h"
#include "run_binary.h"
#include "test_files.h"

namespace fairgpu::live::slurm {
namespace {

using testing_support::slurp;
using testing_support::test_data;
using Strings = std::vector<std::string>;

std::string data(const std::string& name) { return slurp(test_data("slurm/" + name)); }

// The message of the InputError `f` throws ("" when it throws none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SlurmHostList, ExpandsRangesPaddingAndSeveralBrackets) {
  EXPECT_EQ(expand_host_list("n[1-3]", "t", "f"), (Strings{"n1", "n2", "n3"}));
  EXPECT_EQ(expand_host_list("gpu[08-10,12]x,cpu1", "t", "f"),
            (Strings{"gpu08x", "gpu09x", "gpu10x", "gpu12x", "cpu1"}));
  EXPECT_EQ(expand_host_list("r[1-2]n[1-2]", "t", "f"), (Strings{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_TRUE(expand_host_list("", "t", "f").empty());
  EXPECT_TRUE(expand_host_list("(null)", "t", "f").empty());
}

TEST(SlurmHostList, RefusesMalformedListsInOneLine) {
  for (const char* bad : {"n[1-", "n[3-1]", "n[]", "n1,,n2", "n[a-b]", "n]1", "n 1"}) {
    const std::string e = error_of([&] { expand_host_list(bad, "squeue", "line 1: nodes"); });
    EXPECT_NE(e.find("squeue: line 1: nodes: "), std::string::npos) << bad << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // Too many names is refused before they are made.
  EXPECT_NE(error_of([] { expand_host_list("n[0-999999999]", "t", "f"); }).find("too many"),
            std::string::npos);
  EXPECT_NE(error_of([] { expand_host_list("a[0-999]b[0-999]", "t", "f"); }).find("too many"),
            std::string::npos);
}

TEST(SlurmGres, ReadsTypesCountsAndIndices) {
  auto g = parse_gres_list("gpu:v100:3(IDX:0,2-3),mps:100", "t", "f");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].type, "v100");
  EXPECT_EQ(g[0].count, 3);
  EXPECT_EQ(g[0].indices, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(g[1].name, "mps");
  g = parse_gres_list("gpu:2", "t", "f");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].type, "");
  EXPECT_EQ(g[0].count, 2);
  EXPECT_TRUE(parse_gres_list("gpu:k80:0(IDX:N/A)", "t", "f")[0].indices.empty());
  EXPECT_EQ(parse_gres_list("gpu:k80:4(S:0-1)", "t", "f")[0].count, 4);
  for (const char* bad : {"gpu:v100:x", "gpu", "gpu:a:b:c", "gpu:v100:1(IDX:0-3)",
                          "gpu:v100:4(IDX:3,1)", "gpu:v100:2(FOO:1)", "gpu:v100:2(IDX:0"}) {
    EXPECT_NE(error_of([&] {
                parse_gres_list(bad, "scontrol show node", "node n1: Gres");
              }).find("scontrol show node: node n1: Gres: "),
              std::string::npos)
        << bad;
  }
}

TEST(SlurmSqueue, ReadsCapturedQueue) {
  const auto q = parse_squeue(data("squeue.txt"));
  ASSERT_EQ(q.size(), 6u);
  std::map<std::int64_t, QueueEntry> by_id;
  for (const auto& e : q) by_id[e.job_id] = e;
  EXPECT_EQ(by_id[1].state, JobState::kPending);
  EXPECT_EQ(by_id[1].reason, "JobHeldUser");
  EXPECT_EQ(by_id[1].gpus_per_node, 2);
  EXPECT_EQ(by_id[2].reason, "job requeued in held state");
  EXPECT_EQ(by_id[3].state, JobState::kRunning);
  EXPECT_EQ(by_id[3].nodes, (Strings{"n1", "n2"}));
  EXPECT_EQ(by_id[4].state, JobState::kFailed);
  EXPECT_EQ(by_id[5].state, JobState::kCancelled);
  EXPECT_EQ(by_id[5].gpus_per_node, 0);  // N/A
  EXPECT_EQ(by_id[6].user, "root");
}

TEST(SlurmSqueue, RefusesBadLinesNamingLineAndField) {
  EXPECT_EQ(
      error_of([] { parse_squeue("7|RUNNING|None|n1|gres:gpu:1|root\n8|BOGUS|None||N/A|u\n"); }),
      "squeue: line 2: state: unknown job state 'BOGUS'");
  EXPECT_EQ(error_of([] { parse_squeue("7|RUNNING|None|n1|gres:gpu:1\n"); }),
            "squeue: line 1: expected 6 '|'-separated columns (%i|%T|%r|%N|%b|%u), got 5");
  EXPECT_EQ(error_of([] { parse_squeue("x7|RUNNING|None|n1|N/A|root\n"); }),
            "squeue: line 1: job id: not a non-negative integer: 'x7'");
  EXPECT_EQ(error_of([] { parse_squeue("7|RUNNING|None|n1|N/A|a\n7|PENDING|None||N/A|a\n"); }),
            "squeue: line 2: job id: job 7 listed twice");
  EXPECT_EQ(error_of([] { parse_squeue("7|RUNNING|None|n1|cpu=1|root\n"); }),
            "squeue: line 1: tres per node: not a GRES: 'cpu=1'");
  EXPECT_TRUE(parse_squeue("\n").empty());
}

TEST(SlurmJobDetails, ReadsCapturedJobs) {
  const auto jobs = parse_job_details(data("show-job.txt"));
  ASSERT_EQ(jobs.size(), 6u);
  std::map<std::int64_t, JobDetail> d;
  for (const auto& j : jobs) d[j.job_id] = j;
  // Held at submission.
  EXPECT_EQ(d[1].name, "fairgpu-j1");
  EXPECT_EQ(d[1].state, JobState::kPending);
  EXPECT_TRUE(d[1].held);
  EXPECT_TRUE(d[1].nodes.empty());
  // Requeued held (its state is spoofed by its name, see below); its
  // comment holds a '='.
  EXPECT_EQ(d[2].reason, "job_requeued_in_held_state");
  EXPECT_EQ(d[2].restarts, 1);
  EXPECT_EQ(d[2].comment.substr(0, 18), "fairgpu-progress=7");
  // Two nodes, one GPU on each, with their indices.
  EXPECT_EQ(d[3].state, JobState::kRunning);
  EXPECT_FALSE(d[3].held);
  EXPECT_EQ(d[3].nodes, (Strings{"n1", "n2"}));
  ASSERT_EQ(d[3].per_node.size(), 2u);
  EXPECT_EQ(d[3].per_node[0].node, "n1");
  EXPECT_EQ(d[3].per_node[0].gpu_type, "v100");
  EXPECT_EQ(d[3].per_node[0].indices, (std::vector<int>{3}));
  EXPECT_EQ(d[3].per_node[1].gpu_type, "p100");
  EXPECT_EQ(d[3].per_node[1].indices, (std::vector<int>{0}));
  // exit 3.
  EXPECT_EQ(d[4].state, JobState::kFailed);
  EXPECT_EQ(d[4].exit_code, 3);
  EXPECT_EQ(d[4].exit_signal, 0);
  EXPECT_EQ(d[4].reason, "NonZeroExitCode");
  EXPECT_EQ(d[5].state, JobState::kCancelled);
  EXPECT_EQ(d[6].per_node.at(0).indices, (std::vector<int>{2, 3}));
  EXPECT_EQ(d[6].partition, "main");
  EXPECT_EQ(d[6].user, "root");
}

TEST(SlurmJobDetails, ANameThatSpellsFieldsIsTheKnownLimit) {
  // Job 2's name is "my job JobState=COMPLETED": the first JobState wins, so
  // scontrol's line says COMPLETED while squeue (no free text) says
  // PENDING. This is why the executor reads scontrol only for jobs it named.
  const auto jobs = parse_job_details(data("show-job.txt"));
  EXPECT_EQ(jobs.at(1).job_id, 2);
  EXPECT_EQ(jobs.at(1).state, JobState::kCompleted);
  const auto q = parse_squeue(data("squeue.txt"));
  for (const auto& e : q) {
    if (e.job_id == 2) {
      EXPECT_EQ(e.state, JobState::kPending);
    }
  }
}

TEST(SlurmJobDetails, RefusesBadLinesNamingJobAndField) {
  const std::string good = data("show-job.txt").substr(0, data("show-job.txt").find('\n'));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string line = good;
    line.replace(line.find(from), from.size(), to);
    return line;
  };
  EXPECT_EQ(error_of([&] { parse_job_details(with("JobState=PENDING", "JobState=WAITING")); }),
            "scontrol show job: job 1: JobState: unknown job state 'WAITING'");
  EXPECT_EQ(error_of([&] { parse_job_details(with("ExitCode=0:0", "ExitCode=0")); }),
            "scontrol show job: job 1: ExitCode: not E:S: '0'");
  EXPECT_EQ(error_of([&] { parse_job_details(with("ExitCode=0:0", "ExitCode=300:0")); }),
            "scontrol show job: job 1: ExitCode: out of range: '300:0'");
  EXPECT_EQ(error_of([&] { parse_job_details(with("Restarts=0", "Restarts=-1")); }),
            "scontrol show job: job 1: Restarts: not a non-negative integer: '-1'");
  EXPECT_EQ(error_of([&] { parse_job_details(with(" Partition=main", "")); }),
            "scontrol show job: job 1: Partition: missing");
  EXPECT_EQ(error_of([&] { parse_job_details("JobName=x JobId=3\n"); }),
            "scontrol show job: line 1: does not start with JobId=");
  EXPECT_EQ(error_of([&] { parse_job_details(good + "\n" + good); }),
            "scontrol show job: line 2: JobId: job 1 listed twice");
  EXPECT_TRUE(parse_job_details("No jobs in the system\n").empty());
}

// Issue 30 H7: another user's job named 'x JobState=BOGUS' is one
// unreadable line, kept by its id; the other jobs still read.
TEST(SlurmJobDetails, AnUnreadableLineIsLeftOutAndNamedByItsJob) {
  const std::string good = data("show-job.txt").substr(0, data("show-job.txt").find('\n'));
  std::string bad = good;
  bad.replace(bad.find("JobId=1 JobName=fairgpu-j1"), 26, "JobId=7 JobName=x JobState=BOGUS");
  std::map<std::int64_t, std::string> unreadable;
  const auto jobs = parse_job_details(bad + "\n" + good + "\n", &unreadable);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].job_id, 1);
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_EQ(unreadable.at(7), "scontrol show job: job 7: JobState: unknown job state 'BOGUS'");
  // Without the map, as before: the line fails the read.
  EXPECT_EQ(error_of([&] { parse_job_details(bad); }), unreadable.at(7));
}

TEST(SlurmNodes, ReadsCapturedNodesWithDrain) {
  const auto nodes = parse_nodes(data("show-node.txt"));
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].name, "n1");
  EXPECT_EQ(nodes[0].gpu_type(), "v100");
  EXPECT_EQ(nodes[0].gpu_count(), 4);
  EXPECT_EQ(nodes[0].gpus_used(), 1);
  EXPECT_EQ(nodes[0].cpus, 4);
  EXPECT_EQ(nodes[0].memory_mb, 8000);
  EXPECT_EQ(nodes[0].base_state, "MIXED");
  EXPECT_TRUE(nodes[0].usable());
  EXPECT_EQ(nodes[1].gpus_used(), 3);
  EXPECT_EQ(nodes[1].gres_used.at(0).indices, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(nodes[2].gpu_type(), "k80");
  EXPECT_EQ(nodes[2].flags, (Strings{"DRAIN"}));
  EXPECT_FALSE(nodes[2].usable());
  EXPECT_EQ(nodes[2].reason.substr(0, 17), "test drain reason");
  EXPECT_EQ(nodes[2].partitions, (Strings{"main"}));
}

TEST(SlurmNodes, DownAndNotRespondingNodesAreNotUsable) {
  std::string line = data("show-node.txt").substr(0, data("show-node.txt").find('\n'));
  auto with_state = [&](const std::string& state) {
    std::string l = line;
    l.replace(l.find("State=MIXED"), 11, "State=" + state);
    return parse_nodes(l).at(0);
  };
  EXPECT_FALSE(with_state("DOWN").usable());
  EXPECT_FALSE(with_state("DOWN+NOT_RESPONDING").usable());
  EXPECT_FALSE(with_state("IDLE+NOT_RESPONDING").usable());
  EXPECT_FALSE(with_state("MIXED+DRAIN").usable());
  EXPECT_TRUE(with_state("ALLOCATED+COMPLETING").usable());
  EXPECT_EQ(error_of([&] { with_state("SLEEPY"); }),
            "scontrol show node: node n1: State: unknown node state 'SLEEPY'");
  EXPECT_EQ(error_of([&] { with_state("IDLE+WOBBLY"); }),
            "scontrol show node: node n1: State: unknown node state flag 'WOBBLY'");
  std::string two_types = line;
  two_types.replace(two_types.find("Gres=gpu:v100:4"), 15, "Gres=gpu:v100:2,gpu:k80:2");
  EXPECT_EQ(parse_nodes(two_types).at(0).gpu_type(), "");  // not one type: left out of plans
  EXPECT_EQ(parse_nodes(two_types).at(0).gpu_count(), 4);
}

TEST(SlurmSbatch, ReadsParsableOutput) {
  EXPECT_EQ(parse_sbatch_output("42\n"), 42);
  EXPECT_EQ(parse_sbatch_output("42;cluster\n"), 42);
  EXPECT_EQ(error_of([] { parse_sbatch_output("Submitted batch job 42\n"); }),
            "sbatch --parsable: job id: not a non-negative integer: 'Submitted batch job 42'");
  EXPECT_NE(error_of([] { parse_sbatch_output("42\n43\n"); }), "");
}

TEST(SlurmBatch, AttributesErrorsToTheirCommands) {
  // Captured: scontrol reading four commands on stdin, stderr merged.
  const Strings cmds{"update JobId=999 NodeList=n1", "release 998", "update JobId=6 Comment=hello",
                     "release 6"};
  const std::string out =
      "scontrol: update JobId=999 NodeList=n1\n"
      "scontrol: error: Could not load state information for job 999: Invalid job id specified\n"
      "scontrol: release 998\n"
      "Invalid job id specified for job 998\n"
      "slurm_suspend error: Invalid job id specified\n"
      "scontrol: update JobId=6 Comment=hello\n"
      "scontrol: release 6\n"
      "scontrol: \n";
  const Strings errors = split_batch_output(out, cmds);
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_EQ(
      errors[0],
      "scontrol: error: Could not load state information for job 999: Invalid job id specified");
  EXPECT_EQ(errors[1],
            "Invalid job id specified for job 998; slurm_suspend error: Invalid job id specified");
  EXPECT_EQ(errors[2], "");
  EXPECT_EQ(errors[3], "");
  // A command never echoed: scontrol stopped before it.
  EXPECT_EQ(error_of([&] { split_batch_output("scontrol: update JobId=999 NodeList=n1\n", cmds); }),
            "scontrol (batch): command 2: not echoed (scontrol stopped early?): 'release 998'");
}

TEST(SlurmRound, CommandsInOrderHoldPinRelease) {
  RoundWrites w;
  w.release = {7, 8};
  w.pins = {{7, {"n1"}}, {8, {"n2", "n3"}}};
  w.hold = {9};
  w.requeue_hold = {5};
  EXPECT_EQ(round_commands(w),
            (Strings{"requeuehold 5", "hold 9", "update JobId=7 NodeList=n1 StartTime=now",
                     "update JobId=8 NodeList=n2,n3 StartTime=now", "release 7,8"}));
}

TEST(SlurmSubmitScript, ExecsTheQuotedCommandAfterReadingTheRunFile) {
  SubmitSpec s;
  s.job = "j1";
  s.argv = {"/bin/echo", "it's"};
  s.env = {{"MODE", "a b"}};
  const std::string script = submit_script(s);
  EXPECT_NE(script.find("exec '/bin/echo' 'it'\\''s'\n"), std::string::npos) << script;
  EXPECT_NE(script.find("export MODE='a b'\n"), std::string::npos);
  EXPECT_NE(script.find(".fairgpu-run"), std::string::npos);
  // The run's fence, before the command: held by every process it starts.
  const auto fence = script.find("exec 9>>\"$FAIRGPU_CHECKPOINT_DIR/.fairgpu-fence\" && flock -s 9\n");
  EXPECT_LT(fence, script.find("exec '/bin/echo'")) << script;
  // A run over several nodes (its shape is the run's, set at its pin): one
  // srun task per node, each taking the fence on its node and its own rank.
  EXPECT_NE(script.find("exec srun --export=ALL --nodes=\"$nodes\" --ntasks-per-node=1"),
            std::string::npos);
  EXPECT_NE(script.find("/bin/sh -c 'exec 9>>\"$FAIRGPU_CHECKPOINT_DIR/.fairgpu-fence\" && flock -s 9; "
                        "export MASTER_ADDR="),
            std::string::npos)
      << script;
  EXPECT_NE(script.find("RANK=$((SLURM_NODEID * LOCAL_WORLD_SIZE)); exec \"$@\"' fairgpu-task "
                        "'/bin/echo'"),
            std::string::npos)
      << script;
}

// Issue 34 item 3: a run Slurm starts without the GPUs it asked for (seen
// right after slurmctld's own restart) is refused by its wrapper, which
// leaves its lease id for the executor to requeue it as never started.
TEST(SlurmSubmitScript, ARunStartedWithoutItsGpusIsRefusedAndMarked) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fairgpu-no-gpu-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  SubmitSpec s;
  s.job = "j1";
  s.gpus_per_node = 2;
  s.shell_command = "echo ran >\"$FAIRGPU_CHECKPOINT_DIR/out\"";
  { std::ofstream(dir / "wrapper.sh") << submit_script(s); }
  write_run_file(dir.string(), 42, "v100");
  auto run_with = [&](const std::string& gpus_on_node) {
    const std::string cmd = "env FAIRGPU_CHECKPOINT_DIR=" + testing_support::quote(dir.string()) +
                            " SLURM_GPUS_ON_NODE=" + gpus_on_node + " /bin/sh " +
                            testing_support::quote((dir / "wrapper.sh").string()) + " 2>/dev/null";
    const int raw = std::system(cmd.c_str());
    return WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  };
  EXPECT_EQ(run_with("1"), kNoGpuExitCode);
  EXPECT_FALSE(fs::exists(dir / "out"));  // the command never ran
  EXPECT_FALSE(run_began(dir.string(), 42));  // nor began
  EXPECT_FALSE(take_no_gpu_mark(dir.string(), 41));  // another lease's run: not this one
  EXPECT_EQ(run_with("0"), kNoGpuExitCode);
  EXPECT_TRUE(take_no_gpu_mark(dir.string(), 42));
  EXPECT_FALSE(fs::exists(no_gpu_file_path(dir.string())));  // taken
  EXPECT_EQ(run_with("2"), 0);
  EXPECT_EQ(testing_support::slurp(dir / "out"), "ran\n");
  EXPECT_FALSE(fs::exists(no_gpu_file_path(dir.string())));
  // Began: the mark names this run's lease, no other.
  EXPECT_TRUE(run_began(dir.string(), 42));
  EXPECT_FALSE(run_began(dir.string(), 41));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fairgpu::live::slurm
