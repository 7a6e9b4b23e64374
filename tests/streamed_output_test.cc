// Bounded outputs of long runs (issue 17): a run whose rounds fold into a
// RoundDigest as they are made (what `fairgpu simulate` does) gives the same
// metrics and files as the same run with every round kept; and the
// machine-readable outputs (--json on simulate, compare, policies, generate)
// hold what the tables and CSV files hold.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "csv_rows.h"
#include "fairgpu/resource_report.h"
#include "fairgpu/scenario.h"
#include "fairgpu/scheduler.h"
#include "fairgpu/sim_report.h"
#include "fairgpu/simulator.h"
#include "run_binary.h"

namespace fairgpu {
namespace {

using nlohmann::json;
using testing_support::csv_rows;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;
using testing_support::source_path;
namespace fs = std::filesystem;

// The CSV writers' rule for reals.
std::string csv_real(const json& v) {
  if (v.is_null()) return "";
  const double x = v.get<double>();
  return fmt::format("{:.10g}", x == 0 ? 0.0 : x);
}

std::size_t data_rows(const std::string& csv) {
  std::size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  return lines > 0 ? lines - 1 : 0;
}

// Equal texts, or the first line where they differ (not GoogleTest's diff
// of two large files).
::testing::AssertionResult same_text(const std::string& a, const std::string& b) {
  if (a == b) return ::testing::AssertionSuccess();
  std::istringstream x(a), y(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(x, la));
    const bool more_b = static_cast<bool>(std::getline(y, lb));
    if (la != lb || more_a != more_b)
      return ::testing::AssertionFailure()
             << "line " << line << ": '" << (more_a ? la : "<end>") << "' vs '"
             << (more_b ? lb : "<end>") << "'";
  }
}

// summary.json (the wall-clock figures, which differ run to run, are
// timing.json's).
std::string deterministic(const SimResult& r, const SimSummary& s) { return summary_json(r, s); }

TEST(RoundDigest, StreamedRunGivesTheKeptRunsMetricsAndFiles) {
  ScenarioOptions o;
  o.generator.jobs = 60;
  o.generator.tenants = 12;
  const Scenario sc = load_scenario(o);
  // A fairness window that 300 s rounds straddle, and series windows of
  // several rounds and of one.
  const SummaryOptions fairness{1000.0};
  for (const char* policy : {"astraea", "oef-coop"})
    for (double series_window : {0.0, 700.0}) {
      SCOPED_TRACE(fmt::format("{}, series window {}", policy, series_window));
      SimOptions options;
      options.sparse_tenant_series = true;
      auto p = make_round_policy(policy, {});
      const SimResult kept = simulate(sc.model, sc.workload, *p, options);

      std::ostringstream tenants, utilisation, resources;
      RoundDigest::Options d;
      d.fairness_window_s = fairness.fairness_window_s;
      d.series_window_s = series_window;
      d.tenants_csv = &tenants;
      d.utilisation_csv = &utilisation;
      d.resources_csv = &resources;
      auto digest = std::make_shared<RoundDigest>(d);
      options.round_sink = digest.get();
      auto q = make_round_policy(policy, {});
      SimResult streamed = simulate(sc.model, sc.workload, *q, options);
      EXPECT_TRUE(streamed.rounds_streamed);
      EXPECT_TRUE(streamed.rounds.empty());
      EXPECT_THROW(check_sim_result(streamed), std::invalid_argument);  // no digest attached
      streamed.digest = digest;
      EXPECT_EQ(digest->totals().rounds, static_cast<int>(kept.rounds.size()));

      EXPECT_TRUE(same_text(jobs_csv(streamed), jobs_csv(kept)));
      EXPECT_TRUE(same_text(tenants.str(), tenants_csv(kept, series_window)));
      EXPECT_TRUE(same_text(utilisation.str(), utilisation_csv(kept, series_window)));
      EXPECT_TRUE(same_text(resources.str(), resources_csv(kept)));
      EXPECT_TRUE(same_text(tenant_windows_csv(streamed, fairness), tenant_windows_csv(kept, fairness)));
      EXPECT_GT(data_rows(tenant_windows_csv(kept, fairness)), 1u);
      EXPECT_TRUE(same_text(deterministic(streamed, summarise(streamed, fairness)),
                            deterministic(kept, summarise(kept, fairness))));
      const ResourceSummary a = summarise_resources(streamed), b = summarise_resources(kept);
      EXPECT_EQ(a.avg_cpus_allocated, b.avg_cpus_allocated);
      EXPECT_EQ(a.avg_job_speedup, b.avg_job_speedup);
      // The digest was made for one fairness window; its series are gone.
      EXPECT_THROW(summarise(streamed, {3600.0}), std::invalid_argument);
      EXPECT_THROW(tenants_csv(streamed), std::invalid_argument);
      EXPECT_THROW(resources_csv(streamed), std::invalid_argument);
    }
}

// The simulator hands rounds to its sink on a second thread: the sink gets
// every round once, in order, and an exception it throws ends the run with
// that exception (no round reaches it after).
class CheckingSink final : public RoundSink {
 public:
  explicit CheckingSink(int fail_at) : fail_at_(fail_at) {}
  void begin(const SimResult&) override { ++begun; }
  void add(const RoundSample& round) override {
    if (!starts.empty() && !(round.start > starts.back())) out_of_order = true;
    starts.push_back(round.start);
    if (static_cast<int>(starts.size()) == fail_at_) throw std::runtime_error("sink full");
  }
  void end(const SimResult&) override { ++ended; }
  int begun = 0, ended = 0;
  bool out_of_order = false;
  std::vector<double> starts;

 private:
  int fail_at_;
};

TEST(RoundDigest, SinkGetsEveryRoundInOrderAndItsErrorEndsTheRun) {
  ScenarioOptions o;
  o.generator.jobs = 60;
  o.generator.tenants = 12;
  const Scenario sc = load_scenario(o);
  auto p = make_round_policy("oef-coop", {});
  const SimResult kept = simulate(sc.model, sc.workload, *p, {});
  ASSERT_GT(kept.rounds.size(), 5u);

  CheckingSink all(-1);
  SimOptions options;
  options.round_sink = &all;
  auto q = make_round_policy("oef-coop", {});
  simulate(sc.model, sc.workload, *q, options);
  EXPECT_EQ(all.begun, 1);
  EXPECT_EQ(all.ended, 1);
  EXPECT_FALSE(all.out_of_order);
  ASSERT_EQ(all.starts.size(), kept.rounds.size());
  for (std::size_t r = 0; r < kept.rounds.size(); ++r)
    EXPECT_EQ(all.starts[r], kept.rounds[r].start);

  CheckingSink failing(3);
  options.round_sink = &failing;
  auto f = make_round_policy("oef-coop", {});
  try {
    simulate(sc.model, sc.workload, *f, options);
    ADD_FAILURE() << "the sink's error did not end the run";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "sink full");
  }
  EXPECT_EQ(failing.starts.size(), 3u);
  EXPECT_EQ(failing.ended, 0);
}

// ---- --json ----------------------------------------------------------------

const std::string kCluster = source_path("examples/oef-like-cluster.json");
const std::string kTrace = source_path("examples/small-trace.csv");

class JsonOutput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("fairgpu-json-" + std::string(
                                  ::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::vector<std::string>& args) { return run_binary(args, dir_); }
  fs::path dir_;
};

TEST_F(JsonOutput, SimulateGivesItsSummaryAndFilesAndNothingElse) {
  const std::string out = (dir_ / "sim").string();
  const std::vector<std::string> args = {"simulate", "--quiet",   "--trace", kTrace,
                                         "--cluster", kCluster, "--out",   out};
  std::vector<std::string> with_json = args;
  with_json.push_back("--json");
  const RunResult r = run(with_json);
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);  // the whole of stdout is the JSON
  EXPECT_EQ(j["command"], "simulate");
  EXPECT_EQ(j["out"], out);
  EXPECT_EQ(j["summary"], json::parse(slurp(fs::path(out) / "summary.json")));
  for (const auto& f : j["files"]) EXPECT_TRUE(fs::exists(fs::path(out) / f.get<std::string>())) << f;
  EXPECT_EQ(j["timing"], json::parse(slurp(fs::path(out) / "timing.json")));
  EXPECT_FALSE(j["summary"].contains("wall_seconds"));  // timing's only
  EXPECT_EQ(j["files"].size(), 8u);  // the seven files and figures/
  // The table of the same run shows the same counts.
  const RunResult table = run(args);
  ASSERT_EQ(table.status, 0) << table.err;
  for (const char* key : {"jobs", "finished_jobs", "restarts", "rounds"}) {
    const std::string line = fmt::format("{}", j["summary"][key].get<int>());
    EXPECT_NE(table.out.find(line), std::string::npos) << key;
  }
  const double avg_jct = j["summary"]["avg_jct_s"].get<double>();
  const std::size_t line = table.out.find("average JCT");
  ASSERT_NE(line, std::string::npos) << table.out;
  EXPECT_EQ(table.out.substr(line, table.out.find('\n', line) - line).find(
                fmt::format("{:.1f} s ({:.2f} h)", avg_jct, avg_jct / 3600)),
            table.out.find('\n', line) - line - fmt::format("{:.1f} s ({:.2f} h)", avg_jct,
                                                             avg_jct / 3600).size())
      << table.out;
  // Bad input: exit 2, nothing on stdout.
  const RunResult bad = run({"simulate", "--quiet", "--json", "--trace", "no-such.csv"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.out, "");
}

TEST_F(JsonOutput, CompareRunsMatchCompareCsv) {
  const std::string out = (dir_ / "cmp").string();
  const RunResult r = run({"compare", "--quiet", "--json", "--policies", "oef-coop,gavel,max-min",
                           "--trace", kTrace, "--cluster", kCluster, "--out", out});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  const auto rows = csv_rows(slurp(fs::path(out) / "compare.csv"));
  ASSERT_EQ(rows.size(), 3u);
  ASSERT_EQ(j["runs"].size(), 3u);
  std::size_t compared = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const json& run = j["runs"][i];
    EXPECT_EQ(run["policy"], rows[i].at("policy"));
    EXPECT_EQ(run["folder"], rows[i].at("folder"));
    EXPECT_EQ(run["summary"], json::parse(slurp(fs::path(out) / rows[i].at("folder") /
                                                "summary.json")));
    for (const CompareColumnInfo& c : compare_column_info()) {
      EXPECT_EQ(csv_real(run["summary"][c.key]), rows[i].at(c.key)) << c.key;
      EXPECT_EQ(csv_real(run["ratios_to_first"][c.key]), rows[i].at(c.key + "_ratio")) << c.key;
      ++compared;
    }
  }
  EXPECT_GT(compared, 30u);
  EXPECT_EQ(j["runs"][1]["ratios_to_first"]["avg_jct_s"].get<double>(),
            j["runs"][1]["summary"]["avg_jct_s"].get<double>() /
                j["runs"][0]["summary"]["avg_jct_s"].get<double>());
}

TEST_F(JsonOutput, PoliciesListTheTablesPoliciesAndKeys) {
  const RunResult table = run({"policies"});
  const RunResult r = run({"policies", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j.size(), round_policy_catalogue().size());
  std::size_t at = 0;
  for (const json& p : j) {
    // In the table's order: each name, then its keys as key=default.
    at = table.out.find("  " + p["name"].get<std::string>() + " ", at);
    ASSERT_NE(at, std::string::npos) << p["name"];
    EXPECT_NE(table.out.find(p["description"].get<std::string>(), at), std::string::npos);
    for (const json& k : p["keys"]) {
      const std::string key = k["key"].get<std::string>() + "=" + k["default"].get<std::string>();
      EXPECT_NE(table.out.find(key, at), std::string::npos) << key;
      EXPECT_NE(table.out.find(k["accepts"].get<std::string>(), at), std::string::npos) << key;
    }
  }
  EXPECT_EQ(j[0]["kind"], round_policy_catalogue()[0].share ? "share" : "time-sharing");
}

TEST_F(JsonOutput, GenerateGivesTheCsvsTable) {
  for (const std::vector<std::string>& style :
       {std::vector<std::string>{}, std::vector<std::string>{"--style", "venus"}}) {
    std::vector<std::string> args = {"generate", "--jobs", "40", "--seed", "5"};
    args.insert(args.end(), style.begin(), style.end());
    const RunResult csv = run(args);
    args.push_back("--json");
    const RunResult r = run(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out);
    const auto rows = csv_rows(csv.out);
    ASSERT_EQ(j["jobs"].size(), 40u);
    ASSERT_EQ(rows.size(), 40u);
    EXPECT_EQ(fmt::format("{}", fmt::join(j["columns"].get<std::vector<std::string>>(), ",")),
              csv.out.substr(0, csv.out.find('\n')));
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (const auto& [column, cell] : rows[i]) {
        const json& v = j["jobs"][i].at(column);
        if (v.is_string())
          EXPECT_EQ(v.get<std::string>(), cell) << column;
        else if (v.is_null())
          EXPECT_EQ(cell, "") << column;
        else
          EXPECT_EQ(v.get<double>(), std::stod(cell)) << column;
      }
  }
}

// --cluster-spec wherever --cluster is: the same run as the JSON file of the
// same cluster; a bad spec is one line and exit 2, nothing written.
TEST_F(JsonOutput, ClusterSpecRunsAsItsJsonFile) {
  const fs::path file = dir_ / "cluster.json";
  {
    std::ofstream f(file);
    f << R"({"k80": {"nodes": 1, "gpus_per_node": 8}, "p100": {"nodes": 8, "gpus_per_node": 1},
             "v100": {"nodes": 2, "gpus_per_node": 4}})";
  }
  const std::vector<std::string> base = {"simulate", "--quiet", "--trace", kTrace, "--json"};
  auto with = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--out", (dir_ / out).string()});
    return run(args);
  };
  // k80:8 is one node of 8 (the default), p100:8:1 eight of one (Gavel's).
  const RunResult spec = with({"--cluster-spec", "k80:8,p100:8:1,v100:8:4"}, "spec");
  const RunResult json_file = with({"--cluster", file.string()}, "file");
  ASSERT_EQ(spec.status, 0) << spec.err;
  ASSERT_EQ(json_file.status, 0) << json_file.err;
  EXPECT_EQ(json::parse(spec.out)["summary"]["capacity"],
            json::parse(R"({"k80": 8, "p100": 8, "v100": 8})"));
  EXPECT_EQ(slurp(dir_ / "spec" / "jobs.csv"), slurp(dir_ / "file" / "jobs.csv"));
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--cluster-spec", "k80:8,k80:4"},
        std::vector<std::string>{"--cluster-spec", "36:36:36"},
        std::vector<std::string>{"--cluster-spec", "k80:6:4"},
        std::vector<std::string>{"--cluster-spec", "k80:8", "--cluster", file.string()}}) {
    const RunResult r = with(bad, "bad");
    EXPECT_EQ(r.status, 2) << bad[1];
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "bad"));
  }
  const RunResult cmp = run({"compare", "--quiet", "--policies", "oef-coop,gavel", "--trace", kTrace,
                             "--cluster-spec", "k80:8,p100:8,v100:8:4", "--out",
                             (dir_ / "cmp").string()});
  EXPECT_EQ(cmp.status, 0) << cmp.err;
}

}  // namespace
}  // namespace fairgpu
