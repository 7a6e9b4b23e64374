// report.html of a results folder (see fairgpu/html_report.h). Everything is
// read back from the files a run wrote, so `fairgpu report DIR` rebuilds the
// same page the run did. Series are cut to at most kMaxPoints points: CDFs at
// evenly spaced ranks, time series as time-weighted averages over equal
// buckets, so a 1,000,000-job run gives a page of the same size as a small one.
#include "fairgpu/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/policy_options.h"
#include "fairgpu/scheduler.h"
#include "fairgpu/sim_report.h"
#include "report/svg_chart.h"
#include "trace/text_input.h"

namespace fairgpu {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;
using report::Chart;
using report::escape_xml;
using report::Series;

constexpr std::size_t kMaxPoints = 300;     // per series
// The tenants with most GPU time, the rest summed: ten areas, ten colours.
constexpr std::size_t kMaxTenantLines = 9;

// A CSV file of ours read column by column: the header names the columns.
class CsvColumns {
 public:
  explicit CsvColumns(const std::string& path) : table_(path, ',', true) {
    if (!table_.next()) table_.fail("", "no header line");
    header_ = table_.cells();
  }
  bool has(const std::string& column) const { return index(column) < header_.size(); }
  // Column position; fails naming the file when absent.
  std::size_t require(const std::string& column) const {
    const std::size_t i = index(column);
    if (i == header_.size()) throw InputError(table_.path(), column, "no such column");
    return i;
  }
  bool next() {
    if (!table_.next()) return false;
    if (table_.cells().size() != header_.size())
      table_.fail(
          "", fmt::format("{} cells, the header has {}", table_.cells().size(), header_.size()));
    return true;
  }
  const std::string& cell(std::size_t i) const { return table_.cells()[i]; }
  // A number, NaN for an empty cell; anything else is an error.
  double number(std::size_t i) const {
    const std::string& c = cell(i);
    if (c.empty()) return kUnset;
    auto v = text_input::to_double(c);
    if (!v) table_.fail(header_[i], fmt::format("'{}' is not a number", c));
    return *v;
  }
  const std::vector<std::string>& header() const { return header_; }

 private:
  std::size_t index(const std::string& column) const {
    return static_cast<std::size_t>(std::find(header_.begin(), header_.end(), column) -
                                    header_.begin());
  }
  text_input::LineTable table_;
  std::vector<std::string> header_;
};

// One run of the folder.
struct Run {
  std::string label;  // as in compare.csv (or the policy)
  fs::path dir;
  Json summary;
  bool time_sharing = false;
  std::string key = {};  // its figures' names: <key>-share, ... (file-name safe)
};

// `text` with every character but [A-Za-z0-9._-] written as '_'.
std::string file_safe(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  return out.empty() ? "run" : out;
}

// The figures of the page, each also a file of its own.
struct Figures {
  report::AxisScale eligible = report::AxisScale::automatic;  // for axes that may be log
  std::vector<std::pair<std::string, std::string>> files;
  // The chart inline (and kept as figures/<id>.svg), or a note when it has no data.
  std::string add(const Chart& chart) {
    if (!report::has_data(chart))
      return fmt::format("<p class=\"note\">{}: no data to plot.</p>\n", escape_xml(chart.title));
    files.emplace_back(chart.id + ".svg", report::svg_line_chart(chart, true));
    return "<figure>" + report::svg_line_chart(chart) + "</figure>\n";
  }
};

report::AxisScale parse_axes(const std::string& text) {
  if (text == "auto") return report::AxisScale::automatic;
  if (text == "linear") return report::AxisScale::linear;
  if (text == "log") return report::AxisScale::log;
  throw InputError("options", "figure-axes", fmt::format("'{}' is not auto, linear or log", text));
}

Json read_json(const fs::path& path) {
  const std::string text = text_input::read_text_file(path.string());
  return text_input::parse_json(text, path.string());
}

// ---- series reductions -------------------------------------------------------

// The empirical CDF of `values` (finite ones) at up to kMaxPoints evenly
// spaced ranks, the smallest and largest included: (value x scale, fraction <= value).
std::vector<std::pair<double, double>> cdf(std::vector<double> values, double scale) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
      values.end());
  std::sort(values.begin(), values.end());
  std::vector<std::pair<double, double>> out;
  const std::size_t n = values.size();
  if (n == 0) return out;
  const std::size_t m = std::min(n, kMaxPoints);
  for (std::size_t k = 0; k < m; ++k) {
    const std::size_t rank = m == 1 ? n - 1 : k * (n - 1) / (m - 1);  // 0-based
    out.emplace_back(values[rank] * scale, double(rank + 1) / double(n));
  }
  return out;
}

// Samples of a quantity over [start, end) intervals, averaged over equal
// time buckets: bucket b holds ∫ value dt / bucket length (0 where no sample
// covers it), plotted at its middle in hours from `origin`.
class Buckets {
 public:
  Buckets(double t0, double t1, std::size_t samples)
      : t0_(t0),
        width_((t1 - t0) / double(std::max<std::size_t>(1, std::min(samples, kMaxPoints)))),
        count_(std::max<std::size_t>(1, std::min(samples, kMaxPoints))) {
    if (!(width_ > 0)) width_ = 1.0;
  }
  std::vector<double> empty() const { return std::vector<double>(count_, 0.0); }
  // Adds value x the overlap of [a, b) with each bucket.
  void add(std::vector<double>& acc, double a, double b, double value) const {
    if (!(b > a) || !std::isfinite(value)) return;
    auto first = static_cast<std::size_t>(std::max(0.0, std::floor((a - t0_) / width_)));
    for (std::size_t i = first; i < count_; ++i) {
      const double lo = t0_ + width_ * double(i), hi = lo + width_;
      if (lo >= b) break;
      const double overlap = std::min(b, hi) - std::max(a, lo);
      if (overlap > 0) acc[i] += value * overlap;
    }
  }
  std::vector<std::pair<double, double>> points(const std::vector<double>& acc, double origin,
                                                double scale = 1.0) const {
    std::vector<std::pair<double, double>> out;
    for (std::size_t i = 0; i < count_; ++i)
      out.emplace_back((t0_ + width_ * (double(i) + 0.5) - origin) / 3600.0,
                       acc[i] / width_ * scale);
    return out;
  }

 private:
  double t0_, width_;
  std::size_t count_;
};

// ---- per-run plots ------------------------------------------------------------

struct JobColumns {
  std::vector<double> jct_s, ftf_rho;
};

JobColumns read_jobs(const Run& run) {
  CsvColumns csv((run.dir / "jobs.csv").string());
  const std::size_t jct = csv.require("jct"), ftf = csv.require("ftf_rho");
  JobColumns out;
  while (csv.next()) {
    out.jct_s.push_back(csv.number(jct));
    out.ftf_rho.push_back(csv.number(ftf));
  }
  return out;
}

struct TimeSeries {
  Series utilisation, idle_waiting;
};

// utilisation.csv: utilisation and the GPUs idle while a waiting job could
// use them, time-averaged per bucket.
TimeSeries read_utilisation(const Run& run, const fs::path& path, double origin) {
  TimeSeries out;
  out.utilisation.name = out.idle_waiting.name = run.label;
  struct Row {
    double start, end, util, idle;
  };
  std::vector<Row> rows;
  {
    CsvColumns csv(path.string());
    const std::size_t s = csv.require("start"), e = csv.require("end"),
                      u = csv.require("utilisation"), iw = csv.require("idle_waiting_gpu_seconds");
    while (csv.next())
      rows.push_back({csv.number(s), csv.number(e), csv.number(u), csv.number(iw)});
  }
  if (rows.empty()) return out;
  Buckets b(rows.front().start, rows.back().end, rows.size());
  auto util = b.empty(), idle = b.empty();
  for (const Row& r : rows) {
    b.add(util, r.start, r.end, r.util * 100.0);
    if (r.end > r.start) b.add(idle, r.start, r.end, r.idle / (r.end - r.start));
  }
  out.utilisation.points = b.points(util, origin);
  out.idle_waiting.points = b.points(idle, origin);
  return out;
}

// The top tenants by `weight_of` (descending, then name), the rest summed.
std::vector<std::string> top_tenants(const std::map<std::string, double>& weight_of) {
  std::vector<std::pair<std::string, double>> all(weight_of.begin(), weight_of.end());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < all.size() && i < kMaxTenantLines; ++i) out.push_back(all[i].first);
  return out;
}

// tenants.csv: per tenant GPU share (% of all GPUs) and normalised throughput
// over time, the kMaxTenantLines tenants holding most GPU time by name, the
// others summed as "other tenants".
struct TenantCharts {
  Chart share, throughput;
  std::vector<std::string> top;  // the tenants drawn, by GPU time; the rho panel draws the same
};

TenantCharts tenant_charts(const Run& run, const fs::path& path, double origin, int total_gpus,
                           const std::string& id, report::AxisScale y_scale) {
  struct Row {
    double start, end, gpus, tput;
    std::string tenant;
  };
  std::vector<Row> rows;
  std::map<std::string, double> gpu_time;
  std::size_t distinct_starts = 0;
  double t0 = INFINITY, t1 = -INFINITY, last_start = kUnset;
  {
    CsvColumns csv(path.string());
    const std::size_t s =
        csv.has("round_start") ? csv.require("round_start") : csv.require("start");
    const std::size_t e = csv.has("round_end") ? csv.require("round_end") : csv.require("end");
    const std::size_t tn = csv.require("tenant"), tp = csv.require("normalised_throughput");
    std::vector<std::size_t> gpu_columns;
    for (std::size_t i = 0; i < csv.header().size(); ++i)
      if (csv.header()[i].rfind("gpus_", 0) == 0) gpu_columns.push_back(i);
    while (csv.next()) {
      Row r{csv.number(s), csv.number(e), 0.0, csv.number(tp), csv.cell(tn)};
      for (std::size_t g : gpu_columns) r.gpus += csv.number(g);
      if (!(r.start == last_start)) ++distinct_starts, last_start = r.start;
      t0 = std::min(t0, r.start);
      t1 = std::max(t1, r.end);
      gpu_time[r.tenant] += r.gpus * (r.end - r.start);
      rows.push_back(std::move(r));
    }
  }
  Chart share{id + "-share",
              run.label + ": GPU share per tenant (stacked)",
              "hours since the first arrival",
              "% of all GPUs held (stacked)",
              {}};
  Chart tput{id + "-throughput",
             run.label + ": normalised throughput per tenant",
             "hours since the first arrival",
             "normalised throughput (K80 = 1 per GPU)",
             {}};
  share.stacked = true;  // the top edge is the cluster's utilisation
  tput.y_scale = y_scale;
  if (rows.empty()) return {share, tput, {}};
  const std::vector<std::string> top = top_tenants(gpu_time);
  const bool others = gpu_time.size() > top.size();
  Buckets b(t0, t1, distinct_starts);
  std::vector<std::vector<double>> gpus(top.size() + others, b.empty()),
      th(top.size() + others, b.empty());
  for (const Row& r : rows) {
    std::size_t line =
        static_cast<std::size_t>(std::find(top.begin(), top.end(), r.tenant) - top.begin());
    if (line == top.size() && !others) continue;
    b.add(gpus[line], r.start, r.end, total_gpus > 0 ? 100.0 * r.gpus / total_gpus : 0.0);
    b.add(th[line], r.start, r.end, r.tput);
  }
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::string name =
        i < top.size() ? top[i] : fmt::format("other tenants ({})", gpu_time.size() - top.size());
    share.series.push_back({name, b.points(gpus[i], origin)});
    tput.series.push_back({name, b.points(th[i], origin)});
  }
  return {share, tput, top};
}

// tenant_windows.csv: ρ_tenant per window (Astraea eq. 12) of `tenants` (those
// of the share panels), or without them of the tenants with most fair GPU time.
Chart rho_chart(const Run& run, const fs::path& path, double origin, const std::string& id,
                const std::vector<std::string>& tenants, report::AxisScale y_scale) {
  Chart chart{id + "-rho",
              run.label + ": tenant rho per window (Astraea eq. 12)",
              "hours since the first arrival (window middle)",
              "rho_tenant = held / fair GPU time",
              {}};
  chart.reference_y = {{1.0, "rho = 1"}};
  chart.y_scale = y_scale;
  std::map<std::string, std::vector<std::pair<double, double>>> points;
  std::map<std::string, double> fair;
  CsvColumns csv(path.string());
  const std::size_t s = csv.require("window_start"), e = csv.require("window_end"),
                    tn = csv.require("tenant"), f = csv.require("fair_gpu_seconds"),
                    r = csv.require("rho");
  while (csv.next()) {
    const double rho = csv.number(r);
    fair[csv.cell(tn)] += csv.number(f);
    if (std::isfinite(rho))
      points[csv.cell(tn)].emplace_back(((csv.number(s) + csv.number(e)) / 2 - origin) / 3600.0,
                                        rho);
  }
  for (const std::string& tenant : tenants.empty() ? top_tenants(fair) : tenants) {
    auto& p = points[tenant];
    if (p.size() > kMaxPoints) {  // every k-th window
      std::vector<std::pair<double, double>> thin;
      const std::size_t step = (p.size() + kMaxPoints - 1) / kMaxPoints;
      for (std::size_t i = 0; i < p.size(); i += step) thin.push_back(p[i]);
      p = std::move(thin);
    }
    chart.series.push_back({tenant, p});
  }
  return chart;
}

// ---- page -----------------------------------------------------------------------

std::string note(const std::string& text) {
  return "<p class=\"note\">" + escape_xml(text) + "</p>\n";
}

std::string json_text(const Json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

// A sweep's own provenance (sweep.json): its command, grid and every input.
std::string sweep_provenance_rows(const Json& p) {
  std::string out;
  auto row = [&out](const std::string& k, const std::string& v) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", escape_xml(k), escape_xml(v));
  };
  auto joined = [](const Json& list, bool quote) {
    std::string text;
    for (const auto& item : list) {
      std::string t = json_text(item);
      if (quote && (t.empty() || t.find_first_of(" \t'\"") != std::string::npos)) t = "'" + t + "'";
      text += (text.empty() ? "" : " ") + t;
    }
    return text;
  };
  row("fairgpu version", json_text(p.value("fairgpu_version", Json("?"))));
  row("command", "fairgpu sweep " + joined(p.value("arguments", Json::array()), true));
  row("seeds", joined(p.value("seeds", Json::array()), false));
  row("variants", joined(p.value("variants", Json::array()), false));
  row("runs", json_text(p.value("runs", Json("?"))));
  for (const auto& in : p.value("inputs", Json::array()))
    row("input: " + json_text(in.value("role", Json("?"))),
        json_text(in.value("path", Json("?"))) + "  sha256 " +
            json_text(in.value("sha256", Json("?"))));
  return out;
}

// The folder's provenance: a sweep's own (sweep.json) when given, else the
// first run's; then each run's policy parameters.
std::string provenance_html(const std::vector<Run>& runs, const Json& sweep) {
  const Json& p = runs.front().summary.contains("provenance") ? runs.front().summary["provenance"]
                                                              : Json::object();
  if (p.empty() && sweep.empty()) return note("No provenance recorded in summary.json.");
  std::string out = "<h2>Provenance</h2>\n<table class=\"prov\">\n";
  auto row = [&out](const std::string& k, const std::string& v) {
    out += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", escape_xml(k), escape_xml(v));
  };
  if (!sweep.empty()) {
    out += sweep_provenance_rows(sweep);
  } else {
    row("fairgpu version", json_text(p.value("fairgpu_version", Json("?"))));
    row("command", json_text(p.value("command", Json("?"))));
    row("seed", json_text(p.value("seed", Json("?"))));
    row("workload", json_text(p.value("workload", Json("?"))));
    if (p.contains("inputs"))
      for (const auto& in : p["inputs"])
        row("input: " + json_text(in.value("role", Json("?"))),
            json_text(in.value("path", Json("?"))) + "  sha256 " +
                json_text(in.value("sha256", Json("?"))));
    if (p.contains("options")) {
      std::string opts;
      for (const auto& [k, v] : p["options"].items())
        opts += fmt::format("{}{}={}", opts.empty() ? "" : ", ", k, json_text(v));
      row("options", opts);
    }
  }
  for (const Run& r : runs) {
    if (!r.summary.contains("provenance")) continue;
    const Json& pol = r.summary["provenance"].value("policy", Json::object());
    std::string params;
    const Json parameters = pol.value("parameters", Json::object());
    for (const auto& [k, v] : parameters.items())
      params += fmt::format("{}{}={}", params.empty() ? "" : " ", k, json_text(v));
    row("policy " + r.label, params);
  }
  return out + "</table>\n";
}

std::string compare_html(const std::vector<Run>& runs) {
  std::string out = "<h2>Comparison</h2>\n<table class=\"compare\">\n<tr><th>policy</th>";
  std::vector<CompareColumnInfo> columns;
  for (const auto& c : compare_column_info())
    if (c.in_table) columns.push_back(c);
  for (const auto& c : columns)
    out += fmt::format("<th>{}<br>{}</th>", escape_xml(c.top), escape_xml(c.bottom));
  out += "</tr>\n";
  for (const Run& r : runs) {
    out += "<tr><td class=\"name\">" + escape_xml(r.label) + "</td>";
    for (const auto& c : columns) {
      const Json v = r.summary.value(c.key, Json());
      out +=
          "<td>" +
          (v.is_number() ? table_cell(v.get<double>() * c.scale, c.precision) : std::string("-")) +
          "</td>";
    }
    out += "</tr>\n";
  }
  out += "</table>\n<pre class=\"legend\">" + escape_xml(compare_legend(false)) + "</pre>\n";
  return out;
}

bool is_time_sharing(const std::string& specifier) {
  std::string name;
  try {
    name = parse_policy_specifier(specifier).name;
  } catch (const InputError&) {
    return false;
  }
  for (const RoundPolicyInfo& info : round_policy_catalogue())
    if (info.name == name) return !info.share;
  return false;
}

// A relative sub-folder of a results folder, checked.
fs::path sub_folder(const fs::path& dir, const std::string& sub, const std::string& file) {
  if (sub.empty() || fs::path(sub).is_absolute() || sub.find("..") != std::string::npos)
    throw InputError(file, "folder", fmt::format("'{}' is not a sub-folder", sub));
  return dir / sub;
}

// A sweep run's folder, runs/<variant>/<policy>/seed-<s>, less "runs/".
std::string sweep_run_key(const std::string& folder) {
  const std::string rel = fs::path(folder).lexically_relative("runs").string();
  return rel.empty() || rel.rfind("..", 0) == 0 ? folder : rel;
}

// One row of sweep.csv: its policy, variant values and per metric (mean, CI).
struct SweepRow {
  std::string policy;
  std::map<std::string, std::string> variant;  // load, cluster, round_s: "" when not swept
  std::vector<std::pair<double, double>> stats;
};

// Per swept number (load, round_s) taking two values or more, each metric's
// mean against it, one line per policy (and other variant), its 95% CI as a
// band.
std::string sweep_plots_html(const std::vector<SweepRow>& rows,
                             const std::vector<CompareColumnInfo>& columns, Figures& figures) {
  std::string out;
  for (const char* var : {"load", "round_s"}) {
    std::map<double, int> values;
    for (const SweepRow& r : rows) {
      const auto v = text_input::to_double(r.variant.at(var));
      if (v) values[*v] = 1;
    }
    if (values.size() < 2) continue;
    const std::string name = std::string(var) == "load" ? "offered load" : "round length (s)";
    out += fmt::format("<h2>Sweep: each metric against the {}</h2>\n", escape_xml(name));
    out += note("Mean over the seeds; the shaded band is its 95% confidence interval.");
    for (std::size_t c = 0; c < columns.size(); ++c) {
      Chart chart{"sweep-" + file_safe(columns[c].key) + "-vs-" + var,
                  fmt::format("{} {} against the {}", columns[c].top, columns[c].bottom, name),
                  name,
                  columns[c].top + " " + columns[c].bottom,
                  {}};
      chart.x_scale = chart.y_scale = figures.eligible;
      std::map<std::string, std::vector<std::tuple<double, double, double>>> lines;
      std::vector<std::string> order;
      for (const SweepRow& r : rows) {
        const auto x = text_input::to_double(r.variant.at(var));
        if (!x) continue;
        std::string label = r.policy, rest;
        for (const auto& [k, v] : r.variant)
          if (k != var && !v.empty())
            rest += (rest.empty() ? "" : ", ") + k + " " + fs::path(v).filename().string();
        if (!rest.empty()) label += " [" + rest + "]";
        if (!lines.count(label)) order.push_back(label);
        const auto [mean, ci] = r.stats[c];
        lines[label].emplace_back(*x, mean * columns[c].scale, ci * columns[c].scale);
      }
      for (const std::string& label : order) {
        auto& pts = lines[label];
        std::sort(pts.begin(), pts.end());
        Series series{label, {}};
        for (const auto& [x, m, ci] : pts) {
          series.points.emplace_back(x, m);
          series.band.emplace_back(m - ci, m + ci);  // NaN (one seed): no band there
        }
        chart.series.push_back(std::move(series));
      }
      out += figures.add(chart);
    }
  }
  return out;
}

// sweep.csv: per row (policy and variant) the mean ± 95% CI of the compare
// table's metrics, and the plots of each metric against a swept number.
std::string sweep_html(const fs::path& path, std::vector<Run>* runs, Figures& figures) {
  CsvColumns csv(path.string());
  const std::size_t policy = csv.require("policy"), seeds = csv.require("seeds"),
                    folders = csv.require("folders");
  std::vector<std::pair<std::string, std::size_t>> variant_columns;
  for (const char* c : {"load", "cluster", "round_s"})
    if (csv.has(c)) variant_columns.emplace_back(c, csv.require(c));
  std::vector<CompareColumnInfo> columns;
  for (const auto& c : compare_column_info())
    if (c.in_table && csv.has(c.key + "_mean")) columns.push_back(c);
  std::string out =
      "<h2>Sweep: mean &#177; 95% confidence interval over seeds (Student's t)</h2>\n"
      "<table class=\"compare\">\n<tr><th>policy</th><th>variant</th><th>seeds</th>";
  for (const auto& c : columns)
    out += fmt::format("<th>{}<br>{}</th>", escape_xml(c.top), escape_xml(c.bottom));
  out += "</tr>\n";
  std::vector<SweepRow> rows;
  while (csv.next()) {
    SweepRow row{csv.cell(policy), {{"load", ""}, {"cluster", ""}, {"round_s", ""}}, {}};
    for (const auto& [name, i] : variant_columns) row.variant[name] = csv.cell(i);
    std::string variant;
    for (const auto& [name, i] : variant_columns)
      if (!csv.cell(i).empty())
        variant +=
            (variant.empty() ? "" : ", ") + name + " " + fs::path(csv.cell(i)).filename().string();
    out += fmt::format("<tr><td class=\"name\">{}</td><td>{}</td><td>{}</td>",
                       escape_xml(csv.cell(policy)), escape_xml(variant.empty() ? "-" : variant),
                       escape_xml(csv.cell(seeds)));
    for (const auto& c : columns) {
      const double mean = csv.number(csv.require(c.key + "_mean"));
      const double ci = csv.number(csv.require(c.key + "_ci95"));
      row.stats.emplace_back(mean, ci);
      std::string cell = table_cell(mean * c.scale, c.precision);
      if (!std::isnan(ci)) cell += " &#177; " + table_cell(ci * c.scale, c.precision);
      out += "<td>" + cell + "</td>";
    }
    out += "</tr>\n";
    rows.push_back(std::move(row));
    // The first seed's run stands for the row in the plots below.
    const std::string first = csv.cell(folders).substr(0, csv.cell(folders).find(';'));
    const fs::path run_dir = sub_folder(path.parent_path(), first, path.string());
    runs->push_back({csv.cell(policy) + (variant.empty() ? "" : " [" + variant + "]") + " " +
                         run_dir.filename().string(),
                     run_dir,
                     {},
                     false,
                     file_safe(sweep_run_key(first))});
  }
  if (runs->empty()) throw InputError(path.string(), "", "no rows");
  return out + "</table>\n<pre class=\"legend\">" + escape_xml(compare_legend(false)) + "</pre>\n" +
         sweep_plots_html(rows, columns, figures) +
         "<p class=\"note\">The plots below show the first seed's run of each row.</p>\n";
}

std::vector<Run> read_runs(const fs::path& dir, std::string* sweep, Figures& figures) {
  std::vector<Run> runs;
  const fs::path compare = dir / "compare.csv";
  if (fs::exists(dir / "sweep.csv")) {
    *sweep = sweep_html(dir / "sweep.csv", &runs, figures);
  } else if (fs::exists(compare)) {
    CsvColumns csv(compare.string());
    const std::size_t policy = csv.require("policy"), folder = csv.require("folder");
    while (csv.next()) {
      runs.push_back({csv.cell(policy),
                      sub_folder(dir, csv.cell(folder), compare.string()),
                      {},
                      false,
                      file_safe(csv.cell(folder))});
    }
    if (runs.empty()) throw InputError(compare.string(), "", "no runs listed");
  } else if (fs::exists(dir / "summary.json")) {
    runs.push_back({"", dir, {}, false});
  } else {
    throw InputError(dir.string(), "",
                     "neither compare.csv nor summary.json: not a results folder");
  }
  for (Run& r : runs) {
    r.summary = read_json(r.dir / "summary.json");
    const std::string policy = r.summary.value("policy", std::string());
    if (r.label.empty()) r.label = policy;
    r.time_sharing = is_time_sharing(policy);
    if (r.key.empty()) r.key = file_safe(policy_folder_name(policy));
  }
  return runs;
}

// The cluster's and each run's tenants' series over time.
std::string series_over_time_html(const std::vector<Run>& runs, Figures& figures) {
  std::string body;
  // Utilisation and idle-while-waiting over time, one line per run.
  Chart util{"utilisation",
             "Cluster utilisation over time",
             "hours since the first arrival",
             "% of GPUs busy",
             {}};
  util.y_max = 100.0;
  Chart idle{"idle-waiting",
             "GPUs idle while a waiting job could use them",
             "hours since the first arrival",
             "GPUs (time average)",
             {}};
  std::string missing;
  for (const Run& r : runs) {
    const fs::path path = r.dir / "utilisation.csv";
    if (!fs::exists(path)) {
      missing += (missing.empty() ? "" : ", ") + r.label;
      continue;
    }
    const double origin = r.summary.value("first_arrival_s", 0.0);
    TimeSeries ts = read_utilisation(r, path, origin);
    util.series.push_back(ts.utilisation);
    idle.series.push_back(ts.idle_waiting);
  }
  body += "<h2>Cluster over time</h2>\n";
  idle.y_scale = figures.eligible;
  body += figures.add(util);
  body += figures.add(idle);
  if (!missing.empty()) body += note("No utilisation.csv for " + missing + ".");

  // Per run: tenants over time, and ρ per window for time-sharing policies.
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    const std::string& id = r.key;
    const double origin = r.summary.value("first_arrival_s", 0.0);
    body += "<h2>" + escape_xml(r.label) + ": tenants</h2>\n";
    const fs::path tenants = r.dir / "tenants.csv";
    std::vector<std::string> top;
    if (fs::exists(tenants)) {
      TenantCharts t =
          tenant_charts(r, tenants, origin, r.summary.value("total_gpus", 0), id, figures.eligible);
      body += figures.add(t.share) + figures.add(t.throughput);
      top = std::move(t.top);
    } else {
      body += note("No tenants.csv for " + r.label + ".");
    }
    if (r.time_sharing) {
      const fs::path windows = r.dir / "tenant_windows.csv";
      if (fs::exists(windows))
        body += figures.add(rho_chart(r, windows, origin, id, top, figures.eligible));
      else
        body += note("No tenant_windows.csv for " + r.label + ".");
    }
  }

  return body;
}

const char* kStyle = R"(
body{font-family:sans-serif;margin:24px;max-width:1620px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}
h3{font-size:15px}
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}
table.compare td{text-align:right}table.compare td.name{text-align:left;font-weight:bold}
table.prov th{text-align:left;background:#f4f4f4}table.prov td{font-family:monospace;word-break:break-all}
pre.legend{font-size:12px;background:#f8f8f8;padding:8px}
figure{display:inline-block;margin:4px}
p.note{color:#666;font-style:italic}
)";

}  // namespace

void check_report_options(const ReportOptions& options) { parse_axes(options.axes); }

Report build_report(const std::string& dir_text, const ReportOptions& options) {
  Figures figures;
  figures.eligible = parse_axes(options.axes);
  const fs::path dir(dir_text);
  std::string sweep;
  const std::vector<Run> runs = read_runs(dir, &sweep, figures);

  std::string body;
  Json sweep_provenance = Json::object();
  if (!sweep.empty() && fs::exists(dir / "sweep.json")) {
    const Json j = read_json(dir / "sweep.json");
    if (j.contains("provenance") && j["provenance"].is_object()) sweep_provenance = j["provenance"];
  }
  body += provenance_html(runs, sweep_provenance);
  body += sweep.empty() ? compare_html(runs) : sweep;

  // The jobs' CDFs are read on a second thread while this one reads the
  // series over time: on a 1,000,000-job run each is a pass over a file of
  // some 150 MB.
  auto read_cdfs = std::async(std::launch::async, [&runs] {
    std::pair<std::vector<Series>, std::vector<Series>> jct_ftf;
    for (const Run& r : runs) {
      JobColumns jobs = read_jobs(r);
      jct_ftf.first.push_back({r.label, cdf(jobs.jct_s, 1 / 3600.0)});
      jct_ftf.second.push_back({r.label, cdf(jobs.ftf_rho, 1.0)});
    }
    return jct_ftf;
  });
  std::string over_time;
  try {
    over_time = series_over_time_html(runs, figures);
  } catch (...) {
    read_cdfs.get();  // a bad jobs.csv is named first, as the page reads it first
    throw;
  }
  Chart jct{"jct-cdf", "Job completion time, CDF", "JCT (hours)", "fraction of finished jobs", {}};
  // jobs.csv's ftf_rho: the N avg one (each job's time-averaged contention),
  // named as in the tables, apart from the N static figures.
  Chart ftf{"ftf-cdf",
            "Finish-time fairness rho (N avg), CDF (rho > 1: unfair)",
            "rho_FTF, N avg (the job's time-averaged contention)",
            "fraction of rated jobs",
            {}};
  jct.y_max = ftf.y_max = 1.0;
  jct.x_scale = ftf.x_scale = figures.eligible;
  ftf.reference_x = {{1.0, "rho = 1"}};
  std::tie(jct.series, ftf.series) = read_cdfs.get();
  // The CDFs come first on the page, so first among the figures too.
  Figures cdfs;
  std::string cdf_html = cdfs.add(jct) + cdfs.add(ftf);
  figures.files.insert(figures.files.begin(), cdfs.files.begin(), cdfs.files.end());
  body += "<h2>Job completion time and finish-time fairness</h2>\n";
  body += cdf_html;
  body += over_time;

  std::string title = runs.size() == 1 ? "fairgpu report: " + runs.front().label
                                       : fmt::format("fairgpu report: {} runs", runs.size());
  return {fmt::format(
              "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
              "<title>{0}</title>\n<style>{1}</style>\n</head>\n<body>\n<h1>{0}</h1>\n{2}</body>\n"
              "</html>\n",
              escape_xml(title), kStyle, body),
          std::move(figures.files)};
}

}  // namespace fairgpu
