// Two runs of the same command write the same bytes (issue 29 item 4): every
// file of a results folder but timing.json, which alone holds what depends
// on the machine (wall_seconds, compute_*), so `diff -r --exclude
// timing.json` of two folders is empty. report.html, the SVGs and the PDFs
// (rsvg-convert, dated by SOURCE_DATE_EPOCH) included.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "run_binary.h"

namespace fairgpu {
namespace {

namespace fs = std::filesystem;
using testing_support::run_binary;
using testing_support::slurp;

// Every file under `dir` by its path relative to it, with its bytes.
std::map<std::string, std::string> files_under(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = slurp(e.path());
  return out;
}

class SameOutput : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) / ("fairgpu-same-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `args` + --out twice, into a/ and b/, and compares the folders.
  void expect_same_twice(std::vector<std::string> args, std::size_t min_timing) {
    for (const char* run : {"a", "b"}) {
      std::vector<std::string> full = args;
      full.insert(full.end(), {"--quiet", "--out", (dir_ / run).string()});
      const auto r = run_binary(full, dir_, {}, 120);
      ASSERT_EQ(r.status, 0) << r.err;
    }
    const auto a = files_under(dir_ / "a"), b = files_under(dir_ / "b");
    ASSERT_GT(a.size(), 5u);
    std::size_t timing = 0;
    for (const auto& [path, bytes] : a) {
      SCOPED_TRACE(path);
      ASSERT_TRUE(b.count(path)) << "only in the first run";
      if (fs::path(path).filename() == "timing.json") {
        ++timing;
        EXPECT_NE(bytes.find("\"wall_seconds\""), std::string::npos);
        continue;
      }
      EXPECT_TRUE(bytes == b.at(path)) << "the two runs differ";
      EXPECT_EQ(bytes.find("wall_seconds"), std::string::npos);
      EXPECT_EQ(bytes.find("compute_seconds"), std::string::npos);
      EXPECT_EQ(bytes.find("compute_p50"), std::string::npos);
    }
    EXPECT_EQ(a.size(), b.size());
    EXPECT_EQ(timing, min_timing);  // one per run folder
  }

  fs::path dir_;
};

TEST_F(SameOutput, SimulateTwiceDiffersOnlyInTimingJson) {
  expect_same_twice({"simulate", "--seed", "1", "--jobs", "40", "--policy", "gavel"}, 1);
}

TEST_F(SameOutput, CompareTwiceDiffersOnlyInTimingJson) {
  expect_same_twice({"compare", "--seed", "1", "--jobs", "30", "--policies", "fifo,oef-coop"}, 2);
}

}  // namespace
}  // namespace fairgpu
