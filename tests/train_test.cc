// End-to-end tests of `fairgpu-train` (issue 5), the live manager's demo
// training job, run as a child process: a run preempted and resumed many
// times (SIGUSR1, SIGTERM, SIGKILL, across emulated GPU types) ends with
// bit-identical weights and final loss to an uninterrupted run with the same
// seed; the loss really falls; --speed-map pacing holds the emulated rate;
// bad input exits 2 with one line.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "polling.h"
#include "run_binary.h"
#include "test_paths.h"

extern char** environ;

namespace fairgpu {
namespace {

namespace fs = std::filesystem;
using testing_support::slurp;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

void spit(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Exit status of a wait status: the exit code, or 128 + signal like a shell.
int decode(int raw) { return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw); }

// One run of FAIRGPU_TRAIN_BINARY with stdout and stderr going to files
// <log>.out and <log>.err, the test's environment minus FAIRGPU_* plus `env`.
// The destructor kills a run that is still going, so no test leaves a process.
class Child {
 public:
  Child(const std::vector<std::string>& args, const fs::path& log,
        const std::map<std::string, std::string>& env = {})
      : out_(log.string() + ".out"), err_(log.string() + ".err") {
    std::vector<std::string> argv_s{FAIRGPU_TRAIN_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e)
      if (std::string(*e).rfind("FAIRGPU_", 0) != 0) env_s.emplace_back(*e);
    for (const auto& [k, v] : env) env_s.push_back(k + "=" + v);
    std::vector<char*> argv, envp;
    for (auto& a : argv_s) argv.push_back(a.data());
    for (auto& e : env_s) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      ADD_FAILURE() << "posix_spawn " << argv[0] << ": " << rc;
      pid_ = -1;
      status_ = -1;
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  ~Child() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  void signal(int sig) {
    if (!status_) ::kill(pid_, sig);
  }

  // Exit status once the run has ended, without waiting.
  std::optional<int> poll() {
    int raw = 0;
    if (!status_ && ::waitpid(pid_, &raw, WNOHANG) == pid_) status_ = decode(raw);
    return status_;
  }

  int wait() {
    int raw = 0;
    if (!status_) status_ = ::waitpid(pid_, &raw, 0) == pid_ ? decode(raw) : -1;
    return *status_;
  }

  std::string out() const { return slurp(out_); }
  std::string err() const { return slurp(err_); }

 private:
  std::string out_, err_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// The progress file's number, nullopt while there is none. The file is
// replaced atomically, so it is always one whole line.
std::optional<std::uint64_t> read_progress(const fs::path& path) {
  if (!fs::exists(path)) return std::nullopt;
  const std::string text = slurp(path);
  EXPECT_TRUE(std::regex_match(text, std::regex("[0-9]+\n"))) << "progress file: '" << text << "'";
  return std::stoull(text);
}

// Polls until the progress file shows more than `above` iterations; nullopt
// when the run ends first or after 10 s.
std::optional<std::uint64_t> wait_for_progress(Child& child, const fs::path& path,
                                               std::uint64_t above) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && !child.poll()) {
    if (auto p = read_progress(path); p && *p > above) return p;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return std::nullopt;
}

// Polls until the run's stdout contains `needle`; false when the run ends
// first or after 10 s.
bool wait_for_output(Child& child, const std::string& needle) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && !child.poll()) {
    if (child.out().find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return child.out().find(needle) != std::string::npos;
}

// The number in a "<prefix><number>" line of `text`, nullopt when absent.
std::optional<std::uint64_t> number_after(const std::string& text, const std::string& prefix) {
  const auto at = text.find(prefix);
  if (at == std::string::npos) return std::nullopt;
  return std::stoull(text.substr(at + prefix.size()));
}

std::string final_loss_line(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("final loss: [^\n]*\n")) ? m.str() : "";
}

constexpr int kIterations = 3000;
constexpr int kCheckpointEvery = 200;

// An uninterrupted, unpaced run with seed 7: result.json and stdout.
struct Reference {
  json result;
  std::string out;
};

const Reference& reference() {
  static const Reference ref = [] {
    const fs::path dir =
        fs::path(testing::TempDir()) / ("fairgpu-train-ref-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    Child run({"--iterations", std::to_string(kIterations), "--seed", "7", "--checkpoint-dir",
               (dir / "ckpt").string()},
              dir / "run");
    Reference r;
    EXPECT_EQ(run.wait(), 0) << run.err();
    r.out = run.out();
    r.result = json::parse(slurp(dir / "ckpt" / "result.json"));
    fs::remove_all(dir);
    return r;
  }();
  return ref;
}

class TrainTest : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(testing::TempDir()) /
           ("fairgpu-train-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Arguments of the seed-7 job, checkpointing into dir_/ckpt.
  std::vector<std::string> job_args(std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"--iterations",
                                  std::to_string(kIterations),
                                  "--seed",
                                  "7",
                                  "--checkpoint-every",
                                  std::to_string(kCheckpointEvery),
                                  "--checkpoint-dir",
                                  (dir_ / "ckpt").string(),
                                  "--progress-file",
                                  (dir_ / "progress").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // The final run's outputs must equal the uninterrupted run's bit for bit.
  void expect_same_as_reference(const Child& last) const {
    const json result = json::parse(slurp(dir_ / "ckpt" / "result.json"));
    const json& ref = reference().result;
    EXPECT_EQ(result["iterations"], kIterations);
    EXPECT_EQ(result["weights_checksum"], ref["weights_checksum"]);
    // Doubles compared exactly: resume must be bit-exact.
    EXPECT_EQ(result["final_loss"].get<double>(), ref["final_loss"].get<double>());
    EXPECT_EQ(result["initial_loss"].get<double>(), ref["initial_loss"].get<double>());
    EXPECT_EQ(final_loss_line(last.out()), final_loss_line(reference().out));
    EXPECT_NE(final_loss_line(last.out()), "");
    EXPECT_EQ(read_progress(dir_ / "progress"), std::optional<std::uint64_t>(kIterations));
  }

  fs::path dir_;
};

TEST_F(TrainTest, PreemptedManyTimesEndsWithTheSameWeightsAsAnUninterruptedRun) {
  ASSERT_EQ(reference().result["iterations"], kIterations);
  // Ten preemptions, each at a different moment after some progress. Paced
  // (500 or 1000 iterations/s, the GPU type alternating between restarts as
  // if the job moved) so there is time to interrupt it.
  const std::vector<std::string> pacing{"--base-rate", "500", "--speed-map", "k80=1,v100=2"};
  const int extra_delay_ms[] = {0, 13, 29, 47, 5, 61, 19, 37, 3, 23};
  std::uint64_t resumed_at = 0;
  for (int round = 0; round < 10; ++round) {
    const std::string gpu = round % 2 ? "v100" : "k80";
    Child run(job_args(pacing), dir_ / ("run" + std::to_string(round)),
              {{"FAIRGPU_GPU_TYPE", gpu}});
    const auto seen = wait_for_progress(run, dir_ / "progress", resumed_at);
    ASSERT_TRUE(seen) << "run " << round << " made no progress: " << run.err();
    std::this_thread::sleep_for(std::chrono::milliseconds(extra_delay_ms[round]));
    const int sig = round % 3 == 2 ? SIGTERM : SIGUSR1;  // the agent's later stop signal
    run.signal(sig);
    ASSERT_EQ(run.wait(), 0) << run.err();
    const std::string out = run.out();
    if (round > 0) {
      EXPECT_EQ(number_after(out, "checkpoint.bin at iteration "), resumed_at) << out;
    }
    ASSERT_EQ(final_loss_line(out), "") << "run " << round << " finished before the signal";
    const auto at = number_after(out, "checkpointed at iteration ");
    ASSERT_TRUE(at) << out;
    EXPECT_GE(*at, *seen);
    EXPECT_LT(*at, static_cast<std::uint64_t>(kIterations));
    EXPECT_EQ(read_progress(dir_ / "progress"), at);
    resumed_at = *at;
  }

  // The rest unpaced: pacing only spends time, it changes no result.
  Child last(job_args(), dir_ / "last");
  ASSERT_EQ(last.wait(), 0) << last.err();
  EXPECT_EQ(number_after(last.out(), "checkpoint.bin at iteration "), resumed_at);
  expect_same_as_reference(last);
}

TEST_F(TrainTest, ResumesAfterSigkillLosingAtMostOneCheckpointInterval) {
  // Killed twice without warning (no checkpoint on signal), then run to the end.
  const std::vector<std::string> pacing{"--base-rate", "2000"};
  std::uint64_t resumed_at = 0, seen_at_kill = 0;
  for (int round = 0; round < 3; ++round) {
    Child run(job_args(round < 2 ? pacing : std::vector<std::string>{}),
              dir_ / ("run" + std::to_string(round)));
    if (round > 0) {
      ASSERT_TRUE(wait_for_output(run, "fairgpu-train: resumed from")) << run.err();
      const auto resumed = number_after(run.out(), "checkpoint.bin at iteration ");
      ASSERT_TRUE(resumed) << run.out();
      // The restart goes back to the last periodic checkpoint: at most one
      // interval of work behind what the killed run had reported.
      EXPECT_LE(*resumed, seen_at_kill);
      EXPECT_LE(seen_at_kill - *resumed, static_cast<std::uint64_t>(kCheckpointEvery));
      EXPECT_EQ(*resumed % kCheckpointEvery, 0u);
      EXPECT_GT(*resumed, resumed_at);
      resumed_at = *resumed;
    }
    if (round == 2) {
      ASSERT_EQ(run.wait(), 0) << run.err();
      expect_same_as_reference(run);
      break;
    }
    // Past at least one checkpoint boundary since the (re)start, and past any
    // stale number the killed run left in the progress file.
    const auto seen = wait_for_progress(run, dir_ / "progress", resumed_at + kCheckpointEvery + 50);
    ASSERT_TRUE(seen) << run.err();
    run.signal(SIGKILL);
    ASSERT_EQ(run.wait(), 128 + SIGKILL);
    seen_at_kill = *seen;
  }
}

TEST_F(TrainTest, LossFallsWithTraining) {
  const json& full = reference().result;
  const double initial = full["initial_loss"].get<double>();
  const double final_loss = full["final_loss"].get<double>();
  Child shorter({"--iterations", "300", "--seed", "7", "--checkpoint-dir", (dir_ / "c").string()},
                dir_ / "short");
  ASSERT_EQ(shorter.wait(), 0) << shorter.err();
  const json partial = json::parse(slurp(dir_ / "c" / "result.json"));
  // The untrained net is far off the teacher's targets (variance ~2); the
  // label noise (sd 0.1) bounds the reachable loss near 0.01.
  EXPECT_GT(initial, 0.5);
  EXPECT_EQ(partial["initial_loss"].get<double>(), initial);
  EXPECT_LT(partial["final_loss"].get<double>(), initial);
  EXPECT_LT(final_loss, partial["final_loss"].get<double>());
  EXPECT_LT(final_loss, 0.05 * initial);
  EXPECT_GT(final_loss, 0.005);
  EXPECT_EQ(full["seed"], 7);
}

// One version of a progress file: its count and when the writer made it
// (the file is replaced by a rename, so its mtime is the write's time).
struct ProgressStamp {
  std::uint64_t iterations = 0;
  double written_s = 0.0;  // CLOCK_REALTIME seconds
};

std::optional<ProgressStamp> stamp_progress(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  char buf[32] = {};
  const bool ok = ::fstat(fd, &st) == 0;
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (!ok || n <= 0) return std::nullopt;
  return ProgressStamp{std::strtoull(buf, nullptr, 10),
                       static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9};
}

TEST_F(TrainTest, SpeedMapPacesTheRunToTheEmulatedRate) {
  // Three runs of ~4 s side by side: 20 iterations/s x speed 1 (k80), x
  // speed 2 (v100), and x 1.5 for two workers under --scaling. Rates this low
  // leave the pacer, not the CPU, setting the pace even under ASan on a
  // loaded 2-core machine (at 200-400 it/s a starved run fell to 118). The rate is
  // the pacer's: measured between the progress file's versions while the run
  // trains, with the times its writer stamped them (mtime), from the first
  // version after the start to the last one before the end. So start-up,
  // data generation and the final evaluation (slow on a busy CI machine) are
  // not counted, and neither is how late this test looked at the file.
  struct Case {
    std::string gpu, workers;
    double rate;
  };
  struct Watch {
    std::unique_ptr<Child> child;
    fs::path progress;
    std::optional<ProgressStamp> first, last;  // last: before the final write
    bool done = false;
  };
  constexpr double kSeconds = 4.0;
  const std::vector<Case> cases{{"k80", "1", 20}, {"v100", "1", 40}, {"k80", "2", 30}};
  std::vector<Watch> runs(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    runs[i].progress = dir_ / ("progress" + std::to_string(i));
    runs[i].child = std::make_unique<Child>(
        std::vector<std::string>{"--iterations",
                                 std::to_string(static_cast<int>(cases[i].rate * kSeconds)),
                                 "--base-rate", "20", "--speed-map", "k80=1,v100=2", "--scaling",
                                 "1=1,2=1.5", "--progress-file", runs[i].progress.string()},
        dir_ / ("run" + std::to_string(i)),
        std::map<std::string, std::string>{{"FAIRGPU_GPU_TYPE", cases[i].gpu},
                                           {"FAIRGPU_NUM_WORKERS", cases[i].workers}});
  }
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  for (std::size_t done = 0; done < cases.size() && Clock::now() < deadline;) {
    for (std::size_t i = 0; i < runs.size(); ++i) {
      Watch& w = runs[i];
      if (w.done) continue;
      const bool exited = w.child->poll().has_value();
      const auto total = static_cast<std::uint64_t>(cases[i].rate * kSeconds);
      if (auto p = stamp_progress(w.progress); p && p->iterations > 0 && p->iterations < total) {
        if (!w.first) w.first = p;
        if (!w.last || p->iterations > w.last->iterations) w.last = p;
      }
      if (exited) {
        w.done = true;
        ++done;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<double> measured(cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].gpu + " x" + cases[i].workers);
    Watch& w = runs[i];
    ASSERT_TRUE(w.done);
    EXPECT_EQ(w.child->wait(), 0) << w.child->err();
    EXPECT_NE(final_loss_line(w.child->out()), "");
    const auto total = static_cast<std::uint64_t>(cases[i].rate * kSeconds);
    EXPECT_EQ(read_progress(w.progress), total);
    ASSERT_TRUE(w.first && w.last);
    // The window covers most of the run: from its first quarter to its last.
    ASSERT_LT(w.first->iterations, total / 4);
    ASSERT_GT(w.last->iterations, 3 * total / 4);
    const double seconds = w.last->written_s - w.first->written_s;
    measured[i] = static_cast<double>(w.last->iterations - w.first->iterations) / seconds;
    std::cout << cases[i].gpu << " x" << cases[i].workers << ": " << measured[i] << " it/s over "
              << seconds << " s (emulated " << cases[i].rate << ")\n";
    // The pacer never runs faster than the emulated device; a machine short
    // of CPU can only make it slower, so no lower bound (a CI machine running
    // four tests on two cores ran all three at 0.66x).
    EXPECT_LE(measured[i], 1.15 * cases[i].rate) << seconds << " s";
  }
  // What the speed map and the scaling say, from the runs' own rates (side by
  // side, a starved machine slows all three alike): v100 twice k80, two
  // workers 1.5x one.
  EXPECT_NEAR(measured[1] / measured[0], 2.0, 0.3);
  EXPECT_NEAR(measured[2] / measured[0], 1.5, 0.225);
}

// A run stopped by the machine (here SIGSTOP, on a loaded machine its CPU
// taken away) does not make up for the stall once it runs again: an emulated
// device runs no faster after a stall. Catching up made profiles measured on a
// loaded machine read up to 3x the emulated rate. Only an upper bound is
// asserted: a slow machine can only lower what the run does after the stall.
TEST_F(TrainTest, AStalledRunDoesNotMakeUpForTheStall) {
  constexpr double kRate = 20.0;
  Child run({"--iterations", "400", "--base-rate", "20", "--speed-map", "k80=1", "--progress-file",
             (dir_ / "progress").string()},
            dir_ / "run", {{"FAIRGPU_GPU_TYPE", "k80"}});
  ASSERT_TRUE(wait_for_progress(run, dir_ / "progress", 4));
  run.signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // 40 iterations of schedule missed
  const std::uint64_t before = read_progress(dir_ / "progress").value_or(0);
  const auto resumed = Clock::now();
  run.signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const std::uint64_t after = read_progress(dir_ / "progress").value_or(0);
  const double seconds = testing_support::since(resumed);
  // At most the rate over the time since the resume, plus the schedule's
  // catch-up allowance (0.1 s) and an iteration in flight on each side.
  EXPECT_LE(static_cast<double>(after - before), kRate * (seconds + 0.1) + 2.0)
      << before << " -> " << after << " in " << seconds << " s after a 2 s stall";
  EXPECT_TRUE(wait_for_progress(run, dir_ / "progress", after));  // and it runs on
}

// Rank 0 of a gang whose workers span nodes runs at --cross-node-factor times
// its rate, as the simulator charges a spread gang (consolidated x factor);
// one node's gang, or no factor given, runs at the full rate.
TEST_F(TrainTest, CrossNodeFactorSlowsOnlyAGangSpreadOverNodes) {
  const std::vector<std::string> paced{
      "--iterations",        "20", "--base-rate", "10", "--speed-map", "slow=1,fast=3",
      "--cross-node-factor", "0.8"};
  auto rate_line = [&](const std::string& name, std::vector<std::string> args,
                       const std::string& local_world_size) {
    Child run(args, dir_ / name,
              {{"FAIRGPU_GPU_TYPE", "fast"},
               {"FAIRGPU_NUM_WORKERS", "2"},
               {"WORLD_SIZE", "2"},
               {"RANK", "0"},
               {"LOCAL_WORLD_SIZE", local_world_size},
               {"FAIRGPU_CHECKPOINT_DIR", (dir_ / (name + "-ckpt")).string()}});
    EXPECT_EQ(run.wait(), 0) << run.err();
    const std::string out = run.out();
    const auto at = out.find("fairgpu-train: emulating");
    return at == std::string::npos ? out : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_EQ(rate_line("spread", paced, "1"),
            "fairgpu-train: emulating 48 iterations/s (base 10 x speed 3 of 'fast' x scaling 2 "
            "for 2 workers x 0.8 over nodes)");
  EXPECT_EQ(rate_line("one-node", paced, "2"),
            "fairgpu-train: emulating 60 iterations/s (base 10 x speed 3 of 'fast' x scaling 2 "
            "for 2 workers)");
  std::vector<std::string> no_factor = paced;
  no_factor.resize(no_factor.size() - 2);
  EXPECT_EQ(rate_line("no-factor", no_factor, "1"),
            "fairgpu-train: emulating 60 iterations/s (base 10 x speed 3 of 'fast' x scaling 2 "
            "for 2 workers)");
}

// Issue 12 item 5: a gang's ranks other than 0 report their rendezvous,
// train and write nothing, and exit 0 when rank 0's result appears or on the
// stop signal.
TEST_F(TrainTest, RanksOtherThanZeroFollowRankZero) {
  const fs::path ckpt = dir_ / "ckpt";
  const std::map<std::string, std::string> rank2 = {
      {"MASTER_ADDR", "node-a"},
      {"MASTER_PORT", "29507"},
      {"WORLD_SIZE", "4"},
      {"RANK", "2"},
      {"NODE_RANK", "1"},
      {"LOCAL_WORLD_SIZE", "2"},
      {"FAIRGPU_CHECKPOINT_DIR", ckpt.string()},
      {"FAIRGPU_PROGRESS_FILE", (dir_ / "p1").string()}};
  Child follower({"--iterations", "100"}, dir_ / "follower", rank2);
  ASSERT_TRUE(testing_support::wait_for(
      [&] { return follower.out().find("follows rank 0") != std::string::npos; }, 10))
      << follower.err();
  EXPECT_NE(follower.out().find("fairgpu-train: rendezvous MASTER_ADDR=node-a MASTER_PORT=29507 "
                                "WORLD_SIZE=4 RANK=2 NODE_RANK=1 LOCAL_WORLD_SIZE=2"),
            std::string::npos)
      << follower.out();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(follower.poll(), std::nullopt);  // waits for rank 0
  EXPECT_FALSE(fs::exists(ckpt / "checkpoint.bin"));
  EXPECT_FALSE(fs::exists(dir_ / "p1"));
  // Rank 0 (no signal, same checkpoint dir) trains and writes the result.
  auto rank0 = rank2;
  rank0["RANK"] = "0";
  rank0["NODE_RANK"] = "0";
  rank0["FAIRGPU_PROGRESS_FILE"] = (dir_ / "p0").string();
  Child leader({"--iterations", "100"}, dir_ / "leader", rank0);
  EXPECT_EQ(leader.wait(), 0) << leader.err();
  EXPECT_NE(final_loss_line(leader.out()), "");
  EXPECT_EQ(follower.wait(), 0) << follower.err();
  EXPECT_NE(follower.out().find("rank 2: rank 0 finished"), std::string::npos) << follower.out();

  // Revoked: the stop signal ends a follower at once, cleanly.
  fs::remove_all(ckpt);
  Child stopped({"--iterations", "100"}, dir_ / "stopped", rank2);
  ASSERT_TRUE(testing_support::wait_for(
      [&] { return stopped.out().find("follows rank 0") != std::string::npos; }, 10));
  stopped.signal(SIGUSR1);
  EXPECT_EQ(stopped.wait(), 0);
  EXPECT_NE(stopped.out().find("rank 2 stopped by signal"), std::string::npos) << stopped.out();
}

TEST_F(TrainTest, BatchScheduleChangesTheBatchAtItsEpochAndResumesBitExact) {
  // 4096 samples: epoch 0 is 128 steps at batch 32, then batch 64.
  const std::vector<std::string> schedule{"--seed", "3", "--batch-schedule", "0:32,1:64"};
  auto run = [&](const std::string& name, const std::string& iterations) {
    std::vector<std::string> args{"--iterations", iterations, "--checkpoint-dir",
                                  (dir_ / name).string(), "--progress-file",
                                  (dir_ / (name + ".progress")).string()};
    args.insert(args.end(), schedule.begin(), schedule.end());
    Child c(args, dir_ / (name + "-out"));
    EXPECT_EQ(c.wait(), 0) << c.err();
    return c.out();
  };
  const std::string whole = run("whole", "400");
  EXPECT_NE(whole.find("batch size 64 from iteration 128"), std::string::npos) << whole;
  EXPECT_EQ(slurp(dir_ / "whole.progress"), "400 64\n");
  run("split", "100");  // stops in epoch 0, then resumes past the change
  EXPECT_EQ(slurp(dir_ / "split.progress"), "100 32\n");
  run("split", "400");
  const json a = json::parse(slurp(dir_ / "whole" / "result.json"));
  const json b = json::parse(slurp(dir_ / "split" / "result.json"));
  EXPECT_EQ(a["weights_checksum"], b["weights_checksum"]);
  EXPECT_EQ(a["final_loss"].get<double>(), b["final_loss"].get<double>());
  // And the schedule matters: batch 32 throughout trains otherwise.
  Child plain({"--iterations", "400", "--seed", "3", "--checkpoint-dir", (dir_ / "plain").string()},
              dir_ / "plain-out");
  ASSERT_EQ(plain.wait(), 0);
  EXPECT_NE(json::parse(slurp(dir_ / "plain" / "result.json"))["weights_checksum"],
            a["weights_checksum"]);
}

TEST_F(TrainTest, BadInputExitsTwoWithOneLine) {
  const fs::path ckpt = dir_ / "ckpt";
  const std::string file = (ckpt / "checkpoint.bin").string();
  Child first({"--iterations", "300", "--checkpoint-dir", ckpt.string()}, dir_ / "first");
  ASSERT_EQ(first.wait(), 0) << first.err();
  const std::string good = slurp(file);
  ASSERT_GT(good.size(), 1000u);

  int n = 0;
  // Runs with `args` (+ `env`); expects exit 2, one stderr line containing
  // every `needles` string, and the checkpoint left as it was.
  auto expect_rejected = [&](std::vector<std::string> args, std::vector<std::string> needles,
                             std::map<std::string, std::string> env = {}) {
    const std::string before = slurp(file);
    Child run(args, dir_ / ("bad" + std::to_string(n++)), env);
    EXPECT_EQ(run.wait(), 2);
    const std::string err = run.err();
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    for (const auto& needle : needles) EXPECT_NE(err.find(needle), std::string::npos) << err;
    EXPECT_EQ(final_loss_line(run.out()), "");
    EXPECT_EQ(slurp(file), before) << "the checkpoint was touched";
  };
  const std::vector<std::string> resume{"--iterations", "600", "--checkpoint-dir", ckpt.string()};

  std::string flipped = good;
  flipped[good.size() / 2] = static_cast<char>(flipped[good.size() / 2] ^ 0x10);
  spit(file, flipped);
  expect_rejected(resume, {file, "corrupt"});
  spit(file, good.substr(0, good.size() - 100));  // torn write
  expect_rejected(resume, {file, "corrupt"});
  spit(file, "");
  expect_rejected(resume, {file});

  spit(file, good);
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = resume;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  expect_rejected(with({"--seed", "2"}), {file, "--seed 1", "--seed 2"});
  expect_rejected(with({"--hidden", "16"}), {file, "--hidden"});
  expect_rejected({"--iterations", "100", "--checkpoint-dir", ckpt.string()}, {file, "300"});
  expect_rejected(with({"--base-rate", "10", "--speed-map", "k80=fast", "--gpu-type", "k80"}),
                  {"--speed-map", "k80=fast"});
  expect_rejected(with({"--base-rate", "10", "--speed-map", "k80=1,v100", "--gpu-type", "k80"}),
                  {"--speed-map", "v100"});
  expect_rejected(with({"--base-rate", "10", "--speed-map", "k80=1,v100=4", "--gpu-type", "a100"}),
                  {"--speed-map", "a100"});
  expect_rejected(with({"--base-rate", "10", "--speed-map", "k80=1,v100=4"}), {"a100"},
                  {{"FAIRGPU_GPU_TYPE", "a100"}});
  expect_rejected(with({"--base-rate", "10", "--scaling", "1=1,2=1.8"}), {"--scaling", "4"},
                  {{"FAIRGPU_NUM_WORKERS", "4"}});
  expect_rejected(with({"--base-rate", "10", "--cross-node-factor", "0"}),
                  {"--cross-node-factor", "(0, 1]"});
  expect_rejected(with({"--base-rate", "10", "--cross-node-factor", "1.5"}),
                  {"--cross-node-factor", "1.5"});
  expect_rejected(with({"--cross-node-factor", "0.8"}), {"--cross-node-factor", "--base-rate"});
  expect_rejected(with({"--lr", "-1"}), {"--lr"});
  expect_rejected(with({"--batch-schedule", "1:32"}), {"--batch-schedule", "epoch 0"});
  expect_rejected(with({"--batch-schedule", "0:32,0:64"}), {"--batch-schedule", "increase"});
  expect_rejected(with({"--batch-schedule", "0:32,4:0"}), {"--batch-schedule", "'4:0'"});
  expect_rejected(resume, {"WORLD_SIZE", "'0'"}, {{"WORLD_SIZE", "0"}});
  expect_rejected(resume, {"RANK 3 + LOCAL_WORLD_SIZE 2 exceeds WORLD_SIZE 4"},
                  {{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_WORLD_SIZE", "2"}});
  expect_rejected({"--seed", "3"}, {"--iterations"});

  // The untouched checkpoint still resumes.
  Child ok(resume, dir_ / "ok");
  EXPECT_EQ(ok.wait(), 0) << ok.err();
  EXPECT_EQ(number_after(ok.out(), "checkpoint.bin at iteration "), 300u);
}

}  // namespace
}  // namespace fairgpu
