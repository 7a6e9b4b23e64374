#!/usr/bin/env bash
# Synergy's targets (issue 15): the static and dynamic 100-job traces on
# static_trace.ini (4 x 8 GPUs, 24 CPUs, 500 GB), synergy-proportional,
# -greedy, -tune and -opt under the four base orders, in both modes. Prints one
# markdown table per trace and mode: average, p99 and p99.9 JCT and makespan
# (hours), the run's simulation wall time and the policy's compute per round
# (p50 and max), from each run's summary.json. An OUT that already holds a
# configuration's runs is only tabulated again.
#
#   bench/synergy_targets.sh [build/fairgpu] [OUT] [--data DIR]
#
# Synergy's files are read from DIR/synergy/ (--data, else $FAIRGPU_DATA,
# else ../shared/data; bench/data_dir.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/data_dir.sh
fairgpu_data_dir synergy/profiles.json "$@"
set -- "${ARGS[@]}"
BIN=${1:-build/fairgpu}
OUT=${2:-$(mktemp -d)}
D=$FAIRGPU_DATA/synergy
for trace in static dynamic; do
  for mode in paper compat; do
    policies=""
    for base in fifo las srtf ftf; do
      for p in proportional greedy tune opt; do
        policies+="${policies:+,}synergy-$p:base=$base:mode=$mode"
      done
    done
    [ -d "$OUT/$trace-$mode" ] ||
      "$BIN" compare --cluster "$D/static_trace.ini" --profiles "$D/profiles.json" \
        --trace "$D/$trace-100-jobs.csv" --policies "$policies" --out "$OUT/$trace-$mode" \
        > /dev/null 2>&1
    python3 - "$OUT/$trace-$mode" "$trace" "$mode" <<'PY'
import json, os, sys, csv
root, trace, mode = sys.argv[1:4]
print(f"\n{trace}-100-jobs.csv, mode={mode}\n")
print("| base | policy | avg JCT h | p99 JCT h | p99.9 JCT h | makespan h | run wall s | round p50 / max ms |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for base in ["fifo", "las", "srtf", "ftf"]:
    for p in ["proportional", "greedy", "tune", "opt"]:
        d = os.path.join(root, f"synergy-{p}_base-{base}_mode-{mode}")
        s = json.load(open(os.path.join(d, "summary.json")))
        s.update(json.load(open(os.path.join(d, "timing.json"))))  # wall-clock figures
        h = lambda k: s[k] / 3600 if s[k] is not None else float("nan")
        print(f"| {base} | {p} | {h('avg_jct_s'):.2f} | {h('p99_jct_s'):.2f} | {h('p999_jct_s'):.2f} "
              f"| {h('makespan_s'):.2f} | {s['wall_seconds']:.2f} "
              f"| {1000 * s['compute_p50_s']:.1f} / {1000 * s['compute_max_s']:.0f} |")
PY
  done
done
