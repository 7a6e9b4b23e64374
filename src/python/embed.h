// The program's `py:` policies (embed.cc).
#pragma once

namespace fairgpu::python {

// Registers the `py` plugin, with an interpreter started on first use.
void enable_embedded_python();

}  // namespace fairgpu::python
