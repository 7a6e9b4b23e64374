// End-to-end tests of `fairgpu simulate`, `fairgpu compare` and `fairgpu
// generate`: run the built binary (in a scratch working directory) and check
// exit status, stdout, stderr and the files it writes.
//
// The golden files under tests/data/golden/ are jobs.csv of
//   fairgpu simulate --cluster examples/oef-like-cluster.json
//                    --trace examples/small-trace.csv --policy <policy> --out <dir>
// for oef-coop and for gavel at job level. After an intended change of the
// simulator or a policy, regenerate them with
//   FAIRGPU_UPDATE_GOLDEN=1 ./fairgpu_tests --gtest_filter='SimCli*Golden*'
// and review the diff; the checks in CheckJobsCsv hold independently of them.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "run_binary.h"
#include "test_files.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using testing_support::quote;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;
using testing_support::source_path;

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kShared = FAIRGPU_SHARED_DATA;

const std::string kCluster = source_path("examples/oef-like-cluster.json");
const std::string kTrace = source_path("examples/small-trace.csv");

std::size_t count_lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A CSV file as rows of named cells (RFC 4180 quoting, "\n" line ends).
struct Csv {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
};

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

// Fails the calling test (and returns what it has) on a row of the wrong width.
Csv parse_csv(const std::string& text) {
  Csv csv;
  std::stringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return csv;
  csv.header = split_csv_line(line);
  while (std::getline(in, line)) {
    auto cells = split_csv_line(line);
    EXPECT_EQ(cells.size(), csv.header.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < cells.size() && i < csv.header.size(); ++i)
      row[csv.header[i]] = cells[i];
    csv.rows.push_back(std::move(row));
  }
  return csv;
}

double num(const std::map<std::string, std::string>& row, const std::string& column) {
  auto it = row.find(column);
  if (it == row.end() || it->second.empty()) {
    ADD_FAILURE() << "no value in column " << column;
    return std::nan("");
  }
  return std::stod(it->second);
}

// summary.json without its provenance (which names the command line;
// tests/report_test.cc checks it); the wall-clock fields are in timing.json.
json deterministic_summary(const std::string& text) {
  json j = json::parse(text);
  EXPECT_TRUE(j.contains("provenance"));
  j.erase("provenance");
  for (const char* key : {"compute_p50_s", "compute_max_s", "compute_total_s", "wall_seconds"})
    EXPECT_FALSE(j.contains(key)) << key;
  return j;
}

// Checks jobs.csv of examples/small-trace.csv against the trace and the
// simulator's rules, without the golden file: the trace's jobs in trace order,
// every job finished, JCT = finish - arrival, queueing delay = first start -
// arrival, first starts no earlier than the arrival and on scheduling points
// (multiples of the round after the first arrival) or, with work-conserving
// rounds (midround, the default), at the instant a job finished or arrived
// mid-round; no more GPU-seconds than the gang could use between its first
// start and its finish.
void CheckJobsCsv(const std::string& jobs_csv, double round_s, bool midround = true) {
  Csv trace = parse_csv(slurp(kTrace));
  Csv jobs = parse_csv(jobs_csv);
  ASSERT_EQ(trace.rows.size(), 12u);
  ASSERT_EQ(jobs.rows.size(), trace.rows.size());
  double first_arrival = num(trace.rows[0], "arrival_s");
  std::vector<double> events;  // when a mid-round start may happen
  for (const auto& j : jobs.rows) {
    events.push_back(num(j, "arrival"));
    if (!j.at("finish").empty()) events.push_back(num(j, "finish"));
  }
  int midround_starts = 0;
  for (std::size_t i = 0; i < jobs.rows.size(); ++i) {
    const auto& t = trace.rows[i];
    const auto& j = jobs.rows[i];
    SCOPED_TRACE(t.at("job_id"));
    EXPECT_EQ(j.at("job_id"), t.at("job_id"));
    EXPECT_EQ(j.at("tenant"), t.at("tenant"));
    EXPECT_EQ(j.at("job_type"), t.at("job_type"));
    EXPECT_EQ(j.at("workers"), t.at("num_workers"));
    double arrival = num(j, "arrival"), start = num(j, "first_start"), finish = num(j, "finish");
    EXPECT_EQ(arrival, num(t, "arrival_s"));
    // Finished: a finish time and a JCT (empty cells when unfinished).
    ASSERT_FALSE(j.at("finish").empty());
    EXPECT_NEAR(num(j, "jct"), finish - arrival, 1e-5);
    EXPECT_NEAR(num(j, "queueing_delay"), start - arrival, 1e-5);
    EXPECT_GE(start, arrival);
    double rounds = (start - first_arrival) / round_s;
    const bool on_grid = std::abs(rounds - std::round(rounds)) < 1e-9;
    const bool at_event = std::any_of(events.begin(), events.end(),
                                      [&](double e) { return std::abs(e - start) < 1e-5; });
    midround_starts += !on_grid;
    EXPECT_TRUE(on_grid || (midround && at_event)) << "first start " << start;
    EXPECT_GT(finish, start);
    double workers = num(j, "workers");
    EXPECT_GT(num(j, "attained_gpu_seconds"), 0.0);
    EXPECT_LE(num(j, "attained_gpu_seconds"), workers * (finish - start) + 1e-5);
    EXPECT_GE(num(j, "restarts"), 0.0);
  }
  if (!midround) {
    EXPECT_EQ(midround_starts, 0);
  }
}

// utilisation.csv: rounds back to back from the first arrival, never more
// GPU-seconds than the cluster's 24 GPUs hold, and their sum is the summary's.
void CheckUtilisationCsv(const std::string& text, double round_s, const json& summary) {
  Csv rounds = parse_csv(text);
  ASSERT_FALSE(rounds.rows.empty());
  ASSERT_EQ(rounds.rows.size(), summary["rounds"].get<std::size_t>());
  double busy = 0.0, expected_start = 0.0;
  for (const auto& r : rounds.rows) {
    double start = num(r, "start"), end = num(r, "end");
    EXPECT_NEAR(start, expected_start, 1e-6);
    EXPECT_GT(end, start);
    EXPECT_LE(end - start, round_s + 1e-6);
    EXPECT_LE(num(r, "busy_gpu_seconds"), 24.0 * (end - start) + 1e-6) << "round " << start;
    EXPECT_GE(num(r, "utilisation"), 0.0);
    EXPECT_LE(num(r, "utilisation"), 1.0 + 1e-9);
    busy += num(r, "busy_gpu_seconds");
    expected_start = end;
  }
  EXPECT_NEAR(busy, summary["busy_gpu_seconds"].get<double>(), 1e-3);
}

class SimCliTest : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(testing::TempDir()) /
           ("fairgpu-simcli-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cwd");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the binary with the working directory dir_/cwd (so default output
  // folders land there), stdin empty, stdout and stderr captured.
  RunResult run(const std::vector<std::string>& args) { return run_binary(args, dir_, cwd()); }

  fs::path cwd() const { return dir_ / "cwd"; }

  std::vector<std::string> small_run(const std::string& policy, const fs::path& out) {
    return {"simulate", "--cluster", kCluster, "--trace", kTrace, "--policy", policy,
            "--out",    out.string(), "--series-window", "0"};  // every round
  }

  // simulate on the small example twice: jobs.csv equals the golden file byte
  // for byte, both runs write the same files (wall-clock fields aside), the
  // independent checks above hold, summary.json agrees with jobs.csv.
  void golden_run(const std::string& policy, const std::string& level, double round_s,
                  const std::vector<std::string>& extra_args, const std::string& golden) {
    const fs::path out_a = dir_ / "a", out_b = dir_ / "b";
    std::vector<std::string> args_a = small_run(policy, out_a), args_b = small_run(policy, out_b);
    args_a.insert(args_a.end(), extra_args.begin(), extra_args.end());
    args_b.insert(args_b.end(), extra_args.begin(), extra_args.end());
    RunResult a = run(args_a);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.err, "");
    EXPECT_TRUE(contains(a.out, "native trace, 12 jobs")) << a.out;
    EXPECT_TRUE(contains(a.out, "24 GPUs on 6 nodes (8xk80 8xp100 8xv100)")) << a.out;
    EXPECT_TRUE(contains(a.out, "simulation  " + policy + " (" + level + " level)")) << a.out;
    EXPECT_TRUE(contains(a.out, "wrote " + out_a.string() + "/")) << a.out;

    std::string jobs = slurp(out_a / "jobs.csv");
    std::string golden_path = source_path("tests/data/golden/" + golden);
    if (std::getenv("FAIRGPU_UPDATE_GOLDEN")) {
      std::ofstream(golden_path, std::ios::binary) << jobs;
      std::printf("updated %s\n", golden_path.c_str());
    }
    std::string expected = slurp(golden_path);
    ASSERT_FALSE(expected.empty()) << "missing golden file " << golden_path;
    EXPECT_EQ(jobs, expected) << "jobs.csv differs from " << golden_path;

    CheckJobsCsv(jobs, round_s, policy.find("midround=off") == std::string::npos);

    json summary = json::parse(slurp(out_a / "summary.json"));
    EXPECT_EQ(summary["policy"], policy);
    EXPECT_EQ(summary["level"], level);
    EXPECT_EQ(summary["round_s"].get<double>(), round_s);
    EXPECT_EQ(summary["gpu_types"], json::parse(R"(["k80", "p100", "v100"])"));
    EXPECT_EQ(summary["capacity"], json::parse(R"({"k80": 8, "p100": 8, "v100": 8})"));
    EXPECT_EQ(summary["total_gpus"], 24);
    EXPECT_EQ(summary["tenants"], 3);
    EXPECT_EQ(summary["jobs"], 12);
    EXPECT_EQ(summary["finished_jobs"], 12);
    EXPECT_EQ(summary["unfinished_jobs"], 0);
    Csv rows = parse_csv(jobs);
    double last_finish = 0.0, jct_sum = 0.0;
    for (const auto& r : rows.rows) {
      last_finish = std::max(last_finish, num(r, "finish"));
      jct_sum += num(r, "jct");
    }
    EXPECT_NEAR(summary["makespan_s"].get<double>(), last_finish, 1e-5);  // first arrival is 0
    EXPECT_NEAR(summary["avg_jct_s"].get<double>(), jct_sum / 12.0, 1e-5);
    CheckUtilisationCsv(slurp(out_a / "utilisation.csv"), round_s, summary);

    RunResult b = run(args_b);
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_EQ(slurp(out_b / "jobs.csv"), jobs);
    EXPECT_EQ(slurp(out_b / "tenants.csv"), slurp(out_a / "tenants.csv"));
    EXPECT_EQ(slurp(out_b / "utilisation.csv"), slurp(out_a / "utilisation.csv"));
    EXPECT_EQ(deterministic_summary(slurp(out_b / "summary.json")),
              deterministic_summary(slurp(out_a / "summary.json")));
  }

  fs::path dir_;
};

TEST_F(SimCliTest, GoldenOefCoopJobs) {
  golden_run("oef-coop", "tenant", 300.0, {}, "small-trace-oef-coop-jobs.csv");
}

// The papers' rounds: every start on a scheduling point.
TEST_F(SimCliTest, GoldenOefCoopJobsWithoutMidRoundStarts) {
  golden_run("oef-coop:midround=off", "tenant", 300.0, {},
             "small-trace-oef-coop-midround-off-jobs.csv");
}

TEST_F(SimCliTest, GoldenGavelJobLevelJobs) {
  golden_run("gavel", "job", 300.0, {"--level", "job"}, "small-trace-gavel-jobs.csv");
}

TEST_F(SimCliTest, SimulateWithoutArgumentsRunsTheBuiltInScenario) {
  RunResult r = run({"simulate", "--quiet"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* text :
       {"generated workload (300 jobs, 20 tenants, seed 1)", "built-in cluster: 72 GPUs",
        "simulation  oef-coop (tenant level), round 300 s", "\njobs and time ", "\nfairness ",
        "\n  average JCT ", "\n  Jain's index over tenants ",
        "\nwrote fairgpu-out/simulate-oef-coop/ (jobs.csv, tenants.csv, utilisation.csv, "
        "tenant_windows.csv, summary.json, timing.json, report.html, figures/)\n"})
    EXPECT_TRUE(contains(r.out, text)) << text << " in\n" << r.out;
  fs::path out = cwd() / "fairgpu-out" / "simulate-oef-coop";
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(out)) files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"figures", "jobs.csv", "report.html",
                                             "summary.json", "tenant_windows.csv", "tenants.csv",
                                             "timing.json", "utilisation.csv"}));
  EXPECT_EQ(count_lines(slurp(out / "jobs.csv")), 301u);
  json summary = json::parse(slurp(out / "summary.json"));
  EXPECT_EQ(summary["policy"], "oef-coop");
  EXPECT_EQ(summary["jobs"], 300);
  EXPECT_EQ(summary["tenants"], 20);
  EXPECT_EQ(summary["total_gpus"], 72);
  EXPECT_EQ(summary["finished_jobs"].get<int>() + summary["unfinished_jobs"].get<int>(), 300);
}

TEST_F(SimCliTest, CompareTwoPoliciesPrintsValuesAndRatios) {
  auto out = dir_ / "cmp";
  RunResult r = run({"compare", "--policies", "oef-coop,gavel", "--trace", kTrace, "--cluster",
                     kCluster, "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  // A progress line per finished run (tests/sim_defaults_test.cc), nothing else.
  EXPECT_EQ(count_lines(r.err), 2u) << r.err;
  EXPECT_TRUE(contains(r.err, "fairgpu: compare: gavel done (2 of 2 runs)")) << r.err;
  // Two blocks (values, then ratios), each with one row per policy.
  std::size_t ratio = r.out.find("\nratio to oef-coop");
  ASSERT_NE(ratio, std::string::npos) << r.out;
  std::string values = r.out.substr(0, ratio), ratios = r.out.substr(ratio);
  for (const std::string& block : {values, ratios}) {
    EXPECT_TRUE(contains(block, "\npolicy ")) << block;
    EXPECT_TRUE(contains(block, "\noef-coop ")) << block;
    EXPECT_TRUE(contains(block, "\ngavel ")) << block;
  }
  // The ratio rows: the first run is 1.00x of itself wherever a ratio is
  // defined; every cell of either row is a ratio or "-".
  auto row_cells = [&](const std::string& policy) {
    std::size_t at = ratios.find("\n" + policy + " ");
    std::stringstream line(ratios.substr(at + 1, ratios.find('\n', at + 1) - at - 1));
    std::vector<std::string> cells;
    for (std::string cell; line >> cell;) cells.push_back(cell);
    return cells;
  };
  auto first = row_cells("oef-coop"), second = row_cells("gavel");
  ASSERT_EQ(first.size(), second.size());
  ASSERT_GE(first.size(), 10u);
  for (std::size_t c = 1; c < first.size(); ++c) {
    EXPECT_TRUE(first[c] == "1.00x" || first[c] == "-") << first[c];
    EXPECT_TRUE(second[c] == "-" || second[c].back() == 'x') << second[c];
  }

  Csv csv = parse_csv(slurp(out / "compare.csv"));
  ASSERT_EQ(csv.rows.size(), 2u);
  EXPECT_EQ(csv.header.front(), "policy");
  EXPECT_EQ(csv.rows[0].at("policy"), "oef-coop");
  EXPECT_EQ(csv.rows[1].at("policy"), "gavel");
  EXPECT_EQ(num(csv.rows[0], "avg_jct_s_ratio"), 1.0);
  std::size_t i = 0;
  for (const char* policy : {"oef-coop", "gavel"}) {
    SCOPED_TRACE(policy);
    json summary = json::parse(slurp(out / policy / "summary.json"));
    EXPECT_EQ(summary["policy"], policy);
    EXPECT_NEAR(num(csv.rows[i], "avg_jct_s"), summary["avg_jct_s"].get<double>(), 1e-5);
    EXPECT_NEAR(num(csv.rows[i], "makespan_s"), summary["makespan_s"].get<double>(), 1e-5);
    ++i;
  }
  EXPECT_NEAR(num(csv.rows[1], "avg_jct_s_ratio"),
              num(csv.rows[1], "avg_jct_s") / num(csv.rows[0], "avg_jct_s"), 1e-8);
  // compare runs exactly what simulate runs (gavel defaults to job level),
  // every share policy on its one default round length, 300 s.
  EXPECT_EQ(slurp(out / "oef-coop" / "jobs.csv"),
            slurp(source_path("tests/data/golden/small-trace-oef-coop-jobs.csv")));
  for (const char* policy : {"oef-coop", "gavel"})
    EXPECT_EQ(json::parse(slurp(out / policy / "summary.json"))["round_s"], 300.0) << policy;
  auto alone = dir_ / "gavel-300";
  RunResult g = run({"simulate", "--policy", "gavel", "--trace", kTrace, "--cluster",
                     kCluster, "--out", alone.string()});
  ASSERT_EQ(g.status, 0) << g.err;
  EXPECT_EQ(slurp(out / "gavel" / "jobs.csv"), slurp(alone / "jobs.csv"));
}

TEST_F(SimCliTest, CompareGivesShareEveryPolicyOneRoundLength) {
  auto rounds = [&](std::vector<std::string> args) {
    auto out = dir_ / ("rounds-" + std::to_string(args.size()));
    args.insert(args.begin(), {"compare", "--trace", kTrace, "--cluster", kCluster, "--out",
                               out.string()});
    RunResult r = run(args);
    EXPECT_EQ(r.status, 0) << r.err;
    std::map<std::string, double> by_policy;
    for (const auto& e : fs::directory_iterator(out))
      if (e.is_directory() && fs::exists(e.path() / "summary.json"))  // not figures/
        by_policy[e.path().filename().string()] =
            json::parse(slurp(e.path() / "summary.json"))["round_s"].get<double>();
    return by_policy;
  };
  // Gavel alone among share policies has the same 300 s (one default for
  // every command); a time-sharing policy keeps its own interval.
  EXPECT_EQ(rounds({"--policies", "gavel,fifo"}),
            (std::map<std::string, double>{{"fifo", 10.0}, {"gavel", 300.0}}));
  // --round applies to all of them.
  EXPECT_EQ(rounds({"--policies", "gavel,max-min", "--round", "600"}),
            (std::map<std::string, double>{{"gavel", 600.0}, {"max-min", 600.0}}));
}

TEST_F(SimCliTest, GenerateIsSeeded) {
  RunResult a = run({"generate", "--jobs", "50", "--seed", "3"});
  RunResult b = run({"generate", "--jobs", "50", "--seed", "3"});
  RunResult c = run({"generate", "--jobs", "50", "--seed", "4"});
  for (const RunResult* r : {&a, &b, &c}) {
    ASSERT_EQ(r->status, 0) << r->err;
    EXPECT_EQ(r->err, "");
    EXPECT_EQ(count_lines(r->out), 51u);
    EXPECT_EQ(r->out.rfind("job_id,tenant,job_type,num_workers,arrival_s,", 0), 0u) << r->out;
  }
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  // The output is a trace simulate reads back.
  std::ofstream(dir_ / "gen.csv") << a.out;
  RunResult s = run({"simulate", "--quiet", "--trace", (dir_ / "gen.csv").string(), "--out",
                     (dir_ / "sim").string()});
  ASSERT_EQ(s.status, 0) << s.err;
  EXPECT_EQ(json::parse(slurp(dir_ / "sim" / "summary.json"))["jobs"], 50);
}

TEST_F(SimCliTest, GavelTraceWithGavelProfiles) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  const std::string trace = kShared + "/gavel/small_test.trace";
  const std::string profiles = kShared + "/gavel/simulation_throughputs.json";
  RunResult r =
      run({"simulate", "--trace", trace, "--profiles", profiles, "--out", (dir_ / "g").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(r.out, "(gavel trace, 20 jobs)")) << r.out;
  EXPECT_TRUE(contains(r.out, "profiles: " + profiles)) << r.out;
  json summary = json::parse(slurp(dir_ / "g" / "summary.json"));
  EXPECT_EQ(summary["jobs"], 20);
  EXPECT_EQ(summary["tenants"], 20);  // each job its own tenant
  EXPECT_EQ(summary["finished_jobs"], 20);

  // --tenants spreads the jobs round-robin over t0..t3.
  RunResult t = run({"simulate", "--trace", trace, "--profiles", profiles, "--tenants", "4",
                     "--out", (dir_ / "t").string()});
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_EQ(json::parse(slurp(dir_ / "t" / "summary.json"))["tenants"], 4);
}

TEST_F(SimCliTest, AlibabaTraceWithItsNodeList) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  const std::string dir = kShared + "/alibaba-gpu-v2023/";
  RunResult r = run({"simulate", "--quiet", "--trace", dir + "openb_pod_list_default.csv",
                     "--alibaba-nodes", dir + "openb_node_list_gpu_node.csv", "--horizon-hours",
                     "2", "--out", (dir_ / "a").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(alibaba trace, ")) << r.out;
  // Every stderr line is a note; the skipped classes of pods are among them.
  ASSERT_GE(count_lines(r.err), 2u) << r.err;
  std::stringstream lines(r.err);
  std::string line;
  while (std::getline(lines, line)) EXPECT_EQ(line.rfind("fairgpu: note: ", 0), 0u) << line;
  EXPECT_TRUE(contains(r.err, "CPU-only pods")) << r.err;
  EXPECT_TRUE(contains(r.err, "GPU models mapped to types")) << r.err;
  json summary = json::parse(slurp(dir_ / "a" / "summary.json"));
  EXPECT_EQ(summary["jobs"].get<std::size_t>() + 1, count_lines(slurp(dir_ / "a" / "jobs.csv")));
  // The run stops at the first arrival + 2 h with jobs left.
  EXPECT_GT(summary["unfinished_jobs"].get<int>(), 0);
  EXPECT_DOUBLE_EQ(summary["makespan_s"].get<double>(), 7200.0);

  // Issue 29: without a cluster, the node list beside the pod list (said in
  // a note), never the built-in 72 GPUs.
  r = run({"simulate", "--quiet", "--trace", dir + "openb_pod_list_default.csv",
           "--horizon-hours", "2", "--out", (dir_ / "b").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "openb_node_list_gpu_node.csv: 6212 GPUs")) << r.out;
  EXPECT_TRUE(contains(r.err, "the cluster of the pod list beside it")) << r.err;
  // A pod list with no node list beside it: one line saying what to give.
  fs::copy_file(dir + "openb_pod_list_default.csv", dir_ / "pods.csv");
  r = run({"simulate", "--quiet", "--trace", (dir_ / "pods.csv").string(), "--trace-format",
           "alibaba", "--out", (dir_ / "c").string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "--alibaba-nodes")) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "c"));
}

// allox on a job of duration_s 1e16: its matching costs (1e19 ms) used to
// overflow LEMON's NetworkSimplex (undefined behaviour; it looped forever).
// Now the run ends at the horizon, with the short jobs finished around it.
TEST_F(SimCliTest, AlloxWithAnAbsurdlyLongJobFinishes) {
  const fs::path trace = dir_ / "long.csv";
  std::ofstream(trace) << "job_id,tenant,job_type,num_workers,arrival_s,duration_s\n"
                          "j1,alice,A3C,1,0,1e16\n"
                          "j2,bob,A3C,2,0,600\n"
                          "j3,alice,ResNet-18 (batch size 64),4,60,1e300\n"
                          "j4,bob,A3C,24,120,900\n"
                          "j5,carol,A3C,1,130,300\n";
  RunResult r = run_binary({"simulate", "--quiet", "--policy", "allox", "--trace", trace.string(),
                            "--horizon-hours", "3", "--out", (dir_ / "a").string()},
                           dir_, cwd(), 60);
  ASSERT_EQ(r.status, 0) << r.err;
  json summary = json::parse(slurp(dir_ / "a" / "summary.json"));
  EXPECT_EQ(summary["jobs"], 5);
  EXPECT_EQ(summary["finished_jobs"], 3);  // j2, j4, j5 on the built-in 72 GPUs
  EXPECT_EQ(summary["unfinished_jobs"], 2);
}

// Weights outside [kMinWeight, kMaxWeight] in a trace are an input error on
// their line and column (exit 2), not the share LPs' failure (exit 1); at the
// ends of the range the LP policies simulate.
TEST_F(SimCliTest, ExtremeTraceWeightsExitTwoAndTheRangeSimulates) {
  auto trace = [&](const std::string& name, const std::string& a, const std::string& b,
                   const std::string& priority) {
    const fs::path path = dir_ / name;
    std::ofstream(path) << "job_id,tenant,job_type,num_workers,arrival_s,duration_s,weight,"
                           "priority_weight\n"
                        << "j1,alice,A3C,1,0,600," << a << ",1\n"
                        << "j2,bob,A3C,2,0,900," << b << "," << priority << "\n"
                        << "j3,alice,A3C,1,60,300," << a << ",1\n";
    return path.string();
  };
  const std::string gavel = (dir_ / "extreme.trace").string();
  std::ofstream(gavel) << "ResNet-18 (batch size 64)\tpython3 main.py\t.\t--num_steps\t1\t"
                          "1000\t1\t1e300\t-1\t0\n";
  struct Bad {
    std::vector<std::string> args;
    std::string where;
  };
  const std::vector<Bad> bad = {
      {{"--trace", trace("a.csv", "1e-300", "1e300", "1")}, "a.csv:2: weight"},
      {{"--trace", trace("b.csv", "1", "1e20", "1")}, "b.csv:3: weight"},
      {{"--trace", trace("c.csv", "1", "1", "1e-20")}, "c.csv:3: priority_weight"},
      {{"--trace", gavel}, "extreme.trace:1: priority_weight"},
  };
  for (const std::string policy : {"oef-coop", "oef-noncoop", "gavel"}) {
    for (const auto& b : bad) {
      std::vector<std::string> args = {"simulate", "--quiet", "--policy",
                                       policy,     "--out",   (dir_ / "bad").string()};
      args.insert(args.end(), b.args.begin(), b.args.end());
      RunResult r = run(args);
      EXPECT_EQ(r.status, 2) << policy << " " << b.where << ": " << r.err;
      EXPECT_EQ(count_lines(r.err), 1u) << r.err;
      EXPECT_TRUE(contains(r.err, b.where + ": must be in [0.0001, 10000]")) << r.err;
      EXPECT_FALSE(fs::exists(dir_ / "bad"));
    }
    for (const auto& [a, b, priority] :
         std::vector<std::array<std::string, 3>>{{"1e-4", "1e4", "1e-4"}, {"1e4", "1e-4", "1e4"}}) {
      const fs::path out = dir_ / ("ok-" + policy);
      RunResult r = run({"simulate", "--quiet", "--policy", policy, "--trace",
                         trace("ok.csv", a, b, priority), "--out", out.string()});
      ASSERT_EQ(r.status, 0) << policy << " " << a << ":" << b << ":" << priority << ": " << r.err;
      EXPECT_EQ(json::parse(slurp(out / "summary.json"))["finished_jobs"], 3);
    }
  }
}

struct BadRun {
  std::vector<std::string> args;
  std::vector<std::string> must_contain;  // e.g. the file, the line, the field
};

// A loaded generated workload (80 jobs at 200 an hour on the built-in 72
// GPUs), where themis's filter and allox's alpha change who runs.
std::vector<std::string> loaded(std::vector<std::string> args) {
  for (const char* a : {"--jobs", "80", "--arrivals-per-hour", "200", "--quiet"}) args.push_back(a);
  return args;
}

TEST_F(SimCliTest, PolicyKeyChangesTheScheduleAndEqualsItsAliasFlag) {
  auto sim = [&](const std::string& out, const std::string& policy,
                 std::vector<std::string> extra) {
    std::vector<std::string> args = {"simulate", "--policy", policy, "--out", (dir_ / out).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run(loaded(args));
    EXPECT_EQ(r.status, 0) << r.err;
    return dir_ / out;
  };
  const fs::path plain = sim("plain", "themis", {});
  const fs::path keyed = sim("keyed", "themis:filter=0.2", {});
  // The key reaches the policy: a different schedule, and the run is
  // reported under its full name.
  EXPECT_NE(slurp(keyed / "jobs.csv"), slurp(plain / "jobs.csv"));
  json s_plain = deterministic_summary(slurp(plain / "summary.json"));
  json s_keyed = deterministic_summary(slurp(keyed / "summary.json"));
  EXPECT_EQ(s_keyed["policy"], "themis:filter=0.2");
  EXPECT_NE(s_keyed["avg_jct_s"], s_plain["avg_jct_s"]);
  // The old flag is an alias: the same files, byte for byte (summary.json
  // but for the name and the wall clock).
  const fs::path alias = sim("alias", "themis", {"--themis-filter", "0.2"});
  // (EXPECT_TRUE: gtest's line diff of tenants.csv's 10^5 lines would not fit in memory.)
  for (const char* f : {"jobs.csv", "tenants.csv", "tenant_windows.csv"})
    EXPECT_TRUE(slurp(alias / f) == slurp(keyed / f)) << f << " differs";
  json s_alias = deterministic_summary(slurp(alias / "summary.json"));
  EXPECT_EQ(s_alias["policy"], "themis");
  s_alias["policy"] = s_keyed["policy"];
  EXPECT_EQ(s_alias, s_keyed);
  // The specifier's own value wins over the flag.
  const fs::path both = sim("both", "themis:filter=0.2", {"--themis-filter", "0.9"});
  EXPECT_EQ(slurp(both / "jobs.csv"), slurp(keyed / "jobs.csv"));
  // Without --out the folder name is made filesystem-safe.
  RunResult r = run(loaded({"simulate", "--policy", "themis:filter=0.2"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "wrote fairgpu-out/simulate-themis_filter-0.2/")) << r.out;
  EXPECT_EQ(slurp(cwd() / "fairgpu-out/simulate-themis_filter-0.2/jobs.csv"),
            slurp(keyed / "jobs.csv"));
}

TEST_F(SimCliTest, CompareRunsVariantsOfOnePolicySideBySide) {
  RunResult r = run(loaded({"compare", "--policies", "allox,allox:alpha=0.2,tiresias:thresholds=600/7200",
                            "--out", "out"}));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\nallox ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\nallox:alpha=0.2 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "\ntiresias:thresholds=600/7200 ")) << r.out;
  Csv csv = parse_csv(slurp(cwd() / "out/compare.csv"));
  ASSERT_EQ(csv.rows.size(), 3u);
  EXPECT_EQ(csv.rows[0].at("policy"), "allox");
  EXPECT_EQ(csv.rows[1].at("policy"), "allox:alpha=0.2");
  EXPECT_EQ(csv.rows[2].at("policy"), "tiresias:thresholds=600/7200");
  EXPECT_NE(csv.rows[0].at("avg_jct_s"), csv.rows[1].at("avg_jct_s"));
  // Each run in its own folder, named filesystem-safe.
  const fs::path out = cwd() / "out";
  std::string plain = slurp(out / "allox/jobs.csv"), keyed = slurp(out / "allox_alpha-0.2/jobs.csv");
  EXPECT_FALSE(plain.empty());
  EXPECT_FALSE(keyed.empty());
  EXPECT_NE(plain, keyed);
  EXPECT_EQ(json::parse(slurp(out / "allox_alpha-0.2/summary.json"))["policy"], "allox:alpha=0.2");
  EXPECT_TRUE(fs::exists(out / "tiresias_thresholds-600_7200/jobs.csv"));
}

TEST_F(SimCliTest, BadInputsExitTwoWithOneLineAndNoOutput) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  auto data = [](const std::string& name) { return source_path("tests/data/" + name); };
  const std::string gavel = kShared + "/gavel/small_test.trace";
  const std::string out = "out";  // relative to the working directory
  auto sim = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"simulate", "--out", out};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  auto cmp = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"compare", "--out", out};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  std::vector<BadRun> cases = {
      {sim({"--policy", "nope"}), {"policy", "unknown policy 'nope'", "oef-coop"}},
      // simulate's option to compare: the arguments in order, and the one it takes.
      {cmp({"--policy", "gavel"}), {"fairgpu: compare: unexpected arguments: --policy gavel",
                                    "--policies a,b"}},
      // Without --out as well: the default folder must not appear either.
      {{"simulate", "--policy", "nope"}, {"unknown policy 'nope'"}},
      {sim({"--level", "bogus", "--trace", kTrace}), {"level", "'bogus'"}},
      {sim({"--trace", data("no-such-trace.csv")}), {data("no-such-trace.csv"), "cannot open"}},
      {sim({"--trace", data("sim-unknown-job-type.csv")}),
       {data("sim-unknown-job-type.csv") + ": job j2: job_type", "'NoSuchModel'", "built-in"}},
      {sim({"--trace", data("sim-too-many-workers.csv"), "--cluster",
            data("sim-tiny-cluster.json")}),
       {data("sim-too-many-workers.csv") + ": job j2: workers", "8 workers", "4 GPUs"}},
      // The generated workload has 8-worker jobs; a 4-GPU cluster cannot run them.
      {sim({"--cluster", data("sim-tiny-cluster.json")}),
       {"generated workload: job ", ": workers", "4 GPUs"}},
      // No built-in figures for a100: the cluster file and the type are named.
      {sim({"--cluster", data("sim-a100-cluster.json"), "--trace", kTrace}),
       {data("sim-a100-cluster.json") + ": gpu_type a100", "no throughput on 'a100'"}},
      {sim({"--cluster", data("bad-cluster-zero-gpus.json")}),
       {data("bad-cluster-zero-gpus.json"), "nodes[1].gpus"}},
      {sim({"--trace", kTrace, "--profiles", data("bad-profiles-negative.json")}),
       {data("bad-profiles-negative.json"), "must be >= 0"}},
      {sim({"--round", "-5", "--trace", kTrace}), {"round", "> 0"}},
      {sim({"--round", "inf", "--trace", kTrace}), {"round", "finite"}},
      {sim({"--horizon-hours", "-1"}), {"horizon-hours", ">= 0"}},
      {sim({"--trace", gavel, "--tenants", "-3"}), {"tenants", "-3"}},
      // A Gavel trace with the built-in figures: the line says what to give.
      {sim({"--trace", gavel}), {gavel + ": job ", "not in the profiles (built-in)", "--profiles"}},
      {sim({"--tenants", "-1"}), {"tenants", "-1"}},  // any trace, here the generated one
      {sim({"--trace", kTrace, "--trace-format", "bogus"}), {"trace-format", "'bogus'"}},
      {sim({"--jobs", "0"}), {"jobs", "got 0"}},
      {sim({"--bogus-flag"}), {"--bogus-flag"}},
      {{"generate", "--jobs", "0"}, {"jobs", "got 0"}},
      {{"generate", "--job-types", "A3C,NoSuchModel"}, {"job-types", "'NoSuchModel'"}},
      {cmp({"--policies", "oef-coop,nope"}), {"unknown policy 'nope'"}},
      // Policies are checked before anything is loaded (or run): the missing
      // trace is not what is reported.
      {cmp({"--policies", "oef-coop,nope", "--trace", data("no-such-trace.csv")}),
       {"unknown policy 'nope'"}},
      {cmp({"--policies", "oef-coop,gavel,oef-coop", "--trace", kTrace}),
       {"policies", "'oef-coop' is given twice"}},
      {cmp({"--policies", ","}), {"policies", "no policy given"}},
      // The time-sharing policies' knobs.
      {sim({"--policy", "astraea", "--lease", "-5"}), {"policy astraea: lease", "> 0"}},
      {sim({"--policy", "themis", "--themis-filter", "1.5"}), {"policy themis: filter", "(0, 1]"}},
      {sim({"--policy", "allox", "--allox-alpha", "0"}), {"policy allox: alpha", "(0, 1]"}},
      {sim({"--policy", "tiresias", "--tiresias-thresholds", "3600,100"}),
       {"policy tiresias: thresholds", "ascending"}},
      {sim({"--policy", "tiresias", "--tiresias-promote", "0"}),
       {"policy tiresias: promote", "> 0"}},
      {sim({"--policy", "astraea", "--astraea-fair-share", "bogus"}),
       {"policy astraea: fair-share", "'bogus'"}},
      {sim({"--policy", "astraea", "--level", "tenant"}),
       {"policy astraea: level", "one of job", "'tenant'"}},
      // NAME:key=value specifiers: the policy and the key named, nothing run.
      {sim({"--policy", "themis:fliter=0.5"}), {"policy themis: fliter", "unknown key", "filter"}},
      {sim({"--policy", "themis:filter=abc"}), {"policy themis: filter", "'abc'", "(0, 1]"}},
      {sim({"--policy", "themis:filter=nan"}), {"policy themis: filter", "'nan'"}},
      {sim({"--policy", "themis:filter=1.5"}), {"policy themis: filter", "'1.5'"}},
      {sim({"--policy", "allox:alpha=0.2:alpha=0.3"}), {"policy", "key 'alpha' is given twice"}},
      {sim({"--policy", ":alpha=0.2"}), {"policy", "no policy name"}},
      {sim({"--policy", "allox:alpha"}), {"policy", "'alpha' is not key=value"}},
      {sim({"--policy", "nope:alpha=1"}), {"policy", "unknown policy 'nope'"}},
      {sim({"--policy", "astraea:fair-share=bogus"}), {"policy astraea: fair-share", "'bogus'"}},
      {sim({"--policy", "tiresias:thresholds=3600/100"}), {"policy tiresias: thresholds", "ascending"}},
      {sim({"--policy", "oef-coop:demands=maybe"}), {"policy oef-coop: demands", "on or off"}},
      // A flag's value is checked even when its policy is not run.
      {sim({"--policy", "oef-coop", "--themis-filter", "2"}), {"policy themis: filter"}},
      {cmp({"--policies", "allox:alpha=0.2,allox:alpha=0.2"}),
       {"policies", "'allox:alpha=0.2' is given twice"}},
      {cmp({"--policies", "oef-coop,themis:filter=0"}), {"policy themis: filter", "(0, 1]"}},
      {cmp({"--policies", "oef-coop,gavel", "--trace", data("sim-unknown-job-type.csv")}),
       {data("sim-unknown-job-type.csv"), "'NoSuchModel'"}},
  };
  // Every bad native trace of tests/data: "<file>:<line>: <column>: ...".
  const std::vector<std::pair<std::string, std::string>> bad_traces = {
      {"bad-trace-both-work.csv:3", "iterations"},
      {"bad-trace-column-count.csv:3", "expected 8 comma-separated values"},
      {"bad-trace-duplicate-id.csv:4", "job_id"},
      {"bad-trace-empty-tenant.csv:3", "tenant"},
      {"bad-trace-empty.csv", "no jobs"},
      {"bad-trace-fractional-workers.csv:3", "num_workers"},
      {"bad-trace-inf.csv:3", "duration_s"},
      {"bad-trace-missing-column.csv:1", "arrival_s"},
      {"bad-trace-nan.csv:3", "arrival_s"},
      {"bad-trace-negative-arrival.csv:3", "arrival_s"},
      {"bad-trace-negative-duration.csv:3", "duration_s"},
      {"bad-trace-negative-workers.csv:3", "num_workers"},
      {"bad-trace-no-header.csv:1", "header"},
      {"bad-trace-no-work.csv:3", "iterations"},
      {"bad-trace-non-numeric.csv:3", "num_workers"},
      {"bad-trace-tenant-weight.csv:4", "weight"},
      {"bad-trace-unknown-column.csv:1", "gpus"},
      {"bad-trace-zero-iterations.csv:3", "iterations"},
      {"bad-trace-zero-weight.csv:3", "weight"},
      {"bad-trace-zero-workers.csv:3", "num_workers"},
  };
  for (const auto& [where, field] : bad_traces) {
    std::string file = data(where.substr(0, where.find(':')));
    cases.push_back({sim({"--trace", file}), {source_path("tests/data/" + where) + ": " + field}});
  }

  for (const auto& c : cases) {
    std::string what;
    for (const auto& a : c.args) what += a + " ";
    SCOPED_TRACE(what);
    RunResult r = run(c.args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("fairgpu: ", 0), 0u) << r.err;
    for (const auto& text : c.must_contain) EXPECT_TRUE(contains(r.err, text)) << r.err;
    // Nothing written: neither the given nor the default output folder.
    EXPECT_FALSE(fs::exists(cwd() / out));
    EXPECT_FALSE(fs::exists(cwd() / "fairgpu-out"));
    fs::remove_all(cwd() / out);
    fs::remove_all(cwd() / "fairgpu-out");
  }
}

}  // namespace
}  // namespace fairgpu
