#!/usr/bin/env bash
# Whole-program timing of a 1,000,000-job simulation (issue 17: 1,000 tenants
# on 20,480 GPUs of three types, oef-coop at tenant level with 300 s rounds,
# <= 120 s wall and <= 4 GiB on this 2-core machine). Prints wall time, user
# CPU time (the figure to compare on a loaded machine), peak memory, the
# policy's compute time and the output's size; the 100,000-job run of
# bench/simulate_scale.sh's scenario is measured in the same call as the
# baseline.
#
#   bench/simulate_million.sh [build/fairgpu] [extra simulate options...]
#
# 1,900 arrivals an hour on ten times simulate_scale.sh's GPUs keeps the load
# of its 190 an hour on 2,048.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/fairgpu}
shift || true
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() {
  local label=$1
  shift
  /usr/bin/time -f "%e %U %M" -o "$OUT/time" "$BIN" simulate --quiet --out "$OUT/$label" "$@" \
    > "$OUT/$label.txt"
  read -r wall user kb < "$OUT/time"
  local compute rounds size
  compute=$(grep -E '^  compute, total' "$OUT/$label.txt" | awk '{print $3}')
  rounds=$(grep -E '^  rounds' "$OUT/$label.txt" | awk '{print $2, $3, $4}')
  size=$(du -sm "$OUT/$label" | cut -f1)
  printf '%-34s wall %7.1f s  user %7.1f s  peak %6d MiB  policy compute %s s  rounds %s  output %s MiB\n' \
    "$label" "$wall" "$user" "$((kb / 1024))" "$compute" "$rounds" "$size"
}
run "100k jobs, 2,048 GPUs (baseline)" --policy oef-coop --cluster bench/data/cluster-2048.json \
  --jobs 100000 --gen-tenants 100 --arrivals-per-hour 190 "$@"
run "1M jobs, 1,000 tenants, 20,480 GPUs" --policy oef-coop \
  --cluster bench/data/cluster-20480.json --jobs 1000000 --gen-tenants 1000 \
  --arrivals-per-hour 1900 "$@"
