#!/usr/bin/env bash
# Installs every Debian package fairgpu needs to build, test and benchmark.
# Idempotent and quiet; run as root (or with sudo available) on Debian 12.
#   scripts/setup.sh             everything (what scripts/test.sh and CI build)
#   scripts/setup.sh --sim-only  only what the simulator-only build needs
#                                (cmake -DFAIRGPU_LIVE=OFF: simulate, compare,
#                                sweep, report; no live manager, Slurm, PyTorch
#                                or Chromium) and its tests
set -euo pipefail

sim_only=0
case "${1:-}" in
  "") ;;
  --sim-only) sim_only=1 ;;
  *) echo "setup.sh: unknown option '$1' (--sim-only or nothing)" >&2; exit 2 ;;
esac

# The simulator-only build (-DFAIRGPU_LIVE=OFF -DFAIRGPU_PYTHON=OFF) and its tests.
packages=(
  build-essential cmake ninja-build pkg-config git
  ccache                                # compiler cache: repeat builds (CI, scripts) compile only what changed
  coinor-libclp-dev coinor-libcbc-dev   # LP (CLP) and MIP (CBC) solvers
  nlohmann-json3-dev libcli11-dev       # JSON, command line
  libfmt-dev                            # formatting of tables
  liblemon-dev                          # min-cost flow (NetworkSimplex) for allox
  libgsl-dev                            # Student's t quantile: sweep's confidence intervals
  libjemalloc-dev                       # the simulator's allocator (a third of its time in glibc's)
  libssl-dev                            # libcrypto: SHA-256 of a run's inputs (provenance); TLS of the HTTP API
  librsvg2-bin                          # rsvg-convert: report figures as PDF (skipped with a note when absent)
  libgtest-dev libgmock-dev
)
if [ "$sim_only" -eq 0 ]; then
  packages+=(
    libsqlite3-dev libcpp-httplib-dev     # live manager: durable store, HTTP API
    libspdlog-dev                         # live manager's and agent's log
    chromium                              # headless browser: the test of report.html
    python3-torch                         # examples/pytorch/train.py and its end-to-end test (CPU)
    pybind11-dev python3-dev python3-pytest  # the Python module and `py:` policies (src/python), their pytest suite
    libbenchmark-dev
    clang libclang-rt-dev llvm            # sanitizer build, libFuzzer, llvm-symbolizer (CI stages 2-3)
    slurmctld slurmd slurm-client         # Slurm backend: the test cluster of scripts/slurm-cluster.sh
    help2man                              # man pages from the CLI's help (scripts/make-man.sh)
    prometheus                            # promtool: the lint of /metrics' names (the test skips it when absent)
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists; refresh them when a package is unknown.
if ! apt-cache show "${missing[@]}" >/dev/null 2>&1; then
  $sudo apt-get update -qq >/dev/null
fi
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
