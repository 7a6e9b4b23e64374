# Sourced by the build scripts (test.sh, sanitize.sh, run.sh): the compiler
# cache and how many tests run at once.
#
# ccache (scripts/setup.sh installs it) keeps compiled objects between runs;
# CCACHE_BASEDIR makes the paths it hashes relative to the checkout, so a clone
# in another folder (CI's) reuses what this one compiled.
# FAIRGPU_CMAKE_LAUNCHER is added to each cmake configure line.
FAIRGPU_CMAKE_LAUNCHER=()
if command -v ccache >/dev/null 2>&1 && [ "${FAIRGPU_NO_CCACHE:-0}" != 1 ]; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  export CCACHE_NOHASHDIR=1  # -g builds (the sanitizer's) hash no working directory
  FAIRGPU_CMAKE_LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
else
  # A build folder configured with ccache before keeps it unless told otherwise.
  FAIRGPU_CMAKE_LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=)
fi
