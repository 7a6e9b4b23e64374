#!/usr/bin/env bash
# The cost of a policy written in Python (issue 31: at most 3x the C++
# policy's time): bench/simulate_scale.sh's workload (100,000 jobs from 100
# tenants on 2,048 GPUs, 190 arrivals/h) under the C++ `fifo` and
# examples/policies/fifo.py, alternately, REPEAT times each. Prints wall and
# user CPU time, the policy's compute time from the summary (the scheduler's
# own share, Python calls included) and whether jobs.csv is the same.
#
#   bench/python_overhead.sh [build/fairgpu] [JOBS] [REPEAT]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/fairgpu}
JOBS=${2:-100000}
REPEAT=${3:-1}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
run() {
  local label=$1 policy=$2
  /usr/bin/time -f "%e %U %M" -o "$OUT/time" "$BIN" simulate --quiet \
    --cluster bench/data/cluster-2048.json --jobs "$JOBS" --gen-tenants 100 \
    --arrivals-per-hour 190 --policy "$policy" --out "$OUT/$label" > "$OUT/$label.txt"
  read -r wall user kb < "$OUT/time"
  local compute
  compute=$(grep -E '^  compute, total' "$OUT/$label.txt" | awk '{print $3}')
  printf '%-12s wall %7.1f s  user %7.1f s  peak %5d MiB  policy compute %s s  jobs.csv %s\n' \
    "$label" "$wall" "$user" "$((kb / 1024))" "$compute" \
    "$(md5sum < "$OUT/$label/jobs.csv" | cut -c1-12)"
}
for i in $(seq "$REPEAT"); do
  run "fifo" fifo
  run "python-fifo" py:examples/policies/fifo.py:Fifo
done
