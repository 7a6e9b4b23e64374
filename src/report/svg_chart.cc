// SVG line charts (see svg_chart.h). No charting library in Debian fits a
// C++ program writing static SVG, so this is the least that draws a chart a
// paper can use: 1-2-5 or decade ticks, polylines told apart by colour and
// dash, shaded bands, reference lines and a legend that wraps. Styles are
// presentation attributes, not CSS, so a figure file looks the same alone
// (and through rsvg-convert) as inside report.html.
#include "report/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fairgpu::report {
namespace {

constexpr double kWidth = 720, kLeft = 64, kRight = 220, kBottom = 48, kPlotH = 238;
constexpr double kLegendLine = 13, kLegendGap = 5;
constexpr double kLegendCharW = 7.0;  // px per character at 11px: DejaVu Sans' digits and more
constexpr double kTitleCharW = 8.0;   // at 13px bold

// Tableau 10: distinguishable, and readable by most colour-blind readers.
constexpr const char* kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr const char* kDashes[] = {"", "8 4", "2 3", "9 3 2 3", "14 4", "4 2 1 2 1 2"};
constexpr std::size_t kColourCount = std::size(kColours), kDashCount = std::size(kDashes);
static_assert(kColourCount * kDashCount == kDistinctStyles);

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

// One axis: its ends, scale, ticks, and the map from value to [0, 1].
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;
  double fraction(double v) const {
    return log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
               : (v - lo) / (hi - lo);
  }
  bool drawable(double v) const { return std::isfinite(v) && (!log || v > 0); }
};

// Linear: the data's range widened to whole ticks. Log: whole decades, a
// tick per decade (every k-th when many), with 2 and 5 between when few.
Axis make_axis(double lo, double hi, bool log, int count) {
  Axis a;
  a.log = log;
  if (log) {
    double d0 = std::floor(std::log10(lo) + 1e-9), d1 = std::ceil(std::log10(hi) - 1e-9);
    if (d1 <= d0) d1 = d0 + 1;
    a.lo = std::pow(10.0, d0);
    a.hi = std::pow(10.0, d1);
    const int decades = static_cast<int>(d1 - d0);
    const int every = std::max(1, (decades + 7) / 8);
    for (int d = 0; d <= decades; d += every) {
      const double p = std::pow(10.0, d0 + d);
      a.ticks.push_back(p);
      if (decades <= 2 && d < decades) a.ticks.push_back(2 * p), a.ticks.push_back(5 * p);
    }
    return a;
  }
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1.0 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double step = nice_step(hi - lo, count);
  a.lo = std::floor(lo / step + 1e-9) * step;
  a.hi = std::ceil(hi / step - 1e-9) * step;
  return a;
}

void linear_ticks(Axis& a, int count) {
  const double step = nice_step(a.hi - a.lo, count);
  for (double v = a.lo; v <= a.hi + step * 1e-6; v += step) a.ticks.push_back(v);
}

bool is_break(char c) { return std::string_view(":/,=_- ;|").find(c) != std::string_view::npos; }

}  // namespace

SeriesStyle series_style(std::size_t i) {
  i %= kDistinctStyles;
  return {kColours[i % kColourCount], kDashes[i / kColourCount]};
}

bool use_log(AxisScale scale, const std::vector<double>& values) {
  if (scale == AxisScale::linear) return false;
  if (scale == AxisScale::log) return true;
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    if (v <= 0) return false;
    lo = std::min(lo, v), hi = std::max(hi, v);
  }
  return std::isfinite(lo) && hi >= kLogSpan * lo;
}

std::vector<std::string> wrap_label(const std::string& label, std::size_t width) {
  width = std::max<std::size_t>(width, 4);
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (label.size() - at > width) {
    std::size_t cut = at + width;  // a hard break unless a separator is in the second half
    for (std::size_t i = at + width; i > at + width / 2; --i)
      if (is_break(label[i - 1])) {
        cut = i;
        break;
      }
    lines.push_back(label.substr(at, cut - at));
    at = cut;
  }
  lines.push_back(label.substr(at));
  return lines;
}

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

// A stacked chart as bands: series i's band spans the sum of the series
// before it to that sum plus its own value, its line the upper edge.
namespace {
Chart stack(Chart chart) {
  std::vector<double> sum;
  for (Series& s : chart.series) {
    s.band.clear();
    if (sum.size() < s.points.size()) sum.resize(s.points.size(), 0.0);
    for (std::size_t k = 0; k < s.points.size(); ++k) {
      const double y = std::isfinite(s.points[k].second) ? s.points[k].second : 0.0;
      s.band.emplace_back(sum[k], sum[k] + y);
      sum[k] += y;
      s.points[k].second = sum[k];
    }
  }
  chart.y_scale = AxisScale::linear;
  return chart;
}
}  // namespace

std::string svg_line_chart(const Chart& input, bool standalone) {
  const Chart chart = input.stacked ? stack(input) : input;
  const double band_opacity = input.stacked ? 0.5 : 0.18;
  // Scales from the series' finite points, then ranges from the values the
  // scales can draw; bands widen a linear range (a log one clips them).
  std::vector<double> xs, ys;
  for (const Series& s : chart.series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xs.push_back(x);
      ys.push_back(y);
    }
  const bool x_log = use_log(chart.x_scale, xs), y_log = use_log(chart.y_scale, ys);
  if (!y_log)
    for (const Series& s : chart.series)
      for (const auto& [lo, hi] : s.band) ys.push_back(lo), ys.push_back(hi);
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  auto widen = [](double& lo, double& hi, double v, bool log) {
    if (std::isfinite(v) && (!log || v > 0)) lo = std::min(lo, v), hi = std::max(hi, v);
  };
  for (double x : xs) widen(x_lo, x_hi, x, x_log);
  for (double y : ys) widen(y_lo, y_hi, y, y_log);
  for (const auto& r : chart.reference_x) widen(x_lo, x_hi, r.at, x_log);
  for (const auto& r : chart.reference_y) widen(y_lo, y_hi, r.at, y_log);
  if (!std::isfinite(x_lo)) x_lo = 1, x_hi = 10;
  if (!std::isfinite(y_lo)) y_lo = 1, y_hi = 10;
  if (!y_log && std::isfinite(chart.y_min)) y_lo = std::min(y_lo, chart.y_min);
  if (std::isfinite(chart.y_max) && (!y_log || chart.y_max > 0)) y_hi = chart.y_max;
  Axis xa = make_axis(x_lo, x_hi, x_log, 6), ya = make_axis(y_lo, y_hi, y_log, 5);
  if (!y_log && std::isfinite(chart.y_min)) ya.lo = chart.y_min;
  if (std::isfinite(chart.y_max) && (!y_log || chart.y_max > 0)) ya.hi = chart.y_max;
  if (!x_log) linear_ticks(xa, 6);
  if (!y_log) linear_ticks(ya, 5);

  const double plot_w = kWidth - kLeft - kRight;
  const auto title_lines =
      wrap_label(chart.title, static_cast<std::size_t>((kWidth - kLeft - 8) / kTitleCharW));
  const double top = 34 + 16.0 * double(title_lines.size() - 1);
  const double legend_x = kLeft + plot_w + 12, text_x = legend_x + 24;
  const auto legend_chars = static_cast<std::size_t>((kWidth - text_x - 6) / kLegendCharW);
  double legend_bottom = top + 10;
  std::vector<std::vector<std::string>> legend_lines;
  for (const Series& s : chart.series) {
    legend_lines.push_back(wrap_label(s.name, legend_chars));
    legend_bottom += kLegendLine * double(legend_lines.back().size()) + kLegendGap;
  }
  const double height = std::max(top + kPlotH + kBottom, legend_bottom + 8);
  auto px = [&](double x) { return kLeft + xa.fraction(x) * plot_w; };
  auto py = [&](double y) {
    return std::clamp(top + kPlotH - ya.fraction(y) * kPlotH, top, top + kPlotH);
  };

  std::string out;
  if (standalone) out += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<svg {}class=\"plot\" id=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"{}\" font-family=\"DejaVu Sans, sans-serif\" font-size=\"11\">\n"
      "<rect width=\"{}\" height=\"{}\" fill=\"#fff\"/>\n",
      standalone ? "xmlns=\"http://www.w3.org/2000/svg\" " : "", escape_xml(chart.id), kWidth,
      height, kWidth, height, escape_xml(chart.title), kWidth, height);
  out += fmt::format(
      "<text class=\"title\" x=\"{}\" y=\"20\" font-size=\"13\" font-weight=\"bold\">", kLeft);
  for (std::size_t i = 0; i < title_lines.size(); ++i)
    out += fmt::format("<tspan x=\"{}\"{}>{}</tspan>", kLeft, i ? " dy=\"16\"" : "",
                       escape_xml(title_lines[i]));
  out += "</text>\n";
  // Grid and ticks.
  for (double x : xa.ticks)
    out += fmt::format(
        "<line class=\"grid\" stroke=\"#e6e6e6\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" "
        "y2=\"{2}\"/><text class=\"tick\" fill=\"#555\" x=\"{0:.1f}\" y=\"{3}\" "
        "text-anchor=\"middle\">{4}</text>\n",
        px(x), top, top + kPlotH, top + kPlotH + 16, tick_label(x));
  for (double y : ya.ticks)
    out += fmt::format(
        "<line class=\"grid\" stroke=\"#e6e6e6\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" "
        "y2=\"{1:.1f}\"/><text class=\"tick\" fill=\"#555\" x=\"{3}\" y=\"{4:.1f}\" "
        "text-anchor=\"end\">{5}</text>\n",
        kLeft, py(y), kLeft + plot_w, kLeft - 6, py(y) + 4, tick_label(y));
  out += fmt::format(
      "<rect class=\"frame\" fill=\"none\" stroke=\"#888\" x=\"{}\" y=\"{}\" width=\"{}\" "
      "height=\"{}\"/>\n",
      kLeft, top, plot_w, kPlotH);
  out += fmt::format("<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>\n",
                     kLeft + plot_w / 2, top + kPlotH + 38, escape_xml(chart.x_label),
                     x_log ? " (log scale)" : "");
  out += fmt::format(
      "<text class=\"axis\" transform=\"translate(14 {}) rotate(-90)\" "
      "text-anchor=\"middle\">{}{}</text>\n",
      top + kPlotH / 2, escape_xml(chart.y_label), y_log ? " (log scale)" : "");

  // Bands first, so every line stays on top of them.
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    std::string upper, lower;
    for (std::size_t k = 0; k < s.points.size() && k < s.band.size(); ++k) {
      const double x = s.points[k].first;
      const auto [lo, hi] = s.band[k];
      if (!xa.drawable(x) || !std::isfinite(lo) || !std::isfinite(hi)) continue;
      upper += fmt::format("{:.1f},{:.1f} ", px(x), ya.drawable(hi) ? py(hi) : top + kPlotH);
      lower.insert(0,
                   fmt::format("{:.1f},{:.1f} ", px(x), ya.drawable(lo) ? py(lo) : top + kPlotH));
    }
    if (!upper.empty())
      out += fmt::format(
          "<polygon class=\"band\" data-series=\"{}\" fill=\"{}\" fill-opacity=\"{}\" "
          "stroke=\"none\" points=\"{}{}\"/>\n",
          escape_xml(s.name), series_style(i).colour, band_opacity, upper, lower);
  }
  for (const auto& r : chart.reference_y) {
    if (!ya.drawable(r.at)) continue;
    out += fmt::format(
        "<line class=\"reference\" stroke=\"#333\" stroke-dasharray=\"5 3\" x1=\"{0}\" "
        "y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/><text class=\"reference-label\" fill=\"#333\" "
        "x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, py(r.at), kLeft + plot_w, kLeft + plot_w - 4, py(r.at) - 4, escape_xml(r.label));
  }
  for (const auto& r : chart.reference_x) {
    if (!xa.drawable(r.at)) continue;
    out += fmt::format(
        "<line class=\"reference\" stroke=\"#333\" stroke-dasharray=\"5 3\" x1=\"{0:.1f}\" "
        "y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/><text class=\"reference-label\" fill=\"#333\" "
        "x=\"{3:.1f}\" y=\"{4}\">{5}</text>\n",
        px(r.at), top, top + kPlotH, px(r.at) + 4, top + 12, escape_xml(r.label));
  }

  // Series, clipped to the plot area by value (a fixed y_max cuts outliers).
  double legend_y = top + 10;
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    const SeriesStyle style = series_style(i);
    const std::string dash =
        *style.dash ? fmt::format(" stroke-dasharray=\"{}\"", style.dash) : std::string();
    std::string points;
    std::size_t n = 0;
    for (const auto& [x, y] : s.points) {
      if (!xa.drawable(x) || !ya.drawable(y)) continue;
      points += fmt::format("{}{:.1f},{:.1f}", n ? " " : "", px(x), py(y));
      ++n;
    }
    out += fmt::format(
        "<polyline class=\"series\" data-series=\"{}\" data-points=\"{}\" fill=\"none\" "
        "stroke=\"{}\"{} stroke-width=\"1.8\" points=\"{}\"/>\n",
        escape_xml(s.name), n, style.colour, dash, points);
    if (n == 1) {  // a lone point has no line to show it
      const auto comma = points.find(',');
      out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"{}\"/>\n",
                         points.substr(0, comma), points.substr(comma + 1), style.colour);
    }
    out += fmt::format(
        "<line class=\"swatch\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\""
        "{4} stroke-width=\"2.2\"/><text class=\"legend\" data-series=\"{5}\" x=\"{6}\" "
        "y=\"{7:.1f}\">",
        legend_x, legend_y - 4, legend_x + 20, style.colour, dash, escape_xml(s.name), text_x,
        legend_y);
    for (std::size_t l = 0; l < legend_lines[i].size(); ++l)
      out += fmt::format("<tspan x=\"{}\"{}>{}</tspan>", text_x,
                         l ? fmt::format(" dy=\"{}\"", kLegendLine) : std::string(),
                         escape_xml(legend_lines[i][l]));
    out += "</text>\n";
    legend_y += kLegendLine * double(legend_lines[i].size()) + kLegendGap;
  }
  out += "</svg>\n";
  return out;
}

}  // namespace fairgpu::report
