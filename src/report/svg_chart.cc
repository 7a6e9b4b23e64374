// Inline SVG line charts (see svg_chart.h). No charting library in Debian
// fits a C++ program writing static SVG, so this is the least that draws a
// readable chart: linear axes with 1-2-5 ticks, polylines, a legend.
#include "report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fairgpu::report {
namespace {

constexpr double kWidth = 720, kHeight = 320;
constexpr double kLeft = 64, kRight = 190, kTop = 34, kBottom = 48;

// Ten distinguishable colours (Tableau 10), cycled.
const char* colour(std::size_t i) {
  static const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                   "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[i % 10];
}

// A round step (1, 2 or 5 times a power of ten) giving about `count` ticks.
double nice_step(double span, int count) {
  if (!(span > 0)) return 1.0;
  const double raw = span / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / power;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * power;
}

std::string tick_label(double v) {
  if (std::abs(v) < 1e-12) v = 0;
  return fmt::format("{:g}", v);
}

struct Range {
  double lo, hi;
};

// The axis range of the data, widened to whole ticks.
Range axis(double lo, double hi, int ticks) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, ticks);
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step};
}

}  // namespace

std::string escape_xml(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

bool has_data(const Chart& chart) {
  for (const Series& s : chart.series)
    for (const auto& [x, y] : s.points)
      if (std::isfinite(x) && std::isfinite(y)) return true;
  return false;
}

std::string svg_line_chart(const Chart& chart) {
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const Series& s : chart.series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_lo = std::min(y_lo, y);
      y_hi = std::max(y_hi, y);
    }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  for (double r : chart.reference_y) y_lo = std::min(y_lo, r), y_hi = std::max(y_hi, r);
  if (std::isfinite(chart.y_min)) y_lo = std::min(y_lo, chart.y_min);
  if (std::isfinite(chart.y_max)) y_hi = chart.y_max;
  const Range xr = axis(x_lo, x_hi, 6);
  Range yr = axis(y_lo, y_hi, 5);
  if (std::isfinite(chart.y_min)) yr.lo = chart.y_min;
  if (std::isfinite(chart.y_max)) yr.hi = chart.y_max;

  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - xr.lo) / (xr.hi - xr.lo) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - (y - yr.lo) / (yr.hi - yr.lo) * plot_h; };

  std::string out = fmt::format(
      "<svg class=\"plot\" id=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\">\n",
      escape_xml(chart.id), kWidth, kHeight, kWidth, kHeight, escape_xml(chart.title));
  out += fmt::format("<text x=\"{}\" y=\"20\" class=\"title\">{}</text>\n", kLeft,
                     escape_xml(chart.title));
  // Grid and ticks.
  const double xs = nice_step(xr.hi - xr.lo, 6), ys = nice_step(yr.hi - yr.lo, 5);
  for (double x = xr.lo; x <= xr.hi + xs * 1e-6; x += xs) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        px(x), kTop, kTop + plot_h, kTop + plot_h + 16, tick_label(x));
  }
  for (double y = yr.lo; y <= yr.hi + ys * 1e-6; y += ys) {
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>"
        "<text class=\"tick\" x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, py(y), kLeft + plot_w, kLeft - 6, py(y) + 4, tick_label(y));
  }
  out += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>\n",
                     kLeft, kTop, plot_w, plot_h);
  out += fmt::format("<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     kLeft + plot_w / 2, kHeight - 8, escape_xml(chart.x_label));
  out += fmt::format(
      "<text class=\"axis\" transform=\"translate(14 {}) rotate(-90)\" "
      "text-anchor=\"middle\">{}</text>\n",
      kTop + plot_h / 2, escape_xml(chart.y_label));
  for (double r : chart.reference_y)
    out += fmt::format(
        "<line class=\"reference\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>\n", kLeft,
        py(r), kLeft + plot_w);

  // Series, clipped to the plot area by value (a fixed y_max cuts outliers).
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    std::string points;
    std::size_t n = 0;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      const double cy = std::clamp(py(y), kTop, kTop + plot_h);
      points += fmt::format("{}{:.1f},{:.1f}", n ? " " : "", px(x), cy);
      ++n;
    }
    out += fmt::format(
        "<polyline class=\"series\" data-series=\"{}\" data-points=\"{}\" fill=\"none\" "
        "stroke=\"{}\" stroke-width=\"1.6\" points=\"{}\"/>\n",
        escape_xml(s.name), n, colour(i), points);
    if (n == 1) {  // a lone point has no line to show it
      const auto comma = points.find(',');
      out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n",
                         points.substr(0, comma), points.substr(comma + 1), colour(i));
    }
    const double ly = kTop + 8 + 16.0 * static_cast<double>(i);
    out += fmt::format(
        "<rect x=\"{}\" y=\"{:.1f}\" width=\"14\" height=\"4\" fill=\"{}\"/>"
        "<text class=\"legend\" x=\"{}\" y=\"{:.1f}\">{}</text>\n",
        kLeft + plot_w + 12, ly - 4, colour(i), kLeft + plot_w + 32, ly + 1,
        escape_xml(s.name.size() > 24 ? s.name.substr(0, 23) + "\u2026" : s.name));
  }
  out += "</svg>\n";
  return out;
}

}  // namespace fairgpu::report
