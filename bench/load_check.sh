#!/usr/bin/env bash
# --load means what it says (docs/researcher-guide.md, Offered load): runs
# compare on a trace at an offered load and prints, per policy, the
# time-averaged utilisation over the arrival window (first to last arrival,
# from jobs.csv; busy GPU-seconds from utilisation.csv's 60 s rows, pro rata
# at the window's ends) and whether its jobs.csv differs from every other
# policy's.
#
#   bench/load_check.sh [LOAD] [-- extra compare options]
#
# Default: Alibaba's 2023 default pod list at 0.8 on 512 V100s with Poisson
# arrivals in the trace's order (its own 6,212 GPUs cannot be loaded past 0.11
# by moving arrivals, 0.53 with Poisson ones; its own arrivals, compressed,
# put three quarters of the pods in the window's last sixth: an overload
# burst that spills past the window), under fifo, tiresias, themis and
# astraea.
set -euo pipefail
cd "$(dirname "$0")/.."
LOAD=${1:-0.8}
shift || true
[ "${1:-}" = "--" ] && shift
DATA=${FAIRGPU_DATA:-../shared/data}
BIN=${FAIRGPU_BIN:-build/fairgpu}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
args=(--policies fifo,tiresias,themis,astraea --load "$LOAD" --series-window 60 --no-pdf
      --out "$OUT/c")
if [ $# -eq 0 ]; then
  set -- --cluster-spec v100:512 --arrivals poisson:60 \
    --trace "$DATA/alibaba-gpu-v2023/openb_pod_list_default.csv"
fi
echo "$BIN compare ${args[*]} $*" | sed "s|$OUT|OUT|"
start=$(date +%s)
"$BIN" compare "${args[@]}" "$@" | head -1
echo "wall $(( $(date +%s) - start )) s"
python3 - "$OUT/c" <<'PY'
import csv, json, os, sys
root = sys.argv[1]
folders = sorted(d for d in os.listdir(root) if os.path.exists(os.path.join(root, d, "summary.json")))
jobs = {}
for d in folders:
    s = json.load(open(os.path.join(root, d, "summary.json")))
    gpus = sum(s["capacity"].values()) if isinstance(s["capacity"], dict) else sum(s["capacity"])
    arrivals = [float(r["arrival"]) for r in csv.DictReader(open(os.path.join(root, d, "jobs.csv")))]
    first, last = min(arrivals), max(arrivals)
    busy = 0.0
    for r in csv.DictReader(open(os.path.join(root, d, "utilisation.csv"))):
        a, b = float(r["start"]), float(r["end"])
        inside = max(0.0, min(b, last) - max(a, first))
        if b > a:
            busy += float(r["busy_gpu_seconds"]) * inside / (b - a)
    jobs[d] = open(os.path.join(root, d, "jobs.csv")).read()
    print(f"{d:10s} utilisation over the arrival window ({(last - first) / 3600:.2f} h): "
          f"{busy / (gpus * (last - first)):.3f}   avg JCT {s['avg_jct_s'] / 3600:.2f} h")
same = [(a, b) for i, a in enumerate(folders) for b in folders[i + 1:] if jobs[a] == jobs[b]]
print("jobs.csv identical for: " + (", ".join(f"{a}={b}" for a, b in same) if same else "no two policies"))
PY
