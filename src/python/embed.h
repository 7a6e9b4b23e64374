// The program's `py:` policies (embed.cc).
#pragma once

#include <string>
#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu::python {

// Registers the `py` plugin, with an interpreter started on first use.
void enable_embedded_python();

// `fairgpu policies --py FILE`: the policy classes FILE defines (those with
// schedule or shares), in the file's order, each named py:FILE:CLASS, its
// description the docstring's first paragraph, its keys resolved as a run
// would. InputError: FILE does not load, or defines no policy class.
std::vector<RoundPolicyInfo> python_policies_in(const std::string& file);

}  // namespace fairgpu::python
