#!/usr/bin/env bash
# Installs the dependencies, builds fairgpu (Release) into build/ and runs
# `fairgpu compare` on the built-in scenario (OEF both modes, Gavel,
# Gandiva_fair, max-min), printing one table. Extra arguments go to
# `fairgpu compare` (e.g. --policies oef-coop,gavel --tenant-demands).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
. scripts/build-env.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${FAIRGPU_CMAKE_LAUNCHER[@]}" >/dev/null
cmake --build build --target fairgpu -j "$(nproc)"
build/fairgpu compare "$@"
