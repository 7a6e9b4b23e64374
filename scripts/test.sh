#!/usr/bin/env bash
# Installs the dependencies, builds fairgpu and its tests into build/ with
# warnings as errors, and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DFAIRGPU_WERROR=ON >/dev/null
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure
