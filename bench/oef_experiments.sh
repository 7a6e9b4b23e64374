#!/usr/bin/env bash
# OEF §6.3.1 (throughput) and §6.3.2 (JCT) with Gavel's measured throughputs:
# now bench/reproduce.sh's experiments oef-6.3.1 and oef-6.3.2, which run them
# over seeds (default 1-10) and write docs/results/oef-6.3.{1,2}.md (means ±
# 95% CI, paired differences against oef-coop, provenance). Kept for its old
# command line:
#
#   bench/oef_experiments.sh [build/fairgpu] [seeds...]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/fairgpu}
shift || true
args=(--bin "$BIN")
if [ $# -gt 0 ]; then
  seeds=$(IFS=,; echo "$*")
  args+=(--seeds "$seeds")
fi
exec bench/reproduce.sh "${args[@]}" oef-6.3.1 oef-6.3.2
