// Paths of the repository's own files and readable names for parameterised
// test cases, shared by the test files.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "test_paths.h"

// The third-party traces and profiles (Gavel's, Shockwave's, Alibaba's: not in
// the repository; docs/researcher-guide.md says where to get them) lie in
// ../shared/data beside the checkout. A test that reads them skips, saying
// so, when that folder is absent (a checkout on its own); a file missing from
// a folder that is there still fails the test.
#define FAIRGPU_SKIP_WITHOUT_SHARED_DATA()                                              \
  if (!std::filesystem::is_directory(FAIRGPU_SHARED_DATA))                              \
  GTEST_SKIP() << "no third-party data at " << FAIRGPU_SHARED_DATA                      \
               << " (docs/researcher-guide.md says where to get it)"

namespace fairgpu::testing_support {

// A file of the repository, e.g. source_path("examples/small-trace.csv").
inline std::string source_path(const std::string& relative) {
  return std::string(FAIRGPU_SOURCE_DIR) + "/" + relative;
}

// A file under tests/data/.
inline std::string test_data(const std::string& name) { return source_path("tests/data/" + name); }

// A GoogleTest case name from a file name: every non-alphanumeric becomes '_'.
inline std::string case_name(std::string name) {
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

// The first program of `names` on PATH, or "" (a test that needs a browser
// or promtool skips without one).
inline std::string find_program_on_path(const std::vector<std::string>& names) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::vector<std::string> entries;
  for (std::string d; std::getline(dirs, d, ':');) entries.push_back(d);
  for (const auto& name : names)
    for (const auto& d : entries) {
      const std::filesystem::path p = std::filesystem::path(d) / name;
      if (!d.empty() && access(p.c_str(), X_OK) == 0) return p.string();
    }
  return "";
}

}  // namespace fairgpu::testing_support
