// End-to-end tests of the `fairgpu` program: runs the built binary with its
// output redirected to files and checks exit status, stdout and stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "fairgpu/policy.h"
#include "fairgpu/scheduler.h"
#include "run_binary.h"

namespace fairgpu {
namespace {

using testing_support::quote;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;
using testing_support::source_path;

using nlohmann::json;

class CliTest : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(testing::TempDir()) /
           ("fairgpu-cli-" + std::to_string(getpid()) + "-" + info->test_suite_name() + "-" +
            info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  RunResult run(const std::vector<std::string>& args) { return run_binary(args, dir_); }

  std::string write(const std::string& name, const std::string& text) {
    auto path = dir_ / name;
    std::ofstream(path) << text;
    return path.string();
  }

  // True when the run succeeded; tests assert it before reading the output.
  bool succeeded(const RunResult& r) { return r.status == 0; }

  std::filesystem::path dir_;
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::size_t count_lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

// Checks the structure of `allocate --json` output against the input problem:
// tenants in input order, one value per GPU type, throughput = W.x, totals.
void check_allocation_json(const json& in, const json& out, const std::string& policy) {
  SCOPED_TRACE(policy);
  EXPECT_EQ(out["policy"], policy);
  EXPECT_EQ(out["gpu_types"], in["gpu_types"]);
  ASSERT_EQ(out["tenants"].size(), in["tenants"].size());
  std::size_t k = in["gpu_types"].size();
  std::vector<double> used(k, 0.0);
  double sum = 0;
  for (std::size_t t = 0; t < in["tenants"].size(); ++t) {
    const json& ti = in["tenants"][t];
    const json& to = out["tenants"][t];
    EXPECT_EQ(to["name"], ti["name"]);
    ASSERT_EQ(to["allocation"].size(), k);
    double w_x = 0;
    for (std::size_t j = 0; j < k; ++j) {
      double x = to["allocation"][j].get<double>();
      EXPECT_GE(x, 0.0);
      used[j] += x;
      w_x += ti["speedup"][j].get<double>() / ti["speedup"][0].get<double>() * x;
    }
    EXPECT_NEAR(to["throughput"].get<double>(), w_x, 1e-9);
    sum += to["throughput"].get<double>();
  }
  for (std::size_t j = 0; j < k; ++j)
    EXPECT_LE(used[j], in["capacity"][in["gpu_types"][j].get<std::string>()].get<double>() + 1e-6);
  EXPECT_NEAR(out["total_throughput"].get<double>(), sum, 1e-9);
  EXPECT_GE(out["solve_seconds"].get<double>(), 0.0);
  EXPECT_FALSE(out.contains("audit"));
}

TEST_F(CliTest, AllocateJsonMaxSumThroughput) {
  std::string input = source_path("examples/paper-three-users.json");
  RunResult r = run({"allocate", "--input", input, "--policy", "max-sum-throughput", "--json"});
  ASSERT_TRUE(succeeded(r)) << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  json out = json::parse(r.out);
  check_allocation_json(json::parse(slurp(input)), out, "max-sum-throughput");
  // gpu2 to the user with speedup 4, gpu1 (worth 1 to everyone) to anyone.
  EXPECT_NEAR(out["total_throughput"].get<double>(), 5.0, 1e-6);
}

TEST_F(CliTest, AllocateJsonEveryPolicy) {
  std::string input = source_path("examples/weighted.json");
  int ran = 0;
  for (const auto& name : PolicyRegistry::builtin().names()) {
    RunResult r = run({"allocate", "--input", input, "--policy", name, "--json"});
    ASSERT_TRUE(succeeded(r)) << name << ": " << r.err;
    check_allocation_json(json::parse(slurp(input)), json::parse(r.out), name);
    ++ran;
  }
  EXPECT_EQ(ran, 6);
}

TEST_F(CliTest, AllocateDefaultExamplePrintsATable) {
  RunResult r = run({"allocate", "--policy", "max-sum-throughput"});
  ASSERT_TRUE(succeeded(r)) << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* row : {"\nalice ", "\nbob ", "\n  lstm ", "\n  vgg ", "\ntotal "})
    EXPECT_NE(r.out.find(row), std::string::npos) << row << " in\n" << r.out;
  for (const char* column : {"k80", "p100", "v100", "throughput"})
    EXPECT_NE(r.out.find(column), std::string::npos) << column;
}

TEST_F(CliTest, AllocateJsonWithJobTypesAndAudit) {
  RunResult r =
      run({"allocate", "--policy", "max-sum-throughput", "--json", "--audit", "--no-sp-probe"});
  ASSERT_TRUE(succeeded(r)) << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  json out = json::parse(r.out);
  ASSERT_EQ(out["tenants"].size(), 2u);
  const json& bob = out["tenants"][1];
  ASSERT_EQ(bob["job_types"].size(), 2u);
  for (std::size_t j = 0; j < 3; ++j)
    EXPECT_NEAR(bob["allocation"][j].get<double>(),
                bob["job_types"][0]["allocation"][j].get<double>() +
                    bob["job_types"][1]["allocation"][j].get<double>(),
                1e-9);
  const json& audit = out["audit"];
  EXPECT_NEAR(audit["total_throughput"].get<double>(), out["total_throughput"].get<double>(), 1e-6);
  // max-sum-throughput is the efficiency reference: optimal by definition.
  EXPECT_EQ(audit["holds"]["optimal_efficiency"], true);
  EXPECT_FALSE(audit["holds"].contains("strategy_proof"));
}

TEST_F(CliTest, AuditReadsAllocateOutput) {
  std::string input = source_path("examples/paper-three-users.json");
  RunResult a = run({"allocate", "--input", input, "--policy", "max-sum-throughput", "--json"});
  ASSERT_TRUE(succeeded(a)) << a.err;
  ASSERT_EQ(a.status, 0) << a.err;
  std::string allocation = write("allocation.json", a.out);
  RunResult r =
      run({"audit", "--input", input, "--allocation", allocation, "--json", "--no-sp-probe"});
  ASSERT_EQ(r.status, 0) << r.err;
  json audit = json::parse(r.out);
  EXPECT_NEAR(audit["total_throughput"].get<double>(),
              json::parse(a.out)["total_throughput"].get<double>(), 1e-6);
  EXPECT_EQ(audit["sp_probed"], false);
  EXPECT_TRUE(audit["holds"].contains("envy_free"));
}

TEST_F(CliTest, AuditReadsAPlainMatrix) {
  std::string input = source_path("examples/paper-three-users.json");
  // Everything to user3: total throughput 1 + 4.
  std::string allocation = write("m.json", R"({"allocation": [[0, 0], [0, 0], [1, 1]]})");
  RunResult r = run({"audit", "--input", input, "--allocation", allocation});
  ASSERT_TRUE(succeeded(r)) << r.err;
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("properties"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("envy-free"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5.000"), std::string::npos) << r.out;
}

struct BadRun {
  std::vector<std::string> args;  // "{src}/" is replaced by the source directory
  std::string must_contain1;      // e.g. the file name
  std::string must_contain2;      // e.g. the field
};

TEST_F(CliTest, BadInputsExitTwoWithOneLine) {
  const std::string data = "tests/data/";
  const std::string paper = source_path("examples/paper-three-users.json");
  std::vector<BadRun> cases = {
      {{"allocate", "--input", source_path(data + "bad-speedup-length.json")},
       "bad-speedup-length.json",
       "tenants[1].speedup"},
      {{"allocate", "--input", source_path(data + "bad-job-type-overflow.json")},
       "bad-job-type-overflow.json",
       "tenants[1].job_types[1].throughput[2]"},
      {{"allocate", "--input", source_path(data + "bad-unknown-field.json")},
       "bad-unknown-field.json",
       "tenants[0].wieght"},
      {{"allocate", "--input", source_path(data + "bad-capacity-string.json")},
       "bad-capacity-string.json",
       "capacity.p100"},
      {{"allocate", "--input", source_path(data + "bad-syntax.json"), "--json"},
       "bad-syntax.json",
       "line 5"},
      {{"allocate", "--input", source_path(data + "no-such-file.json")},
       "no-such-file.json",
       "cannot open"},
      {{"audit", "--input", paper, "--allocation",
        source_path(data + "bad-allocation-over-capacity.json")},
       "bad-allocation-over-capacity.json",
       "over capacity"},
      {{"audit", "--input", source_path(data + "bad-speedup-length.json"), "--allocation",
        source_path(data + "bad-allocation-over-capacity.json")},
       "bad-speedup-length.json",
       "tenants[1].speedup"},
      {{"allocate", "--policy", "no-such-policy"}, "no-such-policy", "max-sum-throughput"},
      {{"allocate", "--bogus-flag"}, "--bogus-flag", ""},
      {{"audit", "--input", paper}, "--allocation", ""},
      {{}, "subcommand", ""},
      {{"allocate", "--input", ""}, "empty file name", ""},
      {{"audit", "--input", paper, "--allocation", paper, "--policy", "nope", "--no-sp-probe"},
       "unknown policy 'nope'",
       ""},
      {{"audit", "--input", paper, "--allocation", paper}, "paper-three-users.json", "allocation"},
  };
  for (const auto& c : cases) {
    RunResult r = run(c.args);
    std::string what = c.args.empty() ? "(no arguments)" : c.args.back();
    EXPECT_EQ(r.status, 2) << what << ": " << r.err;
    EXPECT_EQ(r.out, "") << what;
    EXPECT_EQ(count_lines(r.err), 1u) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("fairgpu: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.must_contain1), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.must_contain2), std::string::npos) << r.err;
  }
}

// Extreme but once-accepted weights: outside [kMinWeight, kMaxWeight] they
// are an input error naming the field (exit 2), never the LP's failure
// (exit 1); at the ends of the range, and at their ratio 1e8, the share
// LPs of oef-coop, oef-noncoop and gavel solve.
TEST_F(CliTest, ExtremeWeightsExitTwoNamingTheFieldAndTheRangeSolves) {
  auto problem = [&](const std::string& name, const std::string& w0, const std::string& w1) {
    return write(name, R"({"gpu_types": ["k80", "v100"], "capacity": {"k80": 4, "v100": 4},
        "tenants": [{"name": "a", "weight": )" +
                           w0 + R"(, "speedup": [1, 3]},
                    {"name": "b", "weight": )" +
                           w1 + R"(, "speedup": [1, 2]},
                    {"name": "c", "speedup": [1, 4]}]})");
  };
  struct Bad {
    std::string w0, w1, field;
  };
  const std::vector<Bad> bad = {{"1e-300", "1e300", "tenants[0].weight"},
                                {"1", "1e20", "tenants[1].weight"},
                                {"1e300", "1", "tenants[0].weight"},
                                {"1e-20", "1", "tenants[0].weight"}};
  for (const std::string policy : {"oef-coop", "oef-noncoop", "gavel"}) {
    for (std::size_t i = 0; i < bad.size(); ++i) {
      const std::string input = problem("bad" + std::to_string(i) + ".json", bad[i].w0, bad[i].w1);
      RunResult r = run({"allocate", "--input", input, "--policy", policy, "--json"});
      EXPECT_EQ(r.status, 2) << policy << " " << bad[i].w0 << ":" << bad[i].w1 << ": " << r.err;
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(count_lines(r.err), 1u) << r.err;
      EXPECT_NE(r.err.find(bad[i].field + ": must be in [0.0001, 10000]"), std::string::npos)
          << r.err;
    }
    for (const auto& [w0, w1] : std::vector<std::pair<std::string, std::string>>{
             {"1e-4", "1e-4"}, {"1e4", "1e4"}, {"1e-4", "1e4"}, {"1e4", "1e-4"}}) {
      const std::string input = problem("ok.json", w0, w1);
      RunResult r = run({"allocate", "--input", input, "--policy", policy, "--json"});
      ASSERT_EQ(r.status, 0) << policy << " " << w0 << ":" << w1 << ": " << r.err;
      json out = json::parse(r.out);
      check_allocation_json(json::parse(slurp(input)), out, policy);
      EXPECT_GT(out["total_throughput"].get<double>(), 0.0) << r.out;
    }
  }
}

// The same for speeds, capacities and demands beyond what the LPs resolve:
// a speedup of 1e300 used to end in "LP error" (exit 1) and a capacity of
// 1e300 in CLP's assertion (abort, exit 134).
TEST_F(CliTest, ExtremeSpeedsCapacitiesAndDemandsExitTwoNamingTheField) {
  auto problem = [&](const std::string& capacity, const std::string& speedup,
                     const std::string& demand) {
    return write("p.json", R"({"gpu_types": ["k80", "v100"], "capacity": {"k80": )" + capacity +
                               R"(, "v100": 4}, "tenants": [{"name": "a", "speedup": )" + speedup +
                               R"(, "demand": )" + demand +
                               R"(}, {"name": "b", "speedup": [1, 2]}]})");
  };
  struct Bad {
    std::string capacity, speedup, demand, message;
  };
  const std::vector<Bad> bad = {
      {"4", "[1, 1e300]", "2", "tenants[0].speedup[1]: must be 0 or within a factor 10000"},
      {"4", "[1e-300, 1]", "2", "tenants[0].speedup[1]: must be 0 or within a factor 10000"},
      {"4", "[1, 1e20]", "2", "tenants[0].speedup[1]: must be 0 or within a factor 10000"},
      {"1e300", "[1, 2]", "2", "capacity.k80: must be 0 or in [0.001, 1000000]"},
      {"1e-300", "[1, 2]", "2", "capacity.k80: must be 0 or in [0.001, 1000000]"},
      {"4", "[1, 2]", "1e-300", "tenants[0].demand: must be in [0.001, 1000000]"},
  };
  for (const std::string policy : {"oef-coop", "oef-noncoop", "gavel", "max-sum-throughput"}) {
    for (const auto& b : bad) {
      RunResult r = run(
          {"allocate", "--input", problem(b.capacity, b.speedup, b.demand), "--policy", policy});
      EXPECT_EQ(r.status, 2) << policy << " " << b.message << ": " << r.err;
      EXPECT_NE(r.err.find(b.message), std::string::npos) << r.err;
    }
    for (const auto& [capacity, speedup, demand] : std::vector<std::array<std::string, 3>>{
             {"1e6", "[1, 1e4]", "1e6"}, {"1e-3", "[1, 1e-4]", "1e-3"}, {"0", "[1, 0]", "2"}}) {
      const std::string input = problem(capacity, speedup, demand);
      RunResult r = run({"allocate", "--input", input, "--policy", policy, "--json"});
      ASSERT_EQ(r.status, 0) << policy << " " << capacity << " " << speedup << ": " << r.err;
    }
  }
}

TEST_F(CliTest, UnknownPolicyListsTheValidNames) {
  RunResult r = run({"allocate", "--policy", "oef"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  for (const auto& name : PolicyRegistry::builtin().names())
    EXPECT_NE(r.err.find(name), std::string::npos) << name << " in " << r.err;
}

TEST_F(CliTest, PoliciesListsEveryPolicyAndItsKeys) {
  RunResult r = run({"policies"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(round_policy_catalogue().size(), round_policy_names().size());
  // Two lines of usage, two headings, one line per policy and one per key.
  std::size_t keys = 0;
  for (const auto& p : round_policy_catalogue()) keys += p.keys.size();
  EXPECT_EQ(count_lines(r.out), 4 + round_policy_names().size() + keys);
  // Each policy's line, then its keys (key=default, help, what it accepts),
  // before the next policy's line.
  auto section = [&](const std::string& name) {
    std::size_t at = r.out.find("\n  " + name + " ");
    if (at == std::string::npos) return std::string();
    std::size_t end = r.out.find("\n  ", at + 3);
    while (end != std::string::npos && r.out.compare(end, 5, "\n    ") == 0)
      end = r.out.find("\n  ", end + 3);
    return r.out.substr(at, end == std::string::npos ? std::string::npos : end - at);
  };
  for (const auto& name : round_policy_names())
    EXPECT_FALSE(section(name).empty()) << name << " in\n" << r.out;
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"themis", {"filter=0.8", "fraction of jobs", "a number in (0, 1]", "lease=900", "round=10"}},
      {"allox", {"alpha=1 ", "fraction of tenants", "a number in (0, 1]"}},
      {"tiresias", {"thresholds=3600 ", "'/'", "strictly ascending", "promote=8 "}},
      {"astraea", {"fair-share=quota", "one of quota | demand"}},
      {"ftf", {"round=360", "level=job"}},
      {"oef-coop", {"level=tenant", "one of tenant | job", "round=300", "demands=on", "on or off"}},
      {"gavel", {"level=job", "round=300"}},
  };
  for (const auto& [name, parts] : expected)
    for (const auto& part : parts)
      EXPECT_TRUE(contains(section(name), part)) << part << " under " << name << ":\n" << section(name);
  EXPECT_FALSE(contains(section("oef-coop"), "filter=")) << section("oef-coop");
  EXPECT_FALSE(contains(section("fifo"), "alpha=")) << section("fifo");
}

TEST_F(CliTest, HelpListsSubcommands) {
  RunResult r = run({"--help"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* sub : {"allocate", "audit", "policies"})
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub << " in\n" << r.out;
}

// Issue 30, low: `fairgpu logs` shows a job's output without its escape
// sequences (a job could retitle the operator's terminal, clear it, or with
// some terminals have it type). Control bytes but newline and tab, the C1
// controls and bytes that are not UTF-8 are shown as \xNN; UTF-8 text and
// CRLF pass; a lone CR becomes a newline. --raw writes the bytes as they are;
// -f shows what the default shows.
#ifdef FAIRGPU_HAVE_LIVE  // `fairgpu logs`: not in the simulator-only build
TEST_F(CliTest, LogsShowAJobsEscapeSequencesAsText) {
  const auto run_dir = dir_ / "state" / "runs" / "7";
  std::filesystem::create_directories(run_dir);
  write("state/runs/7/job_id", "j-000001\n");
  const std::string log =
      "hello \x1b]0;pwned\x07 \x1b[2J\tok\n"
      "c1 \xc2\x9b and 8-bit \x9b, caf\xc3\xa9, \xe2\x82\xac, cut \xe2\x82\n"
      "crlf\r\nbar 1\rbar 2\n\x7f\x01";
  write("state/runs/7/log", log);
  const std::string shown =
      "hello \\x1b]0;pwned\\x07 \\x1b[2J\tok\n"
      "c1 \\xc2\\x9b and 8-bit \\x9b, caf\xc3\xa9, \xe2\x82\xac, cut \\xe2\\x82\n"
      "crlf\r\nbar 1\nbar 2\n\\x7f\\x01";
  const std::string state = (dir_ / "state").string();
  RunResult r = run({"logs", "j-000001", "--state-dir", state});
  ASSERT_TRUE(succeeded(r)) << r.err;
  EXPECT_EQ(r.out, shown);
  r = run({"logs", "j-000001", "--state-dir", state, "--raw"});
  ASSERT_TRUE(succeeded(r)) << r.err;
  EXPECT_EQ(r.out, log);
  // -f follows until killed; what it wrote by then is the same, but for the
  // last bytes (a character or CR that may go on in the next write waits).
  r = run_binary({"logs", "j-000001", "--state-dir", state, "-f"}, dir_, {}, 2);
  EXPECT_EQ(r.status, 137);
  EXPECT_EQ(r.out, shown);
}
#endif  // FAIRGPU_HAVE_LIVE

}  // namespace
}  // namespace fairgpu
