// Line charts as inline SVG for report.html: axes with round ticks, one
// polyline per series, a legend; no script, no external resource. Each data
// series is a <polyline class="series" data-points="N">, so a test (or a
// reader's tool) can count what was drawn.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace fairgpu::report {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
};

struct Chart {
  std::string id;  // the <svg>'s id
  std::string title, x_label, y_label;
  std::vector<Series> series = {};
  // Fixed axis ends; NaN: from the data (with 0 included on y).
  double y_min = 0.0;
  double y_max = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> reference_y = {};  // dashed horizontal lines, e.g. rho = 1
};

// True when some series has a finite point to draw.
bool has_data(const Chart& chart);

// The chart as one <svg class="plot"> element. Non-finite points are left
// out; a chart without data is still drawn (empty axes).
std::string svg_line_chart(const Chart& chart);

// XML/HTML text escaping of &, <, >, " and '.
std::string escape_xml(const std::string& text);

}  // namespace fairgpu::report
