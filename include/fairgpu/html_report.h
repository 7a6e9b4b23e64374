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
#include <utility>
#include <vector>

namespace fairgpu {

// How report.html draws its figures.
struct ReportOptions {
  // The axes that may be logarithmic (CDFs' x, time series' y, a sweep's
  // variable and metrics): auto (log where the values are positive and span
  // two decades or more), linear, or log (non-positive points left out).
  std::string axes = "auto";
  bool pdf = true;  // figures/<id>.pdf beside each SVG, where rsvg-convert is on PATH
};

// The page and each of its figures as a file of its own (name, SVG text).
struct Report {
  std::string html;
  std::vector<std::pair<std::string, std::string>> figures;
};

// Reads `dir`: with a compare.csv, one run per row in its sub-folder (column
// `folder`); else one run in `dir` itself (summary.json). Per run it reads
// summary.json and jobs.csv, and when present utilisation.csv, tenants.csv
// and tenant_windows.csv (a plot whose file is absent is replaced by a line
// saying so); a sweep.csv adds the sweep's table. Each series is reduced to
// at most a few hundred points, so the page stays small whatever the run's
// length. Throws InputError naming the file (and line, column) for a missing
// or malformed file.
Report build_report(const std::string& dir, const ReportOptions& options = {});
inline std::string html_report(const std::string& dir, const ReportOptions& options = {}) {
  return build_report(dir, options).html;
}

// Throws InputError (field figure-axes) for an axes value other than
// auto, linear or log: a command checks it before its runs.
void check_report_options(const ReportOptions& options);

// Builds the report of `dir` and writes report.html and figures/<id>.svg
// (the figures of an earlier report removed first), and figures/<id>.pdf
// when options.pdf and rsvg-convert (Debian's librsvg2-bin) is on PATH.
// Returns notes for stderr ("" or lines ending in a newline), e.g. that the
// PDFs were skipped. Throws InputError for bad options or input files,
// std::runtime_error when a file cannot be written.
std::string write_report(const std::string& dir, const ReportOptions& options = {});

}  // namespace fairgpu
