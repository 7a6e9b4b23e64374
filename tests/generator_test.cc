// The workload generator (fairgpu/workload.h: generate_workload): seeded
// determinism, and the empirical mix of 10,000 jobs against the distributions
// it draws from (Poisson arrivals, Gavel's size mix, OEF-style main types).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/profile.h"
#include "fairgpu/workload.h"
#include "test_files.h"

namespace fairgpu {
namespace {

GeneratorOptions options(std::uint64_t seed, int jobs = 300) {
  GeneratorOptions o;
  o.seed = seed;
  o.jobs = jobs;
  return o;
}

TEST(Generator, SameSeedSameWorkloadOtherSeedOther) {
  std::string a = write_native_trace(generate_workload(options(42), builtin_profiles()));
  std::string b = write_native_trace(generate_workload(options(42), builtin_profiles()));
  std::string c = write_native_trace(generate_workload(options(43), builtin_profiles()));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Generator, NamesAndShape) {
  GeneratorOptions o = options(1, 12);
  o.tenants = 20;
  Workload w = generate_workload(o, builtin_profiles());
  ASSERT_EQ(w.jobs.size(), 12u);
  EXPECT_EQ(w.jobs[0].id, "j000001");
  EXPECT_EQ(w.jobs[11].id, "j000012");
  EXPECT_DOUBLE_EQ(w.jobs[0].arrival_s, 0.0);
  for (const JobSpec& j : w.jobs) {
    ASSERT_EQ(j.tenant.size(), 3u) << j.tenant;  // t00..t19
    EXPECT_EQ(j.tenant[0], 't');
    EXPECT_TRUE(std::isnan(j.iterations));
    EXPECT_GE(j.duration_s, 60.0 * std::pow(10.0, 1.5));
    EXPECT_LE(j.duration_s, 60.0 * 1e4);
    EXPECT_NE(builtin_profiles().find(j.job_type), nullptr);
  }
  for (std::size_t i = 1; i < w.jobs.size(); ++i)
    EXPECT_LT(w.jobs[i - 1].arrival_s, w.jobs[i].arrival_s);
  for (const TenantSpec& t : w.tenants) EXPECT_DOUBLE_EQ(t.weight, 1.0);
  o.tenants = 150;
  w = generate_workload(o, builtin_profiles());
  EXPECT_EQ(w.jobs[0].tenant.size(), 4u);  // t000..t149
}

TEST(Generator, EmpiricalMixMatchesTheDistributions) {
  GeneratorOptions o = options(2024, 10000);
  o.tenants = 10;
  o.arrivals_per_hour = 90.0;
  o.main_type_fraction = 0.9;
  Workload w = generate_workload(o, builtin_profiles());
  ASSERT_EQ(w.jobs.size(), 10000u);

  std::map<int, double> workers;
  double long_jobs = 0;
  for (const JobSpec& j : w.jobs) {
    workers[j.workers] += 1.0 / 10000;
    if (j.duration_s > 60.0 * 1000) long_jobs += 1.0 / 10000;
  }
  EXPECT_NEAR(workers[1], 0.70, 0.02);
  EXPECT_NEAR(workers[2], 0.10, 0.02);
  EXPECT_NEAR(workers[4], 0.15, 0.02);
  EXPECT_NEAR(workers[8], 0.05, 0.02);
  EXPECT_EQ(workers.size(), 4u);
  EXPECT_NEAR(long_jobs, 0.2, 0.02);

  double mean_gap = w.jobs.back().arrival_s / 9999.0;
  EXPECT_NEAR(mean_gap, 3600.0 / 90.0, 0.05 * 3600.0 / 90.0);

  // A tenant's main type is the one it runs most; it should be ~90% of its jobs.
  std::map<std::string, std::map<std::string, int>> per_tenant;
  for (const JobSpec& j : w.jobs) ++per_tenant[j.tenant][j.job_type];
  ASSERT_EQ(per_tenant.size(), 10u);
  int main_jobs = 0;
  std::map<std::string, int> main_type_users;
  for (const auto& [tenant, counts] : per_tenant) {
    auto best = counts.begin();
    for (auto it = counts.begin(); it != counts.end(); ++it)
      if (it->second > best->second) best = it;
    main_jobs += best->second;
    ++main_type_users[best->first];
  }
  EXPECT_NEAR(main_jobs / 10000.0, 0.9, 0.02);
  // Ten tenants over eight types: pool[i % 8] gives two types two tenants each.
  EXPECT_EQ(main_type_users.size(), 8u);
}

TEST(Generator, PoolCanBeRestricted) {
  GeneratorOptions o = options(5, 200);
  o.job_types = {"A3C", "CycleGAN"};
  o.main_type_fraction = 1.0;
  o.tenants = 2;
  Workload w = generate_workload(o, builtin_profiles());
  std::map<std::string, std::string> type_of;
  for (const JobSpec& j : w.jobs) {
    EXPECT_TRUE(j.job_type == "A3C" || j.job_type == "CycleGAN") << j.job_type;
    auto [it, fresh] = type_of.emplace(j.tenant, j.job_type);
    EXPECT_EQ(it->second, j.job_type) << "fraction 1: one type per tenant";
  }
  EXPECT_EQ(type_of.size(), 2u);
  EXPECT_NE(type_of["t00"], type_of["t01"]);
}

TEST(Generator, BadOptionsNameTheOption) {
  struct Case {
    GeneratorOptions o;
    std::string field;
  };
  std::vector<Case> cases;
  GeneratorOptions o;
  o.jobs = 0;
  cases.push_back({o, "jobs"});
  o = {};
  o.tenants = 0;
  cases.push_back({o, "tenants"});
  o = {};
  o.arrivals_per_hour = 0;
  cases.push_back({o, "arrivals_per_hour"});
  o = {};
  o.arrivals_per_hour = INFINITY;
  cases.push_back({o, "arrivals_per_hour"});
  o = {};
  o.main_type_fraction = 1.5;
  cases.push_back({o, "main_type_fraction"});
  o = {};
  o.main_type_fraction = NAN;
  cases.push_back({o, "main_type_fraction"});
  o = {};
  o.job_types = {"No such model"};
  cases.push_back({o, "job_types"});
  for (const Case& c : cases) {
    try {
      generate_workload(c.o, builtin_profiles());
      ADD_FAILURE() << c.field << ": accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.source(), "generate");
      EXPECT_EQ(e.field(), c.field) << e.what();
    }
  }
  EXPECT_THROW(generate_workload(GeneratorOptions{}, ProfileCatalogue{}), InputError);
}


TEST(Generator, RunTimesAreDrawnFromAnEmpiricalList) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  // Philly's run times (OEF §6.1.2): every drawn duration is one of them, and
  // both halves of the list are drawn from.
  std::size_t zeros = 0;
  const std::vector<double> philly = read_run_times(
      testing_support::source_path("../shared/data/philly_runtime.csv"), &zeros);
  EXPECT_EQ(zeros, 2u);
  EXPECT_EQ(philly.size(), 83152u);
  GeneratorOptions o = options(3, 400);
  o.run_times = {100.0, 5000.0};
  const Workload w = generate_workload(o, builtin_profiles());
  std::map<double, int> seen;
  for (const JobSpec& j : w.jobs) ++seen[j.duration_s];
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_GT(seen[100.0], 150);
  EXPECT_GT(seen[5000.0], 150);
  // The workers still follow Gavel's mix.
  int single = 0;
  for (const JobSpec& j : w.jobs) single += j.workers == 1;
  EXPECT_NEAR(single / 400.0, 0.7, 0.08);
}

TEST(Generator, BadRunTimesNameTheFileAndLine) {
  const std::string bad = ::testing::TempDir() + "/bad-runtimes.csv";
  auto write = [&](const char* text) {
    std::FILE* f = std::fopen(bad.c_str(), "w");
    std::fputs(text, f);
    std::fclose(f);
  };
  std::size_t zeros = 0;
  write("runtime\n12\n-3\n");
  try {
    read_run_times(bad, &zeros);
    FAIL() << "a negative run time was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad-runtimes.csv:3"), std::string::npos) << e.what();
  }
  write("runtime\n0\n0.0\n");
  EXPECT_THROW(read_run_times(bad, &zeros), InputError);
  write("runtime\nabc\n");
  EXPECT_THROW(read_run_times(bad, &zeros), InputError);
  GeneratorOptions o = options(1, 5);
  o.run_times = {10.0, std::nan("")};
  EXPECT_THROW(generate_workload(o, builtin_profiles()), InputError);
}

}  // namespace
}  // namespace fairgpu
