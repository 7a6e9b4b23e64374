#!/usr/bin/env python3
"""Markdown tables for docs/results/ from fairgpu's own output files.

Standard library only. Used by bench/reproduce.sh; every figure it prints is
read from a run's compare.csv, summary.json or jobs.csv.

  results.py seeds  --lead P [--metric KEY:LABEL:SCALE:DIGITS ...]
                    [--ratio NUM/DEN:LABEL:DIGITS ...] [--never-started] DIR...
      DIR: one compare run per seed (holding compare.csv), named ...seed-<N>.
      Per policy: mean ± half-width of the 95% Student-t interval over the
      seeds; then each policy's paired difference to the lead policy (the
      same seed's runs subtracted first), mean ± 95% CI, marked where the
      interval excludes 0; then the per-seed values of the first metric.
  results.py single --metric ... [--ratio ...] DIR
      One compare run (a fixed trace): one row per policy.
  results.py window --first A --last B DIR...
      Mean / p99 / p99.9 JCT (hours) of the jobs numbered A..B in arrival
      order (jobs.csv of each policy folder under each DIR), as Synergy's
      artifact measures its steady state.
  results.py share-problem --trace CSV --profiles JSON --capacity TYPE=N,...
      The allocation problem (`fairgpu allocate --input`) of a trace's tenants
      all active at once with unbounded demand: one row per tenant and job
      type, weight 1, its 1-worker speedups from Gavel's throughputs file
      (relative to the slowest type), on the given GPUs.
  results.py shares --lead P DIR...
      DIR: one seed's `fairgpu allocate --json` outputs (POLICY.json), named
      ...shares-<N>. The allocations' total normalised throughput per policy:
      means ± 95% CI over the seeds, paired differences to the lead policy
      and the lead's relative gain.
"""
import argparse
import csv
import json
import math
import os
import re
import sys

# Student's t quantile t_{0.975, df}, df = 1..30; above 30 the Cornish-Fisher
# expansion z + (z^3 + z) / (4 df) is within 0.002 of it.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df):
    if df <= len(T975):
        return T975[df - 1]
    z = 1.959964
    return z + (z ** 3 + z) / (4 * df)


def mean_ci(values):
    """(n, mean, half-width of the 95% CI); NaN values are left out."""
    v = [x for x in values if x is not None and not math.isnan(x)]
    n = len(v)
    if n == 0:
        return 0, math.nan, math.nan
    m = sum(v) / n
    if n < 2:
        return n, m, math.nan
    s = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1))
    return n, m, t975(n - 1) * s / math.sqrt(n)


def num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def read_compare(d):
    """policy -> {column: float} from DIR/compare.csv (row order kept), with
    the numbers of each policy's summary.json that compare.csv leaves out
    (p99_jct_s, p999_jct_s, never_started_jobs, ...) and of its timing.json
    (wall_seconds, compute_p50_s, ...: this machine's)."""
    path = os.path.join(d, "compare.csv")
    if not os.path.exists(path):
        sys.exit(f"results.py: {path} is missing (did the run fail?)")
    rows = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            # "oef-coop@tenant": compare names the level set by --level; the
            # text around the table says it.
            policy = row["policy"].split("@")[0]
            rows[policy] = {k: num(v) for k, v in row.items() if k != "policy"}
    for name in sorted(os.listdir(d)):
        path = os.path.join(d, name, "summary.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            summary = json.load(f)
        timing = os.path.join(d, name, "timing.json")
        if os.path.exists(timing):
            with open(timing) as f:
                summary.update(json.load(f))
        policy = summary.get("policy")
        if policy not in rows:
            continue
        for k, v in summary.items():
            if k not in rows[policy] and isinstance(v, (int, float)) and not isinstance(v, bool):
                rows[policy][k] = float(v)
    return rows


class Metric:
    def __init__(self, key, label, scale, digits, ratio_of=None):
        self.key, self.label, self.scale, self.digits = key, label, scale, digits
        self.ratio_of = ratio_of  # (numerator key, denominator key)

    def value(self, row):
        if self.ratio_of:
            a, b = row.get(self.ratio_of[0], math.nan), row.get(self.ratio_of[1], math.nan)
            return a / b if b and not math.isnan(b) else math.nan
        return row.get(self.key, math.nan) * self.scale


def parse_metrics(args):
    """The --metric and --ratio columns in the order given."""
    out = []
    for kind, spec in args.columns or []:
        if kind == "metric":
            key, label, scale, digits = spec.split(":")
            out.append(Metric(key, label, float(scale), int(digits)))
        else:
            keys, label, digits = spec.split(":")
            a, b = keys.split("/")
            out.append(Metric(keys, label, 1.0, int(digits), (a, b)))
    if args.never_started:
        out.append(Metric("never_started_jobs", "never started", 1.0, 0))
    return out


def fmt(x, digits):
    if x is None or math.isnan(x):
        return "–"
    return f"{x:,.{digits}f}"


def fmt_ci(n, m, h, digits):
    if math.isnan(m):
        return "–"
    if math.isnan(h):
        return fmt(m, digits)
    return f"{fmt(m, digits)} ± {fmt(h, digits)}"


def table(header, rows, right_from=1):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i < right_from else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def seed_of(d):
    m = re.search(r"seed-(\d+)", d)
    if not m:
        sys.exit(f"results.py: cannot tell the seed of {d} (expected ...seed-<N>)")
    return int(m.group(1))


def cmd_seeds(args):
    metrics = parse_metrics(args)
    runs = {}  # seed -> policy -> row
    for d in args.dirs:
        runs[seed_of(d)] = read_compare(d)
    seeds = sorted(runs)
    policies = list(runs[seeds[0]])
    for s in seeds:
        if list(runs[s]) != policies:
            sys.exit(f"results.py: seed {s} ran other policies than seed {seeds[0]}")
    lead = args.lead
    if lead not in policies:
        sys.exit(f"results.py: the lead policy {lead} is not among {policies}")
    n = len(seeds)
    print(f"Means ± half-width of the 95% confidence interval (Student's t, {n} seeds: "
          f"{', '.join(map(str, seeds))}).\n")
    rows = []
    for p in policies:
        cells = [f"**{p}**" if p == lead else p]
        for m in metrics:
            _, mean, h = mean_ci([m.value(runs[s][p]) for s in seeds])
            cells.append(fmt_ci(n, mean, h, m.digits))
        rows.append(cells)
    print(table(["policy"] + [m.label for m in metrics], rows))
    print(f"\nPaired differences, policy − {lead}, seed by seed (mean ± 95% CI; * where the "
          f"interval excludes 0):\n")
    rows = []
    for p in policies:
        if p == lead:
            continue
        cells = [p]
        for m in metrics:
            diffs = [m.value(runs[s][p]) - m.value(runs[s][lead]) for s in seeds]
            k, mean, h = mean_ci(diffs)
            mark = "*" if k >= 2 and not math.isnan(h) and abs(mean) > h else ""
            cells.append(fmt_ci(k, mean, h, m.digits) + mark)
        rows.append(cells)
    print(table(["policy"] + [m.label for m in metrics], rows))
    first = metrics[0]
    print(f"\n{lead}'s {first.label} relative to each policy's, seed by seed "
          f"({lead} / policy − 1, mean ± 95% CI):\n")
    rows = []
    for p in policies:
        if p == lead:
            continue
        rel = [100 * (first.value(runs[s][lead]) / first.value(runs[s][p]) - 1) for s in seeds]
        k, mean, h = mean_ci(rel)
        mark = "*" if k >= 2 and not math.isnan(h) and abs(mean) > h else ""
        rows.append([p, fmt_ci(k, mean, h, 1) + " %" + mark])
    print(table(["policy", f"{lead} vs policy"], rows))
    print(f"\n{first.label}, seed by seed:")
    for at in range(0, n, 10):  # ten seeds a table, to stay readable
        part = seeds[at:at + 10]
        rows = [[p] + [fmt(first.value(runs[s][p]), first.digits) for s in part] for p in policies]
        print()
        print(table(["policy"] + [f"seed {s}" for s in part], rows))


def cmd_single(args):
    metrics = parse_metrics(args)
    d = args.dirs[0]
    rows_in = read_compare(d)
    rows = [[p] + [fmt(m.value(r), m.digits) for m in metrics] for p, r in rows_in.items()]
    print(table(["policy"] + [m.label for m in metrics], rows))


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def window_figures(jobs_csv, first, last):
    """(mean, p99, p99.9 JCT in hours, unfinished) of jobs first..last in
    arrival order (ties in file order)."""
    with open(jobs_csv, newline="") as f:
        js = list(csv.DictReader(f))
    js = [j for _, j in sorted(enumerate(js), key=lambda ij: (num(ij[1]["arrival"]), ij[0]))]
    part = js[first:last + 1]
    jct = sorted(num(j["finish"]) - num(j["arrival"]) for j in part
                 if not math.isnan(num(j["finish"])))
    mean = sum(jct) / len(jct) / 3600 if jct else math.nan
    return (mean, percentile(jct, 0.99) / 3600, percentile(jct, 0.999) / 3600,
            len(part) - len(jct))


def cmd_window(args):
    per_policy = {}  # policy -> seed -> figures
    for d in args.dirs:
        seed = seed_of(d)
        for name in sorted(os.listdir(d)):
            jobs = os.path.join(d, name, "jobs.csv")
            summary = os.path.join(d, name, "summary.json")
            if not os.path.exists(jobs) or not os.path.exists(summary):
                continue
            with open(summary) as f:
                policy = json.load(f).get("policy", name)
            per_policy.setdefault(policy, {})[seed] = window_figures(jobs, args.first, args.last)
    seeds = sorted({s for v in per_policy.values() for s in v})
    print(f"Means ± 95% CI over seeds {', '.join(map(str, seeds))} of each run's figure:\n")
    rows = []
    for policy, by_seed in per_policy.items():
        cells = [policy]
        for i, digits in ((0, 2), (1, 2), (2, 2), (3, 0)):
            _, m, h = mean_ci([by_seed[s][i] for s in seeds])
            cells.append(fmt_ci(len(seeds), m, h, digits))
        rows.append(cells)
    print(table(["policy", "mean JCT h", "p99 JCT h", "p99.9 JCT h", "unfinished"], rows))
    print("\nMean JCT h of the window, seed by seed:\n")
    rows = [[p] + [fmt(by_seed[s][0], 2) for s in seeds] for p, by_seed in per_policy.items()]
    print(table(["policy"] + [f"seed {s}" for s in seeds], rows))


def cmd_share_problem(args):
    profiles = json.load(open(args.profiles))
    capacity = {}
    for part in args.capacity.split(","):
        name, _, count = part.partition("=")
        if not name or not re.fullmatch(r"[0-9]+(\.[0-9]*)?", count) or float(count) <= 0:
            sys.exit(f"results.py: --capacity: '{part}' is not TYPE=N with N > 0")
        capacity[name] = float(count)
    types = list(capacity)
    for t in types:
        if t not in profiles:
            sys.exit(f"results.py: {args.profiles}: no throughputs for GPU type '{t}'")
    tenants = {}  # tenant -> its job types, in trace order
    with open(args.trace) as f:
        for row in csv.DictReader(f):
            kinds = tenants.setdefault(row["tenant"], [])
            if row["job_type"] not in kinds:
                kinds.append(row["job_type"])

    def speedup(job_type):
        key = str((job_type, 1))
        rates = []
        for t in types:
            entry = profiles[t].get(key)
            if entry is None:
                sys.exit(f"results.py: {args.profiles}: no 1-worker throughput of '{job_type}' on {t}")
            rates.append(entry["null"])
        slowest = min((r for r in rates if r > 0), default=0.0)
        if slowest == 0.0:
            sys.exit(f"results.py: {args.profiles}: '{job_type}' runs on none of {types}")
        return [r / slowest for r in rates]

    out = {"gpu_types": types, "capacity": capacity, "tenants": []}
    for name, kinds in sorted(tenants.items()):
        out["tenants"].append({"name": name, "weight": 1,
                               "job_types": [{"name": k, "speedup": speedup(k)} for k in kinds]})
    json.dump(out, sys.stdout, indent=1)
    print()


def cmd_shares(args):
    totals = {}  # seed -> policy -> total normalised throughput
    policies = None
    for d in args.dirs:
        m = re.search(r"shares-(\d+)", d)
        if not m:
            sys.exit(f"results.py: cannot tell the seed of {d} (expected ...shares-<N>)")
        seed = int(m.group(1))
        names = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".json"))
        if policies is None:
            policies = [args.lead] + [p for p in names if p != args.lead]
        if sorted(policies) != names:
            sys.exit(f"results.py: {d} holds other policies than the first folder")
        totals[seed] = {p: sum(t["throughput"] for t in json.load(open(os.path.join(d, p + ".json")))["tenants"])
                        for p in policies}
    seeds = sorted(totals)
    n, lead = len(seeds), args.lead
    rows = []
    for p in policies:
        _, m, h = mean_ci([totals[s][p] for s in seeds])
        cells = [f"**{p}**" if p == lead else p, fmt_ci(n, m, h, 2)]
        if p == lead:
            cells += ["", ""]
        else:
            k, dm, dh = mean_ci([totals[s][p] - totals[s][lead] for s in seeds])
            cells.append(fmt_ci(k, dm, dh, 2) + ("*" if abs(dm) > dh else ""))
            k, rm, rh = mean_ci([100 * (totals[s][lead] / totals[s][p] - 1) for s in seeds])
            cells.append(fmt_ci(k, rm, rh, 1) + " %" + ("*" if abs(rm) > rh else ""))
        rows.append(cells)
    print(f"Means ± half-width of the 95% confidence interval ({n} seeds: {', '.join(map(str, seeds))}); "
          f"paired differences seed by seed, * where the interval excludes 0.\n")
    print(table(["policy", "total normalised throughput", f"policy − {lead}", f"{lead} vs policy"], rows))


class Column(argparse.Action):
    """--metric and --ratio into one list, in command-line order."""

    def __call__(self, parser, namespace, values, option_string=None):
        columns = getattr(namespace, self.dest, None) or []
        columns.append((option_string.lstrip("-"), values))
        setattr(namespace, self.dest, columns)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("seeds", "single"):
        p = sub.add_parser(name)
        p.add_argument("--lead", default="oef-coop")
        p.add_argument("--metric", action=Column, dest="columns",
                       help="KEY:LABEL:SCALE:DIGITS, a compare.csv column")
        p.add_argument("--ratio", action=Column, dest="columns",
                       help="NUM/DEN:LABEL:DIGITS, the ratio of two columns per run")
        p.add_argument("--never-started", action="store_true")
        p.add_argument("dirs", nargs="+")
    p = sub.add_parser("window")
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--last", type=int, required=True)
    p.add_argument("dirs", nargs="+")
    p = sub.add_parser("share-problem")
    p.add_argument("--trace", required=True)
    p.add_argument("--profiles", required=True)
    p.add_argument("--capacity", required=True, help="TYPE=N,... (the GPUs of each type)")
    p = sub.add_parser("shares")
    p.add_argument("--lead", default="oef-coop")
    p.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    {"seeds": cmd_seeds, "single": cmd_single, "window": cmd_window,
     "share-problem": cmd_share_problem, "shares": cmd_shares}[args.cmd](args)


if __name__ == "__main__":
    main()
