// Reading share problems and allocation files, and writing allocation reports
// (fairgpu/allocation_io.h): normalisation, defaults, job types, and a table of
// bad inputs, each of which must name the exact offending field.
#include "fairgpu/allocation_io.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "test_files.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using testing_support::case_name;

using nlohmann::json;

// Two GPU types, one plain tenant and one with job types; `tenants` is spliced in.
std::string problem_with(const std::string& tenants) {
  return R"({"gpu_types": ["slow", "fast"], "capacity": {"slow": 2, "fast": 3}, "tenants": [)" +
         tenants + "]}";
}

TEST(AllocationIoParse, ThroughputIsNormalisedToTheFirstType) {
  ShareProblem p = parse_share_problem(problem_with(R"({"name": "a", "throughput": [10, 30]},
                      {"name": "b", "speedup": [2, 5]})"),
                                       "t.json");
  ASSERT_EQ(p.num_entities(), 2u);
  EXPECT_DOUBLE_EQ(p.entities[0].speedup[0], 1.0);
  EXPECT_DOUBLE_EQ(p.entities[0].speedup[1], 3.0);
  // A speedup not starting at 1 is rescaled the same way.
  EXPECT_DOUBLE_EQ(p.entities[1].speedup[0], 1.0);
  EXPECT_DOUBLE_EQ(p.entities[1].speedup[1], 2.5);
  EXPECT_EQ(p.gpu_types, (std::vector<std::string>{"slow", "fast"}));
  EXPECT_EQ(p.capacity, (std::vector<double>{2, 3}));
}

TEST(AllocationIoParse, WeightDefaultsToOneAndDemandToNone) {
  ShareProblem p = parse_share_problem(problem_with(R"({"name": "a", "speedup": [1, 2]},
                      {"name": "b", "weight": 2.5, "demand": 3, "speedup": [1, 4]})"),
                                       "t.json");
  ASSERT_EQ(p.tenants.size(), 2u);
  EXPECT_DOUBLE_EQ(p.tenants[0].weight, 1.0);
  EXPECT_FALSE(std::isfinite(p.tenants[0].demand));
  EXPECT_DOUBLE_EQ(p.tenants[1].weight, 2.5);
  EXPECT_DOUBLE_EQ(p.tenants[1].demand, 3.0);
}

TEST(AllocationIoParse, JobTypesBecomeEntitiesWithTheWeightSplit) {
  ShareProblem p = parse_share_problem(problem_with(R"({"name": "a", "speedup": [1, 2]},
                      {"name": "b", "weight": 3, "job_types": [
                         {"name": "lstm", "speedup": [1, 1.5]},
                         {"name": "vgg", "throughput": [4, 12]}]})"),
                                       "t.json");
  ASSERT_EQ(p.num_entities(), 3u);
  ASSERT_EQ(p.tenants[1].entities, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(p.entities[1].name, "b/lstm");
  EXPECT_EQ(p.entities[2].job_type, "vgg");
  EXPECT_DOUBLE_EQ(p.entities[2].speedup[1], 3.0);
  EXPECT_DOUBLE_EQ(p.entities[1].weight, 1.5);
  EXPECT_DOUBLE_EQ(p.entities[2].weight, 1.5);
}

TEST(AllocationIoParse, DefaultProblemIsTheAllocateExample) {
  std::ifstream in(std::string(FAIRGPU_SOURCE_DIR) + "/examples/allocate.json");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  ShareProblem file = parse_share_problem(text.str(), "examples/allocate.json");
  ShareProblem builtin = default_share_problem();
  EXPECT_EQ(file.gpu_types, builtin.gpu_types);
  EXPECT_EQ(file.capacity, builtin.capacity);
  ASSERT_EQ(file.num_entities(), builtin.num_entities());
  for (std::size_t e = 0; e < file.num_entities(); ++e) {
    EXPECT_EQ(file.entities[e].name, builtin.entities[e].name);
    EXPECT_EQ(file.entities[e].speedup, builtin.entities[e].speedup);
    EXPECT_EQ(file.entities[e].weight, builtin.entities[e].weight);
  }
}

struct BadInput {
  const char* what;
  std::string text;
  std::string field;    // exact InputError::field()
  std::string problem;  // a substring of the problem
};

class AllocationIoBadInput : public testing::TestWithParam<BadInput> {};

TEST_P(AllocationIoBadInput, NamesTheField) {
  const BadInput& c = GetParam();
  try {
    parse_share_problem(c.text, "bad.json");
    FAIL() << c.what << ": accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_NE(e.problem().find(c.problem), std::string::npos) << e.what();
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("bad.json: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.field), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

const std::string kOk = R"({"name": "a", "speedup": [1, 2]})";

INSTANTIATE_TEST_SUITE_P(
    Table, AllocationIoBadInput,
    testing::Values(
        BadInput{"short vector", problem_with(kOk + R"(, {"name": "b", "speedup": [1]})"),
                 "tenants[1].speedup", "expected 2 values (one per GPU type), got 1"},
        BadInput{"long job type vector",
                 problem_with(R"({"name": "b", "job_types": [{"name": "x", "speedup": [1, 2]},
                                 {"name": "y", "throughput": [1, 2, 3]}]})"),
                 "tenants[0].job_types[1].throughput", "got 3"},
        BadInput{"negative speedup", problem_with(R"({"name": "a", "speedup": [1, -2]})"),
                 "tenants[0].speedup[1]", ">= 0"},
        BadInput{"zero reference throughput",
                 problem_with(R"({"name": "a", "throughput": [0, 2]})"), "tenants[0].throughput[0]",
                 "> 0"},
        BadInput{
            "overflow to inf",
            problem_with(R"({"name": "b", "job_types": [{"name": "x", "speedup": [1, 1e999]}]})"),
            "tenants[0].job_types[0].speedup[1]", "overflow"},
        BadInput{"string for a number", problem_with(R"({"name": "a", "speedup": [1, "2"]})"),
                 "tenants[0].speedup[1]", "expected a number, got string"},
        BadInput{"zero weight", problem_with(R"({"name": "a", "weight": 0, "speedup": [1, 2]})"),
                 "tenants[0].weight", "must be in [0.0001, 10000], got 0"},
        BadInput{"negative demand",
                 problem_with(R"({"name": "a", "demand": -1, "speedup": [1, 2]})"),
                 "tenants[0].demand", "> 0"},
        BadInput{"unknown tenant field",
                 problem_with(R"({"name": "a", "wieght": 2, "speedup": [1, 2]})"),
                 "tenants[0].wieght", "unknown field"},
        BadInput{"unknown job type field",
                 problem_with(R"({"name": "a", "job_types": [{"name": "x", "speedup": [1, 2],
                                  "size": 4}]})"),
                 "tenants[0].job_types[0].size", "unknown field"},
        BadInput{"unknown top-level field", R"({"gpu_types": ["a"], "capacity": {"a": 1},
                                              "tenant": []})",
                 "tenant", "unknown field"},
        BadInput{"duplicate tenant", problem_with(kOk + "," + kOk), "tenants[1].name",
                 "duplicate tenant name 'a'"},
        BadInput{"duplicate job type",
                 problem_with(R"({"name": "b", "job_types": [{"name": "x", "speedup": [1, 2]},
                                 {"name": "x", "speedup": [1, 3]}]})"),
                 "tenants[0].job_types[1].name", "duplicate job type 'x'"},
        BadInput{"duplicate gpu type",
                 R"({"gpu_types": ["a", "a"], "capacity": {"a": 1}, "tenants": []})",
                 "gpu_types[1]", "duplicate GPU type 'a'"},
        BadInput{"duplicate key", R"({"gpu_types": ["a"], "capacity": {"a": 1, "a": 2},
                                     "tenants": []})",
                 "capacity.a", "twice"},
        BadInput{"unknown capacity type",
                 R"({"gpu_types": ["a"], "capacity": {"a": 1, "b": 2}, "tenants": []})",
                 "capacity.b", "unknown GPU type"},
        BadInput{"missing capacity type",
                 R"({"gpu_types": ["a", "b"], "capacity": {"a": 1}, "tenants": []})", "capacity.b",
                 "missing"},
        BadInput{"zero total capacity",
                 R"({"gpu_types": ["a"], "capacity": {"a": 0}, "tenants": [
                     {"name": "t", "speedup": [1]}]})",
                 "capacity", "total capacity is 0"},
        BadInput{"missing tenants", R"({"gpu_types": ["a"], "capacity": {"a": 1}})", "tenants",
                 "missing"},
        BadInput{"no speed", problem_with(R"({"name": "a", "weight": 1})"), "tenants[0]",
                 "give one of speedup, throughput, job_types"},
        BadInput{"two speeds",
                 problem_with(R"({"name": "a", "speedup": [1, 2], "throughput": [1, 2]})"),
                 "tenants[0]", "only one of"},
        BadInput{"missing name", problem_with(R"({"speedup": [1, 2]})"), "tenants[0].name",
                 "missing"},
        BadInput{"syntax error", problem_with(R"({"name": "a", "speedup": [1, 2})"),
                 "tenants[0].speedup[2]", "syntax error"},
        BadInput{"not an object", "[1, 2]", "(top level)", "expected an object"}),
    [](const testing::TestParamInfo<BadInput>& p) { return case_name(p.param.what); });

TEST(AllocationIoParse, ErrorMessagesStayOnOneLine) {
  try {
    parse_share_problem(R"({"gpu_types": ["a"], "capacity": {"a": 1}, "x\ny": 1})", "in\nput");
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

TEST(AllocationIoParse, UnreadableFile) {
  std::string path = testing::TempDir() + "/fairgpu-no-such-file.json";
  try {
    read_share_problem(path);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_NE(e.problem().find("cannot open"), std::string::npos) << e.what();
  }
}

// ---- allocation files and output -------------------------------------------

ShareProblem two_tenant_problem() {
  return parse_share_problem(problem_with(R"({"name": "a", "speedup": [1, 2]},
                      {"name": "b", "job_types": [{"name": "x", "speedup": [1, 3]},
                                                  {"name": "y", "speedup": [1, 4]}]})"),
                             "t.json");
}

Matrix sample_allocation() {
  Matrix x(3, 2);
  x(0, 0) = 1.0;
  x(0, 1) = 0.5;
  x(1, 1) = 1.25;
  x(2, 0) = 0.75;
  x(2, 1) = 1.0;
  return x;
}

TEST(AllocationIoOutput, JsonHasTenantsInOrderAndConsistentTotals) {
  ShareProblem p = two_tenant_problem();
  Matrix x = sample_allocation();
  json j = json::parse(allocation_to_json(p, x, {"some-policy", 0.5, nullptr}));
  EXPECT_EQ(j["policy"], "some-policy");
  EXPECT_EQ(j["gpu_types"], json({"slow", "fast"}));
  ASSERT_EQ(j["tenants"].size(), 2u);
  EXPECT_EQ(j["tenants"][0]["name"], "a");
  EXPECT_FALSE(j["tenants"][0].contains("job_types"));
  EXPECT_FALSE(j.contains("audit"));
  const json& b = j["tenants"][1];
  ASSERT_EQ(b["job_types"].size(), 2u);
  EXPECT_EQ(b["job_types"][1]["name"], "y");
  // b's allocation is the sum of its job types'; throughput is W.x.
  EXPECT_DOUBLE_EQ(b["allocation"][0].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(b["allocation"][1].get<double>(), 2.25);
  EXPECT_DOUBLE_EQ(b["job_types"][0]["throughput"].get<double>(), 3 * 1.25);
  EXPECT_DOUBLE_EQ(b["throughput"].get<double>(), 3 * 1.25 + 0.75 + 4 * 1.0);
  double sum = j["tenants"][0]["throughput"].get<double>() + b["throughput"].get<double>();
  EXPECT_DOUBLE_EQ(j["total_throughput"].get<double>(), sum);
  EXPECT_DOUBLE_EQ(j["solve_seconds"].get<double>(), 0.5);
}

TEST(AllocationIoOutput, AuditObjectHasHoldsAndProbeOnlyWhenProbed) {
  AuditReport r;
  r.envy_free = true;
  r.max_envy_ratio = 0.75;
  json j = json::parse(audit_to_json(r));
  EXPECT_DOUBLE_EQ(j["max_envy_ratio"].get<double>(), 0.75);
  EXPECT_EQ(j["holds"]["envy_free"], true);
  EXPECT_EQ(j["holds"]["sharing_incentive"], false);
  EXPECT_FALSE(j["holds"].contains("strategy_proof"));
  r.sp_probed = true;
  r.strategy_proof = true;
  j = json::parse(audit_to_json(r));
  EXPECT_EQ(j["holds"]["strategy_proof"], true);
}

TEST(AllocationIoOutput, TextHasARowPerTenantAndJobType) {
  ShareProblem p = two_tenant_problem();
  std::string text = allocation_to_text(p, sample_allocation(), {"some-policy", -1, nullptr});
  for (const char* row : {"\na ", "\nb ", "\n  x ", "\n  y ", "\ntotal ", "\ncapacity "})
    EXPECT_NE(text.find(row), std::string::npos) << row << " in\n" << text;
  EXPECT_EQ(text.find("properties"), std::string::npos);
}

TEST(AllocationIoAllocation, ReadsBackAllocateOutput) {
  ShareProblem p = two_tenant_problem();
  Matrix x = sample_allocation();
  std::string text = allocation_to_json(p, x, {"max-min", 0.1, nullptr});
  AllocationInput in = parse_allocation(p, text, "a.json");
  EXPECT_EQ(in.policy, "max-min");
  ASSERT_EQ(in.x.rows(), 3u);
  for (std::size_t e = 0; e < 3; ++e)
    for (std::size_t j = 0; j < 2; ++j) EXPECT_DOUBLE_EQ(in.x(e, j), x(e, j)) << e << "," << j;
}

TEST(AllocationIoAllocation, ReadsAPlainMatrix) {
  ShareProblem p = two_tenant_problem();
  AllocationInput in =
      parse_allocation(p, R"({"allocation": [[1, 0.5], [0, 1.25], [0.75, 1]]})", "a.json");
  EXPECT_TRUE(in.policy.empty());
  EXPECT_DOUBLE_EQ(in.x(1, 1), 1.25);
  EXPECT_DOUBLE_EQ(in.x(2, 0), 0.75);
}

struct BadAllocation {
  const char* what;
  std::string text;
  std::string field;
};

class AllocationIoBadAllocation : public testing::TestWithParam<BadAllocation> {};

TEST_P(AllocationIoBadAllocation, NamesTheField) {
  const BadAllocation& c = GetParam();
  ShareProblem p = two_tenant_problem();
  try {
    parse_allocation(p, c.text, "a.json");
    FAIL() << c.what << ": accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), c.field) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, AllocationIoBadAllocation,
    testing::Values(
        BadAllocation{"over capacity", R"({"allocation": [[2, 0], [0, 0], [1, 0]]})", "allocation"},
        BadAllocation{"wrong row count", R"({"allocation": [[0, 0], [0, 0]]})", "allocation"},
        BadAllocation{"wrong row length", R"({"allocation": [[0, 0], [0], [0, 0]]})",
                      "allocation[1]"},
        BadAllocation{"negative", R"({"allocation": [[0, 0], [0, -1], [0, 0]]})",
                      "allocation[1][1]"},
        BadAllocation{"unknown policy", R"({"policy": "nope", "allocation": [[0, 0], [0, 0],
                                            [0, 0]]})",
                      "policy"},
        BadAllocation{"unknown tenant", R"({"tenants": [{"name": "zed", "allocation": [0, 0]}]})",
                      "tenants[0].name"},
        BadAllocation{"missing tenant", R"({"tenants": [{"name": "a", "allocation": [0, 0]}]})",
                      "tenants"},
        BadAllocation{"missing job types",
                      R"({"tenants": [{"name": "a", "allocation": [0, 0]},
                                      {"name": "b", "allocation": [0, 0]}]})",
                      "tenants[1].job_types"},
        BadAllocation{"sum mismatch",
                      R"({"tenants": [{"name": "a", "allocation": [0, 0]},
                                      {"name": "b", "allocation": [1, 0], "job_types": [
                                        {"name": "x", "allocation": [0, 0]},
                                        {"name": "y", "allocation": [0, 0]}]}]})",
                      "tenants[1].allocation[0]"},
        BadAllocation{"gpu types differ",
                      R"({"gpu_types": ["fast", "slow"], "allocation": [[0, 0], [0, 0], [0, 0]]})",
                      "gpu_types"}),
    [](const testing::TestParamInfo<BadAllocation>& p) { return case_name(p.param.what); });

}  // namespace
}  // namespace fairgpu
