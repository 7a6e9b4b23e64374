// What a results folder needs so a reader can tell how it was made: the
// fairgpu version, and each input file named with its SHA-256 (OpenSSL's
// libcrypto), so a published figure can be traced to the exact bytes.
#pragma once

#include <string>

namespace fairgpu {

// The version of this build: the CMake project version, and the git commit
// when built from a checkout ("0.1+g732a2142ab3c", ".dirty" appended when
// tracked files had changes), e.g. "0.1" from a source tarball.
std::string fairgpu_version();

// The SHA-256 of a file's bytes as 64 lowercase hex digits. Throws
// InputError(path, "", "cannot read the file") when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace fairgpu
