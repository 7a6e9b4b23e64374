// `fairgpu generate --style shockwave` (src/trace/shockwave_generator.cc).
#pragma once

#include "fairgpu/workload.h"

namespace fairgpu {

Workload generate_shockwave_workload(const GeneratorOptions& options,
                                     const ProfileCatalogue& catalogue);

}  // namespace fairgpu
