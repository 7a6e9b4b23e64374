#!/usr/bin/env bash
# Churn an operator notices (issue 32 item 11), measured on the whole
# program: a real `fairgpu serve` and two `fairgpu agent`s (k80:2, v100:2,
# emulated speeds 1 and 3), two tenants (weights 2 and 1), 8 fairgpu-train
# jobs (alice's 4 at once, bob's 4 25 s later), 20 s rounds; mid-run a
# kill -9 of the server at 85 s and a restart on its store, then a drain of
# the k80 node at 145 s and an undrain at 165 s (mid-round: rounds fall on
# multiples of 20 s from the start). Prints the policy's preemptions and moves
# (revokes of running jobs: `lease_preempt`, `lease_move`), those within a
# round after the restart and after the undrain, how many of them hit a job
# at least 80% done (its progress as /v1/jobs last showed it, polled every
# 0.5 s), the drain's evictions, restarts, the makespan, and alice's share
# of the GPU-seconds while both tenants had jobs queued (as /v1/jobs counts
# them, settled at the server's events). Not a timed test:
# a measurement; about 5 minutes a run.
#
#   bench/churn.sh [--bin PATH] [--policy POLICY] [--work DIR]
#
#   --bin     the fairgpu binary (default build/fairgpu; fairgpu-train is
#             taken from build/ whatever the binary)
#   --policy  the serve config's policy (default oef-coop)
#   --work    where the run's files go (default a fresh temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/fairgpu
POLICY=oef-coop
WORK=
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --policy) POLICY=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    *) echo "churn.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$BIN" ] || { echo "churn.sh: no binary $BIN" >&2; exit 2; }
TRAIN=$PWD/build/fairgpu-train
[ -x "$TRAIN" ] || { echo "churn.sh: no $TRAIN (build first)" >&2; exit 2; }
[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/fairgpu-churn.XXXXXX)
mkdir -p "$WORK"
exec python3 - "$(realpath "$BIN")" "$TRAIN" "$POLICY" "$(realpath "$WORK")" <<'PYTHON'
import json, os, signal, subprocess, sys, time, urllib.request
from datetime import datetime

BIN, TRAIN, POLICY, WORK = sys.argv[1:5]
ROUND = 20.0
procs = []

def write(path, text):
    with open(os.path.join(WORK, path), "w") as f:
        f.write(text)

write("profiles.json", json.dumps({"k80": {"('mlp', 1)": {"null": 100}},
                                   "v100": {"('mlp', 1)": {"null": 300}}}))
write("serve.json", json.dumps({
    "listen": "127.0.0.1:0", "data_dir": f"{WORK}/data", "checkpoint_dir": f"{WORK}/ckpt",
    "policy": POLICY, "round_s": ROUND, "heartbeat_s": 0.5,
    "profiles": f"{WORK}/profiles.json", "admin_token": "admin-token",
    "tenants": [{"name": "alice", "weight": 2, "token": "alice-token"},
                {"name": "bob", "weight": 1, "token": "bob-token"}]}, indent=2))
port = None

def start_server():
    global port
    pf = os.path.join(WORK, "port")
    if os.path.exists(pf):
        os.remove(pf)
    args = [BIN, "serve", "--config", f"{WORK}/serve.json", "--log-format", "json",
            "--port-file", pf]
    if port:
        args += ["--port", str(port)]
    log = open(os.path.join(WORK, "server.log"), "a")
    p = subprocess.Popen(args, stdout=log, stderr=log)
    for _ in range(400):
        if os.path.exists(pf) and open(pf).read().strip():
            break
        time.sleep(0.025)
    port = int(open(pf).read().split()[0])
    return p

def call(method, path, token="admin-token", body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read() or b"null")

def start_agent(node, gpus):
    token = call("POST", f"/v1/nodes/{node}/token")["token"]
    tf = os.path.join(WORK, f"token-{node}")
    write(f"token-{node}", token + "\n")
    os.chmod(tf, 0o600)
    log = open(os.path.join(WORK, f"agent-{node}.log"), "a")
    procs.append(subprocess.Popen(
        [BIN, "agent", "--server", f"http://127.0.0.1:{port}", "--node", node, "--gpus", gpus,
         "--token-file", tf, "--state-dir", f"{WORK}/agent-{node}"], stdout=log, stderr=log))

def submit(tenant, seed, iterations):
    cmd = [TRAIN, "--iterations", str(iterations), "--seed", str(seed), "--base-rate", "100",
           "--speed-map", "k80=1,v100=3", "--checkpoint-every", "100"]
    call("POST", "/v1/jobs", f"{tenant}-token",
         {"name": f"seed{seed}", "job_type": "mlp", "workers": 1, "iterations": iterations,
          "command": cmd})

server = start_server()
try:
    start_agent("n-k80", "k80:2")
    start_agent("n-v100", "v100:2")
    while len(call("GET", "/v1/cluster")["nodes"]) < 2:
        time.sleep(0.1)
    t0 = time.time()
    # 216,000 iterations on 800 it/s of GPUs: 270 s at best.
    for s, it in enumerate([18000, 24000, 30000, 36000]):
        submit("alice", s + 1, it)
    events = [(25, "bob"), (85, "restart"), (145, "drain"), (165, "undrain")]
    at = {}
    samples = []  # (time, {job: fraction done})
    jobs = []
    while time.time() - t0 < 600:
        t = time.time() - t0
        if events and t >= events[0][0]:
            what = events.pop(0)[1]
            at[what] = time.time()
            if what == "bob":
                for s, it in enumerate([18000, 24000, 30000, 36000]):
                    submit("bob", s + 11, it)
            elif what == "restart":
                server.send_signal(signal.SIGKILL)
                server.wait()
                server = start_server()
            elif what in ("drain", "undrain"):
                call("POST", f"/v1/nodes/n-k80/{what}", body={} if what == "drain" else None)
        try:
            jobs = call("GET", "/v1/jobs")["jobs"]
        except Exception:
            time.sleep(0.2)
            continue
        samples.append((time.time(), {j["id"]: j["iterations_done"] / j["iterations"]
                                      for j in jobs}))
        # GPU-seconds per tenant while both have jobs waiting (the policy's
        # share shows there): from bob's arrival until one has none queued.
        waiting = {j["tenant"] for j in jobs if j["state"] == "queued"}
        held = {}
        for j in jobs:
            held[j["tenant"]] = held.get(j["tenant"], 0.0) + j["gpu_seconds"]
        if "bob" in at and "contended_end" not in at:
            at.setdefault("contended_from", held)
            if waiting == {"alice", "bob"}:
                at["contended_to"] = held
            elif "contended_to" in at:
                at["contended_end"] = time.time()
        if len(jobs) == 8 and all(j["state"] in ("finished", "failed") for j in jobs) \
                and not events:
            break
        time.sleep(0.5)
    end = time.time()
finally:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    server.send_signal(signal.SIGTERM)
    for p in procs + [server]:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()

def progress_before(ts, job):
    last = 0.0
    for t, fr in samples:
        if t > ts:
            break
        last = fr.get(job, last)
    return last

revokes = []  # (time, event, job, fraction done)
evictions = 0
for line in open(os.path.join(WORK, "server.log")):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    ts = datetime.fromisoformat(e["time"].replace("Z", "+00:00")).timestamp()
    if e.get("event") in ("lease_preempt", "lease_move"):
        revokes.append((ts, e["event"], e["job"], progress_before(ts, e["job"])))
    if e.get("event") == "revoke" and at.get("drain", 1e18) <= ts < at.get("undrain", 0):
        evictions += 1

def within(what):
    return [r for r in revokes if at.get(what, 1e18) <= r[0] <= at.get(what, 1e18) + ROUND + 5]

finished = sum(j["state"] == "finished" for j in jobs)
print(f"policy {POLICY}  binary {BIN}  work {WORK}")
print(f"jobs finished {finished}/8, makespan {end - t0:.0f} s")
print(f"preemptions {sum(r[1] == 'lease_preempt' for r in revokes)}, "
      f"moves {sum(r[1] == 'lease_move' for r in revokes)}, "
      f"of which at >= 80% done {sum(r[3] >= 0.8 for r in revokes)}")
for what in ("restart", "undrain"):
    w = within(what)
    print(f"after the {what}: {len(w)} revoked within a round, "
          f"{sum(r[3] >= 0.8 for r in w)} at >= 80% done")
print(f"drain evictions {evictions}")
print(f"restarts {sum(j['restarts'] for j in jobs)}, "
      f"preemptions by job {sum(j['preemptions'] for j in jobs)}")
if "contended_to" in at:
    d = {t: at["contended_to"].get(t, 0.0) - at["contended_from"].get(t, 0.0)
         for t in ("alice", "bob")}
    total = d["alice"] + d["bob"]
    print(f"GPU-seconds while both had jobs queued: alice {d['alice']:.0f}, bob {d['bob']:.0f}"
          f" (alice's share {d['alice'] / total if total else float('nan'):.2f}; weights 2:1)")
for ts, ev, job, fr in revokes:
    print(f"  {ts - t0:6.1f} s  {ev:13s} {job}  {100 * fr:5.1f}% done")
PYTHON
