// Load that means what it says (issue 29 item 2): the offered load over the
// arrival window and --load, Alibaba's censored run times (--censored) and
// Poisson arrivals for a trace (--arrivals), on traces small enough to check
// by hand; and the CLI's one-line errors (exit 2) for bad values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/scenario.h"
#include "fairgpu/workload.h"
#include "run_binary.h"
#include "test_files.h"

namespace fairgpu {
namespace {

namespace fs = std::filesystem;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;

class LoadTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("fairgpu-load-" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  RunResult run(const std::vector<std::string>& args) { return run_binary(args, dir_, dir_, 120); }
  fs::path dir_;
};

std::size_t lines(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// Three jobs on 4 GPUs of one type (so each job's work on the average GPU is
// its duration): arrivals 0, 50, 100 (span 100).
const char* kThreeJobs =
    "job_id,tenant,job_type,num_workers,arrival_s,duration_s\n"
    "j1,a,A3C,1,0,100\n"
    "j2,b,A3C,2,50,100\n"
    "j3,c,A3C,1,100,10\n";

TEST_F(LoadTest, WindowLoadCountsTheWorkDoneInsideTheArrivalWindow) {
  ScenarioOptions o;
  o.cluster_spec = "v100:4:4";
  o.trace_path = file("three.csv", kThreeJobs);
  const Scenario sc = load_scenario(o);
  // Inside [0, 100]: j1 100, j2 2 x 50, j3 0 GPU-seconds: 200 / (4 x 100).
  EXPECT_NEAR(window_load(sc.model, sc.workload), 0.5, 1e-12);
  // All the work: 100 + 200 + 10 over 4 x 100.
  EXPECT_NEAR(offered_load(sc.model, sc.workload), 0.775, 1e-12);
  EXPECT_NEAR(sc.load.window, 0.5, 1e-12);
  EXPECT_NEAR(sc.load.span_s, 100, 1e-12);
  EXPECT_NE(sc.description.find("offered load 0.5 over the 0.0278 h arrival window (all the work, "
                                "wherever done: 0.775)"),
            std::string::npos)
      << sc.description;
}

TEST_F(LoadTest, LoadScalesArrivalsToTheWindowLoad) {
  ScenarioOptions o;
  o.cluster_spec = "v100:4:4";
  o.trace_path = file("three.csv", kThreeJobs);
  // By hand: arrivals x f, window 100 f. For 1 <= f <= 2 the load is
  // (100 + 100 f) / (400 f): 0.45 at f = 1.25; for f >= 2 it is
  // 300 / (400 f): 0.3 at f = 2.5.
  for (auto [target, factor] : {std::pair{0.45, 1.25}, std::pair{0.3, 2.5}}) {
    o.load = target;
    const Scenario sc = load_scenario(o);
    ASSERT_EQ(sc.workload.jobs.size(), 3u);
    EXPECT_NEAR(sc.workload.jobs[1].arrival_s, 50 * factor, 1e-6) << target;
    EXPECT_NEAR(sc.workload.jobs[2].arrival_s, 100 * factor, 1e-6) << target;
    EXPECT_EQ(sc.workload.jobs[2].duration_s, 10);  // durations kept
    EXPECT_NEAR(window_load(sc.model, sc.workload), target, 1e-9);
  }
  // With the arrivals compressed to nothing the jobs keep 1 + 2 x 0.5 + 0 of
  // the 4 GPUs busy: 0.5 is the most moving arrivals can give.
  o.load = 0.5;
  try {
    load_scenario(o);
    ADD_FAILURE() << "load 0.5 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "load");
    EXPECT_NE(e.problem().find("at most 0.5 of the 4 GPUs"), std::string::npos) << e.problem();
  }
}

// A work-conserving policy's utilisation over the arrival window is the
// window load while it is below 1: fifo on 200 generated jobs at 0.6.
TEST_F(LoadTest, FifoUtilisationOverTheArrivalWindowIsTheLoad) {
  std::ostringstream trace;
  trace << "job_id,tenant,job_type,num_workers,arrival_s,duration_s\n";
  std::uint64_t x = 12345;
  for (int i = 0; i < 200; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    const double duration = 600 + static_cast<double>(x >> 40) / (1ULL << 24) * 3000;  // 600-3600 s
    trace << "j" << i << ",t" << i % 5 << ",A3C,1," << i * 60 << "," << duration << "\n";
  }
  const std::string path = file("two-hundred.csv", trace.str());
  const RunResult r = run({"simulate", "--policy", "fifo", "--cluster-spec", "v100:8:8", "--trace",
                           path, "--load", "0.6", "--series-window", "60", "--out", "o",
                           "--quiet", "--no-pdf"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("offered load 0.6 over the"), std::string::npos) << r.out;
  // The arrival window from jobs.csv, the busy GPU-seconds inside it from
  // utilisation.csv (60 s rows, pro rata at the window's ends).
  double first = 1e300, last = 0;
  {
    std::istringstream jobs(slurp(dir_ / "o" / "jobs.csv"));
    std::string line;
    std::getline(jobs, line);
    while (std::getline(jobs, line)) {
      std::vector<std::string> cells;
      std::stringstream ss(line);
      for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
      first = std::min(first, std::stod(cells[4]));
      last = std::max(last, std::stod(cells[4]));
    }
  }
  double busy = 0;
  std::istringstream util(slurp(dir_ / "o" / "utilisation.csv"));
  std::string line;
  std::getline(util, line);
  while (std::getline(util, line)) {
    std::stringstream ss(line);
    std::string start, end, gpu_s;
    std::getline(ss, start, ',');
    std::getline(ss, end, ',');
    std::getline(ss, gpu_s, ',');
    const double a = std::stod(start), b = std::stod(end);
    const double inside = std::max(0.0, std::min(b, last) - std::max(a, first));
    if (b > a) busy += std::stod(gpu_s) * inside / (b - a);
  }
  EXPECT_NEAR(busy / (8 * (last - first)), 0.6, 0.05);
}

// ---- Alibaba's censored run times ---------------------------------------------

// p1 and p3 were still running when the trace was cut.
const char* kPods =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "p1,1000,1024,1,1000,,LS,Running,0,36000,0\n"
    "p2,1000,1024,2,1000,,LS,Succeeded,100,1100,100\n"
    "p3,1000,1024,1,1000,,LS,Running,200,1200,200\n"
    "p4,1000,1024,1,1000,,LS,Failed,300,400,300\n";

TraceOptions a3c(const std::string& censored) {
  TraceOptions o;
  o.job_types = {"A3C"};
  o.censored = parse_censored(censored);
  return o;
}

std::vector<std::pair<std::string, double>> durations(const Workload& w) {
  std::vector<std::pair<std::string, double>> out;
  for (const JobSpec& j : w.jobs) out.emplace_back(j.id, j.duration_s);
  return out;
}

bool has_note(const Workload& w, const std::string& text) {
  return std::any_of(w.notes.begin(), w.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

TEST_F(LoadTest, CensoredPodsAreKeptDroppedOrCappedAndCounted) {
  const std::string pods = file("pods.csv", kPods);
  using D = std::vector<std::pair<std::string, double>>;
  const Workload keep = read_alibaba_trace(pods, a3c("keep"));
  EXPECT_EQ(durations(keep), (D{{"p1", 36000}, {"p2", 1000}, {"p3", 1000}, {"p4", 100}}));
  // Censored GPU-time 36000 + 1000 of 36000 + 2 x 1000 + 1000 + 100.
  EXPECT_TRUE(has_note(keep, "2 GPU pods censored"));
  EXPECT_TRUE(has_note(keep, "94.6% of the recorded GPU-time): kept with their recorded run "
                             "times (--censored keep)"));
  const Workload drop = read_alibaba_trace(pods, a3c("drop"));
  EXPECT_EQ(durations(drop), (D{{"p2", 1000}, {"p4", 100}}));
  EXPECT_TRUE(has_note(drop, "2 GPU pods read as jobs"));
  EXPECT_TRUE(has_note(drop, "2 GPU pods censored"));
  EXPECT_TRUE(has_note(drop, "): dropped (--censored drop)"));
  const Workload cap = read_alibaba_trace(pods, a3c("cap=0.5"));  // 1800 s
  EXPECT_EQ(durations(cap), (D{{"p1", 1800}, {"p2", 1000}, {"p3", 1000}, {"p4", 100}}));
  EXPECT_TRUE(has_note(cap, "run times capped at 0.5 h (--censored cap=0.5)"));
  EXPECT_EQ(censored_text(parse_censored("cap=0.5")), "cap=0.5");
}

TEST_F(LoadTest, BadCensoredValuesAreInputErrors) {
  for (const char* bad : {"cap=0", "cap=-1", "cap=", "cap=1h", "cap=inf", "sometimes", ""}) {
    try {
      parse_censored(bad);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "censored") << bad;
    }
  }
}

// ---- --arrivals poisson:R ----------------------------------------------------------

std::string batch_trace(int jobs) {
  std::ostringstream t;
  t << "job_id,tenant,job_type,num_workers,arrival_s,duration_s\n";
  for (int i = 0; i < jobs; ++i) t << "b" << i << ",t" << i % 3 << ",A3C,1,0,600\n";
  return t.str();
}

TEST_F(LoadTest, PoissonArrivalsGiveABatchTraceArrivalsSeeded) {
  ScenarioOptions o;
  o.cluster_spec = "v100:8:8";
  o.trace_path = file("batch.csv", batch_trace(500));
  try {
    o.load = 0.5;
    load_scenario(o);
    ADD_FAILURE() << "a batch trace's load scaled";
  } catch (const InputError& e) {
    EXPECT_NE(e.problem().find("--arrivals poisson:R"), std::string::npos) << e.problem();
  }
  o.load = 0;
  o.arrivals = "poisson:60";
  const Scenario a = load_scenario(o);
  const Scenario b = load_scenario(o);
  ASSERT_EQ(a.workload.jobs.size(), 500u);
  EXPECT_EQ(a.workload.jobs.front().arrival_s, 0);
  for (std::size_t i = 0; i < a.workload.jobs.size(); ++i) {
    EXPECT_EQ(a.workload.jobs[i].id, "b" + std::to_string(i));  // the file's order
    EXPECT_EQ(a.workload.jobs[i].arrival_s, b.workload.jobs[i].arrival_s);
    if (i > 0) {
      EXPECT_GT(a.workload.jobs[i].arrival_s, a.workload.jobs[i - 1].arrival_s);
    }
  }
  // 499 exponential gaps of mean 60 s: their mean within 15% (5 sigma).
  EXPECT_NEAR(a.workload.jobs.back().arrival_s / 499, 60, 9);
  o.seed = 2;
  EXPECT_NE(load_scenario(o).workload.jobs[1].arrival_s, a.workload.jobs[1].arrival_s);
  // And then --load scales them.
  o.load = 0.5;
  const Scenario scaled = load_scenario(o);
  EXPECT_NEAR(window_load(scaled.model, scaled.workload), 0.5, 1e-9);
}

TEST_F(LoadTest, BadArrivalsAreInputErrors) {
  ScenarioOptions o;
  o.cluster_spec = "v100:8:8";
  o.trace_path = file("batch.csv", batch_trace(3));
  for (const char* bad : {"poisson:0", "poisson:", "poisson:-3", "poisson:nan", "poisson:2x",
                          "gamma:3", "60"}) {
    o.arrivals = bad;
    try {
      load_scenario(o);
      ADD_FAILURE() << "'" << bad << "' accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "arrivals") << bad;
    }
  }
  ScenarioOptions generated;
  generated.arrivals = "poisson:60";
  EXPECT_THROW(load_scenario(generated), InputError);  // it has --arrivals-per-hour
}

TEST_F(LoadTest, CliBadValuesAreOneLineAndExit2) {
  const std::string batch = file("batch.csv", batch_trace(3));
  const std::string three = file("three.csv", kThreeJobs);
  const std::vector<std::vector<std::string>> cases = {
      {"--trace", batch, "--arrivals", "poisson:0"},
      {"--trace", batch, "--censored", "cap=x"},
      {"--trace", three, "--load", "0.6"},  // above the 0.5 it can reach
      {"--trace", batch, "--load", "0.5"},  // a batch trace without --arrivals
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"simulate", "--cluster-spec", "v100:4:4", "--quiet", "--out", "o"};
    args.insert(args.end(), c.begin(), c.end());
    const RunResult r = run(args);
    EXPECT_EQ(r.status, 2) << c.back() << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(LoadTest, CliPrintsTheCensoredCount) {
  const std::string pods = file("pods.csv", kPods);
  const std::string nodes = file("nodes.csv",
                                 "sn,cpu_milli,memory_mib,gpu,model\n"
                                 "n1,32000,262144,8,V100M32\n");
  const RunResult r = run({"simulate", "--policy", "fifo", "--trace", pods, "--alibaba-nodes", nodes,
                           "--censored", "drop", "--quiet", "--out", "o", "--no-pdf"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("2 GPU pods censored"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("(alibaba trace, 2 jobs)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fairgpu
