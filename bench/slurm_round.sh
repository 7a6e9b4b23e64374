#!/usr/bin/env bash
# Applying one scheduling round to Slurm: N held jobs pinned
# (`update JobId=J NodeList=n StartTime=now`) and released, through ONE
# scontrol process reading the commands on stdin (what the Slurm client does,
# src/live/slurm/client.h) against the baseline of one scontrol process per
# command, in the same run on a test cluster (scripts/slurm-cluster.sh). Also
# the release-to-running latency of one job (median of 5).
#
#   bench/slurm_round.sh [N]     # default 100
set -euo pipefail
cluster=$(cd "$(dirname "$0")/.." && pwd)/scripts/slurm-cluster.sh
n=${1:-100}
dir=$(mktemp -d /tmp/fairgpu-slurm-bench-XXXXXX)
trap '"$cluster" stop "$dir" >/dev/null; rm -rf "$dir"' EXIT
"$cluster" start "$dir" n1:v100:4,n2:p100:4,n3:k80:4 >/dev/null
export SLURM_CONF=$dir/slurm.conf
cd "$dir"

submit() { # N held jobs, ids on stdout
  for ((i = 0; i < $1; i++)); do
    sbatch --parsable --hold --requeue --gres=gpu:1 -o /dev/null --wrap 'sleep 600'
  done
}
now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { print a - b }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }

# Pins only (the jobs stay held, so both variants do the same work).
ids=$(submit "$n")
t0=$(now)
for j in $ids; do echo "update JobId=$j NodeList=n$((j % 3 + 1)) StartTime=now"; done | scontrol >/dev/null 2>&1
t1=$(now)
pinned=$(scontrol -o show job | grep -c ' ReqNodeList=n' || true)
[ "$pinned" -eq "$n" ] || { echo "batched round pinned $pinned of $n jobs" >&2; exit 1; }
t1=$(now)
for j in $ids; do scontrol update JobId="$j" NodeList=n$((j % 3 + 1)) StartTime=now >/dev/null 2>&1; done
t2=$(now)
scancel $ids
batched=$(sub "$t1" "$t0")
separate=$(sub "$t2" "$t1")
printf 'round of %d pins: one scontrol %.2f s, one scontrol per pin %.2f s (%.1fx)\n' \
  "$n" "$batched" "$separate" "$(div "$separate" "$batched")"

# Release to RUNNING, one job at a time (squeue polled every 50 ms).
lat=()
for ((k = 0; k < 5; k++)); do
  j=$(submit 1)
  echo "update JobId=$j NodeList=n1 StartTime=now" | scontrol >/dev/null 2>&1
  t0=$(now)
  scontrol release "$j"
  until [ "$(squeue -h -j "$j" -o %T)" = RUNNING ]; do sleep 0.05; done
  t1=$(now)
  lat+=("$(sub "$t1" "$t0")")
  scancel "$j"
done
printf 'release to RUNNING: median %.2f s of %s\n' \
  "$(printf '%s\n' "${lat[@]}" | sort -n | sed -n 3p)" "$(printf '%.2f ' "${lat[@]}")"
