#!/usr/bin/env bash
# A Slurm test cluster on this machine (Debian 12's Slurm 22.05, see
# docs/slurm.md): one slurmctld and one slurmd per emulated node,
# all on 127.0.0.1, typed fake GPUs, auth/none, fast scheduler settings.
# Everything it writes stays in DIR; every daemon it starts is stopped by
# `stop` (jobs cancelled, `scontrol shutdown`, then what is left of the
# daemons and their slurmstepd killed by pid).
#
#   scripts/slurm-cluster.sh start DIR [NODES]   # NODES e.g. n1:v100:4,n2:p100:4,n3:k80:2:8:16000
#   scripts/slurm-cluster.sh stop DIR
#   scripts/slurm-cluster.sh status DIR
#   scripts/slurm-cluster.sh start-ctld DIR    # slurmctld alone again, on its saved state
#
# NODES: comma-separated name:gputype:gpus[:cpus[:memory_mb]] (default
# n1:v100:4,n2:p100:4,n3:k80:4, 4 CPUs and 8000 MB each: declared, not
# measured, SlurmdParameters=config_overrides). Once started, point Slurm's
# commands at the cluster with `export SLURM_CONF=DIR/slurm.conf`.
#
# Fake GPUs are character devices (mknod c 195 N), so Slurm sets
# CUDA_VISIBLE_DEVICES. mknod needs root (CAP_MKNOD); a normal user gets plain
# files instead, which Slurm counts but then leaves CUDA_VISIBLE_DEVICES
# empty: DIR/gpu-devices says which ("char" or "file").
# As root the daemons run as root; as a normal user they run as that user
# (SlurmUser = SlurmdUser = you), and jobs can then only run as you.
# Ports: SLURM_CLUSTER_PORT (base) or the first free run of ports from 17000
# up; slurmctld gets the base, node i gets base + i.
set -euo pipefail

die() { echo "slurm-cluster: $*" >&2; exit 2; }
usage() { die "usage: $0 start|stop|status|start-ctld DIR [NODES]"; }

[ $# -ge 2 ] || usage
action=$1
mkdir -p "$2" 2>/dev/null || die "cannot create $2"
dir=$(cd "$2" && pwd)
spec=${3:-n1:v100:4,n2:p100:4,n3:k80:4}
conf=$dir/slurm.conf
# Every daemon carries this variable in its environment. slurmstepd clears
# its environment, but like the daemons it works in DIR/log and keeps its
# node's log open: stop finds leftovers (slurmstepd orphaned by a dead slurmd
# included) by either in /proc.
marker="FAIRGPU_SLURM_TEST_CLUSTER=$dir"

bin() { # the path of a Slurm program (sbin is not on a normal user's PATH)
  local p
  for p in "$(command -v "$1" 2>/dev/null || true)" "/usr/sbin/$1" "/usr/bin/$1"; do
    [ -n "$p" ] && [ -x "$p" ] && { echo "$p"; return; }
  done
  die "$1 not found (install slurmctld slurmd slurm-client: scripts/setup.sh)"
}

# Local TCP ports in LISTEN state, from /proc (no ss/netstat needed).
listening_ports() {
  local f
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    awk 'NR > 1 && $4 == "0A" { n = split($2, a, ":"); print a[n] }' "$f" |
      while read -r h; do echo $((16#$h)); done
  done
}

pick_ports() { # base port with count free ports from it
  local count=$1 base busy ok i
  if [ -n "${SLURM_CLUSTER_PORT:-}" ]; then echo "$SLURM_CLUSTER_PORT"; return; fi
  busy=" $(listening_ports | tr '\n' ' ') "
  for ((base = 17000; base < 30000; base += 50)); do
    ok=1
    for ((i = 0; i <= count; i++)); do
      case "$busy" in *" $((base + i)) "*) ok=0; break ;; esac
    done
    [ $ok = 1 ] && { echo $base; return; }
  done
  die "no free ports between 17000 and 30000"
}

# Pids of the processes of this cluster (see marker).
cluster_pids() {
  local p pid cwd
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = $$ ] && continue
    cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
    if [ "$cwd" = "$dir/log" ] || { tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "$marker"; } 2>/dev/null; then
      echo "$pid"
    fi
  done
  return 0
}

node_names() { # from the written configuration
  sed -n 's/^NodeName=\([^ ]*\) .*/\1/p' "$conf"
}

wait_idle() { # until every node is idle; at most $1 seconds
  local deadline=$((SECONDS + $1)) states
  while [ $SECONDS -lt $deadline ]; do
    states=$(SLURM_CONF=$conf "$(bin sinfo)" -h -N -o '%N %T' 2>/dev/null || true)
    if [ -n "$states" ] && ! grep -qv ' idle$' <<<"$states" &&
       [ "$(wc -l <<<"$states")" -eq "$(node_names | wc -l)" ]; then
      return 0
    fi
    sleep 0.2
  done
  echo "slurm-cluster: nodes not idle after $1 s:" >&2
  echo "$states" >&2
  tail -5 "$dir"/log/*.log >&2 || true
  return 1
}

start() {
  [ -e "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null &&
    die "a cluster already runs in $dir (stop it first)"
  local user host nodes=() node name type gpus cpus mem count base i
  user=$(id -un)
  host=$(uname -n)
  host=${host%%.*}
  IFS=, read -r -a nodes <<<"$spec"
  count=${#nodes[@]}
  [ "$count" -ge 1 ] || die "no nodes in '$spec'"
  base=$(pick_ports "$count")
  rm -rf "$dir/state" "$dir/spool" "$dir/log" "$dir/dev"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/dev"
  chmod 755 "$dir"

  # Fake GPU devices: character devices when mknod is allowed, else files.
  local kind=char
  if ! mknod "$dir/dev/probe" c 195 0 2>/dev/null; then kind=file; fi
  rm -f "$dir/dev/probe"
  echo $kind >"$dir/gpu-devices"

  local nodelines="" greslines="" names=""
  i=0
  for node in "${nodes[@]}"; do
    i=$((i + 1))
    IFS=: read -r name type gpus cpus mem <<<"$node"
    cpus=${cpus:-4}
    mem=${mem:-8000}
    [[ $name =~ ^[a-z][a-z0-9-]*$ ]] || die "bad node name '$name' in '$node'"
    [[ $type =~ ^[a-z][a-z0-9_]*$ ]] || die "bad GPU type '$type' in '$node'"
    [[ $gpus =~ ^[1-9][0-9]?$ ]] || die "bad GPU count '$gpus' in '$node'"
    [[ $cpus =~ ^[1-9][0-9]*$ && $mem =~ ^[1-9][0-9]*$ ]] || die "bad cpus/memory in '$node'"
    mkdir -p "$dir/dev/$name"
    local g
    for ((g = 0; g < gpus; g++)); do
      if [ $kind = char ]; then mknod "$dir/dev/$name/nvidia$g" c 195 "$g"; else : >"$dir/dev/$name/nvidia$g"; fi
    done
    nodelines+="NodeName=$name NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + i)) CPUs=$cpus RealMemory=$mem Gres=gpu:$type:$gpus State=UNKNOWN"$'\n'
    greslines+="NodeName=$name Name=gpu Type=$type File=$dir/dev/$name/nvidia[0-$((gpus - 1))]"$'\n'
    names+="${names:+,}$name"
  done

  cat >"$conf" <<EOF
# Written by scripts/slurm-cluster.sh: a test cluster on 127.0.0.1.
ClusterName=fairgputest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
GresTypes=gpu
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
SlurmdTimeout=10
MinJobAge=3600
DefMemPerCPU=100
KillWait=5
InactiveLimit=0
$nodelines
PartitionName=main Nodes=$names Default=YES MaxTime=INFINITE State=UP
EOF
  printf '%s' "$greslines" >"$dir/gres.conf"

  local slurmctld slurmd
  slurmctld=$(bin slurmctld)
  slurmd=$(bin slurmd)
  # -i: ignore saved state (a fresh cluster each start).
  env "$marker" SLURM_CONF="$conf" "$slurmctld" -f "$conf" -i ||
    { tail -20 "$dir/log/slurmctld.log" >&2 || true; die "slurmctld did not start"; }
  for name in $(node_names); do
    env "$marker" SLURM_CONF="$conf" "$slurmd" -f "$conf" -N "$name" ||
      { tail -20 "$dir/log/slurmd-$name.log" >&2 || true; stop; die "slurmd $name did not start"; }
  done
  if ! wait_idle 60; then stop; die "cluster in $dir did not come up"; fi
  echo "export SLURM_CONF=$conf"
}

# slurmctld started again after it died (killed, crashed) while the slurmds
# run on: it reads its saved state (-i: a state file cut off by the kill is
# skipped, not fatal) and the nodes register again. Returns once it answers.
start_ctld() {
  [ -f "$conf" ] || die "no cluster in $dir"
  [ -e "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null &&
    die "slurmctld already runs in $dir"
  env "$marker" SLURM_CONF="$conf" "$(bin slurmctld)" -f "$conf" -i ||
    { tail -20 "$dir/log/slurmctld.log" >&2 || true; die "slurmctld did not start"; }
  local deadline=$((SECONDS + 60))
  until SLURM_CONF=$conf timeout 10 "$(bin scontrol)" ping 2>/dev/null | grep -q 'is UP'; do
    [ $SECONDS -lt $deadline ] || die "slurmctld in $dir does not answer after 60 s"
    sleep 0.2
  done
}

stop() {
  [ -f "$conf" ] || return 0
  local scancel scontrol pid deadline left
  scancel=$(bin scancel)
  scontrol=$(bin scontrol)
  if [ -e "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    # Every job of the cluster (any user), until none runs (a slurmstepd
    # whose job ends after the controller left lingers), then the daemons.
    local squeue jobs
    squeue=$(bin squeue)
    jobs=$(SLURM_CONF=$conf timeout 10 "$squeue" -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086
      SLURM_CONF=$conf timeout 10 "$scancel" --quiet $jobs 2>/dev/null || true
      deadline=$((SECONDS + 10))
      while [ $SECONDS -lt $deadline ] &&
        [ -n "$(SLURM_CONF=$conf timeout 10 "$squeue" -h -t R,CG,S -o %i 2>/dev/null)" ]; do
        sleep 0.2
      done
    fi
    SLURM_CONF=$conf timeout 10 "$scontrol" shutdown >/dev/null 2>&1 || true
  fi
  deadline=$((SECONDS + 5))
  while left=$(cluster_pids) && [ -n "$left" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  if [ -n "$left" ]; then
    for pid in $left; do kill -9 "$pid" 2>/dev/null || true; done
    deadline=$((SECONDS + 5))
    while left=$(cluster_pids) && [ -n "$left" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  fi
  rm -f "$dir"/slurmctld.pid "$dir"/slurmd-*.pid
  [ -z "$left" ] || die "processes left in $dir: $(echo $left)"
}

status() {
  [ -f "$conf" ] || die "no cluster in $dir"
  SLURM_CONF=$conf "$(bin sinfo)" -N -o '%N %T %G'
}

case "$action" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  start-ctld) start_ctld ;;
  *) usage ;;
esac
