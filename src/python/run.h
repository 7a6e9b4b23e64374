// Module-level runs of the `fairgpu` Python module: simulate(...) with the
// CLI's scenario options, results as column dicts (run.cc).
#pragma once

#include <pybind11/pybind11.h>

namespace fairgpu::python {

void bind_runs(pybind11::module_& m);

}  // namespace fairgpu::python
