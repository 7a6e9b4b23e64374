// The extension module `fairgpu` (build/python/, installed into the Debian
// interpreter's path): the bindings, and `py:` policies for the runs it
// starts.
#include <pybind11/pybind11.h>

#include "python/py_policy.h"

PYBIND11_MODULE(fairgpu, m) {
  fairgpu::python::bind_module(m);
  fairgpu::python::register_python_policies();
}
