// Policies written in Python (issue 31, docs/python.md): the `py` plugin of
// the round-policy registry (fairgpu/policy_plugin.h). A specifier
// `py:FILE:CLASS[:key=value...]` loads FILE once per process, and CLASS
// becomes
//   - a round policy when it has schedule(state) -> plan: it decides every
//     scheduling point from a read-only view of the SchedulerState
//     (bindings.cc), with the GangRound helper the C++ time-sharing policies
//     use; its keys are theirs (round, lease, spread_min, spread_wait) plus
//     its own;
//   - a share policy when it has shares(problem) -> matrix: run through the
//     same rounds and rounding placer as the C++ share policies
//     (NewShareRoundPolicy), with their keys plus its own.
// The class declares its own keys in `options` (fairgpu.Option, kinds and
// checks as policy_options.h's); the instance sees the values as the dict
// `self.options`, set before __init__ runs.
//
// Errors: a missing file, a file that does not load, an unknown class or a
// bad key are InputErrors (exit 2); an exception raised by schedule() or
// shares(), or a plan that is not valid, is a PolicyError naming the
// policy, the call and the simulated time.
#pragma once

#include <stdexcept>
#include <string>

#include <pybind11/pybind11.h>

namespace fairgpu::python {

class PolicyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Registers the `py` plugin. Idempotent.
void register_python_policies();

// How the plugin gets an interpreter when none is running: the program
// embeds one (embed.cc); the module runs inside one already.
void set_interpreter_starter(void (*start)());

// The fairgpu module's contents (types, functions), for PYBIND11_MODULE and
// the embedded module alike.
void bind_module(pybind11::module_& m);

// "ValueError: bad key (fifo.py:12)": the pending Python error in one line,
// with the innermost frame of its traceback.
std::string describe(pybind11::error_already_set& e);

}  // namespace fairgpu::python
