// Paths of the repository's own files and readable names for parameterised
// test cases, shared by the test files.
#pragma once

#include <cctype>
#include <string>
#include "test_paths.h"

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

}  // namespace fairgpu::testing_support
