#!/usr/bin/env bash
# scripts/gpu-check.sh: what fairgpu's CPU tests cannot check, on a machine
# with an NVIDIA GPU (issue 30). Two steps:
#
#   scripts/gpu-check.sh bundle DIR       (here, after the build) copies
#       build/fairgpu, build/fairgpu-train, examples/pytorch/train.py, this
#       script and the shared libraries ldd lists for the two binaries (the
#       glibc core excepted) into DIR, so that a machine with none of
#       fairgpu's packages installed can run them.
#   scripts/gpu-check.sh run DIR [--cpu]  (on the GPU machine) starts
#       `fairgpu serve` and a root `fairgpu agent` on 127.0.0.1 from the
#       bundle and runs the checks, one line each:
#         PASS|FAIL|SKIP discovery     the agent, without --gpus, finds the GPUs
#                                      with nvidia-smi and names their type
#         PASS|FAIL|SKIP job-identity  a job of a root agent (a uid with no
#                                      passwd entry) gets getpass.getuser(),
#                                      a HOME of its own it can write, and
#                                      imports torch
#         PASS|FAIL|SKIP memory-limit  that job's cgroup (read by the job from
#                                      /proc/self/cgroup) has memory.max = its
#                                      grant: the agent left its cgroup for a
#                                      leaf so that it could enable the memory
#                                      controller for its runs (SKIP: no memory
#                                      controller in cgroup v2 here)
#         PASS|FAIL|SKIP run-cgroup    that job's double-forked, setsid child
#                                      dies with its run (the run's cgroup is
#                                      killed), and the cgroup has pids.max
#         PASS|FAIL|SKIP profiling     an unknown job type is profiled on the
#                                      node's GPU type, then its job finishes
#         PASS|FAIL|SKIP cuda-job      examples/pytorch/train.py from
#                                      `fairgpu submit` trains on CUDA
#         PASS|FAIL|SKIP drain-resume  that job drained midway checkpoints on
#                                      SIGUSR1 and, after the undrain, resumes
#                                      at the same step and finishes
#       Logs go to $OUT (default: a folder it names): log.txt, server.log,
#       agent.log, jobs.txt. Exit status: 0 when nothing failed, 1 when a
#       check failed, 2 when this is no GPU machine (no nvidia-smi) or the
#       bundle is unusable. The whole run stays within ~4 minutes (a
#       watchdog stops it at HARD_S, 230 s).
#       --cpu: a dry run where there is no GPU: the agent is given
#       --gpus cpu:1; discovery and cuda-job are skipped, the rest runs
#       (train.py's checks where a python3 with torch exists).
#
# Knobs (environment): PYTHON (the jobs' interpreter; default: the first
# python3 with torch, else /usr/bin/python3), OUT, HARD_S, KEEP_WORK=1 (keep
# the scratch folder), WORK_PARENT (default /tmp; jobs run as uid 200000 and
# must reach it), AGENT_CGROUP=keep (see below). Only processes this script
# started are stopped, by pid.
#
# The agent needs to be alone in its cgroup v2 (as a systemd unit or a
# container's main process is) to give its runs the memory controller. On a
# machine where this script shares its cgroup with other processes (the
# shell that runs it, in a container), it first moves every process of that
# cgroup, itself among them, into a leaf `gpu-check` of it, then starts the
# agent in the emptied cgroup; AGENT_CGROUP=keep leaves them all where they
# are (then memory-limit fails, and the agent's log names who is in the way).
set -u

die() { echo "gpu-check: $*" >&2; exit 2; }

# ------------------------------------------------------------ bundle
bundle() {
  local dir=$1 repo build f lib name
  repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  build=${BUILD_DIR:-$repo/build}
  for f in "$build/fairgpu" "$build/fairgpu-train" "$repo/examples/pytorch/train.py"; do
    [ -f "$f" ] || die "bundle: $f: missing (build first: cmake --build build)"
  done
  case "$dir" in "" | / | "$repo" | "$repo/") die "bundle: refusing DIR '$dir'" ;; esac
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib" || die "bundle: cannot create $dir"
  cp "$build/fairgpu" "$build/fairgpu-train" "$repo/examples/pytorch/train.py" "$dir/bin/" ||
    die "bundle: cannot copy the binaries"
  cp "${BASH_SOURCE[0]}" "$dir/gpu-check.sh"
  # Symbols are not needed to run; the bundle travels (64 MiB at most).
  command -v strip >/dev/null && strip --strip-unneeded "$dir/bin/fairgpu" "$dir/bin/fairgpu-train"
  for f in "$build/fairgpu" "$build/fairgpu-train"; do
    if ldd "$f" | grep -q 'not found'; then
      ldd "$f" | grep 'not found' >&2
      die "bundle: $f: a shared library is missing here"
    fi
    # "libfoo.so.1 => /path/libfoo.so.1 (0x...)": every library but glibc's
    # core, which the GPU machine's own (newer) glibc provides.
    ldd "$f" | sed -nE 's/^[[:space:]]*([^ ]+) => (\/[^ ]+) .*$/\1 \2/p' | while read -r name lib; do
      case "$name" in
        libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) continue ;;
      esac
      cp -L "$lib" "$dir/lib/$name" || die "bundle: cannot copy $lib"
    done || exit 2
  done
  {
    echo "fairgpu gpu-check bundle, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git -C "$repo" rev-parse HEAD 2>/dev/null)$(git -C "$repo" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "built on: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME"), $(ldd --version 2>&1 | head -n 1)"
    echo "libraries:"
    ls "$dir/lib"
  } >"$dir/MANIFEST"
  echo "bundle $dir: $(du -sh "$dir" | cut -f1), $(ls "$dir/lib" | wc -l) libraries"
  echo "run it on the GPU machine: $dir/gpu-check.sh run $dir"
}

# ------------------------------------------------------------ run
CHECKS=(discovery job-identity memory-limit run-cgroup profiling cuda-job drain-resume)
declare -A RES DETAIL

run() {
  local dir=$1 mode=${2:-}
  HERE=$(cd "$dir" 2>/dev/null && pwd) || die "run: no bundle at '$dir' (scripts/gpu-check.sh bundle DIR first)"
  [ -x "$HERE/bin/fairgpu" ] || die "run: $HERE/bin/fairgpu: missing (not a bundle)"
  CPU=0
  if [ "$mode" = --cpu ]; then
    CPU=1
  elif [ -n "$mode" ]; then
    die "run: unknown option '$mode' (expected --cpu)"
  elif ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu-check: no nvidia-smi on PATH: not a GPU machine (run DIR --cpu checks what needs no GPU)"
    exit 2
  fi
  T0=$SECONDS
  HARD_S=${HARD_S:-230}
  for c in "${CHECKS[@]}"; do RES[$c]=FAIL DETAIL[$c]="not reached"; done
  if [ "$CPU" = 1 ]; then
    RES[discovery]=SKIP DETAIL[discovery]="--cpu: the agent was given --gpus"
    RES[cuda-job]=SKIP DETAIL[cuda-job]="--cpu: no GPU"
  fi
  OUT=${OUT:-}
  WORK=$(mktemp -d "${WORK_PARENT:-/tmp}/fairgpu-gpucheck.XXXXXX") || die "run: cannot make a scratch folder"
  chmod 755 "$WORK"
  [ -n "$OUT" ] || OUT=$WORK/out
  mkdir -p "$OUT" || die "run: cannot create OUT=$OUT"
  OUT=$(cd "$OUT" && pwd)
  [ "$OUT" = "$WORK/out" ] && KEEP_WORK=1
  LOG=$OUT/log.txt
  : >"$LOG"
  exec 7>>"$LOG"
  BASH_XTRACEFD=7
  PS4='+ [$((SECONDS - T0))s] '
  set -x
  SERVER_PID="" AGENT_PID="" WD_PID="" FINISHING=0 STAGE=start CG_EMPTIED=""
  trap on_signal TERM INT
  trap finish EXIT
  local main=$$
  (
    sleep "$HARD_S" &
    sp=$!
    trap 'kill $sp 2>/dev/null; exit 0' TERM
    wait $sp && kill -TERM "$main" 2>/dev/null
  ) &
  WD_PID=$!
  checks
}

say() { printf '[%3ss] %s\n' "$((SECONDS - T0))" "$*" >>"$LOG"; }
result() { # CHECK PASS|FAIL|SKIP DETAIL
  RES[$1]=$2 DETAIL[$1]=$3
  say "check $1: $2: $3"
}
alive() { # PID: running, not a zombie
  local st
  [ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || return 1
  st=$(sed -E 's/^.*\) ([A-Za-z]).*$/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
stop_pid() { # PID NAME GRACE_S
  local pid=$1 name=$2 grace=$3 i
  [ -n "$pid" ] || return 0
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < grace * 4; i++)); do alive "$pid" || break; sleep 0.25; done
    if alive "$pid"; then
      say "$name (pid $pid) still running ${grace}s after SIGTERM: SIGKILL"
      kill -KILL "$pid" 2>/dev/null
    fi
  fi
  wait "$pid" 2>/dev/null
  return 0
}
finish() {
  [ "$FINISHING" = 1 ] && return 0
  FINISHING=1
  [ -n "$WD_PID" ] && kill -TERM "$WD_PID" 2>/dev/null && wait "$WD_PID" 2>/dev/null
  stop_pid "$AGENT_PID" agent 10
  stop_pid "$SERVER_PID" server 6
  restore_cgroup
  set +x
  local f rc=0 c
  for f in server agent; do
    [ -f "$WORK/$f.log" ] && [ "$WORK/$f.log" != "$OUT/$f.log" ] && tail -c 3000000 "$WORK/$f.log" >"$OUT/$f.log"
  done
  if [ "${KEEP_WORK:-0}" = 1 ]; then
    say "scratch folder kept: $WORK"
  else
    rm -rf "$WORK"
  fi
  for c in "${CHECKS[@]}"; do
    printf '%-4s %-13s %s\n' "${RES[$c]}" "$c" "${DETAIL[$c]}" | tee -a "$LOG"
    [ "${RES[$c]}" = FAIL ] && rc=1
  done
  # Not a check of its own (issue 30 lists it as open): whether jobs' memory
  # grants were enforced.
  f=$(grep -m1 -o 'memory limit not enforced: .*' "$OUT/agent.log" 2>/dev/null | sed 's/ tenant=.*//')
  [ -n "$f" ] && echo "note: $f" | tee -a "$LOG"
  echo "gpu-check: $((SECONDS - T0)) s; logs in $OUT" | tee -a "$LOG"
  [ "${FATAL:-0}" = 2 ] && rc=2
  exit "$rc"
}
on_signal() {
  [ "$FINISHING" = 1 ] && return 0
  local c
  say "stopped by a signal (the watchdog at ${HARD_S}s, or ^C) during: $STAGE"
  for c in "${CHECKS[@]}"; do
    [ "${DETAIL[$c]}" = "not reached" ] && DETAIL[$c]="interrupted (watchdog at ${HARD_S}s or a signal) during: $STAGE"
  done
  finish
}
# Polls COMMAND every 0.5 s for up to TIMEOUT_S: 0 once it succeeds, 1 at the
# timeout or when COMMAND returns 2 (it can no longer succeed).
wait_for() { # TIMEOUT_S WHAT COMMAND...
  local t=$1 what=$2 end rc
  shift 2
  end=$((SECONDS + t))
  while :; do
    "$@"
    rc=$?
    ((rc == 0)) && return 0
    ((rc == 2)) && { say "stopped waiting for $what: it cannot happen any more"; return 1; }
    ((SECONDS >= end)) && { say "timed out after ${t}s waiting for $what"; return 1; }
    sleep 0.5
  done
}
left() { echo $((HARD_S - 20 - (SECONDS - T0))); }
budget() { local l; l=$(left); ((l < $1)) && { ((l < 1)) && echo 1 || echo "$l"; } || echo "$1"; }

# Writes the python helpers the checks use (no jq on the GPU machine).
helpers() {
  cat >"$WORK/bin/jsonq.py" <<'EOF'
"""jsonq.py EXPR: EXPR evaluated with j = the JSON document on stdin (lists and
dicts printed as JSON, None as '-', booleans as true/false); ERR on any error."""
import json
import sys

try:
    j = json.load(sys.stdin)
    v = eval(sys.argv[1], {"json": json}, {"j": j})  # noqa: S307 (the script's own expressions)
    print("-" if v is None else json.dumps(v) if isinstance(v, (list, dict)) else
          ("true" if v else "false") if isinstance(v, bool) else v)
except Exception:  # noqa: BLE001
    print("ERR")
EOF
  cat >"$WORK/bin/identity.py" <<'EOF'
"""A job that reports who it runs as (issue 30: under a root agent a job runs as
a uid with no passwd entry; torch 2.x called getpass.getuser() at import and
died), then counts to ITERATIONS in its progress file so that its unknown job
type gets profiled."""
import getpass
import importlib.util
import json
import os
import sys
import time

out = {"uid": os.getuid(), "USER": os.environ.get("USER"), "LOGNAME": os.environ.get("LOGNAME")}
try:  # the memory.max of the job's own cgroup v2
    with open("/proc/self/cgroup") as f:
        out["cgroup"] = next(l[3:].strip() for l in f if l.startswith("0::"))
    with open("/proc/self/mountinfo") as f:
        mount = next(l.split(" - ")[0].split()[4] for l in f if " - cgroup2 " in l)
    with open(mount + out["cgroup"].rstrip("/") + "/memory.max") as f:
        out["memory_max"] = f.read().strip()
except Exception as e:  # noqa: BLE001
    out["memory_max_error"] = repr(e)
try:  # and its pids.max
    with open(mount + out["cgroup"].rstrip("/") + "/pids.max") as f:
        out["pids_max"] = f.read().strip()
except Exception as e:  # noqa: BLE001
    out["pids_max_error"] = repr(e)
# A child that leaves the job's session (setsid, double fork): the agent must
# kill it with the run (its cgroup), not leave it with the GPU.
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(os.path.join(os.environ["FAIRGPU_CHECKPOINT_DIR"], "escaped.pid"), "w") as f:
            f.write(str(os.getpid()))
        os.execvp("sleep", ["sleep", "100000"])
    os._exit(0)
os.wait()
try:
    out["user"] = getpass.getuser()
except Exception as e:  # noqa: BLE001
    out["user_error"] = repr(e)
home = os.environ.get("HOME", "")
out["home"] = home
try:
    probe = os.path.join(home, ".gpu-check-probe")
    with open(probe, "w") as f:
        f.write("ok")
    with open(probe) as f:
        out["home_writable"] = f.read() == "ok"
    st = os.stat(home)
    out["home_owner"], out["home_mode"] = st.st_uid, oct(st.st_mode & 0o777)
except Exception as e:  # noqa: BLE001
    out["home_error"] = repr(e)
if importlib.util.find_spec("torch") is not None:
    try:
        import torch
        out["torch"] = torch.__version__
        out["cuda_available"] = bool(torch.cuda.is_available())
        try:  # the compiler cache's folder is named after getpass.getuser()
            from torch._inductor.runtime.cache_dir_utils import default_cache_dir
            out["inductor_cache_dir"] = default_cache_dir()
        except ImportError:
            pass
    except Exception as e:  # noqa: BLE001
        out["torch_error"] = repr(e)
with open(os.path.join(os.environ["FAIRGPU_CHECKPOINT_DIR"], "identity.json"), "w") as f:
    json.dump(out, f)
print(json.dumps(out), flush=True)
progress = os.environ["FAIRGPU_PROGRESS_FILE"]
for i in range(1, int(sys.argv[1]) + 1):
    with open(progress + ".tmp", "w") as f:
        f.write(f"{i}\n")
    os.replace(progress + ".tmp", progress)
    time.sleep(0.002)
EOF
  chmod 644 "$WORK/bin/"*.py
}

# The cgroup v2 mount point; "" without one.
cgroup2_mount() { awk '/ - cgroup2 / { print $5; exit }' /proc/self/mountinfo 2>/dev/null; }
# Empties this script's cgroup v2 (see the top) for the agent: prints it, or
# "" when it is the root (exempt: nothing to do), there is no cgroup v2, this
# is no root, AGENT_CGROUP=keep, or it could not be emptied.
own_cgroup_alone() {
  local mnt rel cg pid n=0 _
  mnt=$(cgroup2_mount)
  rel=$(sed -n 's/^0:://p' /proc/self/cgroup 2>/dev/null)
  if [ -z "$mnt" ] || [ -z "$rel" ] || [ "$rel" = / ] || [ "$(id -u)" != 0 ] || [ "${AGENT_CGROUP:-}" = keep ]; then
    return 0
  fi
  cg=$mnt$rel
  mkdir -p "$cg/gpu-check" 2>>"$LOG" || return 0
  # (cgroup files read as size 0: test their text, not -s.)
  for _ in 1 2 3 4 5; do # a process may fork while the others move
    [ -n "$(cat "$cg/cgroup.procs")" ] || break
    for pid in $(cat "$cg/cgroup.procs"); do
      echo "$pid" >"$cg/gpu-check/cgroup.procs" 2>/dev/null && n=$((n + 1))
    done
  done
  if [ -n "$(cat "$cg/cgroup.procs")" ]; then
    say "cgroup: $cg still holds $(tr '\n' ' ' <"$cg/cgroup.procs")after moving $n processes out: the agent starts here as it is"
    return 0
  fi
  say "cgroup: moved the $n processes of $cg (this script among them) into $cg/gpu-check; the agent starts alone in $cg"
  echo "$cg"
}

# Undoes own_cgroup_alone once the agent is gone: the memory controller off
# for the cgroup's children (else nothing could join it), the processes
# moved back, the leaves removed, so that the machine's next command starts
# in it as before.
restore_cgroup() {
  local cg=${CG_EMPTIED:-} d p
  [ -n "$cg" ] || return 0
  rmdir "$cg"/fairgpu-gpunode-* 2>/dev/null
  echo -memory >"$cg/cgroup.subtree_control" 2>>"$LOG"
  for d in gpu-check fairgpu-agent@gpunode; do
    for p in $(cat "$cg/$d/cgroup.procs" 2>/dev/null); do echo "$p" >"$cg/cgroup.procs" 2>/dev/null; done
    rmdir "$cg/$d" 2>>"$LOG"
  done
  say "cgroup: processes moved back into $cg (subtree_control '$(cat "$cg/cgroup.subtree_control")')"
}

pick_python() {
  local c exe
  if [ -n "${PYTHON:-}" ]; then
    echo "$PYTHON"
    return 0
  fi
  for c in "$(command -v python3 2>/dev/null)" /usr/bin/python3; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    exe=$(timeout 30 "$c" -c 'import importlib.util, sys
sys.exit(1) if importlib.util.find_spec("torch") is None else print(sys.executable)' 2>>"$LOG") || continue
    [ -n "$exe" ] && { echo "$exe"; return 0; }
  done
  [ -x /usr/bin/python3 ] && { echo /usr/bin/python3; return 0; }
  return 1
}

checks() {
  local NODE=gpunode ADMIN=gpucheck-admin-token ALICE=gpucheck-alice-token
  STAGE="setting up"
  mkdir -p "$WORK/bin" "$WORK/data" "$WORK/ckpt"
  # Copies the jobs' user can read (the bundle may sit under a 0700 folder).
  cp "$HERE/bin/fairgpu" "$HERE/bin/train.py" "$WORK/bin/" || { FATAL=2; exit 2; }
  helpers
  chmod 755 "$WORK/bin" "$WORK/bin/fairgpu"
  FGLD="$HERE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  FG=$WORK/bin/fairgpu
  if ! LD_LIBRARY_PATH="$FGLD" "$FG" --version >>"$LOG" 2>&1; then
    FG=$HERE/bin/fairgpu # /tmp mounted noexec?
    LD_LIBRARY_PATH="$FGLD" "$FG" --version >>"$LOG" 2>&1 || {
      say "the bundle's fairgpu does not run here: $(LD_LIBRARY_PATH="$FGLD" "$FG" --version 2>&1 | head -n 3)"
      for c in "${CHECKS[@]}"; do [ "${RES[$c]}" = SKIP ] || DETAIL[$c]="the bundle's fairgpu does not run here (log.txt)"; done
      FATAL=2
      exit 2
    }
  fi
  { uname -a; id; ldd --version 2>&1 | head -n 1; grep PRETTY_NAME /etc/os-release; } >>"$LOG" 2>&1
  PYJ=$(pick_python) || PYJ=""
  TORCH=0
  if [ -n "$PYJ" ] && timeout 60 "$PYJ" -c 'import torch' >>"$LOG" 2>&1; then TORCH=1; fi
  say "jobs' python: ${PYJ:-none}; torch: $TORCH"
  jq_() {
    local -
    set +x
    "$PYJ" "$WORK/bin/jsonq.py" "$1"
  }
  fgc() { LD_LIBRARY_PATH="$FGLD" timeout 15 "$FG" "$@"; }
  if [ -z "$PYJ" ]; then
    for c in job-identity memory-limit run-cgroup profiling cuda-job drain-resume; do
      [ "${RES[$c]}" = SKIP ] || DETAIL[$c]="no python3 on this machine"
    done
    exit 1
  fi

  STAGE="starting serve and agent"
  cat >"$WORK/serve.json" <<EOF
{
  "listen": "127.0.0.1:0",
  "data_dir": "$WORK/data",
  "checkpoint_dir": "$WORK/ckpt",
  "policy": "oef-coop",
  "round_s": 2,
  "heartbeat_s": 0.2,
  "heartbeat_timeout_s": 10,
  "grace_s": 10,
  "kill_after_s": 3,
  "max_retries": 1,
  "profile_iterations": 200,
  "profile_timeout_s": 60,
  "restart_overhead_s": 1,
  "admin_token": "$ADMIN",
  "tenants": [{"name": "alice", "weight": 1, "token": "$ALICE"}]
}
EOF
  LD_LIBRARY_PATH="$FGLD" "$FG" serve --config "$WORK/serve.json" --port 0 --port-file "$WORK/port" \
    --log-level info >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  port_ready() { [ -s "$WORK/port" ] || { alive "$SERVER_PID" || return 2; return 1; }; }
  if ! wait_for 20 "the server's port file" port_ready; then
    DETAIL[discovery]="fairgpu serve did not start: $(tail -n 3 "$WORK/server.log" | tr '\n' ' ')"
    exit 1
  fi
  FAIRGPU_SERVER=http://127.0.0.1:$(cat "$WORK/port")
  export FAIRGPU_SERVER
  (umask 077 && fgc node-token "$NODE" --token "$ADMIN" >"$WORK/node.token") >>"$LOG" 2>&1
  [ -s "$WORK/node.token" ] || { DETAIL[discovery]="fairgpu node-token failed (log.txt)"; exit 1; }
  local agent=("$FG" agent --server "$FAIRGPU_SERVER" --node "$NODE" --token-file "$WORK/node.token"
    --state-dir "$WORK/agent" --memory-gb 32)
  [ "$CPU" = 1 ] && agent+=(--gpus cpu:1)
  local cg
  cg=$(own_cgroup_alone)
  CG_EMPTIED=$cg
  if [ -n "$cg" ]; then
    # Joins the emptied cgroup, then is the agent (same pid).
    LD_LIBRARY_PATH="$FGLD" sh -c 'echo $$ >"$0" || true; exec "$@"' "$cg/cgroup.procs" \
      "${agent[@]}" >"$WORK/agent.log" 2>&1 &
  else
    LD_LIBRARY_PATH="$FGLD" "${agent[@]}" >"$WORK/agent.log" 2>&1 &
  fi
  AGENT_PID=$!
  node_listed() {
    local -
    set +x
    alive "$AGENT_PID" || return 2
    [ "$(fgc cluster --token "$ADMIN" --json 2>>"$LOG" | jq_ 'len(j["nodes"])')" = 1 ]
  }
  if ! wait_for 30 "the node to register" node_listed; then
    local why
    why="the agent did not register: $(grep -m1 -iE 'error|nvidia-smi|fairgpu:' "$WORK/agent.log" | cut -c1-200)"
    for c in "${CHECKS[@]}"; do [ "${RES[$c]}" = SKIP ] || DETAIL[$c]=$why; done
    exit 1
  fi
  local cl type devs
  cl=$(fgc cluster --token "$ADMIN" --json 2>>"$LOG")
  type=$(echo "$cl" | jq_ 'j["nodes"][0]["gpu_type"]')
  devs=$(echo "$cl" | jq_ '",".join(str(d) for d in j["nodes"][0]["devices"])')
  say "registered: type '$type', devices $devs"
  if [ "$CPU" = 0 ]; then
    local smi smi_ids smi_name lname
    smi=$(timeout 20 nvidia-smi --query-gpu=index,name --format=csv,noheader 2>>"$LOG")
    smi_ids=$(echo "$smi" | sed -nE 's/^ *([0-9]+) *,.*$/\1/p' | paste -sd, -)
    smi_name=$(echo "$smi" | head -n 1 | sed -E 's/^ *[0-9]+ *, *//')
    lname=$(echo "$smi_name" | tr 'A-Z' 'a-z')
    if ! [[ "$type" =~ ^[a-z0-9][a-z0-9._-]*$ ]] || [[ "$type" == *nvidia* ]] || [[ "$lname" != *"$type"* ]]; then
      result discovery FAIL "type '$type' is not a sensible name for '$smi_name'"
    elif [ "$devs" != "$smi_ids" ]; then
      result discovery FAIL "devices '$devs' but nvidia-smi lists '$smi_ids'"
    else
      result discovery PASS "'$smi_name' -> type '$type' on devices $devs, agent started without --gpus"
    fi
  fi

  # STATE DONE LEASE PENDING_REASON RESTARTS
  job_status() {
    local -
    set +x
    fgc jobs "$1" --token "$ADMIN" --json 2>>"$LOG" |
      jq_ '" ".join(str(x) for x in [j["state"], int(j["iterations_done"]), j.get("lease") or "-", (j.get("pending") or {}).get("reason", "-"), j.get("restarts", 0)])'
  }
  save_job() { # ID LABEL
    {
      echo "==================== job $2 ($1): fairgpu jobs $1 --json"
      fgc jobs "$1" --token "$ADMIN" --json 2>&1
      echo "==================== job $2 ($1): fairgpu logs $1"
      LD_LIBRARY_PATH="$FGLD" timeout 10 "$FG" logs "$1" --state-dir "$WORK/agent" 2>&1 | tail -c 20000
    } >>"$OUT/jobs.txt"
  }
  ended() { # ID: 0 once the job is finished, failed or cancelled
    local s
    s=$(job_status "$1")
    case "${s%% *}" in finished | failed | cancelled) return 0 ;; esac
    return 1
  }
  : >"$OUT/jobs.txt"

  # ---------------------------------------------------------- job-identity
  STAGE="job-identity (and profiling of its job type)"
  local I ij user want states=""
  I=$(fgc submit --token "$ALICE" --name identity --job-type gpucheck-identity --workers 1 \
    --iterations 1500 -- "$PYJ" "$WORK/bin/identity.py" 1500 2>>"$LOG" | tail -n 1)
  say "identity job: '$I'"
  identity_done() {
    local s
    s=$(job_status "$I")
    [[ " $states " == *" ${s%% *} "* ]] || states="$states ${s%% *}"
    case "${s%% *}" in finished | failed | cancelled) return 0 ;; esac
    return 1
  }
  if [ -z "$I" ]; then
    result job-identity FAIL "fairgpu submit gave no job id (log.txt)"
  else
    wait_for "$(budget 60)" "the identity job to end" identity_done
    save_job "$I" identity
    ij=$(cat "$WORK/ckpt/$I/identity.json" 2>/dev/null || echo '{}')
    say "identity.json: $ij; states seen:$states"
    user=$(echo "$ij" | jq_ 'j.get("user")')
    want=$( [ "$(id -u)" = 0 ] && echo fairgpu-run-0 || id -un)
    if [ "$ij" = '{}' ]; then
      result job-identity FAIL "the job wrote no identity.json (state: $(job_status "$I"); jobs.txt)"
    elif [ "$user" != "$want" ]; then
      result job-identity FAIL "getpass.getuser() gave '$user', want '$want': $(echo "$ij" | jq_ 'j.get("user_error")')"
    elif [ "$(echo "$ij" | jq_ 'j.get("home_writable")')" != true ] ||
      [ "$(echo "$ij" | jq_ 'j.get("home_owner") == j.get("uid")')" != true ]; then
      result job-identity FAIL "HOME not the job's own or not writable: $ij"
    elif [ "$TORCH" = 1 ] && [ "$(echo "$ij" | jq_ '"torch" in j and "torch_error" not in j')" != true ]; then
      result job-identity FAIL "import torch failed in the job: $(echo "$ij" | jq_ 'j.get("torch_error")')"
    else
      result job-identity PASS "uid $(echo "$ij" | jq_ 'j["uid"]'), getpass.getuser() '$user', HOME $(echo "$ij" | jq_ 'j["home"]') ($(echo "$ij" | jq_ 'j["home_mode"]')) writable, torch $(echo "$ij" | jq_ 'j.get("torch")')"
    fi
    # memory-limit: what the agent says it set ("memory.max N bytes") against
    # what the job's own cgroup has.
    local mmax mcg grant why mnt
    mmax=$(echo "$ij" | jq_ 'j.get("memory_max", j.get("memory_max_error"))')
    mcg=$(echo "$ij" | jq_ 'j.get("cgroup")')
    grant=$(grep -oE "job $I: .*memory\.max [0-9]+ bytes" "$WORK/agent.log" | tail -n 1 | sed -E 's/.*memory\.max ([0-9]+) bytes/\1/')
    why=$(grep -oE "job $I: .*memory limit not enforced: .*" "$WORK/agent.log" | tail -n 1 | sed -E 's/.*memory limit not enforced: //; s/ tenant=.*//')
    mnt=$(cgroup2_mount)
    if [ -n "$grant" ] && [ "$mmax" = "$grant" ]; then
      result memory-limit PASS "the job's cgroup $mcg has memory.max $mmax, its grant"
    elif [ -z "$mnt" ] || ! grep -qw memory "$mnt/cgroup.controllers" 2>/dev/null; then
      result memory-limit SKIP "no memory controller in cgroup v2 here (${mnt:-no cgroup2 mount})"
    else
      result memory-limit FAIL "the job's cgroup ${mcg}: memory.max '$mmax', agent's grant '${grant:-none}'${why:+: not enforced: $why}"
    fi
    # run-cgroup: the job's double-forked, setsid child died with its run
    # (the agent kills the run's cgroup), and the cgroup had pids.max.
    local epid pmax
    epid=$(cat "$WORK/ckpt/$I/escaped.pid" 2>/dev/null || true)
    pmax=$(echo "$ij" | jq_ 'j.get("pids_max", "")')
    if [ -z "$epid" ]; then
      result run-cgroup FAIL "the identity job wrote no escaped.pid"
    elif ! wait_for 30 "the escaped child $epid to die" bash -c "! kill -0 $epid 2>/dev/null"; then
      result run-cgroup FAIL "the job's escaped child $epid still runs after its run ended"
    elif [ -z "$pmax" ] || [ "$pmax" = max ]; then
      # The agent says when its runs' cgroups can have no pids controller
      # (not delegated to its cgroup): RLIMIT_NPROC holds the job then.
      if grep -q "pids.max will not be set" "$WORK/agent.log" &&
        grep -q "job $I: .*RLIMIT_NPROC" "$WORK/agent.log"; then
        result run-cgroup PASS "the escaped child $epid died with its run; no pids controller for the runs' cgroups here ($(grep -o "pids controller is not available in [^;]*" "$WORK/agent.log" | head -n 1)): RLIMIT_NPROC holds the job"
      else
        result run-cgroup FAIL "the escaped child died, but the job's cgroup has pids.max '${pmax:-unread}' and the agent names no reason"
      fi
    else
      result run-cgroup PASS "the escaped child $epid died with its run; the job's cgroup has pids.max $pmax"
    fi
    if [ "$CPU" = 1 ] || [ "$TORCH" = 0 ]; then
      # The profiling check on this job's type (train.py's needs torch).
      local meas istate
      meas=$(fgc profiles --token "$ADMIN" --json 2>>"$LOG" |
        jq_ "[round(p['iterations_per_s'], 1) for p in j['profiles'] if p['job_type'] == 'gpucheck-identity' and p['gpu_type'] == '$type' and p['source'] == 'measured']")
      istate=$(job_status "$I")
      if [[ " $states " != *" profiling "* ]]; then
        result profiling FAIL "the identity job was never seen profiling (states:$states)"
      elif [ "$meas" = "[]" ] || [ "$meas" = ERR ]; then
        result profiling FAIL "no measured profile of gpucheck-identity on $type"
      elif [ "${istate%% *}" != finished ]; then
        result profiling FAIL "profiled ($meas it/s) but the job ended: $istate"
      else
        result profiling PASS "gpucheck-identity measured on $type at $meas it/s, then its job finished"
      fi
    fi
  fi

  if [ "$TORCH" = 0 ]; then
    [ "$CPU" = 1 ] && RES[drain-resume]=SKIP DETAIL[drain-resume]="no python3 with torch here"
    [ "$CPU" = 0 ] && DETAIL[cuda-job]="no python3 with torch here" DETAIL[drain-resume]="no python3 with torch here"
    exit 0
  fi

  # ---------------------------------------------------------- cuda-job + profiling: job A
  STAGE="job A (profiling of torch-mlp, then its run)"
  local A aj ar astate adev aiters meas progress=0 last_it=0 s st it
  states=""
  A=$(fgc submit --token "$ALICE" --name gpu-a --job-type torch-mlp --workers 1 --iterations 3000 \
    -- "$PYJ" "$WORK/bin/train.py" --iterations 3000 --seed 1 --checkpoint-every 1000 2>>"$LOG" | tail -n 1)
  say "job A: '$A'"
  if [ -n "$A" ]; then
    local end=$((SECONDS + $(budget 90)))
    while ((SECONDS < end)); do
      s=$(job_status "$A")
      read -r st it _ <<<"$s"
      [[ " $states " == *" $st "* ]] || states="$states $st"
      [[ "$it" =~ ^[0-9]+$ ]] && ((it > last_it && it < 3000)) && progress=$((progress + 1)) last_it=$it
      case "$st" in finished | failed | cancelled) break ;; esac
      sleep 0.5
    done
    save_job "$A" A
    aj=$(fgc jobs "$A" --token "$ADMIN" --json 2>>"$LOG")
    astate=$(echo "$aj" | jq_ 'j["state"]')
    ar=$(cat "$WORK/ckpt/$A/result.json" 2>/dev/null || echo '{}')
    adev=$(echo "$ar" | jq_ 'j.get("device")')
    aiters=$(echo "$ar" | jq_ 'j.get("iterations")')
    say "job A: $astate, states seen:$states, $progress progress samples; result.json: $ar"
    if [ "$CPU" = 0 ]; then
      if [ "$astate" != finished ]; then
        result cuda-job FAIL "job A ended '$astate': $(echo "$aj" | jq_ 'j.get("log_tail","")[-300:]' | tr '\n' ' ')"
      elif [ "$aiters" != 3000 ] || ((progress == 0)); then
        result cuda-job FAIL "finished, but result.json iterations=$aiters and $progress progress samples"
      elif [ "$adev" != cuda ]; then
        result cuda-job FAIL "train.py ran on '$adev', not CUDA"
      else
        result cuda-job PASS "3000 iterations on device=cuda, $progress progress samples, final loss $(echo "$ar" | jq_ 'j.get("final_loss")')"
      fi
    fi
    meas=$(fgc profiles --token "$ADMIN" --json 2>>"$LOG" |
      jq_ "[round(p['iterations_per_s'], 1) for p in j['profiles'] if p['job_type'] == 'torch-mlp' and p['gpu_type'] == '$type' and p['source'] == 'measured']")
    if [[ " $states " != *" profiling "* ]]; then
      result profiling FAIL "job A was never seen profiling (states:$states)"
    elif [ "$meas" = "[]" ] || [ "$meas" = ERR ]; then
      result profiling FAIL "no measured profile of torch-mlp on $type"
    elif [ "$astate" != finished ]; then
      result profiling FAIL "profiled ($meas it/s) but job A ended '$astate'"
    else
      result profiling PASS "torch-mlp measured on $type at $meas it/s, then job A finished"
    fi
  else
    [ "$CPU" = 0 ] && result cuda-job FAIL "fairgpu submit gave no job id (log.txt)"
  fi

  # ---------------------------------------------------------- drain-resume: job B
  if (($(left) < 40)); then
    result drain-resume FAIL "skipped: too little time left ($(left) s)"
    exit 1
  fi
  STAGE="job B (drain midway, undrain)"
  local B iters=2400 pace=200 drain_at=480 seen="" lease1="" still bj br bstate bfirst blog stop_step resume_step stop_ok=0
  B=$(fgc submit --token "$ALICE" --name gpu-b --job-type torch-mlp --workers 1 --iterations $iters \
    -- "$PYJ" "$WORK/bin/train.py" --iterations $iters --seed 2 --steps-per-s $pace 2>>"$LOG" | tail -n 1)
  say "job B: '$B'"
  [ -n "$B" ] || { result drain-resume FAIL "fairgpu submit gave no job id"; exit 1; }
  b_midway() {
    local st it lease
    read -r st it lease _ <<<"$(job_status "$B")"
    case "$st" in finished | failed | cancelled) return 2 ;; esac
    [ "$st" = running ] && [[ "$it" =~ ^[0-9]+$ ]] && ((it >= drain_at)) || return 1
    seen=$it lease1=$lease
  }
  if ! wait_for "$(budget 60)" "job B to pass $drain_at iterations" b_midway; then
    save_job "$B" B
    result drain-resume FAIL "job B never ran to $drain_at iterations ($(job_status "$B"))"
    exit 1
  fi
  fgc drain "$NODE" --reason "gpu-check: job B midway" --token "$ADMIN" >>"$LOG" 2>&1
  b_stopped() {
    local st lease
    read -r st _ lease _ <<<"$(job_status "$B")"
    case "$st" in finished | failed | cancelled) return 2 ;; esac
    grep -qE "exit lease $lease1 job $B: .*\(revoked\)" "$WORK/agent.log" && [ "$lease" = - ]
  }
  wait_for "$(budget 40)" "job B's run to checkpoint and stop" b_stopped && stop_ok=1
  sleep 2.5 # a round: it must not run again on the drained node
  still=$(job_status "$B")
  fgc undrain "$NODE" --token "$ADMIN" >>"$LOG" 2>&1
  wait_for "$(budget 60)" "job B to end after the undrain" ended "$B"
  save_job "$B" B
  bj=$(fgc jobs "$B" --token "$ADMIN" --json 2>>"$LOG")
  bstate=$(echo "$bj" | jq_ 'j["state"]')
  br=$(cat "$WORK/ckpt/$B/result.json" 2>/dev/null || echo '{}')
  bfirst=$(echo "$br" | jq_ '(j.get("resumed_at") or [0])[0]')
  blog=$(LD_LIBRARY_PATH="$FGLD" timeout 10 "$FG" logs "$B" --state-dir "$WORK/agent" 2>&1)
  stop_step=$(echo "$blog" | sed -nE 's/.*stopped by signal at step ([0-9]+).*/\1/p' | head -n 1)
  resume_step=$(echo "$blog" | sed -nE 's/.*resumed at step ([0-9]+).*/\1/p' | head -n 1)
  say "job B: $bstate; drained at $seen; while drained: $still; result.json: $br; stopped at ${stop_step:-?}, resumed at ${resume_step:-?}"
  if [ "$stop_ok" != 1 ]; then
    result drain-resume FAIL "after the drain the run was not seen to stop as revoked (agent.log)"
  elif [[ "$still" == running* ]]; then
    result drain-resume FAIL "job B ran again while its only node was drained: $still"
  elif [ "$bstate" != finished ]; then
    result drain-resume FAIL "after the undrain job B ended '$bstate'"
  elif [ "$(echo "$br" | jq_ 'j.get("iterations")')" != $iters ]; then
    result drain-resume FAIL "finished, but result.json: $br"
  elif [ -z "$stop_step" ] || [ "$stop_step" != "$resume_step" ] || [ "$stop_step" != "$bfirst" ] || ((bfirst < seen)); then
    result drain-resume FAIL "stopped at '$stop_step', resumed at '$resume_step', result.json resumed_at $(echo "$br" | jq_ 'j.get("resumed_at")'), drained at $seen"
  else
    result drain-resume PASS "drained at $seen, checkpointed at step $stop_step on SIGUSR1, resumed there after the undrain, finished $iters (device $(echo "$br" | jq_ 'j.get("device")'))"
  fi
  exit 0
}

case "${1:-}" in
  bundle)
    [ $# = 2 ] || die "usage: $0 bundle DIR"
    bundle "$2"
    ;;
  run)
    [ $# -ge 2 ] && [ $# -le 3 ] || die "usage: $0 run DIR [--cpu]"
    run "$2" "${3:-}"
    ;;
  *)
    echo "usage: $0 bundle DIR | run DIR [--cpu]   (see the comment at the top)" >&2
    exit 2
    ;;
esac
