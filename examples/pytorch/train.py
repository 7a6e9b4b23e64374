#!/usr/bin/python3
"""A PyTorch training job that follows fairgpu's job protocol (docs/job-protocol.md).

It trains a small MLP regressor on synthetic data made from --seed, with SGD and
momentum, for --iterations steps, and does what fairgpu asks of a job:

- resumes from $FAIRGPU_CHECKPOINT_DIR/checkpoint.pt when it exists (refusing
  one written under another configuration);
- checkpoints there atomically every --checkpoint-every steps and, on SIGUSR1
  (a revoke: the scheduler moves or preempts the job) or SIGTERM, at the next
  step boundary, then exits 0;
- keeps $FAIRGPU_PROGRESS_FILE current with the total steps done;
- joins a gang over the rendezvous variables fairgpu sets (MASTER_ADDR,
  MASTER_PORT, WORLD_SIZE, RANK, LOCAL_WORLD_SIZE): torch.distributed with gloo
  on CPU, NCCL on CUDA, one process per worker (this process starts
  LOCAL_WORLD_SIZE of them when it stands for several), gradients averaged
  with all_reduce (data parallel);
- at the end writes the final checkpoint and result.json (steps, final loss,
  SHA-256 of the weights) and prints "final loss: ..." (rank 0).

Runs on CPU unless CUDA_VISIBLE_DEVICES names GPUs that CUDA sees (--device).
On CPU it is deterministic (one thread, torch.use_deterministic_algorithms): a
run stopped and resumed any number of times ends with the same weights, bit
for bit, as an uninterrupted one of the same seed and world size.

Exit status: 0 finished, or stopped by a signal after checkpointing; 2 bad
input (one line on stderr); 1 any other error.
"""

import argparse
import datetime
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

CHECKPOINT_FORMAT = "fairgpu-pytorch-example/1"
# How often the progress file is rewritten while training (fairgpu reads it
# on every heartbeat).
PROGRESS_INTERVAL_S = 0.1


class BadInput(Exception):
    pass


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--iterations", type=int, required=True, help="training steps in all")
    p.add_argument("--seed", type=int, default=0, help="data, initial weights and batches")
    p.add_argument("--samples", type=int, default=1024, help="synthetic data set size")
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--batch", type=int, default=64, help="global batch (split over ranks)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--checkpoint-every", type=int, default=200, help="steps between checkpoints")
    p.add_argument("--checkpoint-dir", default=os.environ.get("FAIRGPU_CHECKPOINT_DIR", ""),
                   help="default: $FAIRGPU_CHECKPOINT_DIR (none: no checkpoints)")
    p.add_argument("--progress-file", default=os.environ.get("FAIRGPU_PROGRESS_FILE", ""),
                   help="default: $FAIRGPU_PROGRESS_FILE")
    p.add_argument("--steps-per-s", type=float, default=0,
                   help="hold training to this rate (emulates a slower device; 0: as fast as it goes)")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="auto: CUDA when CUDA_VISIBLE_DEVICES names GPUs CUDA sees, else CPU")

    def error(message):
        raise BadInput(message)

    p.error = error
    a = p.parse_args(argv)
    for name in ("iterations", "samples", "features", "hidden", "batch", "checkpoint_every"):
        if getattr(a, name) < 1:
            raise BadInput(f"--{name.replace('_', '-')}: must be at least 1, got {getattr(a, name)}")
    if not a.lr > 0:
        raise BadInput(f"--lr: must be positive, got {a.lr}")
    if not 0 <= a.momentum < 1:
        raise BadInput(f"--momentum: must be in [0, 1), got {a.momentum}")
    if a.steps_per_s < 0:
        raise BadInput(f"--steps-per-s: must not be negative, got {a.steps_per_s}")
    return a


def env_int(name, default, lo, hi):
    text = os.environ.get(name, "")
    if text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        raise BadInput(f"{name}: expected an integer in {lo}..{hi}, got '{text}'")
    return value


class Rendezvous:
    """The gang as fairgpu describes it (docs/job-protocol.md): WORLD_SIZE
    workers in all, RANK the global rank of this process's first worker,
    LOCAL_WORLD_SIZE the workers this process stands for (default 1)."""

    def __init__(self):
        self.world_size = env_int("WORLD_SIZE", 1, 1, 1 << 20)
        self.rank = env_int("RANK", 0, 0, 1 << 20)
        self.local_world_size = env_int("LOCAL_WORLD_SIZE", 1, 1, 4096)
        self.local_rank = env_int("LOCAL_RANK", 0, 0, 4095)
        self.master_addr = os.environ.get("MASTER_ADDR", "127.0.0.1") or "127.0.0.1"
        self.master_port = env_int("MASTER_PORT", 29500, 1, 65535)
        if self.rank + self.local_world_size > self.world_size:
            raise BadInput(f"RANK {self.rank} + LOCAL_WORLD_SIZE {self.local_world_size} "
                           f"exceeds WORLD_SIZE {self.world_size}")


# Set by SIGUSR1 / SIGTERM; acted on at the next step boundary.
stop_signal = 0


def on_stop_signal(signum, _frame):
    global stop_signal
    stop_signal = signum


def say(line):
    print(line, flush=True)


def write_atomically(path, data, durable):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if durable:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def launch_local_workers(rdv):
    """This process stands for LOCAL_WORLD_SIZE workers (a gang's part on one
    node, as fairgpu launches it): start one process per worker, each with its
    own RANK and LOCAL_RANK, as torchrun would. They are in this process's
    process group, so fairgpu's SIGUSR1 reaches each; a signal sent to this
    process alone is passed on."""
    children = []
    for i in range(rdv.local_world_size):
        env = dict(os.environ, RANK=str(rdv.rank + i), LOCAL_RANK=str(i), LOCAL_WORLD_SIZE="1")
        children.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + sys.argv[1:],
                                         env=env))

    def forward(signum, _frame):
        for c in children:
            if c.poll() is None:
                c.send_signal(signum)

    signal.signal(signal.SIGUSR1, forward)
    signal.signal(signal.SIGTERM, forward)
    # A worker that fails leaves its peers waiting for it in a collective:
    # stop them, and fail as it did.
    while True:
        codes = [c.poll() for c in children]
        failed = [code for code in codes if code not in (None, 0)]
        if failed:
            for c in children:
                if c.poll() is None:
                    c.kill()
                    c.wait()
            return failed[0] if failed[0] > 0 else 1
        if all(code == 0 for code in codes):
            return 0
        time.sleep(0.05)


def choose_device(torch, want, local_rank):
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    cuda_ok = visible.strip() != "" and torch.cuda.is_available() and \
        local_rank < torch.cuda.device_count()
    if want == "cuda" and not cuda_ok:
        raise BadInput(f"--device cuda: CUDA sees no GPU {local_rank} "
                       f"(CUDA_VISIBLE_DEVICES='{visible}')")
    if want == "cpu" or not cuda_ok:
        return torch.device("cpu")
    return torch.device("cuda", local_rank)


def weights_sha256(model):
    """SHA-256 over the state_dict, keys in order, each tensor's bytes on CPU."""
    h = hashlib.sha256()
    for key, tensor in sorted(model.state_dict().items()):
        h.update(key.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def train(a, rdv):
    # Determinism first: cuBLAS needs this before CUDA starts.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch
    import torch.distributed as dist

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    device = choose_device(torch, a.device, rdv.local_rank)
    world, rank = rdv.world_size, rdv.rank
    config = {"seed": a.seed, "samples": a.samples, "features": a.features, "hidden": a.hidden,
              "batch": a.batch, "lr": a.lr, "momentum": a.momentum}
    if world > 1:
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            torch.cuda.set_device(device)
        # The parts of a gang start on their nodes within seconds of each
        # other; a peer that never comes fails the run after the timeout.
        dist.init_process_group(backend, init_method=f"tcp://{rdv.master_addr}:{rdv.master_port}",
                                world_size=world, rank=rank,
                                timeout=datetime.timedelta(seconds=300))
        say(f"train.py: rank {rank} of {world} joined {rdv.master_addr}:{rdv.master_port} "
            f"({backend}, {device})")

    # The data set and the initial weights come from the seed alone.
    g = torch.Generator().manual_seed(a.seed)
    x = torch.randn(a.samples, a.features, generator=g)
    w_true = torch.randn(a.features, 1, generator=g)
    y = torch.tanh(x @ w_true) + 0.05 * torch.randn(a.samples, 1, generator=g)
    x, y = x.to(device), y.to(device)
    torch.manual_seed(a.seed)
    model = torch.nn.Sequential(torch.nn.Linear(a.features, a.hidden), torch.nn.Tanh(),
                                torch.nn.Linear(a.hidden, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum)
    loss_fn = torch.nn.MSELoss()

    checkpoint = os.path.join(a.checkpoint_dir, "checkpoint.pt") if a.checkpoint_dir else ""
    step, resumed_at = 0, []
    if checkpoint and os.path.exists(checkpoint):
        try:
            saved = torch.load(checkpoint, map_location=device)
        except Exception as e:  # a torn or foreign file
            raise BadInput(f"{checkpoint}: not a checkpoint of this script ({e})")
        if not isinstance(saved, dict) or saved.get("format") != CHECKPOINT_FORMAT:
            raise BadInput(f"{checkpoint}: not a checkpoint of this script")
        if saved["config"] != config:
            raise BadInput(f"{checkpoint}: written under another configuration "
                           f"({saved['config']}, this run {config})")
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        step = saved["step"]
        resumed_at = saved["resumed_at"] + [step]
        say(f"train.py: rank {rank} resumed at step {step} from {checkpoint}")
    if step > a.iterations:
        raise BadInput(f"{checkpoint}: at step {step}, past --iterations {a.iterations}")

    def save(at_step):
        if rank != 0 or not checkpoint:
            return
        os.makedirs(a.checkpoint_dir, exist_ok=True)
        tmp = f"{checkpoint}.tmp.{os.getpid()}"
        torch.save({"format": CHECKPOINT_FORMAT, "config": config, "step": at_step,
                    "resumed_at": resumed_at, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict()}, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, checkpoint)

    last_progress = 0.0

    def progress(done, now=False):
        nonlocal last_progress
        if rank != 0 or not a.progress_file:
            return
        t = time.monotonic()
        if now or t - last_progress >= PROGRESS_INTERVAL_S:
            write_atomically(a.progress_file, f"{done}\n".encode(), durable=False)
            last_progress = t

    progress(step, now=True)
    shard = a.batch // world
    paced_from, paced_step = time.monotonic(), step
    stop = torch.zeros(1, device=device)
    while step < a.iterations:
        if world > 1:  # every rank stops at the same step
            stop.fill_(1 if stop_signal else 0)
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
            stopping = stop.item() > 0
        else:
            stopping = stop_signal != 0
        if stopping:
            save(step)
            progress(step, now=True)
            say(f"train.py: rank {rank} stopped by signal at step {step}" +
                (", checkpointed" if rank == 0 and checkpoint else ""))
            if world > 1:
                dist.destroy_process_group()
            return 0
        # The step's batch depends on (seed, step) only, so a resumed run
        # sees the batches an uninterrupted one would.
        batch = torch.randint(0, a.samples, (a.batch,),
                              generator=torch.Generator().manual_seed(a.seed * 1000003 + step))
        mine = batch[rank * shard:(rank + 1) * shard].to(device)
        optimizer.zero_grad()
        loss_fn(model(x[mine]), y[mine]).backward()
        if world > 1:
            for p in model.parameters():
                dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
                p.grad.div_(world)
        optimizer.step()
        step += 1
        if step % a.checkpoint_every == 0 and step < a.iterations:
            save(step)
        progress(step)
        if a.steps_per_s > 0:
            ahead = paced_from + (step - paced_step) / a.steps_per_s - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)

    with torch.no_grad():
        final_loss = loss_fn(model(x), y).item()
    digest = weights_sha256(model)
    save(step)
    progress(step, now=True)
    if rank == 0 and a.checkpoint_dir:
        result = {"iterations": step, "final_loss": final_loss, "weights_sha256": digest,
                  "world_size": world, "device": device.type, "resumed_at": resumed_at}
        write_atomically(os.path.join(a.checkpoint_dir, "result.json"),
                         (json.dumps(result, indent=2) + "\n").encode(), durable=True)
    say(f"train.py: rank {rank} weights sha256: {digest}")
    if rank == 0:
        say(f"final loss: {final_loss!r}")
    if world > 1:
        dist.destroy_process_group()
    return 0


def main(argv):
    signal.signal(signal.SIGUSR1, on_stop_signal)
    signal.signal(signal.SIGTERM, on_stop_signal)
    try:
        a = parse_args(argv)
        rdv = Rendezvous()
        if a.batch % rdv.world_size != 0:  # checked before torch's slow import
            raise BadInput(f"--batch {a.batch}: must be a multiple of WORLD_SIZE "
                           f"{rdv.world_size} (each rank takes an equal share)")
        if rdv.local_world_size > 1:
            return launch_local_workers(rdv)
        return train(a, rdv)
    except BadInput as e:
        print(f"train.py: {e}", file=sys.stderr, flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
