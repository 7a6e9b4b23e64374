// What a researcher publishes from fairgpu: report.html rendered by a real
// browser (headless Chromium), provenance in summary.json and compare.csv,
// windowed and sparse series, and the small output defects of issue 17
// (built-in arrival rate, stale compare folders, single-policy ratios).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/provenance.h"
#include "fairgpu/scenario.h"
#include "fairgpu/scheduler.h"
#include "fairgpu/sim_report.h"
#include "fairgpu/simulator.h"
#include "fairgpu/sweep_stats.h"
#include "csv_rows.h"
#include "run_binary.h"

namespace fairgpu {
namespace {

using testing_support::csv_rows;
using testing_support::quote;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;
using testing_support::source_path;
namespace fs = std::filesystem;
using nlohmann::json;

const std::string kCluster = source_path("examples/oef-like-cluster.json");
const std::string kTrace = source_path("examples/small-trace.csv");

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1))
    ++n;
  return n;
}

class ReportTest : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(testing::TempDir()) /
           ("fairgpu-report-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "cwd");
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::vector<std::string>& args) {
    return run_binary(args, dir_, dir_ / "cwd", 300);
  }
  // compare on the small example: a share policy and a time-sharing one.
  fs::path small_compare(const std::string& name, const std::string& policies) {
    const fs::path out = dir_ / name;
    RunResult r = run({"compare", "--cluster", kCluster, "--trace", kTrace, "--policies", policies,
                       "--out", out.string(), "--quiet"});
    EXPECT_EQ(r.status, 0) << r.err;
    return out;
  }
  fs::path dir_;
};

// The script the test appends to a copy of the report (the report itself has
// none): after layout, it measures every plot and every data series as the
// browser drew them and writes the result into the DOM, which --dump-dom
// prints. Errors of any kind (script, resource) are collected too.
const char* kChecker = R"(<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message || (e.target && (e.target.src || e.target.href)) || 'error'));
  }, true);
  function check() {
    var out = {plots: [], errors: errors};
    document.querySelectorAll('svg.plot').forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      var plot = {id: svg.id, width: box.width, height: box.height, series: []};
      plot.legends = [];
      svg.querySelectorAll('text.legend').forEach(function (text) {
        var b = text.getBBox();
        plot.legends.push({name: text.getAttribute('data-series'), text: text.textContent,
                           inside: b.x >= 0 && b.x + b.width <= box.width + 0.5 &&
                                   b.y >= 0 && b.y + b.height <= box.height + 0.5});
      });
      svg.querySelectorAll('polyline.series').forEach(function (line) {
        var b = line.getBBox();
        var style = getComputedStyle(line);
        plot.series.push({name: line.getAttribute('data-series'),
                          look: style.stroke + ' / ' + style.strokeDasharray,
                          declared: Number(line.getAttribute('data-points')),
                          drawn: line.points.numberOfItems,
                          bbox_w: b.width, bbox_h: b.height,
                          inside: b.x >= 0 && b.y >= 0 && b.x + b.width <= box.width + 1 &&
                                  b.y + b.height <= box.height + 1,
                          visible: getComputedStyle(line).display !== 'none'});
      });
      out.plots.push(plot);
    });
    var pre = document.createElement('pre');
    pre.id = 'fairgpu-check';
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  check();
})();
</script>
)";

// Loads `html` in headless Chromium and returns the checker's JSON; chromium's
// stderr goes to *log.
json render_in_chromium(const std::string& chromium, const fs::path& html, const fs::path& scratch,
                        std::string* log) {
  std::string page = slurp(html);
  const std::size_t end = page.rfind("</body>");
  EXPECT_NE(end, std::string::npos);
  page.insert(end, kChecker);
  const fs::path probe = scratch / "probe.html";
  std::ofstream(probe, std::ios::binary) << page;
  const fs::path profile = scratch / "chromium-profile", dom = scratch / "dom.html",
                 err = scratch / "chromium.log";
  const std::string cmd = "timeout -s KILL 120 " + quote(chromium) +
                          " --headless --no-sandbox --disable-gpu --no-first-run"
                          " --user-data-dir=" +
                          quote(profile.string()) + " --enable-logging=stderr --v=0 --dump-dom " +
                          quote("file://" + probe.string()) + " >" + quote(dom.string()) + " 2>" +
                          quote(err.string());
  const int status = std::system(cmd.c_str());
  *log = slurp(err);
  EXPECT_EQ(status, 0) << *log;
  const std::string out = slurp(dom);
  const std::string open = "<pre id=\"fairgpu-check\">";
  const std::size_t at = out.find(open);
  if (at == std::string::npos) {
    ADD_FAILURE() << "the checker did not run; DOM:\n" << out.substr(0, 2000) << "\nlog:\n" << *log;
    return json::object();
  }
  std::string text = out.substr(at + open.size(), out.find("</pre>", at) - at - open.size());
  // --dump-dom escapes &, < and > in text.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (std::size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + 1))
      text.replace(p, from.size(), to);
  }
  return json::parse(text);
}

TEST_F(ReportTest, ChromiumRendersEveryPlotWithItsPointsAndNoError) {
  const std::string chromium = testing_support::find_program_on_path({"chromium", "chromium-browser", "google-chrome"});
  if (chromium.empty())
    GTEST_SKIP() << "no chromium on PATH (scripts/setup.sh installs Debian's chromium)";
  // A third policy whose name is longer than a legend line: wrapped, whole.
  const fs::path out = small_compare("cmp", "oef-coop,astraea,tiresias:thresholds=600/7200");
  const std::string page = slurp(out / "report.html");
  ASSERT_FALSE(page.empty());
  // Self-contained and readable without JavaScript: no script, no resource
  // from anywhere (no src, href, url() or @import), every plot inline SVG.
  for (const char* banned : {"<script", "src=", "href=", "url(", "@import", "http:", "https:"})
    EXPECT_FALSE(contains(page, banned)) << banned;
  // The compare table with its legend and both policies.
  EXPECT_TRUE(contains(page, "<table class=\"compare\">"));
  EXPECT_TRUE(contains(page, "tput actual     normalised throughput"));
  EXPECT_TRUE(contains(page, ">oef-coop</td>"));
  EXPECT_TRUE(contains(page, ">astraea</td>"));
  // Plots: JCT and FTF CDFs, utilisation, idle-while-waiting, per policy GPU
  // share and throughput per tenant, ρ per window for the time-sharing ones.
  const std::set<std::string> expected = {"jct-cdf",
                                          "ftf-cdf",
                                          "utilisation",
                                          "idle-waiting",
                                          "oef-coop-share",
                                          "oef-coop-throughput",
                                          "astraea-share",
                                          "astraea-throughput",
                                          "astraea-rho",
                                          "tiresias_thresholds-600_7200-share",
                                          "tiresias_thresholds-600_7200-throughput",
                                          "tiresias_thresholds-600_7200-rho"};
  EXPECT_EQ(count(page, "<svg class=\"plot\""), expected.size());

  std::string log;
  json check = render_in_chromium(chromium, out / "report.html", dir_, &log);
  ASSERT_TRUE(check.contains("plots")) << check.dump();
  EXPECT_EQ(check["errors"], json::array()) << check.dump();
  // The page logs nothing to the console (no error, no failed resource).
  EXPECT_FALSE(contains(log, ":CONSOLE")) << log;
  std::set<std::string> seen;
  for (const auto& plot : check["plots"]) {
    const std::string id = plot["id"];
    seen.insert(id);
    EXPECT_GT(plot["width"].get<double>(), 100) << id;
    EXPECT_GT(plot["height"].get<double>(), 100) << id;
    ASSERT_FALSE(plot["series"].empty()) << id;
    // Every series its own look; every legend label whole and inside the figure.
    std::set<std::string> looks;
    for (const auto& s : plot["series"])
      EXPECT_TRUE(looks.insert(s["look"].get<std::string>()).second) << id << " " << s.dump();
    ASSERT_EQ(plot["legends"].size(), plot["series"].size()) << id;
    for (const auto& l : plot["legends"]) {
      EXPECT_EQ(l["text"], l["name"]) << id;
      EXPECT_TRUE(l["inside"].get<bool>()) << id << " " << l.dump();
    }
    for (const auto& s : plot["series"]) {
      const std::string what = id + " / " + s["name"].get<std::string>();
      EXPECT_GT(s["declared"].get<int>(), 0) << what;
      EXPECT_EQ(s["drawn"], s["declared"]) << what;
      EXPECT_TRUE(s["inside"].get<bool>()) << what;
      EXPECT_TRUE(s["visible"].get<bool>()) << what;
      if (s["drawn"].get<int>() > 1) {
        EXPECT_GT(s["bbox_w"].get<double>() + s["bbox_h"].get<double>(), 0) << what;
      }
    }
  }
  EXPECT_EQ(seen, expected);
  // Three lines in each plot: one per policy, or one per tenant (3).
  for (const auto& plot : check["plots"]) EXPECT_EQ(plot["series"].size(), 3u) << plot["id"];
}

TEST_F(ReportTest, ReportCommandRebuildsTheSamePage) {
  const fs::path out = small_compare("cmp", "oef-coop,astraea");
  const std::string first = slurp(out / "report.html");
  fs::remove(out / "report.html");
  RunResult r = run({"report", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(slurp(out / "report.html"), first);
  // A single simulate folder works the same way.
  const fs::path single = dir_ / "single";
  r = run({"simulate", "--cluster", kCluster, "--trace", kTrace, "--policy", "themis", "--out",
           single.string(), "--quiet"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string page = slurp(single / "report.html");
  EXPECT_TRUE(contains(page, "id=\"themis-rho\"")) << "themis is time-sharing";
  EXPECT_EQ(count(page, "<svg class=\"plot\""), 7u);  // no second policy: same set, one line each
  // Not a results folder, or a broken file: one line, exit 2, nothing written.
  r = run({"report", dir_.string() + "/nowhere"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const std::string jobs_text = slurp(single / "jobs.csv");
  std::ofstream(single / "jobs.csv", std::ios::app) << "x,y\n";
  fs::remove(single / "report.html");
  r = run({"report", single.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "jobs.csv:")) << r.err;
  EXPECT_FALSE(fs::exists(single / "report.html"));
  // jobs.csv and tenants.csv are read side by side: with both broken the one
  // the page shows first (jobs.csv) is named; with tenants.csv alone, it is.
  std::ofstream(single / "tenants.csv", std::ios::app) << "x,y\n";
  r = run({"report", single.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(contains(r.err, "jobs.csv:")) << r.err;
  std::ofstream(single / "jobs.csv", std::ios::binary | std::ios::trunc) << jobs_text;
  r = run({"report", single.string()});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "tenants.csv:")) << r.err;
  EXPECT_FALSE(fs::exists(single / "report.html"));
}

TEST_F(ReportTest, ProvenanceNamesVersionSeedInputsOptionsAndParameters) {
  const fs::path out = small_compare("cmp", "oef-coop,themis:filter=0.5");
  RunResult version = run({"--version"});
  ASSERT_EQ(version.status, 0);
  EXPECT_TRUE(contains(version.out, fairgpu_version()));
  // The trace's SHA-256 by coreutils, not by fairgpu's own code.
  const std::string cmd = "sha256sum " + quote(kTrace) + " > " + quote((dir_ / "sum").string());
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string trace_sha = slurp(dir_ / "sum").substr(0, 64);
  const std::string cluster_sha = sha256_file(kCluster);
  {  // FIPS 180-2's test vector, through the file reader
    std::ofstream abc(dir_ / "abc", std::ios::binary);
    abc << "abc";
  }
  EXPECT_EQ(sha256_file((dir_ / "abc").string()),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // And the others of FIPS 180-2 (empty, two blocks, a million 'a': past the
  // reader's 1 MiB block).
  std::ofstream(dir_ / "empty", std::ios::binary).flush();
  std::ofstream(dir_ / "two", std::ios::binary)
      << "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  std::ofstream(dir_ / "million", std::ios::binary) << std::string(1000000, 'a') + std::string(1 << 20, 'b');
  EXPECT_EQ(sha256_file((dir_ / "empty").string()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_file((dir_ / "two").string()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million_cmd = "sha256sum " + quote((dir_ / "million").string()) + " > " +
                                  quote((dir_ / "million.sum").string());
  ASSERT_EQ(std::system(million_cmd.c_str()), 0);
  EXPECT_EQ(sha256_file((dir_ / "million").string()), slurp(dir_ / "million.sum").substr(0, 64));

  json themis = json::parse(slurp(out / "themis_filter-0.5" / "summary.json"));
  ASSERT_TRUE(themis.contains("provenance"));
  const json& p = themis["provenance"];
  EXPECT_EQ(p["fairgpu_version"], fairgpu_version());
  EXPECT_EQ(p["command"], "compare");
  EXPECT_EQ(p["seed"], 1);
  ASSERT_EQ(p["inputs"].size(), 2u) << p.dump();
  EXPECT_EQ(p["inputs"][0]["role"], "cluster");
  EXPECT_EQ(p["inputs"][0]["path"], kCluster);
  EXPECT_EQ(p["inputs"][0]["sha256"], cluster_sha);
  EXPECT_EQ(p["inputs"][1]["role"], "trace");
  EXPECT_EQ(p["inputs"][1]["sha256"], trace_sha);
  for (const char* key : {"cluster", "trace", "profiles", "seed", "jobs", "arrivals_per_hour",
                          "restart_overhead_s", "fairness_window_s", "series_window_s", "round_s"})
    EXPECT_TRUE(p["options"].contains(key)) << key;
  // Every key themis declares, defaults filled in, the specifier's value.
  EXPECT_EQ(p["policy"]["specifier"], "themis:filter=0.5");
  std::set<std::string> declared, recorded;
  for (const RoundPolicyInfo& info : round_policy_catalogue())
    if (info.name == "themis")
      for (const auto& k : info.keys) declared.insert(k.key);
  for (const auto& [k, v] : p["policy"]["parameters"].items()) recorded.insert(k);
  EXPECT_EQ(recorded, declared);
  EXPECT_EQ(p["policy"]["parameters"]["filter"], "0.5");
  EXPECT_EQ(p["policy"]["parameters"]["lease"], "900");

  auto rows = csv_rows(slurp(out / "compare.csv"));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["folder"], "themis_filter-0.5");
  EXPECT_EQ(rows[1]["fairgpu_version"], fairgpu_version());
  EXPECT_EQ(rows[1]["seed"], "1");
  EXPECT_TRUE(contains(rows[1]["inputs"], "trace=" + kTrace + " sha256:" + trace_sha))
      << rows[1]["inputs"];
  EXPECT_TRUE(contains(rows[1]["policy_parameters"], "filter=0.5")) << rows[1]["policy_parameters"];
  EXPECT_TRUE(contains(rows[0]["policy_parameters"], "quantum=900"))
      << rows[0]["policy_parameters"];
}

TEST_F(ReportTest, SeriesWindowAveragesRoundsAndKeepsTheTotals) {
  auto sim = [&](const std::string& name, const std::string& window) {
    const fs::path out = dir_ / name;
    RunResult r = run({"simulate", "--cluster", kCluster, "--trace", kTrace, "--policy", "astraea",
                       "--out", out.string(), "--series-window", window, "--quiet"});
    EXPECT_EQ(r.status, 0) << r.err;
    return out;
  };
  const fs::path fine = sim("fine", "0"), coarse = sim("coarse", "3600");
  auto fine_util = csv_rows(slurp(fine / "utilisation.csv"));
  auto coarse_util = csv_rows(slurp(coarse / "utilisation.csv"));
  json summary = json::parse(slurp(fine / "summary.json"));
  EXPECT_EQ(fine_util.size(), summary["rounds"].get<std::size_t>());
  EXPECT_LT(coarse_util.size(), fine_util.size() / 50);
  auto total = [](const std::vector<std::map<std::string, std::string>>& rows,
                  const std::string& column) {
    double sum = 0;
    for (const auto& r : rows) sum += std::stod(r.at(column));
    return sum;
  };
  for (const char* column : {"busy_gpu_seconds", "idle_waiting_gpu_seconds", "recomputed"})
    EXPECT_NEAR(total(coarse_util, column), total(fine_util, column), 1e-3) << column;
  EXPECT_NEAR(total(fine_util, "busy_gpu_seconds"), summary["busy_gpu_seconds"].get<double>(),
              1e-3);
  // tenants.csv: GPU-seconds per tenant agree; no row of zeros.
  auto gpu_seconds = [](const fs::path& file) {
    std::map<std::string, double> by_tenant;
    for (const auto& r : csv_rows(slurp(file))) {
      const double len = std::stod(r.at("round_end")) - std::stod(r.at("round_start"));
      double gpus = 0;
      for (const char* t : {"gpus_k80", "gpus_p100", "gpus_v100"}) gpus += std::stod(r.at(t));
      EXPECT_TRUE(gpus > 0 || std::stod(r.at("active_jobs")) > 0) << "a row of zeros";
      by_tenant[r.at("tenant")] += gpus * len;
    }
    return by_tenant;
  };
  auto a = gpu_seconds(fine / "tenants.csv"), b = gpu_seconds(coarse / "tenants.csv");
  ASSERT_EQ(a.size(), 3u);
  for (const auto& [tenant, seconds] : a) EXPECT_NEAR(b[tenant], seconds, 1e-3) << tenant;
  RunResult bad = run({"simulate", "--series-window", "-5"});
  EXPECT_EQ(bad.status, 2);
  EXPECT_TRUE(contains(bad.err, "series-window")) << bad.err;
}

TEST_F(ReportTest, GeneratedTraceReproducesTheBuiltInScenario) {
  RunResult g = run({"generate"});
  ASSERT_EQ(g.status, 0) << g.err;
  std::ofstream(dir_ / "t.csv", std::ios::binary) << g.out;
  RunResult a = run({"simulate", "--policy", "fifo", "--out", (dir_ / "a").string(), "--quiet"});
  RunResult b = run({"simulate", "--policy", "fifo", "--trace", (dir_ / "t.csv").string(), "--out",
                     (dir_ / "b").string(), "--quiet"});
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_TRUE(slurp(dir_ / "a" / "jobs.csv") == slurp(dir_ / "b" / "jobs.csv"));
  RunResult help = run({"generate", "--help"});
  EXPECT_TRUE(contains(help.out, "default 60")) << help.out;
}

TEST_F(ReportTest, CompareRemovesStalePolicyFoldersAndSkipsRatiosOfOne) {
  const fs::path out = small_compare("cmp", "fifo,themis");
  fs::create_directories(out / "notes");  // not a policy folder: kept
  std::ofstream(out / "notes" / "x.txt") << "mine\n";
  RunResult r = run({"compare", "--cluster", kCluster, "--trace", kTrace, "--policies", "fifo",
                     "--out", out.string(), "--quiet"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(fs::exists(out / "themis"));
  EXPECT_TRUE(fs::exists(out / "fifo" / "summary.json"));
  EXPECT_TRUE(fs::exists(out / "notes" / "x.txt"));
  EXPECT_FALSE(contains(r.out, "ratio to")) << r.out;
  EXPECT_FALSE(contains(r.out, "1.00x")) << r.out;
}

// ---- sweep ------------------------------------------------------------------

TEST(SweepStats, MeanAndStudentTIntervalByHand) {
  // 1, 2, 3, 4: mean 2.5, s = sqrt(5/3) = 1.2909944, t(0.975, 3) = 3.1824463,
  // half-width = 3.1824463 x 1.2909944 / 2 = 2.0542603.
  MeanCi a = mean_ci95({1, 2, 3, 4});
  EXPECT_EQ(a.n, 4);
  EXPECT_DOUBLE_EQ(a.mean, 2.5);
  EXPECT_NEAR(a.half_width, 2.054260256760879, 1e-9);
  // NaN (a run without the metric) is left out: 2, 3.5, 7.25 with n = 3,
  // s = 2.7041635, t(0.975, 2) = 4.3026527 -> 6.7175144.
  MeanCi b = mean_ci95({2.0, std::nan(""), 3.5, 7.25});
  EXPECT_EQ(b.n, 3);
  EXPECT_DOUBLE_EQ(b.mean, 4.25);
  EXPECT_NEAR(b.half_width, 6.71751442152483, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 1), 12.706204736174707, 1e-9);
  MeanCi one = mean_ci95({5});
  EXPECT_EQ(one.mean, 5);
  EXPECT_TRUE(std::isnan(one.half_width));
  EXPECT_EQ(mean_ci95({3, 3, 3}).half_width, 0);
  EXPECT_TRUE(std::isnan(mean_ci95({}).mean));
}

TEST_F(ReportTest, SweepIsDeterministicAndItsIntervalsMatchTheRuns) {
  auto sweep = [&](const std::string& name) {
    const fs::path out = dir_ / name;
    RunResult r = run({"sweep", "--policies", "fifo,themis:filter=0.5", "--seeds", "1-3",
                       "--rounds", "60,120", "--jobs", "24", "--gen-tenants", "4",
                       "--arrivals-per-hour", "40", "--out", out.string(), "-j", "2"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "2 policies x 2 variants x 3 seeds = 12 runs")) << r.out;
    EXPECT_TRUE(contains(r.out, "±")) << r.out;
    return out;
  };
  const fs::path a = sweep("a"), b = sweep("b");
  const std::string csv = slurp(a / "sweep.csv");
  // Same grid, same file (but the folder names, which differ by --out only
  // in their relative form: none).
  EXPECT_EQ(csv, slurp(b / "sweep.csv"));
  auto rows = csv_rows(csv);
  ASSERT_EQ(rows.size(), 4u);  // 2 variants x 2 policies
  EXPECT_EQ(rows[0]["policy"], "fifo");
  EXPECT_EQ(rows[0]["round_s"], "60");
  EXPECT_EQ(rows[3]["policy"], "themis:filter=0.5");
  EXPECT_EQ(rows[3]["round_s"], "120");
  // Each row's mean and interval from its three runs' summary.json.
  for (const auto& row : rows) {
    std::vector<double> jct;
    std::stringstream folders(row.at("folders"));
    for (std::string f; std::getline(folders, f, ';');) {
      json summary = json::parse(slurp(a / f / "summary.json"));
      jct.push_back(summary["avg_jct_s"].get<double>());
      EXPECT_EQ(summary["policy"], row.at("policy"));
      EXPECT_EQ(summary["round_s"].get<double>(), std::stod(row.at("round_s")));
    }
    ASSERT_EQ(jct.size(), 3u);
    const double mean = (jct[0] + jct[1] + jct[2]) / 3;
    double ss = 0;
    for (double x : jct) ss += (x - mean) * (x - mean);
    const double half = 4.302652729911275 * std::sqrt(ss / 2) / std::sqrt(3.0);
    EXPECT_NEAR(std::stod(row.at("avg_jct_s_mean")), mean, 1e-6 * mean);
    EXPECT_NEAR(std::stod(row.at("avg_jct_s_ci95")), half, 1e-6 * mean + 1e-9);
    EXPECT_GT(half, 0) << "the seeds give different workloads";
  }
  EXPECT_FALSE(contains(csv, "compute_p50")) << "wall-clock figures are not swept";
  const std::string page = slurp(a / "report.html");
  EXPECT_TRUE(contains(page, "Sweep: mean")) << page.substr(0, 500);
  // CDFs and cluster plots, then per row (fifo and themis both time-sharing)
  // GPU share, throughput and rho per window; besides, each metric against
  // the round length (tests/figures_test.cc).
  const std::size_t against = count(page, "<svg class=\"plot\" id=\"sweep-");
  EXPECT_GT(against, 0u);
  EXPECT_EQ(count(page, "<svg class=\"plot\"") - against, 4u + 4 * 3);
}

// Issue 29, friction: --jobs is each run's workload size, -j the runs at
// once; a --jobs that looks like the latter gets a note, and runs as asked.
TEST_F(ReportTest, SweepNotesThatASmallJobsIsTheWorkloadsSize) {
  RunResult r = run({"sweep", "--policies", "fifo", "--seeds", "1", "--jobs", "2",
                     "--gen-tenants", "1", "--out", (dir_ / "j").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "note: --jobs 2 is each run's number of jobs")) << r.err;
  EXPECT_TRUE(contains(r.err, "-j/--jobs-at-once")) << r.err;
  r = run({"sweep", "--policies", "fifo", "--seeds", "1", "--jobs", "12", "--gen-tenants", "2",
           "--out", (dir_ / "k").string()});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "note: --jobs")) << r.err;
}

TEST_F(ReportTest, SweepRejectsBadGridsWithOneLineAndNoRuns) {
  for (const std::vector<std::string>& bad : {std::vector<std::string>{"--seeds", "3-1"},
                                              {"--seeds", "1,x"},
                                              {"--loads", "0"},
                                              {"--policies", "fifo,fifo"},
                                              {"--seed", "4"},
                                              {"--policies", "nosuch"}}) {
    std::vector<std::string> args = {"sweep", "--jobs", "10", "--out", (dir_ / "s").string()};
    args.insert(args.end(), bad.begin(), bad.end());
    RunResult r = run(args);
    EXPECT_EQ(r.status, 2) << bad[0] << " " << bad[1] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "s" / "sweep.csv"));
    EXPECT_TRUE(!fs::exists(dir_ / "s" / "runs") || fs::is_empty(dir_ / "s" / "runs"));
  }
}

// ---- load scaling ---------------------------------------------------------------

TEST(LoadScaling, ArrivalsAreScaledToTheRequestedOfferedLoad) {
  ScenarioOptions o;
  o.cluster_path = kCluster;
  o.trace_path = kTrace;
  const Scenario base = load_scenario(o);
  const double before = offered_load(base.model, base.workload);
  ASSERT_GT(before, 0);
  // By hand from the definition: GPU-seconds alone on the average GPU over
  // GPUs x span; each job's work is duration_s x its rate on the slowest type.
  double need = 0;
  const auto& cap = base.model.capacity;
  const double gpus = base.model.total_gpus;
  for (const JobSpec& j : base.workload.jobs) {
    const JobTypeProfile& p = *base.model.profiles.find(j.job_type);
    double mean_rate = 0, ref = 0;
    for (std::size_t t = 0; t < cap.size(); ++t) {
      const std::string& type = base.model.cluster.gpu_types[t];
      const double rate = p.rate(type, j.workers, false);
      mean_rate += cap[t] / gpus * rate;
      if (ref == 0) ref = rate;
    }
    need += j.workers * j.duration_s * ref / mean_rate;
  }
  const double span = base.workload.jobs.back().arrival_s - base.workload.jobs.front().arrival_s;
  EXPECT_NEAR(before, need / (gpus * span), 1e-9 * before);

  // --load sets the load over the arrival window (tests/load_test.cc checks
  // it by hand): arrivals scaled by one factor, durations kept.
  // (30 jobs on 24 GPUs: moving arrivals reaches at most 0.68.)
  for (double target : {0.3, 0.6}) {
    o.load = target;
    const Scenario scaled = load_scenario(o);
    EXPECT_NEAR(window_load(scaled.model, scaled.workload), target, 1e-9 * target);
    ASSERT_EQ(scaled.workload.jobs.size(), base.workload.jobs.size());
    const double factor = scaled.workload.jobs.back().arrival_s / base.workload.jobs.back().arrival_s;
    for (std::size_t i = 0; i < base.workload.jobs.size(); ++i) {
      const JobSpec &x = base.workload.jobs[i], &y = scaled.workload.jobs[i];
      EXPECT_EQ(y.id, x.id);
      EXPECT_EQ(y.duration_s, x.duration_s);
      EXPECT_NEAR(y.arrival_s, x.arrival_s * factor, 1e-6);  // first arrival is 0
    }
  }
  o.load = 0;
  o.time_scale = 0.5;
  EXPECT_NEAR(offered_load(load_scenario(o).model, load_scenario(o).workload), 2 * before,
              1e-9 * before);
  o.load = 1;
  EXPECT_THROW(load_scenario(o), InputError);  // both
  o.time_scale = 1;
  o.load = -1;
  EXPECT_THROW(load_scenario(o), InputError);
}

// The sparse per-tenant series (what the CLI stores) give the same metrics
// and files as the dense ones, and hold only tenants with something.
TEST(SparseSeries, SameMetricsAndFilesAsDense) {
  ScenarioOptions o;
  o.generator.jobs = 60;
  o.generator.tenants = 12;
  const Scenario sc = load_scenario(o);
  for (const char* policy : {"astraea", "oef-coop"}) {
    auto run = [&](bool sparse) {
      auto p = make_round_policy(policy, {});
      SimOptions options;
      options.sparse_tenant_series = sparse;
      return simulate(sc.model, sc.workload, *p, options);
    };
    const SimResult dense = run(false), sparse = run(true);
    std::size_t listed = 0;
    for (const RoundSample& round : sparse.rounds) {
      EXPECT_TRUE(round.sparse);
      EXPECT_TRUE(round.tenant_gpus.empty());
      listed += round.sparse_tenants.size();
    }
    EXPECT_LT(listed, sparse.rounds.size() * sparse.tenants.size()) << policy;
    EXPECT_EQ(tenants_csv(sparse), tenants_csv(dense)) << policy;
    EXPECT_EQ(tenants_csv(sparse, 3600), tenants_csv(dense, 3600)) << policy;
    EXPECT_EQ(tenant_windows_csv(sparse), tenant_windows_csv(dense)) << policy;
    SimSummary a = summarise(dense), b = summarise(sparse);
    EXPECT_EQ(a.jain_index, b.jain_index) << policy;
    EXPECT_EQ(a.actual_throughput, b.actual_throughput) << policy;
    EXPECT_EQ(a.tenant_unfairness_ratio, b.tenant_unfairness_ratio) << policy;
    EXPECT_EQ(a.min_tenant_rho, b.min_tenant_rho) << policy;
    // A sparse round listing a tenant twice is a broken result.
    SimResult broken = sparse;
    for (RoundSample& round : broken.rounds)
      if (round.sparse_tenants.size() >= 2) {
        round.sparse_tenants[1] = round.sparse_tenants[0];
        break;
      }
    EXPECT_THROW(check_sim_result(broken), std::invalid_argument) << policy;
  }
}

TEST(ReportCells, NonzeroValuesNeverShowAsZero) {
  EXPECT_EQ(table_cell(0.012, 1), "0.01");
  EXPECT_EQ(table_cell(0.00012, 1), "0.0001");
  EXPECT_EQ(table_cell(0, 1), "0.0");
  EXPECT_EQ(table_cell(14.94, 1), "14.9");
  EXPECT_EQ(table_cell(std::nan(""), 1), "-");
}

}  // namespace
}  // namespace fairgpu
