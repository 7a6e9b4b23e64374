#!/usr/bin/env bash
# Whole-program timing of the simulator at scale (issue: 100,000 jobs from 100
# tenants on 2,048 GPUs of three types, oef-coop with 300 s rounds, <= 30 s
# wall and <= 2 GiB). Prints wall time and peak memory per run, and the
# scheduler's own share (policy compute time) from the summary.
#
#   bench/simulate_scale.sh [build/fairgpu] [extra simulate options...]
#
# The arrival rate (190 jobs/h) keeps the 2,048 GPUs near full load with the
# generated job mix (Gavel's: mean ~60k s on a K80, 1.9 workers).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/fairgpu}
shift || true
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() {
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$OUT/time" "$BIN" simulate --quiet \
    --cluster bench/data/cluster-2048.json --jobs 100000 --gen-tenants 100 \
    --arrivals-per-hour 190 --out "$OUT/$label" "$@" > "$OUT/$label.txt"
  read -r wall kb < "$OUT/time"
  local compute rounds
  compute=$(grep -E '^  compute, total' "$OUT/$label.txt" | awk '{print $3}')
  rounds=$(grep -E '^  rounds' "$OUT/$label.txt" | awk '{print $2, $3, $4}')
  printf '%-28s wall %7.1f s  peak %6d MiB  policy compute %s s  rounds %s\n' \
    "$label" "$wall" "$((kb / 1024))" "$compute" "$rounds"
}
run "oef-coop (tenant level)" --policy oef-coop "$@"
run "gavel (job level)" --policy gavel "$@"
