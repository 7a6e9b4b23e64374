// Line charts as SVG for report.html and figures/: axes with round ticks
// (linear, or logarithmic where a series spans decades), one polyline per
// series with its own colour and dash pattern, optional shaded bands (95%
// CIs), reference lines, and a legend whose labels wrap but are never cut.
// No script, no external resource. Each data series is a
// <polyline class="series" data-series="NAME" data-points="N">, each legend
// label a <text class="legend" data-series="NAME"> of <tspan> lines, so a test
// (or a reader's tool) can check what was drawn.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace fairgpu::report {

// An axis' scale. `automatic`: logarithmic when every value on the axis is
// positive and the largest is at least kLogSpan times the smallest, else
// linear. `log` leaves out the points with a non-positive value on the axis.
enum class AxisScale { linear, automatic, log };
constexpr double kLogSpan = 100.0;  // two decades

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
  // Optional (lower, upper) per point: a shaded band (e.g. a 95% CI).
  std::vector<std::pair<double, double>> band = {};
};

struct ReferenceLine {
  double at;
  std::string label;  // drawn beside the line, e.g. "rho = 1"
};

struct Chart {
  std::string id;  // the <svg>'s id and the figure's file name (figures/<id>.svg)
  std::string title, x_label, y_label;
  std::vector<Series> series = {};
  // Fixed axis ends; NaN: from the data (with 0 included on a linear y).
  double y_min = 0.0;
  double y_max = std::numeric_limits<double>::quiet_NaN();
  std::vector<ReferenceLine> reference_y = {};  // dashed horizontal lines
  std::vector<ReferenceLine> reference_x = {};  // dashed vertical lines
  AxisScale x_scale = AxisScale::linear, y_scale = AxisScale::linear;
  // Each series drawn on top of the ones before it as a filled area (shares
  // of a whole); the series share their x values, index by index. Linear y.
  bool stacked = false;
};

// Series i's stroke: kDistinctStyles (colour, dash) pairs, all different;
// the first ten solid lines in ten colours, then the colours again dashed.
struct SeriesStyle {
  const char* colour;
  const char* dash;  // stroke-dasharray; "" for a solid line
};
constexpr std::size_t kDistinctStyles = 60;
SeriesStyle series_style(std::size_t i);

// Whether `scale` draws `values` (finite ones) on a logarithmic axis.
bool use_log(AxisScale scale, const std::vector<double>& values);

// `label` cut into lines of at most `width` characters, preferably after a
// separator (: / , = _ - space); the lines joined give `label` back.
std::vector<std::string> wrap_label(const std::string& label, std::size_t width);

// True when some series has a finite point to draw.
bool has_data(const Chart& chart);

// The chart as one <svg class="plot"> element (inline in HTML). Non-finite
// points are left out; a chart without data is still drawn (empty axes).
// `standalone`: a file of its own (XML declaration and SVG namespace).
std::string svg_line_chart(const Chart& chart, bool standalone = false);

// XML/HTML text escaping of &, <, >, " and '.
std::string escape_xml(const std::string& text);

}  // namespace fairgpu::report
