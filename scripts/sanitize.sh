#!/usr/bin/env bash
# The second CI stage: builds fairgpu, its tests and the libFuzzer targets
# with clang, AddressSanitizer and UndefinedBehaviorSanitizer into
# build-sanitize/, then runs the whole test suite there. Any sanitizer report
# fails the run (UBSan does not recover; ASan aborts on its first error).
# scripts/fuzz.sh reuses the same build for its targets.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
. scripts/build-env.sh
# fuzzer-no-link only adds libFuzzer's coverage hooks (no-ops outside a fuzz
# target), so the tests and the fuzz targets share one build.
# No Python module (FAIRGPU_PYTHON=OFF): an ASan-built extension loaded into
# an uninstrumented python3 needs the ASan runtime preloaded; the gcc build
# (scripts/test.sh) builds and tests it.
# Line tables, not full debug info: the reports' stacks name functions, files
# and lines all the same, and a cold build takes 13% less.
flags="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined,fuzzer-no-link"
flags+=" -fno-sanitize-recover=all"
cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only \
  -DFAIRGPU_WERROR=ON -DFAIRGPU_BUILD_FUZZ=ON -DFAIRGPU_JEMALLOC=OFF -DFAIRGPU_PYTHON=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DFAIRGPU_TRAIN_FLAGS=-O2 -DFAIRGPU_TEST_FLAGS=-O0 "${FAIRGPU_CMAKE_LAUNCHER[@]}" >/dev/null
cmake --build build-sanitize -j "$(nproc)"

# halt_on_error is ASan's default; detect_leaks stays on (LeakSanitizer).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# `scripts/sanitize.sh -N` (fuzz.sh) only builds: ctest lists the tests.
./scripts/run-ctest.sh build-sanitize "$@"
