#!/usr/bin/env bash
# Shockwave at the paper's scale (NSDI'23 §8.5 Fig. 9 and §8.9): the 900-job
# trace on 256 GPUs of one type, and the plan time with 2,000 active jobs.
# Whole-program timings, run on demand (never a test).
#
#   bench/shockwave_scale.sh [build/fairgpu] [policies] [--data DIR]
#
# Shockwave's files are read from DIR/shockwave/ (--data, else $FAIRGPU_DATA,
# else ../shared/data; bench/data_dir.sh).
#
# 1. fairgpu shockwave-eval on shockwave/900-jobs.trace with
#    tacc_throughputs.json, 120 s rounds and the 20 s restart cost of the
#    authors' simulator: makespan, average JCT, worst FTF rho and unfair
#    shares with the static N (the authors' figures), wall time, and the plan
#    time (p50 / max) by active-job count.
# 2. 2,000 generated Shockwave jobs (--gen-style shockwave) arriving within
#    seconds on the same 256 GPUs, three rounds: the compute time of the plan
#    that sees all of them (the paper's solver figure: 2,000 active jobs).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/data_dir.sh
fairgpu_data_dir shockwave/900-jobs.trace "$@"
set -- "${ARGS[@]}"
BIN=${1:-build/fairgpu}
POLICIES=${2:-shockwave:variant=artifact,shockwave}
DATA=$FAIRGPU_DATA/shockwave
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "== 900-job trace, 256 GPUs"
/usr/bin/time -f "total wall %e s, peak %M KiB" "$BIN" shockwave-eval \
  --cluster examples/shockwave-256-v100.json --profiles "$DATA/tacc_throughputs.json" \
  --trace "$DATA/900-jobs.trace" --restart-overhead 20 --plan-times --policies "$POLICIES"

echo "== 2,000 active jobs, 256 GPUs"
IFS=, read -r -a names <<< "$POLICIES"
for p in "${names[@]}"; do
  dir="$OUT/$(echo "$p" | tr ':=' '__')"
  /usr/bin/time -f "%e" -o "$OUT/time" "$BIN" simulate --quiet \
    --cluster examples/shockwave-256-v100.json --profiles "$DATA/tacc_throughputs.json" \
    --gen-style shockwave --jobs 2000 --arrivals-per-hour 1000000 --seed 1 \
    --restart-overhead 20 --horizon-hours 0.1 --policy "$p" --out "$dir" > /dev/null
  # The largest per-round compute time: the plan that sees all 2,000 jobs.
  printf '%-32s plan with 2,000 active jobs: %s s (run wall %s s)\n' "$p" \
    "$(grep -o '"compute_max_s": *[0-9.eE+-]*' "$dir/timing.json" | sed 's/.*: *//')" \
    "$(cat "$OUT/time")"
done
