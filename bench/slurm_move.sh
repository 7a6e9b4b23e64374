#!/usr/bin/env bash
# What one move of a fairgpu-train job costs on Slurm, step by step as the
# Slurm executor does it (src/live/slurm/executor.cc), on a test cluster
# (scripts/slurm-cluster.sh, nodes n-slow and n-fast): the job runs on
# n-slow; then `scancel --signal=USR1 --full` -> the job has checkpointed and
# exited; `scontrol requeuehold` -> PENDING; pin to n-fast + release (one
# scontrol) -> RUNNING; -> the job restored its checkpoint and trains again
# (its progress file passes the checkpoint). Without fairgpu's own latency:
# its ticks (slurm.poll_s) come on top (bench/fidelity.sh --backend slurm
# measures those in its run). Prints each of N moves (default 5) and the
# medians.
#
#   bench/slurm_move.sh [build-dir] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
TRAIN=$(cd "${1:-build}" && pwd)/fairgpu-train
n=${2:-5}
dir=$(mktemp -d /tmp/fairgpu-slurm-move-XXXXXX)
trap 'scripts/slurm-cluster.sh stop "$dir/cluster" >/dev/null; rm -rf "$dir"' EXIT
scripts/slurm-cluster.sh start "$dir/cluster" n-slow:slow:2,n-fast:fast:2 >/dev/null
export SLURM_CONF=$dir/cluster/slurm.conf

now() { date +%s.%N; }
state() { squeue -h -j "$1" -o %T; }  # empty once the job has completed
progress() { awk '{print $1}' "$1" 2>/dev/null || echo 0; }  # iterations done

echo "move  signal->exited  requeuehold->PENDING  pin+release  ->RUNNING  ->training  total (s)"
for ((k = 1; k <= n; k++)); do
  ck=$dir/ck$k
  mkdir -p "$ck"
  # The Slurm wrapper's part that matters here: the run file gives the GPU type.
  cat > "$dir/job$k.sh" <<EOF
#!/bin/sh
while IFS='=' read -r key value; do export "\$key=\$value"; done < $ck/.fairgpu-run
exec $TRAIN --iterations 100000 --seed $k --base-rate 10 --speed-map slow=1,fast=6 --checkpoint-every 100
EOF
  id=$(sbatch --parsable --hold --requeue --nodes=1 --gres=gpu:1 --output="$dir/log$k" \
    --export=FAIRGPU_JOB_ID=m$k,FAIRGPU_CHECKPOINT_DIR=$ck,FAIRGPU_PROGRESS_FILE=$ck/progress "$dir/job$k.sh")
  printf 'FAIRGPU_LEASE_ID=1\nFAIRGPU_GPU_TYPE=slow\n' > "$ck/.fairgpu-run"
  printf 'update JobId=%s NodeList=n-slow StartTime=now\nrelease %s\n' "$id" "$id" | scontrol >/dev/null
  until [ "$(progress "$ck/progress")" -gt 20 ] 2>/dev/null; do sleep 0.05; done
  t0=$(now)
  scancel --signal=USR1 --full "$id"
  while [ -n "$(state "$id")" ]; do sleep 0.01; done
  t1=$(now)
  done_before=$(progress "$ck/progress")
  scontrol requeuehold "$id"
  until [ "$(state "$id")" = PENDING ]; do sleep 0.01; done
  t2=$(now)
  printf 'FAIRGPU_LEASE_ID=2\nFAIRGPU_GPU_TYPE=fast\n' > "$ck/.fairgpu-run"
  printf 'update JobId=%s NodeList=n-fast StartTime=now\nrelease %s\n' "$id" "$id" | scontrol >/dev/null
  t3=$(now)
  until [ "$(state "$id")" = RUNNING ]; do sleep 0.01; done
  t4=$(now)
  until [ "$(progress "$ck/progress")" -gt "$done_before" ] 2>/dev/null; do sleep 0.01; done
  t5=$(now)
  scancel "$id"
  python3 -c "
t = [$t0, $t1, $t2, $t3, $t4, $t5]
print('$k', *(f'{b - a:.2f}' for a, b in zip(t, t[1:])), f'{t[-1] - t[0]:.2f}')"
done | tee "$dir/moves"
python3 - "$dir/moves" <<'EOF'
import statistics, sys
rows = [list(map(float, l.split()[1:])) for l in open(sys.argv[1])]
print("median", *(f"{statistics.median(c):.2f}" for c in zip(*rows)))
EOF
