// The `fairgpu` program: the command line (main.cc), with Python policies
// when built with them (`--policy py:FILE:CLASS`, docs/python.md).
#include "cli/in_process.h"
#ifdef FAIRGPU_HAVE_PYTHON
#include "python/embed.h"
#endif

int main(int argc, char** argv) {
#ifdef FAIRGPU_HAVE_PYTHON
  fairgpu::python::enable_embedded_python();
#endif
  return fairgpu::cli::program_main(argc, argv);
}
