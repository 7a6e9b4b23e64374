#!/usr/bin/env bash
# Simulator vs live manager on one small trace (issue 5; Shockwave §7 reports
# its simulator within 5% of its physical cluster). The same 30 jobs of three
# job types from three tenants, on 6 GPUs of three types (2 each), oef-coop
# with 60 s rounds:
#   1. `fairgpu simulate` with the emulated speeds as its profile;
#   2. `fairgpu serve` + three `fairgpu agent`s on this machine, the jobs
#      submitted at their arrival times, each running `fairgpu-train` paced
#      to its GPU type's speed (--speed-map), checkpointing on every revoke.
# Prints average JCT and makespan of both and their ratio. Takes ~20 min.
#
#   bench/fidelity.sh [build-dir]     (needs python3 for the JSON arithmetic)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
FAIRGPU="$BUILD/fairgpu"
TRAIN="$BUILD/fairgpu-train"
WORK=$(mktemp -d /tmp/fairgpu-fidelity.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

BASE_RATE=10  # iterations/s of every job type on "slow"
declare -A SPEEDS=([mlp-a]="slow=1,mid=2,fast=3" [mlp-b]="slow=1,mid=1.5,fast=2" [mlp-c]="slow=1,mid=3,fast=6")
RESTART_S=1.5  # what a move costs live: checkpoint, exit, next heartbeat, launch

# The profile the simulator and the server's policy use: the emulated speeds.
python3 - "$WORK/profiles.json" "$BASE_RATE" <<'EOF'
import json, sys
speeds = {"mlp-a": (1, 2, 3), "mlp-b": (1, 1.5, 2), "mlp-c": (1, 3, 6)}
out = {t: {} for t in ("slow", "mid", "fast")}
for job, s in speeds.items():
    for t, x in zip(("slow", "mid", "fast"), s):
        for w in (1, 2):  # linear scaling, as fairgpu-train emulates without --scaling
            out[t][f"('{job}', {w})"] = {"null": float(sys.argv[2]) * x * w}
json.dump(out, open(sys.argv[1], "w"), indent=1)
EOF
cat > "$WORK/cluster.json" <<'EOF'
{"nodes": [{"name": "n-slow", "gpu_type": "slow", "gpus": 2},
           {"name": "n-mid", "gpu_type": "mid", "gpus": 2},
           {"name": "n-fast", "gpu_type": "fast", "gpus": 2}]}
EOF
# 30 jobs: tenants round-robin, job types mixed, every fifth a 2-GPU gang,
# one arrival every 20 s, 2 to 8 minutes of work on the slow type.
{
  echo "job_id,tenant,job_type,num_workers,arrival_s,iterations"
  for i in $(seq 0 29); do
    types=(mlp-a mlp-b mlp-c)
    workers=$(( i % 5 == 4 ? 2 : 1 ))
    minutes=$(( 2 + (i * 5) % 7 ))
    printf 'j%02d,t%d,%s,%d,%d,%d\n' "$i" $((i % 3)) "${types[$(( (i * 2 + i / 3) % 3 ))]}" \
      "$workers" $((i * 20)) $((minutes * 60 * BASE_RATE))
  done
} > "$WORK/trace.csv"

echo "== simulator"
"$FAIRGPU" simulate --quiet --policy oef-coop --round 60 --restart-overhead "$RESTART_S" \
  --cluster "$WORK/cluster.json" --profiles "$WORK/profiles.json" --trace "$WORK/trace.csv" \
  --out "$WORK/sim" > "$WORK/sim.txt"
python3 - "$WORK/sim/jobs.csv" > "$WORK/sim-figures" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
jct = [float(r["jct"]) for r in rows]
print(sum(jct) / len(jct), max(float(r["finish"]) for r in rows) - min(float(r["arrival"]) for r in rows))
EOF
read -r SIM_JCT SIM_MAKESPAN < "$WORK/sim-figures"
echo "avg JCT ${SIM_JCT} s, makespan ${SIM_MAKESPAN} s"

echo "== live manager"
cat > "$WORK/serve.json" <<EOF
{"listen": "127.0.0.1:0", "data_dir": "$WORK/data", "checkpoint_dir": "$WORK/ckpt",
 "policy": "oef-coop", "round_s": 60, "heartbeat_s": 1, "heartbeat_timeout_s": 10,
 "grace_s": 10, "kill_after_s": 2, "profiles": "$WORK/profiles.json",
 "restart_overhead_s": $RESTART_S, "admin_token": "admin-token",
 "tenants": [{"name": "t0", "token": "token-t0"}, {"name": "t1", "token": "token-t1"},
             {"name": "t2", "token": "token-t2"}]}
EOF
"$FAIRGPU" serve --config "$WORK/serve.json" --port 0 --port-file "$WORK/port" 2> "$WORK/server.log" &
PIDS+=($!)
while [ ! -s "$WORK/port" ]; do sleep 0.1; done
URL="http://127.0.0.1:$(cat "$WORK/port")"
for node in slow mid fast; do
  "$FAIRGPU" node-token --server "$URL" --token admin-token "n-$node" > "$WORK/token-$node"
  "$FAIRGPU" agent --server "$URL" --node "n-$node" --gpus "$node:2" --token-file "$WORK/token-$node" \
    --state-dir "$WORK/agent-$node" 2> "$WORK/agent-$node.log" &
  PIDS+=($!)
done
rounds() { curl -s "$URL/metrics" 2>/dev/null | awk '/^fairgpu_rounds_total/ {print $2}'; }
# Align the trace with the round grid as the simulator does (its first
# arrival is a scheduling point): submit the first job just before a round.
r0=$(rounds); while [ "$(rounds)" = "$r0" ]; do sleep 0.2; done
sleep 59
START=$(date +%s.%N)
tail -n +2 "$WORK/trace.csv" | while IFS=, read -r id tenant type workers arrival iterations; do
  now=$(date +%s.%N)
  wait_s=$(python3 -c "print(max(0.0, $START + $arrival - $now))")
  sleep "$wait_s"
  "$FAIRGPU" submit --server "$URL" --token "token-$tenant" --name "$id" --job-type "$type" \
    --workers "$workers" --iterations "$iterations" -- "$TRAIN" --iterations "$iterations" \
    --seed "$((10#${id#j}))" --base-rate "$BASE_RATE" --speed-map "${SPEEDS[$type]}" --checkpoint-every 100 \
    > /dev/null
done
while true; do
  "$FAIRGPU" jobs --server "$URL" --token admin-token --json > "$WORK/live-jobs.json"
  left=$(python3 -c "import json; print(sum(j['state'] not in ('finished','failed','cancelled') for j in json.load(open('$WORK/live-jobs.json'))['jobs']))")
  [ "$left" = 0 ] && break
  sleep 5
done
python3 - "$WORK/live-jobs.json" > "$WORK/live-figures" <<'EOF'
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
bad = [j["id"] for j in jobs if j["state"] != "finished"]
if bad: sys.exit(f"not finished: {bad}")
jct = [j["finished_at"] - j["submitted_at"] for j in jobs]
first = min(j["submitted_at"] for j in jobs)
print(sum(jct) / len(jct), max(j["finished_at"] for j in jobs) - first,
      sum(j["preemptions"] for j in jobs), sum(j["restarts"] for j in jobs))
EOF
read -r LIVE_JCT LIVE_MAKESPAN LIVE_PREEMPT LIVE_RESTARTS < "$WORK/live-figures"
echo "avg JCT ${LIVE_JCT} s, makespan ${LIVE_MAKESPAN} s, preemptions ${LIVE_PREEMPT}, restarts ${LIVE_RESTARTS}"
grep -E "^  (preemptions|restarts)" "$WORK/sim.txt" || true

echo "== live / simulated"
python3 -c "
sj, sm, lj, lm = $SIM_JCT, $SIM_MAKESPAN, $LIVE_JCT, $LIVE_MAKESPAN
print(f'avg JCT  {lj:8.1f} s live / {sj:8.1f} s sim = {lj / sj:.3f} ({100 * (lj / sj - 1):+.1f}%)')
print(f'makespan {lm:8.1f} s live / {sm:8.1f} s sim = {lm / sm:.3f} ({100 * (lm / sm - 1):+.1f}%)')"
echo "(work files: $WORK)"
