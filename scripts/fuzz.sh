#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz/ for SECONDS each (default 30),
# built by scripts/sanitize.sh into build-sanitize/ (built here if missing).
# Seeds are read where they lie (examples/, tests/data, ../shared/data,
# tests/fuzz/seeds); new inputs go to build-sanitize/fuzz/<target>/corpus,
# kept between runs. A finding (crash, sanitizer report, a contract broken,
# a hang past -timeout) fails the run and leaves its input as
# build-sanitize/fuzz/<target>/crash-*, timeout-* or leak-*; replay it with
#   build-sanitize/fuzz_<target> <that file>
#
#   scripts/fuzz.sh            # CI: 30 s per target, one target per core at once
#   scripts/fuzz.sh 600        # by hand: 10 minutes per target
#   scripts/fuzz.sh 600 cluster native_trace   # only these targets
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
shift || true
root=$PWD
shared=$(cd .. && pwd)/shared/data
build=build-sanitize
[ -x "$build/fuzz_cluster" ] || ./scripts/sanitize.sh -N >/dev/null

# Seeds per target: files and folders (a folder's files, not recursive).
seeds_for() {
  case "$1" in
    allocation) echo examples/allocate.json examples/paper-three-users.json examples/weighted.json \
                     examples/oef-like-cluster.json tests/data/gavel-capped-levels.json \
                     tests/data/bad-*.json ;;
    audit_allocation) echo tests/data/bad-allocation-over-capacity.json tests/fuzz/seeds/audit_allocation ;;
    cluster) echo examples/*cluster*.json tests/data/sim-*cluster*.json tests/data/bad-cluster-*.json ;;
    cluster_spec) echo tests/fuzz/seeds/cluster_spec ;;
    profiles) echo tests/data/bad-profiles-*.json ;;
    native_trace) echo examples/small-trace.csv tests/data/bad-trace-*.csv tests/data/sim-*.csv ;;
    gavel_trace) echo tests/data/bad-gavel-*.trace "$shared"/gavel/*.trace "$shared"/shockwave/120-jobs.trace ;;
    shockwave_trace) echo "$shared"/shockwave/*.trace ;;
    shockwave_profiles) echo tests/data/bad-profiles-*.json ;;
    alibaba_nodes) echo tests/data/bad-alibaba-node-*.csv "$shared"/alibaba-gpu-v2023/openb_node_list_gpu_node.csv ;;
    alibaba_pods) echo tests/data/bad-alibaba-pod-*.csv "$shared"/alibaba-gpu-v2023/openb_pod_list_multigpu50.csv ;;
    serve_config) echo examples/serve.json ;;
    live_api) echo tests/fuzz/seeds/live_api ;;
    synergy) echo tests/fuzz/seeds/synergy ;;
    slurm_output) echo tests/data/slurm ;;
    agent_files) echo tests/fuzz/seeds/agent_files ;;
  esac
}

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(allocation audit_allocation cluster cluster_spec profiles native_trace gavel_trace shockwave_trace
           shockwave_profiles alibaba_nodes alibaba_pods serve_config live_api synergy slurm_output
           agent_files)
fi
# One target: its seeds linked in, libFuzzer run in its folder; the verdict
# line goes to its folder's verdict.txt (targets run side by side).
fuzz_target() {
  local t=$1 work=$build/fuzz/$1
  mkdir -p "$work/corpus" "$work/seeds"
  # libFuzzer reads folders: the seeds as links to where they lie.
  find "$work/seeds" -type l -delete
  for s in $(seeds_for "$t"); do
    if [ -d "$s" ]; then for f in "$s"/*; do [ -f "$f" ] && ln -sf "$(realpath "$f")" "$work/seeds/"; done
    elif [ -f "$s" ]; then ln -sf "$(realpath "$s")" "$work/seeds/"; fi
  done
  local log=$work/log.txt
  # -timeout: an input taking longer is a hang (a finding). -max_len keeps
  # inputs small enough that every one is parsed, solved and audited.
  if (cd "$work" && "$root/$build/fuzz_$t" -max_total_time="$seconds" -timeout=20 \
        -max_len=4096 -rss_limit_mb=4096 -print_final_stats=1 -print_funcs=0 corpus seeds >log.txt 2>&1); then
    local runs
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    printf 'fuzz %-17s ok: %s inputs in %s s\n' "$t" "$runs" "$seconds" > "$work/verdict.txt"
  else
    { printf 'fuzz %-17s FAILED (see %s):\n' "$t" "$log"
      grep -E 'ERROR|contract broken|runtime error|Test unit written' "$log" | head -5 || true
    } > "$work/verdict.txt"
    return 1
  fi
}

# FAIRGPU_FUZZ_JOBS targets at once (default: one per core); each libFuzzer
# run is single-threaded, so every target still gets its SECONDS of a core.
parallel=${FAIRGPU_FUZZ_JOBS:-$(nproc)}
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  rm -f "$build/fuzz/$t/verdict.txt"
  fuzz_target "$t" &
  running=$((running + 1))
done
wait || true
failed=()
for t in "${targets[@]}"; do
  verdict=$build/fuzz/$t/verdict.txt
  if [ -f "$verdict" ]; then cat "$verdict"; else echo "fuzz $t: no verdict (the script failed before it)"; fi
  [ -f "$verdict" ] && grep -q "^fuzz $t *ok:" "$verdict" || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
