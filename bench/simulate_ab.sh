#!/usr/bin/env bash
# Whole-program timings of two fairgpu binaries on the workloads of
# bench/simulate_scale.sh (100,000 jobs) and bench/simulate_million.sh
# (1,000,000 jobs), run pair by pair: both binaries at once where the machine
# has 4 cores or more (so both see the same machine), else one after the
# other. Prints each run's wall and user time and policy compute, then the
# ratios new / base. Checks that both wrote the same jobs.csv (the same
# decisions: a timing of other code is not a comparison).
#
#   bench/simulate_ab.sh BASE_BIN NEW_BIN [REPEATS (default 2)] [100k|1M|both]
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 BASE_BIN NEW_BIN [REPEATS] [100k|1M|both]" >&2; exit 2; }
BASE=$1 NEW=$2 REPEATS=${3:-2} WHICH=${4:-both}
for b in "$BASE" "$NEW"; do [ -x "$b" ] || { echo "simulate_ab: $b: not an executable" >&2; exit 2; }; done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
parallel=0
[ "$(nproc)" -ge 4 ] && parallel=1
run_one() {  # run_one TAG LABEL BIN ARGS...
  local tag=$1 label=$2 bin=$3
  shift 3
  /usr/bin/time -f "%e %U %M" -o "$WORK/$tag-$label.time" "$bin" simulate --quiet \
    --out "$WORK/$tag-$label" "$@" > "$WORK/$tag-$label.txt" 2>&1
}
pair() {  # pair TAG ARGS...
  local tag=$1
  shift
  if [ $parallel = 1 ]; then
    run_one "$tag" base "$BASE" "$@" &
    local p=$!
    run_one "$tag" new "$NEW" "$@"
    wait $p
  else
    run_one "$tag" base "$BASE" "$@"
    run_one "$tag" new "$NEW" "$@"
  fi
  local line=$tag label wall user kb compute rounds
  for label in base new; do
    read -r wall user kb < "$WORK/$tag-$label.time"
    compute=$(awk '/^  compute, total/ {print $3}' "$WORK/$tag-$label.txt")
    rounds=$(awk '/^  rounds/ {print $2 "/" $3}' "$WORK/$tag-$label.txt" | tr -d '(')
    line="$line  $label wall $wall s user $user s compute $compute s peak $((kb / 1024)) MiB rounds $rounds"
    echo "$tag $label $wall $user $compute" >> "$WORK/all"
  done
  if cmp -s "$WORK/$tag-base/jobs.csv" "$WORK/$tag-new/jobs.csv"; then
    line="$line  jobs.csv same"
  else
    line="$line  jobs.csv DIFFERS"
  fi
  echo "$line"
  rm -rf "$WORK/$tag-base" "$WORK/$tag-new"
}
echo "base: $BASE ($("$BASE" --version)); new: $NEW ($("$NEW" --version)); $(nproc) cores, pairs $([ $parallel = 1 ] && echo 'at once' || echo 'one after the other')"
for r in $(seq 1 "$REPEATS"); do
  [ "$WHICH" = 1M ] || pair "100k-$r" --policy oef-coop --cluster bench/data/cluster-2048.json \
    --jobs 100000 --gen-tenants 100 --arrivals-per-hour 190
done
for r in $(seq 1 "$REPEATS"); do
  [ "$WHICH" = 100k ] || pair "1M-$r" --policy oef-coop --cluster bench/data/cluster-20480.json \
    --jobs 1000000 --gen-tenants 1000 --arrivals-per-hour 1900
done
# new / base per workload: sums over the repeats.
awk '{split($1, t, "-"); w[t[1] " " $2] += $3; u[t[1] " " $2] += $4; c[t[1] " " $2] += $5; seen[t[1]] = 1}
     END {for (s in seen) printf "%s new/base: wall %.2f, user %.2f, policy compute %.2f\n", s,
            w[s " new"] / w[s " base"], u[s " new"] / u[s " base"], c[s " new"] / c[s " base"]}' "$WORK/all"
