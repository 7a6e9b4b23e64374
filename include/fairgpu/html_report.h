// report.html: one self-contained page a researcher can open, print or
// publish, built from a results folder of `fairgpu simulate`, `compare` or
// `sweep`. Inline SVG only: no script, no stylesheet or font from elsewhere,
// readable with JavaScript off. It shows the runs' provenance, the compare
// table and its legend, then plots: JCT and FTF-rho CDFs per policy, cluster
// utilisation and GPUs idle while a job waited over time, per policy each
// tenant's GPU share and normalised throughput over time, and for
// time-sharing policies each tenant's rho per window (Astraea eq. 12).
#pragma once

#include <string>

namespace fairgpu {

// Reads `dir`: with a compare.csv, one run per row in its sub-folder (column
// `folder`); else one run in `dir` itself (summary.json). Per run it reads
// summary.json and jobs.csv, and when present utilisation.csv, tenants.csv
// and tenant_windows.csv (a plot whose file is absent is replaced by a line
// saying so); a sweep.csv adds the sweep's table. Each series is reduced to
// at most a few hundred points, so the page stays small whatever the run's
// length. Throws InputError naming the file (and line, column) for a missing
// or malformed file.
std::string html_report(const std::string& dir);

}  // namespace fairgpu
