// Where the tests find the programs, the checkout and the shared data: set by
// CMake in one generated source (build/generated/test_paths.cc), not on every
// test file's command line, so the other test objects do not depend on where
// the checkout lies (ccache reuses them in another clone, CI's).
#pragma once

namespace fairgpu::test_paths {
extern const char* const kBinary;       // build/fairgpu
extern const char* const kTrainBinary;  // build/fairgpu-train
extern const char* const kSourceDir;    // the checkout
extern const char* const kBuildDir;     // this build folder
extern const char* const kSharedData;   // ../shared/data beside the checkout
extern const char* const kCmake;        // the cmake and cpack that configured it
extern const char* const kCpack;
}  // namespace fairgpu::test_paths

#define FAIRGPU_BINARY (::fairgpu::test_paths::kBinary)
#define FAIRGPU_TRAIN_BINARY (::fairgpu::test_paths::kTrainBinary)
#define FAIRGPU_SOURCE_DIR (::fairgpu::test_paths::kSourceDir)
#define FAIRGPU_BUILD_DIR (::fairgpu::test_paths::kBuildDir)
#define FAIRGPU_SHARED_DATA (::fairgpu::test_paths::kSharedData)
#define FAIRGPU_CMAKE (::fairgpu::test_paths::kCmake)
#define FAIRGPU_CPACK (::fairgpu::test_paths::kCpack)
