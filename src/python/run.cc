// The module's runs: simulate, compare, sweep, allocate and audit run the
// program's own commands in this process (cli::run_in_process, src/cli), so
// they take the same options, check them alike and write the same files;
// the results come back as column dicts (pandas.DataFrame(result["jobs"])
// takes them as they are) read from those files. Without out=, the files go
// to a temporary folder, removed afterwards. A run does not hold the GIL; a
// Python policy takes it at each of its calls.
#include "python/run.h"

#include <pybind11/eval.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "cli/in_process.h"
#include "fairgpu/scheduler.h"

namespace py = pybind11;

namespace fairgpu::python {
namespace {

// The Python half: options to flags, temporary folders, CSV to columns.
constexpr const char* kRuns = R"py(
import csv as _csv
import json as _json
import math as _math
import os as _os
import shutil as _shutil
import tempfile as _tempfile


def _columns(path):
    """A CSV's columns: header -> list; numbers as floats where every cell of
    the column is one (an empty cell: NaN), else strings."""
    with open(path, newline="") as f:
        rows = list(_csv.reader(f))
    if not rows:
        return {}
    out = {}
    for c, name in enumerate(rows[0]):
        values = [r[c] if c < len(r) else "" for r in rows[1:]]
        try:
            out[name] = [float(v) if v != "" else _math.nan for v in values]
        except ValueError:
            out[name] = values
    return out


def _flags(options):
    """Keyword options as the program's flags: seed=2 -> --seed 2,
    arrivals_per_hour=5 -> --arrivals-per-hour 5, True -> the bare flag,
    False or None -> left out, a list -> comma-separated."""
    args = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


class _Folder:
    """out= as given (kept), else a temporary folder removed on exit."""
    def __init__(self, out):
        self.keep = out is not None and str(out) != ""
        self.path = str(out) if self.keep else _tempfile.mkdtemp(prefix="fairgpu-")

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        if not self.keep:
            _shutil.rmtree(self.path, ignore_errors=True)


def _report_flags(folder):
    # A temporary run's report is thrown away: no PDFs.
    return [] if folder.keep else ["--no-pdf"]


def _program():
    """The fairgpu program a sweep starts for each run: $FAIRGPU_BINARY, the
    build tree's (beside python/), or the one on the PATH."""
    beside = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))),
                           "fairgpu")
    for path in (_os.environ.get("FAIRGPU_BINARY"), beside, _shutil.which("fairgpu")):
        if path and _os.path.isfile(path) and _os.access(path, _os.X_OK):
            return path
    raise InputError("sweep: no fairgpu program to run (set FAIRGPU_BINARY, or put fairgpu "
                     "on the PATH)")


def _run_files(folder):
    out = {}
    for name in ("jobs", "tenants", "utilisation", "tenant_windows"):
        path = _os.path.join(folder, name + ".csv")
        if _os.path.exists(path):
            out[name] = _columns(path)
    with open(_os.path.join(folder, "summary.json")) as f:
        out["summary"] = _json.load(f)
    timing = _os.path.join(folder, "timing.json")  # the wall-clock figures
    if _os.path.exists(timing):
        with open(timing) as f:
            out["timing"] = _json.load(f)
    return out


def _json_file(value, folder, name):
    """A path as it is; a dict or list written to folder/name."""
    if isinstance(value, (str, _os.PathLike)):
        return str(value)
    path = _os.path.join(folder, name)
    with open(path, "w") as f:
        _json.dump(value, f)
    return path


def _inputs(options, folder):
    """Scenario inputs given as Python objects, written to files in `folder`
    for the program to read: cluster= and profiles= a dict or list (their
    JSON), trace= rows (a list of dicts) or columns (a dict of lists), as the
    native CSV. A path is passed as it is."""
    options = dict(options)
    for key in ("cluster", "profiles"):
        if isinstance(options.get(key), (dict, list)):
            options[key] = _json_file(options[key], folder, key + ".json")
    trace = options.get("trace")
    if isinstance(trace, dict):  # columns
        names = list(trace)
        lengths = {len(trace[n]) for n in names}
        if len(lengths) > 1:
            raise InputError("trace: columns of different lengths " + str(sorted(lengths)))
        trace = [dict(zip(names, row)) for row in zip(*(trace[n] for n in names))]
    if isinstance(trace, (list, tuple)):
        if not trace or not all(isinstance(r, dict) for r in trace):
            raise InputError("trace: expected a path, rows (dicts) or columns (a dict of lists)")
        names = list(trace[0])
        path = _os.path.join(folder, "trace.csv")
        with open(path, "w", newline="") as f:
            w = _csv.writer(f)
            w.writerow(names)
            for row in trace:
                w.writerow([row.get(n, "") for n in names])
        options["trace"] = path
    return options


def simulate(policy="oef-coop", *, out=None, **options):
    """Runs one policy as `fairgpu simulate --policy POLICY` does, on the
    built-in scenario or the one the options name (any option of `fairgpu
    simulate` as a keyword: trace=..., jobs=100, arrivals_per_hour=5, ...).
    Returns {'policy', 'jobs', 'tenants', 'utilisation', 'tenant_windows':
    columns of the CSV files, 'summary': summary.json, 'timing':
    timing.json (wall-clock seconds)}. out=DIR keeps the
    files the program writes there (report.html and figures/ included)."""
    folder = _Folder(out)
    with folder as d, _Folder(None) as inputs:
        _run_command(["simulate", "--quiet", "--policy", policy, "--out", d]
                     + _report_flags(folder) + _flags(_inputs(options, inputs)))
        result = _run_files(d)
    result["policy"] = policy
    return result


def compare(policies, *, out=None, **options):
    """Runs several policies on one scenario as `fairgpu compare` does
    (policies: a list or a comma-separated string; options as simulate's).
    Returns {'compare': columns of compare.csv, 'runs': {policy: what
    simulate returns for it}}; out=DIR keeps the program's files there."""
    if not isinstance(policies, str):
        policies = ",".join(policies)
    folder = _Folder(out)
    with folder as d, _Folder(None) as inputs:
        answer = _json.loads(_run_command(
            ["compare", "--quiet", "--json", "--policies", policies, "--out", d]
            + _report_flags(folder) + _flags(_inputs(options, inputs))))
        runs = {}
        for run in answer["runs"]:
            runs[run["policy"]] = _run_files(_os.path.join(d, run["folder"]))
            runs[run["policy"]]["policy"] = run["policy"]
        return {"compare": _columns(_os.path.join(d, "compare.csv")), "runs": runs}


def sweep(policies, *, seeds="1-5", out=None, **options):
    """A grid of seeds x policies x scenario variants as `fairgpu sweep`
    (loads=, clusters=, rounds=: lists, each value a variant; any other
    option is every run's, as simulate's). Returns {'sweep': columns of
    sweep.csv, 'provenance': sweep.json's}; out=DIR keeps the program's
    files there (runs/<variant>/<policy>/seed-<s>/ included)."""
    if not isinstance(policies, str):
        policies = ",".join(policies)
    _set_program(_program())
    if not isinstance(seeds, str):
        seeds = ",".join(str(s) for s in seeds)
    folder = _Folder(out)
    with folder as d, _Folder(None) as inputs:
        _run_command(["sweep", "--quiet", "--policies", policies, "--seeds", seeds, "--out", d]
                     + _report_flags(folder) + _flags(_inputs(options, inputs)))
        with open(_os.path.join(d, "sweep.json")) as f:
            provenance = _json.load(f)["provenance"]
        return {"sweep": _columns(_os.path.join(d, "sweep.csv")), "provenance": provenance}


def allocate(problem=None, policy="oef-coop", *, audit=False, sp_probe=True):
    """A share policy's allocation of a problem, as `fairgpu allocate --json`
    (problem: a problem JSON file, or its content as a dict; None: the
    built-in example). audit=True adds the audit. Returns the JSON as a dict."""
    with _Folder(None) as d:
        args = ["allocate", "--json", "--policy", policy]
        if problem is not None:
            args += ["--input", _json_file(problem, d, "problem.json")]
        if audit:
            args.append("--audit")
        if not sp_probe:
            args.append("--no-sp-probe")
        return _json.loads(_run_command(args))


def audit(problem, allocation, policy=None, *, sp_probe=True):
    """Checks an allocation for the fairness properties, as `fairgpu audit
    --json` (problem and allocation: files, or their content; an allocation
    may also be its rows, tenants x GPU types). Returns the JSON as a dict."""
    with _Folder(None) as d:
        if isinstance(allocation, (list, tuple)):
            allocation = {"allocation": [list(row) for row in allocation]}
        args = ["audit", "--json", "--input", _json_file(problem, d, "problem.json"),
                "--allocation", _json_file(allocation, d, "allocation.json")]
        if policy:
            args += ["--policy", policy]
        if not sp_probe:
            args.append("--no-sp-probe")
        return _json.loads(_run_command(args))
)py";

}  // namespace

void bind_runs(py::module_& m) {
  m.def(
      "_run_command",
      [](const std::vector<std::string>& args) {
        py::gil_scoped_release release;
        return cli::run_in_process(args);
      },
      "runs `fairgpu ARGS...` in this process; returns its output");
  m.def("_set_program", &cli::set_program, "the program sweep starts for each run");
  py::exec(kRuns, m.attr("__dict__"));
  m.def("policies", [] {
    py::list out;
    for (const auto& p : round_policy_catalogue()) out.append(p.name);
    return out;
  }, "the registered policies' names");
}

}  // namespace fairgpu::python
