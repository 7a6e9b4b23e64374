// The cells of fairgpu's CSV outputs (RFC 4180, see fairgpu/sim_report.h):
// one rule for reals and quoting shared by every writer of src/report and
// the sweep, so the same value prints the same in every file.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace fairgpu::csv {

// Up to 10 significant digits, shortest form, no locale; NaN is an empty
// cell and -0 prints as 0.
inline std::string num(double v) {
  if (std::isnan(v)) return "";
  if (v == 0) v = 0.0;
  return fmt::format("{:.10g}", v);
}

// Quoted when it holds a comma, quote or line break; quotes doubled.
inline std::string field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string quoted = "\"";
  for (char c : s) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// Appends the cells (already formatted) as one line.
inline void add_row(std::string& out, const std::vector<std::string>& cells) {
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i) out += ',';
    out += cells[i];
  }
  out += '\n';
}

}  // namespace fairgpu::csv
