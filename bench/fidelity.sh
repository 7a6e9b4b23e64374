#!/usr/bin/env bash
# Simulator vs live manager on one small trace (issue 5; Shockwave §7 reports
# its simulator within 5% of its physical cluster). The same 30 jobs of three
# job types from three tenants, on 6 GPUs of three types (2 each), oef-coop
# with 60 s rounds:
#   1. `fairgpu simulate` with the emulated speeds as its profile;
#   2. the live manager, the jobs submitted at their arrival times, each
#      running `fairgpu-train` paced to its GPU type's speed (--speed-map),
#      checkpointing on every revoke, on one of two backends:
#        agents: `fairgpu serve` + three `fairgpu agent`s on this machine;
#        slurm:  `fairgpu serve` with "backend": "slurm" on a Slurm test
#                cluster (scripts/slurm-cluster.sh: 3 nodes n-slow, n-mid,
#                n-fast, 2 GPUs each, GPU types named as below); the Slurm
#                wrapper gives each run its GPU type in FAIRGPU_GPU_TYPE.
# Prints average JCT and makespan of both and their ratio. Takes ~20 min per
# backend (mostly idle: the emulated rates need CPU, so run it on a quiet
# machine).
# --trace big-gangs: gangs larger than a node instead. Four nodes of two GPUs
# (n-slow-1, n-slow-2 of type slow, n-fast-1, n-fast-2 of type fast) and every
# fifth job a 4-GPU gang, which only runs spread over two nodes of a type: on
# Slurm one job over both nodes (--nodes=2), its ranks started by srun.
#
#   bench/fidelity.sh [build-dir] [--backend agents|slurm|both] [--trace standard|big-gangs]
#   (defaults agents, standard; needs python3 for the JSON arithmetic; slurm needs
#   Debian's Slurm, scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
BUILD_ARG=build
BACKEND=agents
TRACE=standard
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) BACKEND=${2:?--backend needs agents, slurm or both}; shift 2 ;;
    --backend=*) BACKEND=${1#--backend=}; shift ;;
    --trace) TRACE=${2:?--trace needs standard or big-gangs}; shift 2 ;;
    --trace=*) TRACE=${1#--trace=}; shift ;;
    -*) echo "fidelity.sh: unknown option $1" >&2; exit 2 ;;
    *) BUILD_ARG=$1; shift ;;
  esac
done
case "$BACKEND" in agents | slurm | both) ;; *)
  echo "fidelity.sh: --backend: expected agents, slurm or both, got '$BACKEND'" >&2; exit 2 ;;
esac
case "$TRACE" in standard | big-gangs) ;; *)
  echo "fidelity.sh: --trace: expected standard or big-gangs, got '$TRACE'" >&2; exit 2 ;;
esac
BUILD=$(cd "$BUILD_ARG" && pwd)
FAIRGPU="$BUILD/fairgpu"
TRAIN="$BUILD/fairgpu-train"
WORK=$(mktemp -d /tmp/fairgpu-fidelity.XXXXXX)
chmod 711 "$WORK"  # an agent running as root runs jobs as their tenants' users
PIDS=()
SLURM_DIR=""
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$SLURM_DIR" ]; then "$REPO/scripts/slurm-cluster.sh" stop "$SLURM_DIR" >/dev/null || true; fi
}
trap cleanup EXIT

BASE_RATE=10  # iterations/s of every job type on "slow"
# A gang over several nodes: the simulator charges the profile's cross-node
# rate, consolidated x 0.8 (kDefaultCrossNodeFactor: the profile below has no
# unconsolidated figures), so fairgpu-train runs rank 0 of such a gang at 0.8
# of its rate. (And every part is told the gang's slowest GPU type.)
CROSS_NODE_FACTOR=0.8
declare -A SPEEDS=([mlp-a]="slow=1,mid=2,fast=3" [mlp-b]="slow=1,mid=1.5,fast=2" [mlp-c]="slow=1,mid=3,fast=6")
# What a move costs live, given to the simulator as its restart cost (every
# start pays it there) and to the server's policy:
#   agents: checkpoint, exit, next heartbeat (1 s), launch: 1.5 s;
#   slurm:  see SLURM_RESTART_S below.
AGENTS_RESTART_S=1.5
# slurm: what a start costs there, measured on the test cluster (2-core
# machine). One move on Slurm alone (bench/slurm_move.sh, medians of 5):
# USR1 -> the train job has checkpointed and exited 0.08 s; requeuehold ->
# PENDING 0.01 s; pin + release (one scontrol) 0.01 s; -> RUNNING 0.45 s
# (Slurm's next scheduling pass); -> restored and training 1.41 s (Slurm shows
# RUNNING before the script starts): 1.99 s. In a run of this script (the
# server's log against slurmctld's, printed at the end): scheduling point ->
# Slurm allocates the run, median 0.88 s for first starts, 1.89 s for
# restarts (the revoked run's exit is seen at the next poll, within poll_s);
# with the 1.4 s to training, about 2.3 and 3.3 s.
SLURM_RESTART_S=3
SLURM_POLL_S=1

# The profile the simulator and the server's policy use: the emulated speeds.
python3 - "$WORK/profiles.json" "$BASE_RATE" <<'EOF'
import json, sys
speeds = {"mlp-a": (1, 2, 3), "mlp-b": (1, 1.5, 2), "mlp-c": (1, 3, 6)}
out = {t: {} for t in ("slow", "mid", "fast")}
for job, s in speeds.items():
    for t, x in zip(("slow", "mid", "fast"), s):
        for w in (1, 2, 4):  # linear scaling, as fairgpu-train emulates without --scaling
            out[t][f"('{job}', {w})"] = {"null": float(sys.argv[2]) * x * w}
json.dump(out, open(sys.argv[1], "w"), indent=1)
EOF
# The nodes, name:type (two GPUs each), as the cluster file, the agents and
# the Slurm test cluster take them.
if [ "$TRACE" = big-gangs ]; then
  NODES=(n-slow-1:slow n-slow-2:slow n-fast-1:fast n-fast-2:fast)
  GANG_WORKERS=4
else
  NODES=(n-slow:slow n-mid:mid n-fast:fast)
  GANG_WORKERS=2
fi
python3 - "$WORK/cluster.json" "${NODES[@]}" <<'EOF'
import json, sys
nodes = [dict(zip(("name", "gpu_type"), n.split(":")), gpus=2) for n in sys.argv[2:]]
json.dump({"nodes": nodes}, open(sys.argv[1], "w"), indent=1)
EOF
# 30 jobs: tenants round-robin, job types mixed, every fifth a gang (2 GPUs;
# 4 with --trace big-gangs),
# one arrival every 20 s, 2 to 8 minutes and 7 s of work on the slow type.
# The 7 s keep every job's time on every type (speeds 1 to 6) off the 60 s
# round grid. Whole minutes made many a job exactly one or two rounds long
# on some type: live it ends inside its lease (launch and revoke reach a
# node at the same heartbeat phase, so a run keeps its whole round), while
# the simulator charges the restart cost inside the round and the job spills
# over into a preemption. The simulator alone gave 235.8 s average JCT with
# restart cost 0 and 326.7-328.7 s with any cost from 0.1 to 1.5 s; live
# fell between, by which side each such job landed.
OFF_GRID_ITERATIONS=$((7 * BASE_RATE))
{
  echo "job_id,tenant,job_type,num_workers,arrival_s,iterations"
  for i in $(seq 0 29); do
    types=(mlp-a mlp-b mlp-c)
    workers=$(( i % 5 == 4 ? GANG_WORKERS : 1 ))
    minutes=$(( 2 + (i * 5) % 7 ))
    printf 'j%02d,t%d,%s,%d,%d,%d\n' "$i" $((i % 3)) "${types[$(( (i * 2 + i / 3) % 3 ))]}" \
      "$workers" $((i * 20)) $((minutes * 60 * BASE_RATE + OFF_GRID_ITERATIONS))
  done
} > "$WORK/trace.csv"

# simulate NAME RESTART_S [OPTION...]: prints "avg JCT, makespan" and leaves $WORK/sim-NAME.
simulate() {
  echo "== simulator (restart cost $2 s${3:+, $3})"
  "$FAIRGPU" simulate --quiet --policy oef-coop --round 60 --restart-overhead "$2" "${@:3}" \
    --cluster "$WORK/cluster.json" --profiles "$WORK/profiles.json" --trace "$WORK/trace.csv" \
    --out "$WORK/sim-$1" > "$WORK/sim-$1.txt"
  python3 - "$WORK/sim-$1/jobs.csv" > "$WORK/sim-$1-figures" <<'EOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
jct = [float(r["jct"]) for r in rows]
print(sum(jct) / len(jct), max(float(r["finish"]) for r in rows) - min(float(r["arrival"]) for r in rows))
EOF
  read -r SIM_JCT SIM_MAKESPAN < "$WORK/sim-$1-figures"
  echo "avg JCT ${SIM_JCT} s, makespan ${SIM_MAKESPAN} s"
  grep -E "^  (preemptions|restarts)" "$WORK/sim-$1.txt" || true
}

# serve NAME RESTART_S EXTRA_JSON: starts `fairgpu serve`, sets URL.
serve() {
  cat > "$WORK/serve-$1.json" <<EOF
{"listen": "127.0.0.1:0", "data_dir": "$WORK/data-$1", "checkpoint_dir": "$WORK/ckpt-$1",
 "policy": "oef-coop", "round_s": 60, "heartbeat_s": 1, "heartbeat_timeout_s": 10,
 "grace_s": 10, "kill_after_s": 2, "profiles": "$WORK/profiles.json",
 "restart_overhead_s": $2, "admin_token": "admin-token",
 "tenants": [{"name": "t0", "token": "token-t0"}, {"name": "t1", "token": "token-t1"},
             {"name": "t2", "token": "token-t2"}]$3}
EOF
  rm -f "$WORK/port-$1"
  "$FAIRGPU" serve --config "$WORK/serve-$1.json" --port 0 --port-file "$WORK/port-$1" \
    2> "$WORK/server-$1.log" &
  PIDS+=($!)
  while [ ! -s "$WORK/port-$1" ]; do
    kill -0 "${PIDS[-1]}" 2>/dev/null || { tail -3 "$WORK/server-$1.log" >&2; exit 1; }
    sleep 0.1
  done
  URL="http://127.0.0.1:$(cat "$WORK/port-$1")"
}

# Until the server has N ready nodes (at most 60 s).
wait_nodes() {
  local ready
  for _ in $(seq 300); do
    ready=$("$FAIRGPU" cluster --server "$URL" --token admin-token --json 2>/dev/null |
      python3 -c "import json, sys; print(sum(n['state'] == 'ready' for n in json.load(sys.stdin)['nodes']))" \
      2>/dev/null || echo 0)
    [ "$ready" = "$1" ] && return 0
    sleep 0.2
  done
  echo "fidelity.sh: $ready of $1 nodes ready after 60 s (logs: $WORK)" >&2
  exit 1
}

rounds() {
  curl -s -H "Authorization: Bearer admin-token" "$URL/metrics" 2>/dev/null |
    awk '/^fairgpu_rounds_total/ {print $2}'
}

# live NAME LEAD_S: submits the trace to $URL at its arrival times, the first
# job LEAD_S before a scheduling point, waits for every job, prints the figures.
live() {
  # Align the trace with the round grid as the simulator does (its first
  # arrival is a scheduling point): submit the first job just before a round.
  local r0 start now wait_s left
  r0=$(rounds); while [ "$(rounds)" = "$r0" ]; do sleep 0.2; done
  sleep "$(python3 -c "print(60 - $2)")"
  start=$(date +%s.%N)
  tail -n +2 "$WORK/trace.csv" | while IFS=, read -r id tenant type workers arrival iterations; do
    now=$(date +%s.%N)
    wait_s=$(python3 -c "print(max(0.0, $start + $arrival - $now))")
    sleep "$wait_s"
    "$FAIRGPU" submit --server "$URL" --token "token-$tenant" --name "$id" --job-type "$type" \
      --workers "$workers" --iterations "$iterations" -- "$TRAIN" --iterations "$iterations" \
      --seed "$((10#${id#j}))" --base-rate "$BASE_RATE" --speed-map "${SPEEDS[$type]}" --checkpoint-every 100 \
      --cross-node-factor "$CROSS_NODE_FACTOR" \
      > /dev/null
  done
  while true; do
    "$FAIRGPU" jobs --server "$URL" --token admin-token --json > "$WORK/live-$1-jobs.json"
    left=$(python3 -c "import json; print(sum(j['state'] not in ('finished','failed','cancelled') for j in json.load(open('$WORK/live-$1-jobs.json'))['jobs']))")
    [ "$left" = 0 ] && break
    sleep 5
  done
  python3 - "$WORK/live-$1-jobs.json" > "$WORK/live-$1-figures" <<'EOF'
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
bad = [j["id"] for j in jobs if j["state"] != "finished"]
if bad: sys.exit(f"not finished: {bad}")
jct = [j["finished_at"] - j["submitted_at"] for j in jobs]
first = min(j["submitted_at"] for j in jobs)
print(sum(jct) / len(jct), max(j["finished_at"] for j in jobs) - first,
      sum(j["preemptions"] for j in jobs), sum(j["restarts"] for j in jobs))
EOF
  read -r LIVE_JCT LIVE_MAKESPAN LIVE_PREEMPT LIVE_RESTARTS < "$WORK/live-$1-figures"
  echo "avg JCT ${LIVE_JCT} s, makespan ${LIVE_MAKESPAN} s, preemptions ${LIVE_PREEMPT}, restarts ${LIVE_RESTARTS}"
  # Per job, sim against live (where the two part ways), into the work dir.
  python3 - "$WORK/sim-$1/jobs.csv" "$WORK/live-$1-jobs.json" > "$WORK/per-job-$1.txt" <<'EOF'
import csv, json, sys
sim = {r["job_id"]: r for r in csv.DictReader(open(sys.argv[1]))}
jobs = json.load(open(sys.argv[2]))["jobs"]
t0 = min(j["submitted_at"] for j in jobs)
print("job type  w | sim: start  finish    jct p r | live: start  finish    jct p r | live-sim")
for j in sorted(jobs, key=lambda j: j["name"]):
    s, jct = sim[j["name"]], j["finished_at"] - j["submitted_at"]
    print(f"{j['name']} {s['job_type']} {s['workers']} | {float(s['first_start']):6.1f} {float(s['finish']):7.1f}"
          f" {float(s['jct']):6.1f} {s['preemptions']} {s['restarts']} | {j['started_at'] - t0:6.1f}"
          f" {j['finished_at'] - t0:7.1f} {jct:6.1f} {j['preemptions']} {j['restarts']} | {jct - float(s['jct']):+7.1f}")
EOF
  # Each rebuild starts a new policy (its placer's credits and quanta lost);
  # gangs over several nodes are where a part's GPU type matters.
  curl -s -H "Authorization: Bearer admin-token" "$URL/metrics" > "$WORK/live-$1-metrics.txt" || true
  awk '/^fairgpu_(rounds_total|policy_rebuilds_total|spread_launched_total) / {printf "%s %s  ", $1, $2}
       END {print ""}' "$WORK/live-$1-metrics.txt"
}

ratios() { # LABEL
  echo "== $1 / simulated"
  python3 -c "
sj, sm, lj, lm = $SIM_JCT, $SIM_MAKESPAN, $LIVE_JCT, $LIVE_MAKESPAN
print(f'avg JCT  {lj:8.1f} s $1 / {sj:8.1f} s sim = {lj / sj:.3f} ({100 * (lj / sj - 1):+.1f}%)')
print(f'makespan {lm:8.1f} s $1 / {sm:8.1f} s sim = {lm / sm:.3f} ({100 * (lm / sm - 1):+.1f}%)')"
}

stop_server() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}

echo "trace: $TRACE; load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
if [ "$BACKEND" != slurm ]; then
  simulate agents "$AGENTS_RESTART_S"
  echo "== live manager, agents"
  serve agents "$AGENTS_RESTART_S" ""
  for n in "${NODES[@]}"; do
    node=${n%%:*}
    (umask 077; "$FAIRGPU" node-token --server "$URL" --token admin-token "$node" > "$WORK/token-$node")
    "$FAIRGPU" agent --server "$URL" --node "$node" --gpus "${n#*:}:2" --token-file "$WORK/token-$node" \
      --state-dir "$WORK/agent-$node" 2> "$WORK/agent-$node.log" &
    PIDS+=($!)
  done
  wait_nodes ${#NODES[@]}
  live agents 1
  ratios live
  stop_server
fi
if [ "$BACKEND" != agents ]; then
  # A gang the plan spreads is one Slurm job over its nodes, with the same
  # GPUs on each (Slurm's --gres): the simulator plans as serve does on Slurm.
  simulate slurm "$SLURM_RESTART_S" --gangs-spread-evenly
  echo "== live manager, Slurm (poll_s $SLURM_POLL_S)"
  SLURM_DIR=$WORK/slurm
  slurm_nodes=$(printf '%s:2,' "${NODES[@]}")
  "$REPO/scripts/slurm-cluster.sh" start "$SLURM_DIR" "${slurm_nodes%,}" > /dev/null
  serve slurm "$SLURM_RESTART_S" ", \"backend\": \"slurm\", \"slurm\": {\"partition\": \"main\",
   \"conf\": \"$SLURM_DIR/slurm.conf\", \"poll_s\": $SLURM_POLL_S}"
  # A submission becomes a Slurm job at the server's next tick (poll_s, plus
  # sbatch): lead the first round by 2 s so that it is placed there.
  wait_nodes ${#NODES[@]}
  live slurm 2
  ratios Slurm
  # What a start and a move cost in this run, from the server's log (the
  # scheduling point) and slurmctld's (when Slurm allocated the run).
  python3 - "$WORK/server-slurm.log" "$SLURM_DIR/log/slurmctld.log" "$WORK/live-slurm-jobs.json" <<'EOF'
import json, re, statistics, sys
from datetime import datetime, timezone
server_log, ctld_log, jobs_json = sys.argv[1:4]
def ts(s):
    return datetime.fromisoformat(s.rstrip("Z")).replace(tzinfo=timezone.utc).timestamp()
slurm_of = {j["id"]: j["slurm_job"] for j in json.load(open(jobs_json))["jobs"]}
allocs, kills = {}, {}
for line in open(ctld_log):
    m = re.match(r"\[([^\]]+)\] sched: Allocate JobId=(\d+) ", line)
    if m: allocs.setdefault(int(m[2]), []).append(ts(m[1]))
    m = re.match(r"\[([^\]]+)\] _slurm_rpc_kill_job: REQUEST_KILL_JOB JobId=(\d+) ", line)
    if m: kills.setdefault(int(m[2]), []).append(ts(m[1]))
started, launched, revoked = {}, set(), []
for line in open(server_log):
    m = re.match(r"(\S+) info  (lease_start|launch|revoke) (.*)", line)
    if not m: continue
    t, what = ts(m[1]), m[2]
    f = dict(kv.split("=", 1) for kv in m[3].split() if "=" in kv)
    if what == "lease_start": started[f["lease"]] = (t, f["job"])
    elif what == "launch": launched.add(f["lease"])
    else: revoked.append((t, f["job"]))
first, again, signal, seen = [], [], [], set()
for lease, (t, job) in sorted(started.items(), key=lambda x: x[1][0]):
    if lease not in launched: continue  # revoked before it could start
    a = [x for x in allocs.get(slurm_of[job], []) if x >= t]
    if a: (again if job in seen else first).append(a[0] - t)
    seen.add(job)
for t, job in revoked:
    k = [x for x in kills.get(slurm_of[job], []) if x >= t]
    if k: signal.append(k[0] - t)
def show(name, xs):
    if xs: print(f"  {name}: median {statistics.median(xs):.2f} s, mean {statistics.mean(xs):.2f} s, "
                  f"max {max(xs):.2f} s ({len(xs)})")
print("scheduling point -> Slurm allocates the run (slurmctld.log; the job trains ~1.4 s later):")
show("first starts", first)
show("restarts", again)
print("scheduling point -> the checkpoint signal reaches slurmctld:")
show("revokes", signal)
EOF
  stop_server
  "$REPO/scripts/slurm-cluster.sh" stop "$SLURM_DIR" > /dev/null
  SLURM_DIR=""
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(work files: $WORK)"
