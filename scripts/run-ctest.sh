#!/usr/bin/env bash
# Runs a build folder's test suite with ctest, several tests at once, and
# prints the slowest tests at the end (CI's log shows where its time goes).
#
#   scripts/run-ctest.sh BUILD_DIR [ctest arguments...]
#
# FAIRGPU_TEST_JOBS (default 4 on 2 cores, 2 x cores elsewhere) tests run at
# once: most of the suite's time is spent waiting on live processes (rounds,
# leases, heartbeats), not computing. Tests that must not share the machine's
# time with others are marked RUN_SERIAL in CMakeLists.txt; ones sharing a
# resource (the Slurm test cluster) hold a RESOURCE_LOCK.
set -uo pipefail
build=$1
shift
jobs=${FAIRGPU_TEST_JOBS:-$(( $(nproc) * 2 ))}
log=$build/ctest-output.log
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# A failure of a test in tests/known-flaky.txt (an intermittent bug tracked
# in an open issue) is rerun once, loudly; any other failure stands.
failed_log=$build/Testing/Temporary/LastTestsFailed.log
if [ "$status" -ne 0 ] && [ -s "$failed_log" ]; then
  known=$(dirname "$0")/../tests/known-flaky.txt
  unknown=$(cut -d: -f2- "$failed_log" | grep -vxF -f <(grep -v '^#' "$known" | grep .) || true)
  if [ -z "$unknown" ]; then
    echo "== known flaky (tests/known-flaky.txt) failed: $(cut -d: -f2- "$failed_log" | tr '\n' ' ')- rerun once:"
    ctest --test-dir "$build" --output-on-failure --rerun-failed 2>&1 | tee -a "$log"
    status=${PIPESTATUS[0]}
  fi
fi
echo "== 15 slowest tests ($build, $jobs at once):"
# ctest's lines: "  7/608 Test  #12: Suite.Name .......   Passed    3.21 sec"
grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" |
  sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' |
  sort -rn | head -15 | awk '{ printf "  %8.1f s  %s\n", $1, $2 }'
exit "$status"
