// One set of defaults (issue 29 item 3) and compare's outputs (item 5), run
// through the built binary: a sweep cell is the same compare's row; compare's
// default list shows gavel at both levels; the printed header states the
// offered load; the first scheduling point is the first arrival; compare and
// shockwave-eval write every per-policy file and a progress line per finished
// run, which --quiet silences.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "run_binary.h"
#include "test_files.h"

namespace fairgpu {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;
using testing_support::source_path;

const std::string kShared = FAIRGPU_SHARED_DATA;
const std::string kCluster = source_path("examples/oef-like-cluster.json");
const std::string kTrace = source_path("examples/small-trace.csv");

class SimDefaultsTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("fairgpu-defaults-" +
            std::string(testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::vector<std::string>& args) { return run_binary(args, dir_, dir_, 300); }
  fs::path dir_;
};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}

// The folder of a sweep's run of `policy_folder`, seed `seed` (one variant).
fs::path sweep_run(const fs::path& sweep, const std::string& policy_folder, int seed) {
  for (const auto& variant : fs::directory_iterator(sweep / "runs")) {
    const fs::path p = variant.path() / policy_folder / ("seed-" + std::to_string(seed));
    if (fs::exists(p / "jobs.csv")) return p;
  }
  return {};
}

// The same experiment as a sweep cell and as a compare row: the same jobs,
// byte for byte, under every policy of the list, share policies with their
// own default rounds in both (gavel's once differed: 360 s alone, 300 s in
// compare).
TEST_F(SimDefaultsTest, SweepCellEqualsTheSameComparesRow) {
  const std::vector<std::string> policies = {"oef-coop", "gavel", "gandiva-fair"};
  const std::string list = "oef-coop,gavel,gandiva-fair";
  const RunResult sweep = run({"sweep", "--policies", list, "--seeds", "2", "--loads", "0.6",
                               "--jobs", "40", "-j", "2", "--quiet", "--no-pdf", "--out", "s"});
  ASSERT_EQ(sweep.status, 0) << sweep.err;
  const RunResult cmp = run({"compare", "--policies", list, "--seed", "2", "--load", "0.6", "--jobs",
                             "40", "--quiet", "--no-pdf", "--out", "c"});
  ASSERT_EQ(cmp.status, 0) << cmp.err;
  for (const std::string& p : policies) {
    const fs::path cell = sweep_run(dir_ / "s", p, 2);
    ASSERT_FALSE(cell.empty()) << p;
    EXPECT_EQ(slurp(cell / "jobs.csv"), slurp(dir_ / "c" / p / "jobs.csv")) << p;
    const json a = json::parse(slurp(cell / "summary.json"));
    const json b = json::parse(slurp(dir_ / "c" / p / "summary.json"));
    EXPECT_EQ(a["round_s"], b["round_s"]) << p;
    EXPECT_EQ(a["avg_jct_s"], b["avg_jct_s"]) << p;
  }
}

TEST_F(SimDefaultsTest, CompareShowsGavelAtBothLevelsByDefault) {
  const RunResult r = run({"compare", "--trace", kTrace, "--cluster", kCluster, "--quiet",
                           "--no-pdf", "--out", "c"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* row : {"\ngavel ", "\ngavel:level=tenant "})
    EXPECT_TRUE(contains(r.out, row)) << row << " in\n" << r.out;
  EXPECT_EQ(json::parse(slurp(dir_ / "c" / "gavel" / "summary.json"))["level"], "job");
  EXPECT_EQ(json::parse(slurp(dir_ / "c" / "gavel_level-tenant" / "summary.json"))["level"],
            "tenant");
}

TEST_F(SimDefaultsTest, HeaderStatesTheOfferedLoad) {
  // The built-in scenario: 300 jobs over 5.43 h needing 9.42 clusters' worth
  // of that window (a batch drain), most of it past the window.
  const RunResult r = run({"simulate", "--quiet", "--no-pdf", "--horizon-hours", "1", "--out", "o"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(lines_of(r.out).at(0),
                       "; offered load 2.15 over the 5.43 h arrival window (all the work, "
                       "wherever done: 9.42)"))
      << r.out;
  const RunResult loaded =
      run({"simulate", "--quiet", "--no-pdf", "--load", "0.8", "--horizon-hours", "1", "--out", "o"});
  ASSERT_EQ(loaded.status, 0) << loaded.err;
  EXPECT_TRUE(contains(lines_of(loaded.out).at(0), "; offered load 0.8 over the")) << loaded.out;
}

// A trace whose first job arrives at 1000 s: its first scheduling point is
// then, not at 0 (the round grid starts at the first arrival).
TEST_F(SimDefaultsTest, FirstSchedulingPointIsTheFirstArrival) {
  {
    std::ofstream t(dir_ / "late.csv");
    t << "job_id,tenant,job_type,num_workers,arrival_s,duration_s\n"
         "j1,a,A3C,1,1000,600\n"
         "j2,b,A3C,1,1100,600\n";
  }
  for (const char* policy : {"oef-coop", "gavel", "fifo"}) {
    const RunResult r = run({"simulate", "--policy", policy, "--trace", (dir_ / "late.csv").string(),
                             "--cluster-spec", "v100:8", "--quiet", "--no-pdf", "--out", "o"});
    ASSERT_EQ(r.status, 0) << r.err;
    const std::vector<std::string> rows = lines_of(slurp(dir_ / "o" / "jobs.csv"));
    ASSERT_GE(rows.size(), 2u);
    std::vector<std::string> cells;
    std::stringstream ss(rows[1]);
    for (std::string c; std::getline(ss, c, ',');) cells.push_back(c);
    EXPECT_EQ(cells[0], "j1");
    EXPECT_EQ(cells[5], "1000") << policy;  // first_start
  }
}

// ---- outputs (item 5) -------------------------------------------------------

TEST_F(SimDefaultsTest, CompareWritesAProgressLinePerFinishedRunQuietSilences) {
  const RunResult r = run({"compare", "--policies", "oef-coop,fifo", "--trace", kTrace, "--cluster",
                           kCluster, "--no-pdf", "--out", "c"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> err = lines_of(r.err);  // stderr is a file here, not a TTY
  ASSERT_EQ(err.size(), 2u) << r.err;
  EXPECT_EQ(err[0].rfind("fairgpu: compare: oef-coop done (1 of 2 runs), ", 0), 0u) << r.err;
  EXPECT_EQ(err[1].rfind("fairgpu: compare: fifo done (2 of 2 runs), ", 0), 0u) << r.err;
  const RunResult quiet = run({"compare", "--policies", "oef-coop,fifo", "--trace", kTrace,
                               "--cluster", kCluster, "--no-pdf", "--quiet", "--out", "c"});
  ASSERT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
}

TEST_F(SimDefaultsTest, SweepWritesAProgressLinePerFinishedRun) {
  const RunResult r = run({"sweep", "--policies", "fifo", "--seeds", "1-2", "--jobs", "20", "-j", "1",
                           "--no-pdf", "--out", "s"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<std::string> err = lines_of(r.err);
  ASSERT_EQ(err.size(), 2u) << r.err;
  EXPECT_TRUE(contains(err[0], "fairgpu: sweep: ")) << r.err;
  EXPECT_TRUE(contains(err[1], "done (2 of 2 runs)")) << r.err;
}

// Synergy's CPU/memory-aware runs: compare writes each policy's
// resources.csv and job_speedups.csv, as simulate does.
TEST_F(SimDefaultsTest, CompareWritesSynergysPerPolicyFiles) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  const std::string dir = kShared + "/synergy/";
  const RunResult r = run({"compare", "--quiet", "--no-pdf", "--cluster", dir + "static_trace.ini",
                           "--profiles", dir + "profiles.json", "--trace",
                           dir + "static-100-jobs.csv", "--policies",
                           "synergy-proportional,synergy-tune", "--out", "c"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* p : {"synergy-proportional", "synergy-tune"})
    for (const char* f : {"resources.csv", "job_speedups.csv", "jobs.csv", "summary.json"})
      EXPECT_TRUE(fs::exists(dir_ / "c" / p / f)) << p << "/" << f;
  EXPECT_TRUE(contains(r.out, "resources.csv, job_speedups.csv)")) << r.out;
}

// shockwave-eval: its own table, compare's files, a line per finished run.
TEST_F(SimDefaultsTest, ShockwaveEvalWritesComparesFiles) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  const RunResult r =
      run({"shockwave-eval", "--cluster", source_path("examples/shockwave-32-v100.json"),
           "--profiles", kShared + "/shockwave/tacc_throughputs.json", "--trace",
           kShared + "/shockwave/120-jobs.trace", "--policies", "gavel:round=120,ossp", "--no-pdf",
           "--out", "e"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "unf>1.05")) << r.out;  // Shockwave's table
  // FTF rho under its two contentions, each under the name it has
  // everywhere (compare's table, compare.csv, report.html): N static, N avg.
  EXPECT_TRUE(contains(r.out, "FTF rho, N static")) << r.out;
  EXPECT_TRUE(contains(r.out, "FTF rho, N avg")) << r.out;
  EXPECT_FALSE(contains(r.out, "worst~")) << r.out;
  const std::string html = slurp(dir_ / "e" / "report.html");
  EXPECT_TRUE(contains(html, "rho_FTF, N avg")) << "the FTF CDF's axis";
  EXPECT_TRUE(contains(html, "N static")) << "the static columns' header";
  EXPECT_TRUE(contains(r.out, "wrote e/ (compare.csv, report.html, figures/")) << r.out;
  for (const char* f : {"compare.csv", "report.html", "gavel_round-120/jobs.csv",
                        "ossp/summary.json", "ossp/tenants.csv"})
    EXPECT_TRUE(fs::exists(dir_ / "e" / f)) << f;
  const std::vector<std::string> err = lines_of(r.err);
  ASSERT_GE(err.size(), 2u) << r.err;
  EXPECT_TRUE(contains(r.err, "fairgpu: shockwave-eval: gavel:round=120 done (1 of 2 runs)"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "fairgpu: shockwave-eval: ossp done (2 of 2 runs)")) << r.err;
}

}  // namespace
}  // namespace fairgpu
