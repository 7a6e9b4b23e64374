// The contract every fuzz target checks (tests/fuzz/README.md): an input is
// either accepted or rejected with fairgpu::InputError. Any other exception
// aborts, and so do crashes, sanitizer reports and hangs (libFuzzer's
// -timeout), so each is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>

#include "fairgpu/input_error.h"

namespace fairgpu::fuzz {

[[noreturn]] inline void broken(const char* what) {
  std::fprintf(stderr, "fuzz contract broken: %s\n", what);
  std::abort();
}

// Runs `parse`; InputError is a valid answer, anything else aborts.
template <typename F>
void expect_input_error_or_success(F&& parse) {
  try {
    parse();
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    broken(e.what());
  } catch (...) {
    broken("a non-std exception");
  }
}

inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The parsers that read paths get the input through one file per process.
inline const std::string& scratch_file() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/fairgpu-fuzz-" + std::to_string(::getpid()) +
           ".in";
  }();
  return path;
}

inline const std::string& write_scratch(const std::uint8_t* data, std::size_t size) {
  const std::string& path = scratch_file();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) broken("cannot write the scratch file");
  return path;
}

}  // namespace fairgpu::fuzz
