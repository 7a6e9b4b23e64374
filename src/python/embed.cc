// The program's interpreter: started at the first `py:` policy (a run with
// none pays nothing), with the bindings as the built-in module `fairgpu`. The
// main thread gives the GIL up at once: the policies' calls take it on
// whichever thread runs them (compare runs several policies at once). Never
// finalized: the policies' objects live until the process ends.
#include <pybind11/embed.h>

#include "python/embed.h"
#include "python/py_policy.h"

PYBIND11_EMBEDDED_MODULE(fairgpu, m) { fairgpu::python::bind_module(m); }

namespace fairgpu::python {
namespace {

void start() {
  pybind11::initialize_interpreter(/*init_signal_handlers=*/false);
  PyEval_SaveThread();
}

}  // namespace

void enable_embedded_python() {
  set_interpreter_starter(start);
  register_python_policies();
}

}  // namespace fairgpu::python
