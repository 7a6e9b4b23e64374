// Clusters and throughput profiles (fairgpu/cluster.h, fairgpu/profile.h):
// the built-in cluster, both JSON cluster forms, rate interpolation on a
// hand-made profile, Gavel's simulation_throughputs.json read in full, the
// built-in catalogue checked against it, and malformed inputs under
// tests/data, each of which must name the file and the field.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "fairgpu/cluster.h"
#include "fairgpu/input_error.h"
#include "fairgpu/profile.h"

#include "test_files.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using testing_support::test_data;
using testing_support::case_name;

const std::string kGavelProfiles =
    std::string(FAIRGPU_SHARED_DATA) + "/gavel/simulation_throughputs.json";

// ---- clusters ---------------------------------------------------------------

TEST(ClusterModel, DefaultClusterHasThreeEightGpuNodesPerType) {
  Cluster c = default_cluster();
  EXPECT_EQ(c.gpu_types, (std::vector<std::string>{"k80", "p100", "v100"}));
  ASSERT_EQ(c.nodes.size(), 9u);
  EXPECT_EQ(c.capacity(), (std::vector<int>{24, 24, 24}));
  EXPECT_EQ(c.total_gpus(), 72);
  EXPECT_EQ(c.nodes[0].name, "k80-0");
  EXPECT_EQ(c.nodes[5].name, "p100-2");
  EXPECT_EQ(c.nodes[6].name, "v100-0");
  EXPECT_EQ(c.nodes[6].type, 2u);
  EXPECT_DOUBLE_EQ(c.nodes[5].cpus, 64.0);
  EXPECT_DOUBLE_EQ(c.nodes[5].memory_gb, 512.0);
  EXPECT_EQ(c.type_index("p100"), 1u);
  EXPECT_FALSE(c.type_index("a100").has_value());
}

TEST(ClusterInput, NodeListKeepsTypeOrderAndNamesUnnamedNodes) {
  Cluster c = parse_cluster_json(R"({"nodes": [
      {"name": "big", "gpu_type": "v100", "gpus": 8, "cpus": 64, "memory_gb": 512},
      {"gpu_type": "k80", "gpus": 4},
      {"gpu_type": "v100", "gpus": 2, "cpus": 16}]})",
                                 "c.json");
  EXPECT_EQ(c.gpu_types, (std::vector<std::string>{"v100", "k80"}));
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.nodes[0].name, "big");
  EXPECT_EQ(c.nodes[1].name, "k80-0");
  EXPECT_EQ(c.nodes[2].name, "v100-1");  // the second v100 node
  EXPECT_EQ(c.nodes[1].type, 1u);
  EXPECT_DOUBLE_EQ(c.nodes[1].cpus, 0.0);  // unknown
  EXPECT_DOUBLE_EQ(c.nodes[2].cpus, 16.0);
  EXPECT_DOUBLE_EQ(c.nodes[0].memory_gb, 512.0);
  EXPECT_EQ(c.capacity(), (std::vector<int>{10, 4}));
  EXPECT_EQ(c.total_gpus(), 14);
}

TEST(ClusterInput, CompactFormExpandsNodesInFileOrder) {
  Cluster c = parse_cluster_json(R"({
      "v100": {"nodes": 2, "gpus_per_node": 8, "cpus_per_node": 64, "memory_gb_per_node": 488},
      "k80": {"nodes": 9, "gpus_per_node": 4}})",
                                 "c.json");
  EXPECT_EQ(c.gpu_types, (std::vector<std::string>{"v100", "k80"}));
  ASSERT_EQ(c.nodes.size(), 11u);
  EXPECT_EQ(c.nodes[1].name, "v100-1");
  EXPECT_EQ(c.nodes[10].name, "k80-8");
  EXPECT_DOUBLE_EQ(c.nodes[1].memory_gb, 488.0);
  EXPECT_EQ(c.capacity(), (std::vector<int>{16, 36}));
}

TEST(ClusterInput, ExampleShapedLikeTheDefaultMatchesIt) {
  Cluster c = parse_cluster_json(R"({
      "k80": {"nodes": 3, "gpus_per_node": 8, "cpus_per_node": 64, "memory_gb_per_node": 512},
      "p100": {"nodes": 3, "gpus_per_node": 8, "cpus_per_node": 64, "memory_gb_per_node": 512},
      "v100": {"nodes": 3, "gpus_per_node": 8, "cpus_per_node": 64, "memory_gb_per_node": 512}})",
                                 "c.json");
  Cluster d = default_cluster();
  EXPECT_EQ(c.gpu_types, d.gpu_types);
  ASSERT_EQ(c.nodes.size(), d.nodes.size());
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    EXPECT_EQ(c.nodes[i].name, d.nodes[i].name);
    EXPECT_EQ(c.nodes[i].gpus, d.nodes[i].gpus);
  }
}

struct BadFile {
  const char* file;
  std::string field;    // exact InputError::field()
  std::string problem;  // a substring of the problem
};

class ClusterBadInput : public testing::TestWithParam<BadFile> {};

// `read` must reject c.file with an InputError naming the file, c.field and
// a problem containing c.problem, in that order on one line.
template <typename Read>
void expect_rejected(const BadFile& c, Read read) {
  std::string path = test_data(c.file);
  try {
    read(path);
    FAIL() << c.file << ": accepted";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.source(), path);
    EXPECT_EQ(e.field(), c.field) << what;
    EXPECT_NE(e.problem().find(c.problem), std::string::npos) << what;
    EXPECT_EQ(what.rfind(path + ": " + c.field + ": ", 0), 0u) << what;
  }
}

TEST_P(ClusterBadInput, NamesFileAndField) {
  expect_rejected(GetParam(), [](const std::string& path) { read_cluster_file(path); });
}

INSTANTIATE_TEST_SUITE_P(
    Files, ClusterBadInput,
    testing::Values(
        BadFile{"bad-cluster-unknown-field.json", "nodes[1].gpu", "unknown field"},
        BadFile{"bad-cluster-zero-gpus.json", "nodes[1].gpus", "must be >= 1, got 0"},
        BadFile{"bad-cluster-negative-cpus.json", "k80.cpus_per_node", "must be >= 0"},
        BadFile{"bad-cluster-duplicate-name.json", "nodes[1].name", "duplicate node name 'v100-0'"},
        BadFile{"bad-cluster-empty.json", "nodes", "empty"},
        BadFile{"bad-cluster-missing-gpus.json", "v100.gpus_per_node", "missing required field"},
        BadFile{"bad-cluster-fractional-gpus.json", "nodes[0].gpus", "whole number"},
        BadFile{"bad-cluster-string-count.json", "p100.nodes", "expected a number, got string"},
        BadFile{"bad-cluster-syntax.json", "nodes[1]", "syntax error"}),
    [](const testing::TestParamInfo<BadFile>& p) { return case_name(p.param.file); });

TEST(ClusterInput, MissingFileNamesThePath) {
  std::string path = testing::TempDir() + "/fairgpu-no-such-cluster.json";
  try {
    read_cluster_file(path);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_NE(e.problem().find("cannot open"), std::string::npos) << e.what();
  }
}

// Gavel's shorthand: TYPE:GPUS[:GPUS_PER_NODE]; without GPUS_PER_NODE whole
// nodes of 8 GPUs, the last one holding the rest; TYPE:GPUS:1 is Gavel's
// default (every GPU its own node).
TEST(ClusterSpec, TypesInOrderNodesOfEightUnlessGiven) {
  const Cluster eights = parse_cluster_spec("k80:36,p100:16,v100:5", "--cluster-spec");
  std::vector<int> sizes;
  for (const Node& n : eights.nodes) sizes.push_back(n.gpus);
  EXPECT_EQ(sizes, (std::vector<int>{8, 8, 8, 8, 4, 8, 8, 5}));
  EXPECT_EQ(eights.nodes[4].name, "k80-4");
  EXPECT_EQ(eights.capacity(), (std::vector<int>{36, 16, 5}));
  const Cluster c = parse_cluster_spec("k80:36:1,p100:36:1,v100:36:4", "--cluster-spec");
  EXPECT_EQ(c.gpu_types, (std::vector<std::string>{"k80", "p100", "v100"}));
  EXPECT_EQ(c.capacity(), (std::vector<int>{36, 36, 36}));
  ASSERT_EQ(c.nodes.size(), 36u + 36u + 9u);
  EXPECT_EQ(c.nodes[0].name, "k80-0");
  EXPECT_EQ(c.nodes[0].gpus, 1);
  EXPECT_EQ(c.nodes[72].name, "v100-0");
  EXPECT_EQ(c.nodes[72].gpus, 4);
  EXPECT_EQ(c.nodes.back().name, "v100-8");
  // The same cluster as the compact JSON form.
  const Cluster json = parse_cluster_json(
      R"({"k80": {"nodes": 36, "gpus_per_node": 1}, "p100": {"nodes": 36, "gpus_per_node": 1},
          "v100": {"nodes": 9, "gpus_per_node": 4}})",
      "json");
  ASSERT_EQ(json.nodes.size(), c.nodes.size());
  for (std::size_t i = 0; i < c.nodes.size(); ++i) {
    EXPECT_EQ(json.nodes[i].name, c.nodes[i].name);
    EXPECT_EQ(json.nodes[i].gpus, c.nodes[i].gpus);
    EXPECT_EQ(json.nodes[i].type, c.nodes[i].type);
  }
}

TEST(ClusterSpec, BadSpecsNameTheEntryOrType) {
  struct Case {
    const char* spec;
    const char* field;
    const char* problem;
  };
  const Case cases[] = {
      {"", "entry 1", "expected TYPE:GPUS"},
      {"k80", "entry 1", "expected TYPE:GPUS"},
      {"k80:4,", "entry 2", "expected TYPE:GPUS"},
      {"k80:4:2:1", "entry 1", "expected TYPE:GPUS"},
      {"36:36:36", "entry 1", "not a GPU type name"},
      {"k 80:4", "entry 1", "not a GPU type name"},
      {"k80:0", "k80", "GPUS must be in [1,"},
      {"k80:-4", "k80", "'-4' is not a whole number"},
      {"k80:4.5", "k80", "'4.5' is not a whole number"},
      {"k80:4:0", "k80", "GPUS_PER_NODE must be in [1,"},
      {"k80:6:4", "k80", "do not fill whole nodes of 4"},
      {"k80:4,p100:4,k80:8", "k80", "given twice"},
      {"k80:99999999999", "k80", "not a whole number"},
      {"k80:400000000", "k80", "nodes, at most"},
  };
  for (const Case& c : cases) {
    try {
      parse_cluster_spec(c.spec, "--cluster-spec");
      ADD_FAILURE() << c.spec << ": accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.source(), "--cluster-spec") << c.spec;
      EXPECT_EQ(e.field(), c.field) << c.spec << ": " << e.what();
      EXPECT_NE(e.problem().find(c.problem), std::string::npos) << c.spec << ": " << e.what();
    }
  }
}

// ---- rate interpolation -----------------------------------------------------

JobTypeProfile hand_made() {
  JobTypeProfile p;
  p.name = "toy";
  p.consolidated["v100"] = {{1, 10.0}, {2, 18.0}, {4, 32.0}};  // efficiency 1, 0.9, 0.8
  p.consolidated["k80"] = {{1, 5.0}, {2, 0.0}, {4, 0.0}, {8, 16.0}};
  p.consolidated["p100"] = {{1, 6.0}, {2, 11.0}};
  p.unconsolidated["v100"] = {{1, 10.0}, {2, 12.0}, {4, 20.0}};  // efficiency 0.6, 0.5
  p.unconsolidated["p100"] = {{1, 6.0}};                         // no multi-worker figure
  return p;
}

TEST(ProfileRate, MeasuredCountsAreReturnedAsIs) {
  JobTypeProfile p = hand_made();
  EXPECT_DOUBLE_EQ(p.rate("v100", 1, false), 10.0);
  EXPECT_DOUBLE_EQ(p.rate("v100", 2, false), 18.0);
  EXPECT_DOUBLE_EQ(p.rate("v100", 4, false), 32.0);
}

TEST(ProfileRate, EfficiencyIsInterpolatedAndHeldAboveTheLargestCount) {
  JobTypeProfile p = hand_made();
  EXPECT_DOUBLE_EQ(p.rate("v100", 3, false), 3 * 10.0 * 0.85);  // 25.5
  EXPECT_DOUBLE_EQ(p.rate("v100", 8, false), 8 * 10.0 * 0.8);   // 64
  EXPECT_DOUBLE_EQ(p.rate("p100", 5, false), 5 * 6.0 * (11.0 / 12.0));
}

TEST(ProfileRate, UnknownTypeOrNoWorkersIsNaN) {
  JobTypeProfile p = hand_made();
  EXPECT_TRUE(std::isnan(p.rate("a100", 1, false)));
  EXPECT_TRUE(std::isnan(p.rate("v100", 0, false)));
}

TEST(ProfileRate, SpreadUsesUnconsolidatedEfficiency) {
  JobTypeProfile p = hand_made();
  EXPECT_DOUBLE_EQ(p.rate("v100", 2, true), 12.0);
  EXPECT_DOUBLE_EQ(p.rate("v100", 3, true), 3 * 10.0 * 0.55);  // 16.5
  EXPECT_DOUBLE_EQ(p.rate("v100", 8, true), 8 * 10.0 * 0.5);   // 40
  EXPECT_DOUBLE_EQ(p.rate("v100", 1, true), 10.0);             // one worker never spans nodes
}

TEST(ProfileRate, SpreadWithoutMultiWorkerFiguresUsesTheFactor) {
  JobTypeProfile p = hand_made();
  EXPECT_DOUBLE_EQ(p.rate("p100", 2, true), 11.0 * kDefaultCrossNodeFactor);
  p.cross_node_factor = 0.5;
  EXPECT_DOUBLE_EQ(p.rate("p100", 2, true), 5.5);
  EXPECT_DOUBLE_EQ(p.rate("p100", 4, true), 4 * 6.0 * (11.0 / 12.0) * 0.5);
  EXPECT_DOUBLE_EQ(p.rate("k80", 8, true), 8.0);  // no k80 unconsolidated entry
}

TEST(ProfileRate, ZeroMeansCannotRunAndSpreadsToBracketedCounts) {
  JobTypeProfile p = hand_made();
  EXPECT_DOUBLE_EQ(p.rate("k80", 2, false), 0.0);
  EXPECT_DOUBLE_EQ(p.rate("k80", 3, false), 0.0);
  EXPECT_DOUBLE_EQ(p.rate("k80", 6, false), 0.0);  // between 4 (0) and 8
  EXPECT_DOUBLE_EQ(p.rate("k80", 8, false), 16.0);
  EXPECT_DOUBLE_EQ(p.rate("k80", 16, false), 16 * 5.0 * 0.4);  // eff(8) = 16 / 40
}

TEST(ProfileCatalogue, GpuTypesAreThoseEveryJobTypeHas) {
  ProfileCatalogue c;
  c.job_types.push_back(hand_made());
  JobTypeProfile other;
  other.name = "other";
  other.consolidated["v100"] = {{1, 3.0}};
  other.consolidated["k80"] = {{1, 1.0}};
  other.consolidated["t4"] = {{1, 2.0}};
  c.job_types.push_back(other);
  EXPECT_EQ(c.gpu_types(), (std::vector<std::string>{"k80", "v100"}));
  EXPECT_EQ(c.index("other"), 1u);
  EXPECT_EQ(c.find("toy"), &c.job_types[0]);
  EXPECT_EQ(c.find("nope"), nullptr);
  EXPECT_FALSE(c.index("nope").has_value());
}

// ---- Gavel's profile file ---------------------------------------------------

TEST(ProfileInput, ReadsGavelSimulationThroughputs) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  ProfileCatalogue c = read_profiles_file(kGavelProfiles);
  EXPECT_EQ(c.source, kGavelProfiles);
  // 26 job types: ResNet-18 and ResNet-50 at 4-5 batch sizes, Transformer x5,
  // LM x5, Recommendation x5, A3C, CycleGAN (counted with a script).
  EXPECT_EQ(c.job_types.size(), 26u);
  EXPECT_EQ(c.job_types.front().name, "ResNet-18 (batch size 16)");  // first key of the file
  EXPECT_EQ(c.gpu_types(), (std::vector<std::string>{"k80", "p100", "v100"}));
  const JobTypeProfile* r18 = c.find("ResNet-18 (batch size 16)");
  ASSERT_NE(r18, nullptr);
  // v100["('ResNet-18 (batch size 16)', 1)"]["null"] in the file.
  EXPECT_DOUBLE_EQ(r18->rate("v100", 1, false), 32.353384328946916);
  EXPECT_DOUBLE_EQ(r18->consolidated.at("k80").at(1), 4.795294551566172);
  const JobTypeProfile* r50 = c.find("ResNet-50 (batch size 64)");
  ASSERT_NE(r50, nullptr);
  EXPECT_DOUBLE_EQ(r50->unconsolidated.at("v100").at(8), 19.757330902241037);
  EXPECT_DOUBLE_EQ(r50->rate("v100", 8, true), 19.757330902241037);
  // k80_unconsolidated has only the 1-worker figure of ResNet-50 (batch size
  // 64): spread rates use the factor.
  EXPECT_DOUBLE_EQ(r50->rate("k80", 2, true), 1.2636370655757299 * kDefaultCrossNodeFactor);
  // The artifact's 0 figures (k80, ResNet-50 (batch size 128), 2+ workers).
  const JobTypeProfile* r50b = c.find("ResNet-50 (batch size 128)");
  ASSERT_NE(r50b, nullptr);
  EXPECT_DOUBLE_EQ(r50b->rate("k80", 4, false), 0.0);
  EXPECT_DOUBLE_EQ(r50b->rate("k80", 1, false), 0.3472236920519382);
  // Co-location keys are ignored: only 1, 2, 4, 8 workers.
  EXPECT_EQ(r18->consolidated.at("p100").size(), 4u);
  const JobTypeProfile* a3c = c.find("A3C");
  ASSERT_NE(a3c, nullptr);
  EXPECT_EQ(a3c->consolidated.at("k80").size(), 1u);
}

TEST(ProfileInput, BuiltInFiguresAreTheArtifactsFigures) {
  FAIRGPU_SKIP_WITHOUT_SHARED_DATA();
  ProfileCatalogue file = read_profiles_file(kGavelProfiles);
  const ProfileCatalogue& builtin = builtin_profiles();
  EXPECT_EQ(builtin.source, "built-in");
  ASSERT_EQ(builtin.job_types.size(), 8u);
  EXPECT_EQ(builtin.gpu_types(), (std::vector<std::string>{"k80", "p100", "v100"}));
  for (const char* name :
       {"ResNet-18 (batch size 64)", "ResNet-50 (batch size 64)", "Transformer (batch size 64)",
        "Transformer (batch size 128)", "LM (batch size 20)", "Recommendation (batch size 2048)",
        "A3C", "CycleGAN"}) {
    const JobTypeProfile* b = builtin.find(name);
    const JobTypeProfile* f = file.find(name);
    ASSERT_NE(b, nullptr) << name;
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(b->consolidated, f->consolidated) << name;
    // The built-in table leaves out spread tables with a 1-worker figure only.
    for (const auto& [type, table] : f->unconsolidated) {
      if (table.size() > 1) {
        ASSERT_EQ(b->unconsolidated.count(type), 1u) << name << " " << type;
        EXPECT_EQ(b->unconsolidated.at(type), table) << name << " " << type;
      }
      for (int g : {1, 2, 3, 4, 6, 8, 16})
        EXPECT_DOUBLE_EQ(b->rate(type, g, true), f->rate(type, g, true)) << name << type << g;
    }
  }
}

class ProfileBadInput : public testing::TestWithParam<BadFile> {};

TEST_P(ProfileBadInput, NamesFileAndField) {
  expect_rejected(GetParam(), [](const std::string& path) { read_profiles_file(path); });
}

INSTANTIATE_TEST_SUITE_P(
    Files, ProfileBadInput,
    testing::Values(
        BadFile{"bad-profiles-negative.json", "v100.('A3C', 2).null", "must be >= 0"},
        BadFile{"bad-profiles-zero-single.json", "k80.('A3C', 1).null",
                "1-worker throughput must be > 0"},
        BadFile{"bad-profiles-bad-key.json", "v100.A3C x2", "expected a key like"},
        BadFile{"bad-profiles-missing-single.json", "p100.('A3C', 1)", "none for 1 worker"},
        BadFile{"bad-profiles-missing-null.json", "v100.('A3C', 1).null", "missing"},
        BadFile{"bad-profiles-unconsolidated-only.json", "p100_unconsolidated.('A3C', 2)",
                "no consolidated ones"},
        BadFile{"bad-profiles-string.json", "v100.('ResNet-18 (batch size 16)', 1).null",
                "expected a number, got string"},
        BadFile{"bad-profiles-duplicate-key.json", "v100.('A3C', 1)", "twice"}),
    [](const testing::TestParamInfo<BadFile>& p) { return case_name(p.param.file); });

TEST(ProfileInput, KeysMayUseDoubleQuotesAndSpaces) {
  ProfileCatalogue c = parse_gavel_profiles(
      R"json({"v100": {"(\"Bob's model\",  1)": {"null": 2.5}, " ( 'x', 2 ) ": {"null": 1.0},
                       "('x', 1)": {"null": 0.75}}})json",
      "p.json");
  ASSERT_EQ(c.job_types.size(), 2u);
  EXPECT_EQ(c.job_types[0].name, "Bob's model");
  EXPECT_DOUBLE_EQ(c.job_types[1].rate("v100", 2, false), 1.0);
}

TEST(ProfileInput, EmptyDocumentIsAnError) {
  EXPECT_THROW(parse_gavel_profiles("{}", "p.json"), InputError);
  EXPECT_THROW(parse_gavel_profiles(R"({"v100": {}})", "p.json"), InputError);
  EXPECT_THROW(parse_gavel_profiles("[]", "p.json"), InputError);
}

}  // namespace
}  // namespace fairgpu
