#!/usr/bin/env bash
# Installs the dependencies, builds fairgpu (Release) into build/ and runs
# `fairgpu allocate` on the built-in example, printing the allocation table.
# Extra arguments go to `fairgpu allocate` (e.g. --policy gavel --audit).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target fairgpu -j "$(nproc)"
build/fairgpu allocate "$@"
