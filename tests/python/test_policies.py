# Python policies against the C++ ones, and their errors.
import pathlib
import threading
import sys

import pytest

import fairgpu
from conftest import EXAMPLES, SHARED

FIFO = "py:examples/policies/fifo.py:Fifo"
MAX_MIN = "py:examples/policies/max_min.py:MaxMin"
GAVEL_SMALL = ["--trace", str(SHARED / "gavel" / "small_test.trace"), "--profiles",
               str(SHARED / "gavel" / "simulation_throughputs.json"), "--cluster-spec",
               "k80:8,p100:8,v100:8"]


def jobs_csv(run, tmp_path, policy, *args):
    out = tmp_path / policy.replace("/", "_").replace(":", "_")
    r = run("simulate", "--quiet", "--policy", policy, "--out", str(out), *args)
    assert r.returncode == 0, r.stderr
    return (out / "jobs.csv").read_bytes()


@pytest.mark.parametrize("python, builtin", [(FIFO, "fifo"), (MAX_MIN, "max-min"),
                                             (MAX_MIN + ":solver=lp", "max-min")])
def test_identical_jobs_builtin_scenario(run, tmp_path, python, builtin):
    expected = jobs_csv(run, tmp_path, builtin)
    assert jobs_csv(run, tmp_path, python) == expected


@pytest.mark.parametrize("python, builtin", [(FIFO, "fifo"), (MAX_MIN, "max-min")])
def test_identical_jobs_gavel_trace(run, tmp_path, python, builtin):
    if not (SHARED / "gavel" / "small_test.trace").exists():
        pytest.skip("no ../shared/data/gavel")
    expected = jobs_csv(run, tmp_path, builtin, *GAVEL_SMALL)
    assert jobs_csv(run, tmp_path, python, *GAVEL_SMALL) == expected


def test_compare_runs_python_beside_builtin(run, tmp_path):
    r = run("compare", "--quiet", "--policies", f"fifo,{FIFO},py:examples/policies/srtf.py:Srtf",
            "--jobs", "100", "--out", str(tmp_path / "cmp"))
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines() if line.strip()}
    assert rows["fifo"][:6] == rows[FIFO][:6]  # same JCT, utilisation, throughput, ...
    assert "py:examples/policies/srtf.py:Srtf" in rows


def write_policy(tmp_path, body, name="p.py"):
    path = tmp_path / name
    path.write_text("import fairgpu\n" + body)
    return str(path)


def test_exception_names_policy_call_and_time(run, tmp_path):
    path = write_policy(tmp_path, """
class Boom:
    def schedule(self, state):
        if state.now > 0:
            raise ValueError("no plan today")
        return None
""")
    r = run("simulate", "--quiet", "--policy", f"py:{path}:Boom", "--out", str(tmp_path / "o"))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert f"policy py:{path}:Boom: schedule() at t=" in lines[0]
    assert "raised ValueError: no plan today (p.py:6)" in lines[0]


def test_share_policy_exception_and_bad_matrix(run, tmp_path):
    path = write_policy(tmp_path, """
class Short:
    def shares(self, problem):
        return [[1.0] * problem.num_types]
""")
    r = run("simulate", "--quiet", "--policy", f"py:{path}:Short", "--out", str(tmp_path / "o"))
    assert r.returncode == 1
    assert f"policy py:{path}:Short: shares() at t=" in r.stderr
    assert "rows for" in r.stderr and "entities" in r.stderr


def test_invalid_plan_is_reported(run, tmp_path):
    # Every queued job on device (0, 0): double-booked (or a wrong gang size).
    path = write_policy(tmp_path, """
class Greedy:
    def schedule(self, state):
        return [fairgpu.Assignment(i, [(0, 0)], state.now + 60) for i in state.active]
""")
    r = run("simulate", "--quiet", "--policy", f"py:{path}:Greedy", "--out", str(tmp_path / "o"))
    assert r.returncode == 1
    assert f"policy py:{path}:Greedy: schedule() at t=" in r.stderr
    assert "returned invalid round plan" in r.stderr


@pytest.mark.parametrize("spec, message", [
    ("py:examples/policies/nope.py:Fifo", "file: cannot read 'examples/policies/nope.py'"),
    ("py:examples/policies/fifo.py:Nope", "class: no class 'Nope' in 'examples/policies/fifo.py'"),
    (FIFO + ":backfill=maybe", "backfill"),
    (FIFO + ":lease=-1", "lease"),
    (FIFO + ":colour=red", "colour"),
    ("py:examples/policies/fifo.py", "expected py:FILE:CLASS"),
])
def test_bad_specifier_exits_2(run, tmp_path, spec, message):
    r = run("simulate", "--quiet", "--policy", spec, "--out", str(tmp_path / "o"))
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert message in r.stderr


def test_file_errors_exit_2(run, tmp_path):
    bad = write_policy(tmp_path, "class X:\n    def schedule(self, state)\n", "syntax.py")
    r = run("simulate", "--quiet", "--policy", f"py:{bad}:X")
    assert r.returncode == 2 and "SyntaxError" in r.stderr and "(line 3)" in r.stderr, r.stderr
    both = write_policy(tmp_path, """
class Both:
    def schedule(self, state): pass
    def shares(self, problem): pass
""", "both.py")
    r = run("simulate", "--quiet", "--policy", f"py:{both}:Both")
    assert r.returncode == 2 and "exactly one of schedule" in r.stderr, r.stderr
    bad_default = write_policy(tmp_path, """
class D:
    options = [fairgpu.Option("alpha", 2.0, "a fraction", min=0, max=1)]
    def schedule(self, state): return None
""", "default.py")
    r = run("simulate", "--quiet", "--policy", f"py:{bad_default}:D")
    assert r.returncode == 2 and "alpha" in r.stderr, r.stderr


def test_options_reach_the_instance(tmp_path):
    path = write_policy(tmp_path, """
seen = []
class Opt:
    options = [fairgpu.Option("alpha", 0.5, "a fraction", min=0, max=1),
               fairgpu.Option("mode", "a", "a or b", choices=["a", "b"]),
               fairgpu.Option("on", False, "a flag"),
               fairgpu.Option("round", 60.0, "seconds between scheduling points", min=0, min_open=True)]
    def __init__(self):
        seen.append(dict(self.options))
    def schedule(self, state):
        return None
""", "opt.py")
    fairgpu.simulate(f"py:{path}:Opt:alpha=0.25:mode=b:on=on", jobs=5, horizon_hours=1)
    mod = next(m for m in sys.modules.values() if getattr(m, "__file__", None) == path)
    got = mod.seen[-1]
    assert got["alpha"] == 0.25 and got["mode"] == "b" and got["on"] is True
    assert got["round"] == 60.0 and got["lease"] == 900.0
    with pytest.raises(fairgpu.InputError, match="alpha"):
        fairgpu.simulate(f"py:{path}:Opt:alpha=1.5", jobs=5, horizon_hours=1)


def test_module_simulate_matches_cli(run, tmp_path):
    jobs_cli = jobs_csv(run, tmp_path, "fifo")
    r = fairgpu.simulate(str(FIFO).replace("examples/", str(EXAMPLES.parent) + "/"),
                         out=str(tmp_path / "mod"))
    assert (tmp_path / "mod" / "jobs.csv").read_bytes() == jobs_cli
    c = fairgpu.simulate("fifo")
    assert r["jobs"] == c["jobs"]
    assert len(r["jobs"]["job_id"]) == r["summary"]["jobs"] == 300
    assert all(isinstance(v, list) and len(v) == 300 for v in r["jobs"].values())


def test_state_view_is_read_only_and_expires(tmp_path):
    path = write_policy(tmp_path, """
kept = []
class Peek:
    def schedule(self, state):
        if not kept and len(state.active) > 0:
            j = state.job(state.active[0])
            kept.append((state, j.tenant, j.workers, j.job_type, len(j.rate_best), state.gpu_types))
        return None
""", "peek.py")
    fairgpu.simulate(f"py:{path}:Peek", jobs=5, horizon_hours=1)
    mod = next(m for m in sys.modules.values() if getattr(m, "__file__", None) == path)
    state, tenant, workers, job_type, rates, types = mod.kept[0]
    assert tenant and workers >= 1 and job_type and rates == len(types) == 3
    with pytest.raises(RuntimeError, match="valid only during schedule"):
        state.now


def test_gil_released_during_simulate():
    # With a 1000 s switch interval, the main thread gets the GIL back only
    # when the other thread gives it up: inside the C++ run if simulate()
    # releases it, else only when the run has returned.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    try:
        started, state = threading.Event(), {"done": False}

        def work():
            started.set()
            fairgpu.simulate("fifo")
            state["done"] = True

        t = threading.Thread(target=work)
        t.start()
        started.wait()
        inside = not state["done"]
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert inside, "the main thread ran only after simulate() returned: the GIL was held"


def test_linear_program():
    # max x + y  s.t.  x + 2y <= 4, 3x + y <= 6  ->  x = 1.6, y = 1.2, duals 0.4, 0.2.
    lp = fairgpu.LinearProgram()
    lp.maximize()
    x, y = lp.add_variable(objective=1.0), lp.add_variable(objective=1.0)
    r1 = lp.add_constraint([x, y], [1.0, 2.0], upper=4.0)
    r2 = lp.add_constraint([x, y], [3.0, 1.0], upper=6.0)
    assert lp.solve() == "optimal"
    assert lp.value(x) == pytest.approx(1.6) and lp.value(y) == pytest.approx(1.2)
    assert lp.objective_value == pytest.approx(2.8)
    assert lp.dual(r1) == pytest.approx(0.4) and lp.dual(r2) == pytest.approx(0.2)
    with pytest.raises(IndexError):
        lp.add_constraint([7], [1.0], upper=1.0)


def test_edited_file_is_loaded_again(tmp_path):
    # serve's reload (SIGHUP) makes its policy again: an edited file must be
    # read again, not taken from the loaded modules; a file without
    # `import fairgpu` still gets its views.
    path = tmp_path / "edited.py"
    path.write_text("class P:\n    def schedule(self, state):\n        return None\n")
    fairgpu.simulate(f"py:{path}:P", jobs=5, horizon_hours=1)
    path.write_text("class P:\n    def schedule(self, state):\n        raise ValueError('edited')\n")
    with pytest.raises(fairgpu.PolicyError, match="ValueError: edited"):
        fairgpu.simulate(f"py:{path}:P", jobs=5, horizon_hours=1)


def test_policies_lists_python_files(run, tmp_path):
    r = run("policies", "--py", "examples/policies/fifo.py", "examples/policies/max_min.py")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # Share policies first, as the built-in listing; each with its docstring.
    share = lines.index("share policies (tenant or job level):")
    sharing = lines.index("time-sharing policies (job level):")
    assert share < sharing
    mm = next(l for l in lines if l.startswith("  " + MAX_MIN))
    assert "Weighted max-min fairness, heterogeneity-unaware, in Python" in mm
    assert lines.index(mm) > share
    fifo = next(l for l in lines if l.startswith("  " + FIFO))
    assert "First in, first out, in Python" in fifo and lines.index(fifo) > sharing
    # Its own keys (help, accepted values) after the base keys of its kind.
    keys = [l.split()[0] for l in lines[lines.index(fifo) + 1:]]
    assert keys == ["level=job", "round=10", "lease=900", "spread_min=0.9", "spread_wait=2700",
                    "backfill=off"]
    assert any("solver=closed-form" in l and "one of closed-form | lp" in l for l in lines)
    assert "fifo " not in r.stdout  # the built-in ones are not listed

    r = run("policies", "--json", "--py", str(EXAMPLES / "srtf.py"))
    assert r.returncode == 0, r.stderr
    import json
    [srtf] = json.loads(r.stdout)
    assert srtf["name"] == f"py:{EXAMPLES / 'srtf.py'}:Srtf" and srtf["kind"] == "time-sharing"
    assert srtf["description"].startswith("Shortest remaining time first, in Python")
    lease = next(k for k in srtf["keys"] if k["key"] == "lease")
    assert lease == {"key": "lease", "default": "300", "help": "lease term in seconds",
                     "accepts": "a number > 0"}

    # The class's own docstring wins over the file's; imported classes and
    # classes that are not policies are left out.
    path = write_policy(tmp_path, '''"""The file."""
from fairgpu import Option

class Helper:
    pass

class Documented:
    """Shares by hand.

    More text."""
    def shares(self, problem):
        return []
''', "doc.py")
    r = run("policies", "--py", path)
    assert r.returncode == 0, r.stderr
    assert f"  py:{path}:Documented  Shares by hand." in r.stdout
    assert "Helper" not in r.stdout and "Option" not in r.stdout and "More text" not in r.stdout

    none = write_policy(tmp_path, "class Helper:\n    pass\n", "none.py")
    r = run("policies", "--py", none)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "defines no policy class" in r.stderr and "none.py" in r.stderr
