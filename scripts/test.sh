#!/usr/bin/env bash
# Installs the dependencies, builds fairgpu and its tests into build/ with
# warnings as errors, and runs the test suite (scripts/run-ctest.sh: several
# tests at once, the slowest listed at the end). Extra arguments go to ctest,
# e.g. `scripts/test.sh -R LiveEndToEnd`.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
. scripts/build-env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFAIRGPU_WERROR=ON \
  "${FAIRGPU_CMAKE_LAUNCHER[@]}" >/dev/null
cmake --build build -j "$(nproc)"
./scripts/run-ctest.sh build "$@"
