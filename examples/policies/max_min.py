"""Weighted max-min fairness, heterogeneity-unaware, in Python: the C++
`max-min` (src/policy/max_min.cc), so `--policy py:examples/policies/max_min.py:MaxMin`
writes the same jobs.csv as `--policy max-min`.

Each entity l gets a fraction f_l of the cluster and that fraction of every
GPU type (x_l = f_l * m): weighted progressive filling of f_l / weight_l,
entity l capped at its demand / total GPUs. With solver=closed-form (the
default) the filling is the C++ policy's closed form, operation for
operation; with solver=lp it is the textbook progressive filling on
fairgpu.LinearProgram: maximise the common level t, fix the entities whose
cap binds, repeat (the same fractions up to the LP's rounding).
"""
import math

import fairgpu


class MaxMin:
    options = [
        fairgpu.Option("solver", "closed-form", "closed-form or lp (progressive filling on the LP layer)",
                       choices=["closed-form", "lp"]),
    ]

    def shares(self, problem):
        k, n = problem.num_types, problem.num_entities
        total = problem.total_capacity
        if n == 0 or not total > 0:
            return [[0.0] * k for _ in range(n)]
        if self.options["solver"] == "lp":
            f = lp_fractions(problem.weights, problem.demands, total)
        else:
            f = closed_form_fractions(problem.weights, problem.demands, total)
        return [[f[e] * m for m in problem.capacity] for e in range(n)]


def closed_form_fractions(weights, demands, total):
    n = len(weights)
    f, cap = [0.0] * n, [0.0] * n
    order = []
    for e in range(n):
        if not weights[e] > 0:
            continue
        d = demands[e]
        cap[e] = max(0.0, d) / total if math.isfinite(d) else math.inf
        order.append(e)
    # Tightest cap per unit of weight first; ties by entity index (stable).
    order.sort(key=lambda e: cap[e] / weights[e])
    weight_left = [0.0] * (len(order) + 1)
    for i in range(len(order) - 1, -1, -1):
        weight_left[i] = weight_left[i + 1] + weights[order[i]]
    left = 1.0
    for i, e in enumerate(order):
        level = left / weight_left[i]
        if cap[e] <= level * weights[e]:
            f[e] = cap[e]
            left = max(0.0, left - cap[e])
            continue
        for r in order[i:]:
            f[r] = level * weights[r]
        break
    return f


def lp_fractions(weights, demands, total):
    """Progressive filling: each LP raises every unfixed entity's f_l to
    t * weight_l (within its cap) with sum f <= 1, maximising t."""
    n = len(weights)
    f = [0.0] * n
    cap = [max(0.0, d) / total if math.isfinite(d) else math.inf for d in demands]
    rising = [e for e in range(n) if weights[e] > 0]
    while rising:
        lp = fairgpu.LinearProgram()
        lp.maximize()
        t = lp.add_variable(0.0, math.inf, 1.0)
        xs = {e: lp.add_variable(0.0, cap[e]) for e in rising}
        for e in rising:  # f_e = t * weight_e
            lp.add_constraint([xs[e], t], [1.0, -weights[e]], 0.0, 0.0)
        fixed = sum(f)
        lp.add_constraint(list(xs.values()), [1.0] * len(xs), -math.inf, 1.0 - fixed)
        if lp.solve() != "optimal":
            raise RuntimeError("max-min LP: " + lp.solve())
        level = lp.value(t)
        capped = [e for e in rising if cap[e] <= level * weights[e] + 1e-12]
        if not capped:
            for e in rising:
                f[e] = level * weights[e]
            break
        for e in capped:
            f[e] = cap[e]
        rising = [e for e in rising if e not in capped]
    return f
