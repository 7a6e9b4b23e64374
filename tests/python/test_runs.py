# fairgpu.simulate/compare/sweep/allocate/audit against the program's own
# output for the same inputs (docs/python.md, "From Python").
import json

import pytest

import fairgpu
from conftest import EXAMPLES, SOURCE

FIFO = f"py:{EXAMPLES / 'fifo.py'}:Fifo"
# Columns that time the scheduler: they differ from run to run.
TIMED = {"compute_p50_s", "compute_p50_s_ratio", "scheduler_s", "compute_s"}


def columns(path):
    return fairgpu._columns(str(path))


def untimed(cols):
    return {k: v for k, v in cols.items() if k not in TIMED and "compute" not in k}


def test_simulate_has_tenants_and_utilisation(run, tmp_path):
    r = run("simulate", "--quiet", "--policy", "max-min", "--jobs", "60", "--out",
            str(tmp_path / "cli"))
    assert r.returncode == 0, r.stderr
    got = fairgpu.simulate("max-min", jobs=60, out=tmp_path / "mod")
    for name in ("jobs", "tenants", "tenant_windows"):
        assert (tmp_path / "mod" / f"{name}.csv").read_bytes() == \
            (tmp_path / "cli" / f"{name}.csv").read_bytes(), name
        assert got[name] == columns(tmp_path / "cli" / f"{name}.csv"), name
    # Wall-clock figures are in timing.json only, so utilisation.csv is the same.
    assert got["utilisation"] == columns(tmp_path / "cli" / "utilisation.csv")
    assert "compute_seconds" not in got["utilisation"]
    assert "wall_seconds" in got["timing"] and "wall_seconds" not in got["summary"]
    assert set(got["tenants"]) >= {"tenant"} and len(got["utilisation"]) > 1
    n = {len(v) for v in got["tenants"].values()}
    assert len(n) == 1 and n.pop() > 0  # every column as long: a DataFrame as it is


def test_compare_matches_cli(run, tmp_path, monkeypatch):
    policies = ["fifo", "max-min", FIFO]
    r = run("compare", "--quiet", "--policies", ",".join(policies), "--jobs", "60", "--seed", "3",
            "--out", str(tmp_path / "cli"))
    assert r.returncode == 0, r.stderr
    got = fairgpu.compare(policies, jobs=60, seed=3, out=tmp_path / "mod")
    cli = columns(tmp_path / "cli" / "compare.csv")
    assert list(got["compare"]) == list(cli)
    assert untimed(got["compare"]) == untimed({**cli, "options": got["compare"]["options"]})
    assert got["compare"]["policy"] == policies
    for folder in ("fifo", "max-min"):
        for name in ("jobs", "tenants", "tenant_windows"):
            assert (tmp_path / "mod" / folder / f"{name}.csv").read_bytes() == \
                (tmp_path / "cli" / folder / f"{name}.csv").read_bytes(), (folder, name)
    assert got["runs"]["fifo"]["jobs"] == columns(tmp_path / "cli" / "fifo" / "jobs.csv")
    assert got["runs"][FIFO]["jobs"] == got["runs"]["fifo"]["jobs"]
    assert (tmp_path / "mod" / "report.html").exists()
    # Without out=: nothing left behind, here or in the current folder.
    monkeypatch.chdir(tmp_path / "mod")
    again = fairgpu.compare("fifo,max-min", jobs=60, seed=3)
    assert again["runs"]["max-min"]["jobs"] == got["runs"]["max-min"]["jobs"]
    assert not (tmp_path / "mod" / "fairgpu-out").exists()


def test_sweep_matches_cli(run, tmp_path):
    # Loads 30 jobs can reach over their arrival window (seed 1: at most 0.37).
    args = ["--policies", "fifo,max-min", "--seeds", "1-2", "--loads", "0.1,0.3"]
    r = run("sweep", "--quiet", *args, "--jobs", "30", "--out", str(tmp_path / "cli"))
    assert r.returncode == 0, r.stderr
    got = fairgpu.sweep(["fifo", "max-min"], seeds=[1, 2], loads=[0.1, 0.3], jobs=30,
                        out=tmp_path / "mod")
    cli = columns(tmp_path / "cli" / "sweep.csv")
    assert list(got["sweep"]) == list(cli)
    assert untimed(got["sweep"]) == untimed(cli)
    assert len(got["sweep"]["policy"]) == 4  # 2 policies x 2 loads
    assert got["provenance"]["seeds"] == [1, 2]
    run_dir = "runs/load-0.1/max-min/seed-2/jobs.csv"
    assert (tmp_path / "mod" / run_dir).read_bytes() == (tmp_path / "cli" / run_dir).read_bytes()


def without_times(x):
    if isinstance(x, dict):
        return {k: without_times(v) for k, v in x.items() if "seconds" not in k}
    if isinstance(x, list):
        return [without_times(v) for v in x]
    return x


def test_allocate_and_audit_match_cli(run, tmp_path):
    problem = EXAMPLES.parent / "allocate.json"
    r = run("allocate", "--json", "--audit", "--input", str(problem), "--policy", "max-min")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    got = fairgpu.allocate(str(problem), "max-min", audit=True)
    assert without_times(got) == without_times(cli)
    # The problem as a dict; the built-in example without one.
    assert without_times(fairgpu.allocate(json.loads(problem.read_text()), "max-min",
                                          audit=True)) == without_times(cli)
    r = run("allocate", "--json")
    assert without_times(fairgpu.allocate()) == without_times(json.loads(r.stdout))

    (tmp_path / "alloc.json").write_text(json.dumps(got))
    r = run("audit", "--json", "--input", str(problem), "--allocation", str(tmp_path / "alloc.json"),
            "--policy", "oef-coop")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    assert without_times(fairgpu.audit(str(problem), got, "oef-coop")) == without_times(cli)
    # Its rows: one per tenant, or per job type of a tenant with job types.
    rows = [row for t in got["tenants"]
            for row in ([j["allocation"] for j in t["job_types"]] if "job_types" in t
                        else [t["allocation"]])]
    assert without_times(fairgpu.audit(str(problem), rows, "oef-coop")) == without_times(cli)


def test_errors_are_input_errors(tmp_path):
    with pytest.raises(fairgpu.InputError, match="nope"):
        fairgpu.compare(["fifo", "nope"], jobs=10)
    with pytest.raises(fairgpu.InputError, match="--colour"):
        fairgpu.simulate("fifo", colour="red")
    with pytest.raises(fairgpu.InputError):
        fairgpu.allocate(str(tmp_path / "missing.json"))


def test_scenario_inputs_as_python_objects(run, tmp_path):
    # A cluster, profiles and a trace built in Python run as the same files
    # given by path to the program.
    cluster = json.loads((SOURCE / "examples" / "oef-like-cluster.json").read_text())
    rows = [{"job_id": f"j{i}", "tenant": "ab"[i % 2], "job_type": ["A3C", "LM (batch size 20)"][i % 2],
             "num_workers": 1 + i % 2, "arrival_s": 60 * i, "duration_s": 1800 + 300 * i}
            for i in range(12)]
    columns_of = {k: [r[k] for r in rows] for k in rows[0]}
    (tmp_path / "cluster.json").write_text(json.dumps(cluster))
    trace = tmp_path / "trace.csv"
    trace.write_text("job_id,tenant,job_type,num_workers,arrival_s,duration_s\n" + "".join(
        f"{r['job_id']},{r['tenant']},{r['job_type']},{r['num_workers']},{r['arrival_s']},"
        f"{r['duration_s']}\n" for r in rows))
    r = run("simulate", "--quiet", "--policy", "oef-coop", "--cluster", str(tmp_path / "cluster.json"),
            "--trace", str(trace), "--out", str(tmp_path / "cli"))
    assert r.returncode == 0, r.stderr
    want = (tmp_path / "cli" / "jobs.csv").read_bytes()
    for given in (rows, columns_of):
        out = tmp_path / ("rows" if given is rows else "cols")
        fairgpu.simulate("oef-coop", cluster=cluster, trace=given, out=out)
        assert (out / "jobs.csv").read_bytes() == want
    with pytest.raises(fairgpu.InputError, match="trace: columns of different lengths"):
        fairgpu.simulate("fifo", trace={"job_id": ["a", "b"], "tenant": ["x"]})
