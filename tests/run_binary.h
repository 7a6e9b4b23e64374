// Running the built `fairgpu` binary from tests: captured exit status, stdout
// and stderr (through files in a scratch folder), stdin empty.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_files.h"
#include "test_paths.h"

namespace fairgpu::testing_support {

struct RunResult {
  int status = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Single-quotes a shell word.
inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs FAIRGPU_BINARY with `args`, in `cwd` when given; `scratch` holds the
// captured streams. With `timeout_s` > 0 a run still going after that long is
// killed (status 137): a hang fails the test instead of stalling the suite.
inline RunResult run_binary(const std::vector<std::string>& args,
                            const std::filesystem::path& scratch,
                            const std::filesystem::path& cwd = {}, int timeout_s = 0) {
  std::string cmd;
  if (!cwd.empty()) cmd.append("cd ").append(quote(cwd.string())).append(" && ");
  if (timeout_s > 0) cmd.append("timeout -s KILL ").append(std::to_string(timeout_s)).append(" ");
  // Appends, not "literal" + string: the latter trips GCC 12's -Wrestrict
  // false positive (bug 105329) under -O3 -Werror.
  cmd.append(quote(FAIRGPU_BINARY));
  for (const auto& a : args) cmd.append(" ").append(quote(a));
  auto out = scratch / "stdout", err = scratch / "stderr";
  cmd.append(" >").append(quote(out.string()));
  cmd.append(" 2>").append(quote(err.string())).append(" </dev/null");
  RunResult r;
  int raw = std::system(cmd.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace fairgpu::testing_support
