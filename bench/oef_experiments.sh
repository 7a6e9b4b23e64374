#!/usr/bin/env bash
# OEF §6.3.1 (throughput) and §6.3.2 (JCT) with Gavel's measured throughputs
# instead of the paper's RTX 3070/3080/3090 figures: 24 GPUs (8 K80, 8 P100,
# 8 V100, 4 per host: examples/oef-like-cluster.json), 300 s rounds, every
# policy at tenant level with the same placer (OEF §6.1.3), over three seeds.
#
#   bench/oef_experiments.sh [build/fairgpu] [seeds...]
#
# §6.3.1: 20 tenants, each running jobs of one type (Gavel's job-size mix,
#         Philly's run times), 10 arrivals an hour for 40 h: the cluster is
#         contended most of the time, as the paper keeps Philly's contention.
# §6.3.2: 50 tenants x about 20 jobs of one type each, Philly's run times,
#         arrivals over three days; tenants leave when their jobs are done.
# Prints, per experiment and seed, the compare table's first rows; the
# figures the README quotes are the means over the seeds (last block).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/fairgpu}
shift || true
SEEDS=("$@")
[ ${#SEEDS[@]} -gt 0 ] || SEEDS=(1 2 3)
PROFILES=../shared/data/gavel/simulation_throughputs.json
RUNTIMES=../shared/data/philly_runtime.csv
POLICIES=oef-coop,oef-noncoop,gavel,gandiva-fair,max-min
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

experiment() {
  local name=$1 jobs=$2 tenants=$3 rate=$4
  for seed in "${SEEDS[@]}"; do
    "$BIN" generate --jobs "$jobs" --tenants "$tenants" --main-type-fraction 1 \
      --profiles "$PROFILES" --runtimes "$RUNTIMES" --arrivals-per-hour "$rate" \
      --seed "$seed" > "$OUT/$name-$seed.csv" 2>/dev/null
    "$BIN" compare --quiet --level tenant --round 300 --policies "$POLICIES" \
      --cluster examples/oef-like-cluster.json --profiles "$PROFILES" \
      --trace "$OUT/$name-$seed.csv" --out "$OUT/$name-$seed" > /dev/null
  done
  echo "== $name: means over seeds ${SEEDS[*]} (compare.csv of each run) =="
  printf '%-13s %9s %9s %9s %9s %9s %9s %8s\n' policy "tput act" "tput est" "util %" \
    "avg JCT h" "idle GPUh" "restarts" "unstart"
  for policy in ${POLICIES//,/ }; do
    for seed in "${SEEDS[@]}"; do
      awk -F, -v p="$policy" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
        NR > 1 && $1 == p { print $col["contended_actual_throughput"],
          $col["contended_estimated_throughput"], $col["contended_utilisation"],
          $col["avg_jct_s"], $col["idle_waiting_gpu_hours"], $col["restarts"] }' \
        "$OUT/$name-$seed/compare.csv"
      grep -o '"never_started_jobs": [0-9]*' "$OUT/$name-$seed/$policy/summary.json" |
        awk '{print $2}'
    done | paste - - | awk -v p="$policy" '{ a += $1; e += $2; u += $3; j += $4; i += $5;
        r += $6; n += $7; c++ }
      END { printf "%-13s %9.2f %9.2f %9.1f %9.2f %9.1f %9.0f %8d\n", p, a / c, e / c,
        100 * u / c, j / c / 3600, i / c, r / c, n }'
  done
}

experiment "6.3.1-throughput" 400 20 10
experiment "6.3.2-jct" 1000 50 14
