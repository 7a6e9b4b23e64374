# The pytest suite of the Python module and `py:` policies (issue 31), run by
# ctest (tests/python in CMakeLists.txt) with FAIRGPU_BINARY set to the
# program and PYTHONPATH to the module's build folder.
import os
import pathlib
import subprocess

import pytest

SOURCE = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = SOURCE / "examples" / "policies"
SHARED = SOURCE.parent / "shared" / "data"


@pytest.fixture(scope="session")
def binary():
    path = os.environ.get("FAIRGPU_BINARY", str(SOURCE / "build" / "fairgpu"))
    assert os.access(path, os.X_OK), f"no fairgpu program at {path} (FAIRGPU_BINARY)"
    return path


@pytest.fixture
def run(binary):
    """Runs the program from the source folder (the examples' relative paths)."""
    def _run(*args):
        return subprocess.run([binary, *args], cwd=SOURCE, capture_output=True, text=True,
                              timeout=300)
    return _run
