// Issue 29, item 6: figures a paper can use. Every plot's series have their
// own colour and dash, legend labels are whole (wrapped, never cut), axes go
// logarithmic where a series spans decades (and as --figure-axes says), the
// tenant panels of a run show the same tenants, and every figure is also a
// file of its own under figures/ (SVG, and PDF where rsvg-convert is).
// Checked on the SVG text the program writes; tests/report_test.cc checks
// the same page as Chromium draws it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fairgpu/html_report.h"
#include "report/svg_chart.h"
#include "run_binary.h"
#include "test_files.h"

namespace fairgpu {
namespace {

using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;
using testing_support::source_path;
namespace fs = std::filesystem;

const std::string kCluster = source_path("examples/oef-like-cluster.json");
const std::string kTrace = source_path("examples/small-trace.csv");

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string unescape(std::string text) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}})
    for (std::size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + 1))
      text.replace(p, from.size(), to);
  return text;
}

// The value of attribute `name` in the tag text `tag`, "" when absent.
std::string attr(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "=\"";
  const std::size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size();
  return unescape(tag.substr(start, tag.find('"', start) - start));
}

// What one <svg> drew, read back from its text.
struct Drawn {
  std::string id;
  double width = 0;
  std::vector<std::string> series;                          // data-series of each polyline
  std::vector<std::pair<std::string, std::string>> styles;  // (stroke, stroke-dasharray)
  std::vector<std::string> points;                          // data-points
  std::vector<std::string> legend_names;                    // data-series of each legend label
  std::vector<std::vector<std::string>> legend_lines;       // its <tspan> lines, unescaped
  std::vector<double> legend_x;
  std::string x_label, y_label;
};

// Each element `<open ...>...</close>` (or the tag alone when close is "")
// from `from`, as text; std::regex recurses per character and overflows the
// stack on a page of some size.
std::vector<std::string> elements(const std::string& text, const std::string& open,
                                  const std::string& close) {
  std::vector<std::string> out;
  for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    const std::size_t end = close.empty() ? text.find('>', at) : text.find(close, at);
    if (end == std::string::npos) break;
    out.push_back(text.substr(at, end - at + (close.empty() ? 1 : close.size())));
  }
  return out;
}

// The text between an element's start tag and its end tag.
std::string inner(const std::string& element) {
  const std::size_t start = element.find('>') + 1;
  return element.substr(start, element.rfind("</") - start);
}

std::vector<Drawn> parse_svgs(const std::string& text) {
  std::vector<Drawn> out;
  for (const std::string& svg : elements(text, "<svg ", "</svg>")) {
    const std::string head = svg.substr(0, svg.find('>'));
    Drawn d;
    d.id = attr(head, "id");
    d.width = std::stod(attr(head, "width"));
    for (const std::string& tag : elements(svg, "<polyline ", "")) {
      if (attr(tag, "class") != "series") continue;
      d.series.push_back(attr(tag, "data-series"));
      d.styles.emplace_back(attr(tag, "stroke"), attr(tag, "stroke-dasharray"));
      d.points.push_back(attr(tag, "data-points"));
    }
    for (const std::string& text_element : elements(svg, "<text class=\"legend\"", "</text>")) {
      const std::string tag = text_element.substr(0, text_element.find('>'));
      d.legend_names.push_back(attr(tag, "data-series"));
      d.legend_x.push_back(std::stod(attr(tag, "x")));
      std::vector<std::string> lines;
      for (const std::string& tspan : elements(text_element, "<tspan", "</tspan>"))
        lines.push_back(unescape(inner(tspan)));
      d.legend_lines.push_back(lines);
    }
    std::vector<std::string> axes;
    for (const std::string& a : elements(svg, "<text class=\"axis\"", "</text>"))
      axes.push_back(unescape(inner(a)));
    if (axes.size() == 2) d.x_label = axes[0], d.y_label = axes[1];
    out.push_back(std::move(d));
  }
  return out;
}

// No two series of a plot share colour and dash; every series has a legend
// label that gives its whole name back, in lines that fit the figure.
void expect_readable(const Drawn& d) {
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < d.styles.size(); ++i)
    EXPECT_TRUE(seen.insert(d.styles[i]).second)
        << d.id << ": '" << d.series[i] << "' drawn like another series (" << d.styles[i].first
        << ", dash '" << d.styles[i].second << "')";
  ASSERT_EQ(d.legend_names, d.series) << d.id;
  for (std::size_t i = 0; i < d.legend_lines.size(); ++i) {
    std::string joined;
    for (const std::string& line : d.legend_lines[i]) {
      joined += line;
      // 7 px per character at 11 px is wider than DejaVu Sans' letters and digits.
      EXPECT_LE(d.legend_x[i] + 7.0 * double(line.size()), d.width)
          << d.id << ": legend line '" << line << "' runs off the figure";
    }
    EXPECT_EQ(joined, d.legend_names[i]) << d.id << ": legend label cut";
  }
}

class FiguresTest : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(testing::TempDir()) /
           ("fairgpu-figures-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::vector<std::string>& args) { return run_binary(args, dir_, dir_, 300); }
  fs::path dir_;
};

report::Chart chart_of(std::size_t n, const std::string& stem) {
  report::Chart c{"c", "t", "x", "y"};
  for (std::size_t i = 0; i < n; ++i)
    c.series.push_back({stem + std::to_string(i), {{1.0, double(i)}, {2.0, double(i) + 1}}});
  return c;
}

TEST(SvgChart, EverySeriesOfAPlotHasItsOwnColourAndDash) {
  const std::vector<Drawn> d =
      parse_svgs(report::svg_line_chart(chart_of(report::kDistinctStyles, "s")));
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].series.size(), report::kDistinctStyles);
  expect_readable(d[0]);
  // The first ten are solid lines of ten colours.
  std::set<std::string> colours;
  for (std::size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(d[0].styles[i].second, "") << i;
    colours.insert(d[0].styles[i].first);
  }
  EXPECT_EQ(colours.size(), 10u);
  EXPECT_GE(report::kDistinctStyles, 20u);
}

TEST(SvgChart, LegendLabelsWrapAndAreNeverCut) {
  report::Chart c = chart_of(0, "");
  const std::string a = "tiresias:thresholds=600/7200", b = "tiresias:thresholds=600/3600",
                    very_long =
                        "themis:filter=0.5 [load 0.8, cluster ../shared/data/a-very-long-"
                        "cluster-file-name.json, round_s 300] seed-1";
  for (const std::string& name : {a, b, very_long, std::string("<&\"'>")})
    c.series.push_back({name, {{0, 1}, {1, 2}}});
  const std::vector<Drawn> d = parse_svgs(report::svg_line_chart(c));
  ASSERT_EQ(d.size(), 1u);
  expect_readable(d[0]);
  EXPECT_GT(d[0].legend_lines[2].size(), 2u) << "the long label is wrapped";
  EXPECT_NE(d[0].legend_lines[0], d[0].legend_lines[1]);
  // wrap_label prefers separators and gives the label back whole.
  const auto lines = report::wrap_label(a, 24);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "tiresias:thresholds=600/");
  EXPECT_EQ(lines[1], "7200");
}

TEST(SvgChart, LogAxisWhereASeriesSpansDecades) {
  auto x_label = [](report::AxisScale scale, std::vector<double> xs) {
    report::Chart c{"c", "t", "JCT", "y"};
    c.x_scale = scale;
    report::Series s{"s", {}};
    for (double x : xs) s.points.emplace_back(x, 0.5);
    c.series.push_back(s);
    const std::vector<Drawn> d = parse_svgs(report::svg_line_chart(c));
    return std::make_pair(d.at(0).x_label, d.at(0).points.at(0));
  };
  using report::AxisScale;
  EXPECT_EQ(x_label(AxisScale::automatic, {0.01, 3, 250}).first, "JCT (log scale)");
  EXPECT_EQ(x_label(AxisScale::automatic, {1, 99}).first, "JCT") << "under two decades";
  EXPECT_EQ(x_label(AxisScale::automatic, {0, 1, 1000}).first, "JCT") << "a zero: no log";
  EXPECT_EQ(x_label(AxisScale::linear, {0.01, 3, 250}).first, "JCT") << "overridden";
  // Forced log: the non-positive point is left out.
  EXPECT_EQ(x_label(AxisScale::log, {0, 1, 2}),
            std::make_pair(std::string("JCT (log scale)"), std::string("2")));
  EXPECT_TRUE(report::use_log(AxisScale::automatic, {1, 100}));
  EXPECT_FALSE(report::use_log(AxisScale::automatic, {1, 99.9}));
  // Decade ticks on a log axis.
  report::Chart c{"c", "t", "x", "y"};
  c.x_scale = AxisScale::automatic;
  c.series.push_back({"s", {{0.5, 0}, {2000, 1}}});
  const std::string svg = report::svg_line_chart(c);
  for (const char* tick :
       {">0.1</text>", ">1</text>", ">10</text>", ">100</text>", ">1000</text>", ">10000</text>"})
    EXPECT_TRUE(contains(svg, tick)) << tick;
}

TEST(SvgChart, StackedSharesDrawEachOnTopOfTheOnesBefore) {
  auto points_of = [](const report::Chart& c) {
    std::vector<std::string> out;
    for (const std::string& tag : elements(report::svg_line_chart(c), "<polyline ", ""))
      out.push_back(attr(tag, "points"));
    return out;
  };
  report::Chart stacked{"s", "t", "x", "y"}, summed{"s", "t", "x", "y"};
  stacked.stacked = true;
  stacked.series = {{"a", {{0, 1}, {1, 2}}}, {"b", {{0, 2}, {1, 1}}}};
  summed.series = {{"a", {{0, 1}, {1, 2}}}, {"a+b", {{0, 3}, {1, 3}}}};
  EXPECT_EQ(points_of(stacked), points_of(summed)) << "b drawn at a + b";
  const std::string svg = report::svg_line_chart(stacked);
  EXPECT_TRUE(contains(svg, "<polygon class=\"band\" data-series=\"b\"")) << "b's area";
}

// A trace whose jobs run from 30 s to 83 h: the JCT CDF spans decades.
void write_long_tailed_trace(const fs::path& path) {
  std::ofstream t(path);
  t << "job_id,tenant,job_type,num_workers,arrival_s,duration_s\n";
  const double durations[] = {30, 60, 120, 600, 1800, 3600, 7200, 36000, 100000, 300000};
  for (int i = 0; i < 10; ++i)
    t << "j" << i << "," << (i % 2 ? "a" : "b") << ",A3C,1," << i * 10 << "," << durations[i]
      << "\n";
}

TEST_F(FiguresTest, CompareOfTwelvePoliciesDrawsEachAloneWithItsWholeName) {
  const fs::path out = dir_ / "cmp";
  RunResult r = run({"compare", "--cluster", kCluster, "--trace", kTrace, "--policies",
                     "oef-coop,oef-noncoop,gavel,gandiva-fair,max-min,astraea,themis,fifo,"
                     "tiresias,tiresias:thresholds=600/7200,tiresias:thresholds=600/3600,allox",
                     "--out", out.string(), "--quiet", "--no-pdf"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<Drawn> page = parse_svgs(slurp(out / "report.html"));
  ASSERT_FALSE(page.empty());
  for (const Drawn& d : page) {
    expect_readable(d);
    if (d.id == "jct-cdf") {
      ASSERT_EQ(d.series.size(), 12u);
      EXPECT_EQ(d.series[9], "tiresias:thresholds=600/7200");
      EXPECT_NE(d.legend_lines[9], d.legend_lines[10]) << "the two tiresias labels look alike";
    }
  }
}

TEST_F(FiguresTest, EveryFigureIsAlsoAFileOfItsOwn) {
  const fs::path out = dir_ / "cmp";
  fs::create_directories(out / "figures");
  std::ofstream(out / "figures" / "stale-share.svg") << "<svg/>";
  std::ofstream(out / "figures" / "notes.txt") << "mine";
  RunResult r = run({"compare", "--cluster", kCluster, "--trace", kTrace, "--policies",
                     "oef-coop,astraea", "--out", out.string(), "--quiet"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<Drawn> page = parse_svgs(slurp(out / "report.html"));
  std::set<std::string> ids, files;
  for (const Drawn& d : page) ids.insert(d.id + ".svg");
  EXPECT_EQ(ids.size(), 9u);
  for (const auto& e : fs::directory_iterator(out / "figures"))
    if (e.path().extension() == ".svg") files.insert(e.path().filename().string());
  EXPECT_EQ(files, ids) << "one file per figure of the page, the stale one removed";
  EXPECT_TRUE(fs::exists(out / "figures" / "notes.txt")) << "not ours: kept";
  EXPECT_TRUE(ids.count("astraea-rho.svg") && ids.count("oef-coop-share.svg"));
  for (const std::string& name : files) {
    const std::string svg = slurp(out / "figures" / name);
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << name;
    EXPECT_TRUE(contains(svg, "xmlns=\"http://www.w3.org/2000/svg\"")) << name;
    const std::vector<Drawn> d = parse_svgs(svg);
    ASSERT_EQ(d.size(), 1u) << name;
    EXPECT_EQ(d[0].id + ".svg", name);
    const bool have_pdf = fs::exists(out / "figures" / fs::path(name).replace_extension(".pdf"));
    if (std::system("command -v rsvg-convert >/dev/null 2>&1") == 0) {
      ASSERT_TRUE(have_pdf) << name;
      EXPECT_EQ(slurp(out / "figures" / fs::path(name).replace_extension(".pdf")).substr(0, 5),
                "%PDF-");
    }
  }
  EXPECT_FALSE(contains(r.err, "rsvg-convert")) << r.err;

  // Without rsvg-convert: the SVGs, no PDF, and one note saying why.
  const char* old_path = std::getenv("PATH");
  const std::string saved = old_path ? old_path : "";
  setenv("PATH", (dir_ / "nowhere").c_str(), 1);
  std::string notes;
  ReportOptions options;
  EXPECT_NO_THROW(notes = write_report(out.string(), options));
  setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(std::count(notes.begin(), notes.end(), '\n'), 1) << notes;
  EXPECT_TRUE(contains(notes, "rsvg-convert")) << notes;
  std::size_t svgs = 0;
  for (const auto& e : fs::directory_iterator(out / "figures")) {
    EXPECT_NE(e.path().extension(), ".pdf") << e.path();
    svgs += e.path().extension() == ".svg";
  }
  EXPECT_EQ(svgs, 9u);

  // `fairgpu report` rebuilds them; --no-pdf leaves the PDFs out.
  fs::remove_all(out / "figures");
  r = run({"report", out.string(), "--no-pdf"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "figures" / "jct-cdf.svg"));
  EXPECT_FALSE(fs::exists(out / "figures" / "jct-cdf.pdf"));
}

TEST_F(FiguresTest, FigureAxesAutoLinearLog) {
  write_long_tailed_trace(dir_ / "tail.csv");
  auto jct_x = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"simulate",
                                     "--cluster",
                                     kCluster,
                                     "--trace",
                                     (dir_ / "tail.csv").string(),
                                     "--policy",
                                     "fifo",
                                     "--out",
                                     (dir_ / "sim").string(),
                                     "--quiet",
                                     "--no-pdf"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = run(args);
    EXPECT_EQ(r.status, 0) << r.err;
    for (const Drawn& d : parse_svgs(slurp(dir_ / "sim" / "figures" / "jct-cdf.svg")))
      return d.x_label;
    return std::string("no figure");
  };
  EXPECT_EQ(jct_x({}), "JCT (hours) (log scale)") << "30 s to 83 h: decades";
  EXPECT_EQ(jct_x({"--figure-axes", "linear"}), "JCT (hours)");
  EXPECT_EQ(jct_x({"--figure-axes", "log"}), "JCT (hours) (log scale)");
  // The small example's JCTs span less than two decades: linear unless forced.
  RunResult r = run({"simulate", "--cluster", kCluster, "--trace", kTrace, "--policy", "fifo",
                     "--out", (dir_ / "small").string(), "--quiet", "--no-pdf"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(parse_svgs(slurp(dir_ / "small" / "figures" / "jct-cdf.svg")).at(0).x_label,
            "JCT (hours)");
  // A bad value: one line, exit 2, before any run.
  r = run({"compare", "--cluster", kCluster, "--trace", kTrace, "--policies", "fifo", "--out",
           (dir_ / "bad").string(), "--figure-axes", "semilog"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(contains(r.err, "figure-axes")) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

TEST_F(FiguresTest, TenantPanelsOfARunShowTheSameTenants) {
  const fs::path out = dir_ / "sim";
  RunResult r = run({"simulate", "--jobs", "150", "--gen-tenants", "16", "--policy", "astraea",
                     "--out", out.string(), "--quiet", "--no-pdf"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<std::string, std::vector<std::string>> series;
  for (const Drawn& d : parse_svgs(slurp(out / "report.html"))) series[d.id] = d.series;
  const auto& share = series["astraea-share"];
  ASSERT_EQ(share.size(), 10u) << "nine tenants and the others";
  EXPECT_TRUE(contains(share.back(), "other tenants (7)")) << share.back();
  const std::vector<std::string> named(share.begin(), share.end() - 1);
  EXPECT_EQ(series["astraea-throughput"], share);
  EXPECT_EQ(series["astraea-rho"], named) << "rho panel: the share panels' tenants, same order";
}

TEST_F(FiguresTest, SweepPlotsEachMetricAgainstTheLoadWithItsIntervalAndItsOwnProvenance) {
  const fs::path out = dir_ / "sweep";
  RunResult r =
      run({"sweep", "--policies", "fifo,themis", "--seeds", "1-3", "--loads", "0.1,0.2,0.3", "--jobs",
           "30", "--gen-tenants", "3", "--out", out.string(), "-j", "2", "--no-pdf"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string page = slurp(out / "report.html");
  std::map<std::string, Drawn> drawn;
  for (const Drawn& d : parse_svgs(page)) {
    expect_readable(d);
    drawn[d.id] = d;
  }
  ASSERT_TRUE(drawn.count("sweep-avg_jct_s-vs-load")) << page.substr(0, 2000);
  const Drawn& jct = drawn["sweep-avg_jct_s-vs-load"];
  EXPECT_EQ(jct.series, (std::vector<std::string>{"fifo", "themis"}));
  EXPECT_EQ(jct.points, (std::vector<std::string>{"3", "3"})) << "one point per load";
  EXPECT_EQ(jct.x_label, "offered load");
  const std::string svg = slurp(out / "figures" / "sweep-avg_jct_s-vs-load.svg");
  std::size_t bands = 0;
  for (std::size_t at = svg.find("<polygon class=\"band\""); at != std::string::npos;
       at = svg.find("<polygon class=\"band\"", at + 1))
    ++bands;
  EXPECT_EQ(bands, 2u) << "a 95% CI band per policy (three seeds)";
  // The runs' figures are written as SVG, named by their folder.
  EXPECT_TRUE(fs::exists(out / "figures" / "load-0.1_fifo_seed-1-share.svg"));
  // The sweep's own provenance: its command line and grid, not a run's.
  EXPECT_TRUE(contains(page,
                       "fairgpu sweep --policies fifo,themis --seeds 1-3 --loads 0.1,0.2,0.3 "
                       "--jobs 30 --gen-tenants 3"))
      << page.substr(0, 3000);
  EXPECT_TRUE(contains(page, "<th>seeds</th><td>1 2 3</td>"));
  EXPECT_TRUE(contains(page, "<th>runs</th><td>18</td>"));
  EXPECT_FALSE(contains(page, "<th>command</th><td>simulate</td>"));
  EXPECT_TRUE(fs::exists(out / "sweep.json"));
}

}  // namespace
}  // namespace fairgpu
