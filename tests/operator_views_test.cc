// What an operator watches (issue 32, items 8 and 9). The status page
// `serve` answers at /: token-protected like /metrics, self-contained HTML
// (no script, no resource from anywhere), rendered in headless Chromium with
// no console error, showing the nodes, the queue with pending reasons, the
// tenants' shares and recent events of a small live setup; tenant-supplied
// strings are escaped. /metrics follows Prometheus' conventions (promtool's
// lint when installed, and the checks below).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "live/config.h"
#include "live/status_page.h"
#include "live_daemon.h"
#include "polling.h"
#include "run_binary.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using nlohmann::json;
using testing_support::quote;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;
using testing_support::wait_for;
namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const std::string kEvil = "<script>alert(\"x\")</script>&'";

TEST(StatusPageHtml, EscapesEveryStringFromTheCluster) {
  json data = {
      {"version", "1"},
      {"policy", "fifo"},
      {"round", 3},
      {"round_s", 20},
      {"now", 1.8e9},
      {"nodes",
       {{{"name", "n1"},
         {"gpu_type", "v100"},
         {"state", "drained"},
         {"reason", kEvil},
         {"devices", {0, 1}},
         {"devices_busy", 1},
         {"last_heartbeat_s_ago", 2},
         {"holders", {{{"device", 0}, {"job", "j-1"}, {"tenant", "alice"}}}}}}},
      {"jobs",
       {{{"id", "j-1"},
         {"name", kEvil},
         {"tenant", "alice"},
         {"job_type", kEvil},
         {"workers", 1},
         {"state", "queued"},
         {"submitted_at", 1.8e9 - 60},
         {"pending", {{"reason", "Resources"}, {"detail", kEvil}}}}}},
      {"tenants", {{{"name", "alice"}, {"weight", 2}, {"share", 0.5}}}},
      {"share_history", {{{"t", 1.8e9 - 30}, {"tenants", {{"alice", {0.5, 1.0}}}}}}},
      {"events",
       {{{"time", 1.8e9}, {"level", "info"}, {"event", "submit"}, {"fields", {{"name", kEvil}}}}}}};
  const std::string page = live::render_status_page(data);
  EXPECT_FALSE(contains(page, "<script")) << page;
  EXPECT_FALSE(contains(page, "alert(\"x\")")) << page;
  // Drain reason, job name, job type, pending detail and the event's field.
  std::size_t escaped = 0;
  const std::string want = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;";
  for (std::size_t at = page.find(want); at != std::string::npos; at = page.find(want, at + 1))
    ++escaped;
  EXPECT_EQ(escaped, 5u) << page;
  EXPECT_EQ(live::html_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
}

// Appended to a copy of the page (which has no script): after layout it
// writes what the browser shows into the DOM, which --dump-dom prints.
const char* kChecker = R"(<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message || (e.target && (e.target.src || e.target.href)) || 'error'));
  }, true);
  function rows(cls) {
    var out = [];
    document.querySelectorAll('tr.' + cls).forEach(function (tr) {
      var cells = [];
      tr.querySelectorAll('td').forEach(function (td) { cells.push(td.textContent); });
      out.push(cells);
    });
    return out;
  }
  var out = {errors: errors, scripts: document.scripts.length, nodes: rows('node'),
             jobs: rows('job'), tenants: rows('tenant'), events: rows('event'), series: []};
  document.querySelectorAll('svg.plot polyline').forEach(function (line) {
    var b = line.getBBox();
    out.series.push({cls: line.getAttribute('class'), name: line.getAttribute('data-series'),
                     drawn: line.points.numberOfItems,
                     declared: Number(line.getAttribute('data-points')), h: b.height,
                     w: b.width});
  });
  var svg = document.querySelector('svg.plot');
  out.plot = svg ? {w: svg.getBoundingClientRect().width,
                    h: svg.getBoundingClientRect().height} : null;
  var pre = document.createElement('pre');
  pre.id = 'fairgpu-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
)";

class OperatorViews : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fairgpu-views-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
    fs::create_directories(dir_ / "scratch");
    std::ofstream(dir_ / "profiles.json") << R"json({"slow": {"('mlp', 1)": {"null": 1000},
      "('mlp', 2)": {"null": 1800}}})json";
    json config = {{"listen", "127.0.0.1:0"},
                   {"data_dir", (dir_ / "data").string()},
                   {"checkpoint_dir", (dir_ / "ckpt").string()},
                   {"policy", "fifo"},
                   {"round_s", 0.5},
                   {"heartbeat_s", 0.2},
                   {"heartbeat_timeout_s", 5},
                   {"grace_s", 2},
                   {"kill_after_s", 1},
                   {"profiles", (dir_ / "profiles.json").string()},
                   {"admin_token", "admin-token"},
                   {"metrics_token", "scrape-token"},
                   {"tenants",
                    {{{"name", "alice"}, {"weight", 2}, {"token", "alice-token"}},
                     {{"name", "bob"}, {"token", "bob-token"}}}}};
    config_ = config;
    start_server();
    RunResult r = fairgpu({"node-token", "n1", "--server", http_, "--token", "admin-token"});
    ASSERT_EQ(r.status, 0) << r.err;
    std::ofstream(dir_ / "n1.token") << r.out;
    fs::permissions(dir_ / "n1.token", fs::perms::owner_read | fs::perms::owner_write);
    agent_ = std::make_unique<Daemon>(
        std::vector<std::string>{FAIRGPU_BINARY, "agent", "--server", http_, "--node", "n1",
                                 "--gpus", "slow:2", "--token-file", (dir_ / "n1.token").string(),
                                 "--state-dir", (dir_ / "agent").string()},
        dir_ / "agent.log");
  }
  // Writes config_ and starts serve on it; waits for its port.
  void start_server() {
    std::ofstream(dir_ / "serve.json") << config_.dump(2);
    fs::remove(dir_ / "port");
    server_ =
        std::make_unique<Daemon>(std::vector<std::string>{FAIRGPU_BINARY, "serve", "--config",
                                                          (dir_ / "serve.json").string(),
                                                          "--port-file", (dir_ / "port").string()},
                                 dir_ / "server.log");
    ASSERT_TRUE(
        wait_for([&] { return fs::exists(dir_ / "port") && !slurp(dir_ / "port").empty(); }, 10))
        << server_->text();
    port_ = std::stoi(slurp(dir_ / "port"));
    http_ = "http://127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    agent_.reset();
    server_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  RunResult fairgpu(const std::vector<std::string>& args) {
    return run_binary(args, dir_ / "scratch", {}, 30);
  }
  // A long job of `workers` GPUs; its id.
  std::string submit(const std::string& token, const std::string& name, int workers) {
    RunResult r = fairgpu({"submit",
                           "--server",
                           http_,
                           "--token",
                           token,
                           "--name",
                           name,
                           "--job-type",
                           "mlp",
                           "--workers",
                           std::to_string(workers),
                           "--iterations",
                           "1000000",
                           "--",
                           FAIRGPU_TRAIN_BINARY,
                           "--iterations",
                           "1000000",
                           "--base-rate",
                           "200",
                           "--checkpoint-every",
                           "1000"});
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }
  json job(const std::string& id) {
    RunResult q = fairgpu({"jobs", id, "--json", "--server", http_, "--token", "admin-token"});
    return q.status == 0 ? json::parse(q.out) : json(nullptr);
  }

  fs::path dir_;
  json config_;
  int port_ = 0;
  std::string http_;
  std::unique_ptr<Daemon> server_, agent_;
};

TEST_F(OperatorViews, ServedBehindTheMetricsTokensAndRenderedInChromium) {
  // alice's job takes both GPUs (fifo); bob's, named with markup, waits.
  const std::string running = submit("alice-token", "train-resnet", 2);
  ASSERT_TRUE(wait_for([&] { return job(running)["state"] == "running"; }, 30)) << server_->text();
  const std::string waiting = submit("bob-token", kEvil, 1);
  ASSERT_TRUE(wait_for(
      [&] {
        json j = job(waiting);
        return j.is_object() && j["pending"].is_object() && j["pending"]["reason"] != "Profiling";
      },
      30))
      << server_->text();

  httplib::Client c("127.0.0.1", port_);
  // No token, or a tenant's: 401, with the Basic challenge a browser answers.
  auto res = c.Get("/");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  EXPECT_TRUE(contains(res->get_header_value("WWW-Authenticate"), "Basic")) << res->body;
  res = c.Get("/", {{"Authorization", "Bearer alice-token"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = c.Get("/", {{"Authorization", "Basic YWxpY2U6YWxpY2UtdG9rZW4="}});  // alice:alice-token
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  // The scrape token as bearer; the admin's as Basic password (any user).
  res = c.Get("/", {{"Authorization", "Bearer scrape-token"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = c.Get("/", {{"Authorization", "Basic b3BzOmFkbWluLXRva2Vu"}});  // ops:admin-token
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_TRUE(contains(res->get_header_value("Content-Type"), "text/html"));
  EXPECT_TRUE(contains(res->get_header_value("Content-Security-Policy"), "default-src 'none'"));
  const std::string page = res->body;
  // Self-contained: no script, no resource from anywhere (URLs appear as
  // text only: the "listening" event's).
  for (const char* banned : {"<script", "src=", "href=", "url(", "@import", "<img", "<link"})
    EXPECT_FALSE(contains(page, banned)) << banned << "\n" << page;

  const std::string chromium = testing_support::find_program_on_path({"chromium", "chromium-browser", "google-chrome"});
  if (chromium.empty())
    GTEST_SKIP() << "no chromium on PATH (scripts/setup.sh installs Debian's chromium)";
  std::string probe_page = page;
  probe_page.insert(probe_page.rfind("</body>"), kChecker);
  std::ofstream(dir_ / "probe.html", std::ios::binary) << probe_page;
  const std::string cmd =
      "timeout -s KILL 120 " + quote(chromium) +
      " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" +
      quote((dir_ / "chromium-profile").string()) + " --enable-logging=stderr --v=0 --dump-dom " +
      quote("file://" + (dir_ / "probe.html").string()) + " >" +
      quote((dir_ / "dom.html").string()) + " 2>" + quote((dir_ / "chromium.log").string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "chromium.log");
  const std::string log = slurp(dir_ / "chromium.log");
  EXPECT_FALSE(contains(log, ":CONSOLE")) << log;
  const std::string dom = slurp(dir_ / "dom.html");
  const std::string open = "<pre id=\"fairgpu-check\">";
  const std::size_t at = dom.find(open);
  ASSERT_NE(at, std::string::npos) << dom.substr(0, 3000) << log;
  std::string text = dom.substr(at + open.size(), dom.find("</pre>", at) - at - open.size());
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}})
    for (std::size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + 1))
      text.replace(p, from.size(), to);
  const json check = json::parse(text);
  EXPECT_EQ(check["errors"], json::array()) << check.dump();
  EXPECT_EQ(check["scripts"], 1) << "only the checker runs: " << check.dump();

  // The node, with its state, both GPUs busy and alice's job on it.
  ASSERT_EQ(check["nodes"].size(), 1u) << check.dump();
  const json node = check["nodes"][0];
  EXPECT_EQ(node[0], "n1");
  EXPECT_EQ(node[1], "slow");
  EXPECT_EQ(node[2], "ready");
  EXPECT_EQ(node[3], "2 / 2");
  EXPECT_TRUE(contains(node[5].get<std::string>(), running)) << node.dump();
  // The queue: alice's job running on n1, bob's waiting with its reason;
  // its name shown as the text it is.
  ASSERT_EQ(check["jobs"].size(), 2u) << check.dump();
  const json first = check["jobs"][0], second = check["jobs"][1];
  EXPECT_EQ(first[0], running);
  EXPECT_EQ(first[5], "running");
  EXPECT_TRUE(contains(first[7].get<std::string>(), "on n1")) << first.dump();
  EXPECT_EQ(second[0], waiting);
  EXPECT_EQ(second[1], kEvil);
  EXPECT_EQ(second[2], "bob");
  const json pending = job(waiting)["pending"];
  EXPECT_TRUE(contains(second[7].get<std::string>(), pending["reason"].get<std::string>() + ": " +
                                                         pending["detail"].get<std::string>()))
      << second.dump() << pending.dump();
  // Tenants with their weights; the chart has a held and an entitled line
  // per tenant, drawn with every point, alice's held share 1 at the end.
  ASSERT_EQ(check["tenants"].size(), 2u) << check.dump();
  EXPECT_EQ(check["tenants"][0][0], "alice");
  EXPECT_EQ(check["tenants"][0][1], "2");
  ASSERT_TRUE(check["plot"].is_object()) << check.dump();
  EXPECT_GT(check["plot"]["w"].get<double>(), 300);
  ASSERT_EQ(check["series"].size(), 4u) << check.dump();
  for (const json& s : check["series"]) {
    EXPECT_GT(s["declared"].get<int>(), 0) << s.dump();
    EXPECT_EQ(s["drawn"], s["declared"]) << s.dump();
  }
  // Recent events: the submissions, bob's with its name as text.
  bool bob_submit = false;
  for (const json& e : check["events"])
    if (e[2] == "submit" && contains(e[3].get<std::string>(), kEvil)) bob_submit = true;
  EXPECT_TRUE(bob_submit) << check["events"].dump();
}

// The backup and restore of docs/operator-guide.md ("Backup and restore"):
// sqlite3's .backup while serve runs and commits, then the copy as the
// store of a new data_dir: serve starts on it with the jobs and the tenant
// made through the API.
TEST_F(OperatorViews, StoreBackedUpWhileServingRestores) {
  if (std::system("command -v sqlite3 >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no sqlite3 shell (Debian's sqlite3 package)";
  const std::string running = submit("alice-token", "long", 2);
  ASSERT_TRUE(wait_for([&] { return job(running)["state"] == "running"; }, 30)) << server_->text();
  const std::string waiting = submit("bob-token", "waits", 1);
  RunResult r = fairgpu({"tenant", "carol", "--weight", "3", "--new-token", "carol-token-1",
                         "--server", http_, "--token", "admin-token"});
  ASSERT_EQ(r.status, 0) << r.err;
  // Online backup while rounds commit (round_s 0.5).
  const fs::path db = fs::path(config_["data_dir"].get<std::string>()) / "fairgpu.db";
  const fs::path backup = dir_ / "backup" / "fairgpu.db";
  fs::create_directories(backup.parent_path());
  const std::string cmd = "sqlite3 " + quote(db.string()) + " " +
                          quote(".backup " + backup.string()) + " >" +
                          quote((dir_ / "backup.log").string()) + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "backup.log");
  const std::string check = "sqlite3 " + quote(backup.string()) + " 'PRAGMA integrity_check' >" +
                            quote((dir_ / "check.log").string());
  ASSERT_EQ(std::system(check.c_str()), 0);
  EXPECT_EQ(slurp(dir_ / "check.log"), "ok\n");
  // The server is lost with its data_dir; the copy is restored in a new one.
  agent_.reset();
  EXPECT_EQ(server_->stop(SIGTERM), 0);
  const fs::path restored = dir_ / "restored";
  fs::create_directories(restored);
  fs::copy_file(backup, restored / "fairgpu.db");
  fs::permissions(restored / "fairgpu.db", fs::perms::owner_read | fs::perms::owner_write);
  config_["data_dir"] = restored.string();
  start_server();
  // Both jobs, not ended (the one that ran waits for a node again), and
  // carol's token, made through the API, answers.
  for (const std::string& id : {running, waiting}) {
    const json j = job(id);
    ASSERT_TRUE(j.is_object()) << id << "\n" << server_->text();
    EXPECT_TRUE(j["state"] == "queued" || j["state"] == "running") << j.dump();
  }
  r = fairgpu({"jobs", "--server", http_, "--token", "carol-token-1"});
  EXPECT_EQ(r.status, 0) << r.err;
  r = fairgpu({"tenants", "--json", "--server", http_, "--token", "admin-token"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\"carol\"")) << r.out;
}

// The Slurm backend's complete example (docs/operator-guide.md) is a valid
// config once its files exist: every key known, every value accepted.
TEST(OperatorExamples, SlurmServeConfigIsValid) {
  std::string tmpl = (fs::temp_directory_path() / "fairgpu-example-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  std::string text = slurp(testing_support::source_path("examples/slurm-serve.json"));
  for (std::size_t at; (at = text.find("/etc/fairgpu/")) != std::string::npos;)
    text.replace(at, 13, dir.string() + "/");
  for (const char* f : {"admin", "metrics", "vision", "nlp"}) {
    std::ofstream(dir / (std::string(f) + ".token")) << f << "-token-0123\n";
    fs::permissions(dir / (std::string(f) + ".token"), fs::perms::owner_read);
  }
  for (const char* f : {"server.pem", "server.key"}) {
    std::ofstream(dir / f) << "";
    fs::permissions(dir / f, fs::perms::owner_read);
  }
  std::ofstream(dir / "serve.json") << text;
  const live::ServeConfig c = live::read_serve_config((dir / "serve.json").string());
  EXPECT_EQ(c.backend, "slurm");
  EXPECT_EQ(c.slurm.partition, "main");  // the test cluster's (scripts/slurm-cluster.sh)
  ASSERT_EQ(c.tenants.size(), 2u);
  EXPECT_EQ(c.tenants[0].unix_user, "vision");
  // Tenants as Slurm accounts (issue 34 item 4): sacct attributes their jobs.
  EXPECT_EQ(c.tenants[0].account, "vision-lab");
  EXPECT_EQ(c.tenants[1].account, "nlp-lab");
  fs::remove_all(dir);
}

// What breaks Prometheus' naming conventions in a scrape, or "": names
// fairgpu_ and snake case; counters _total; a fraction _ratio (a family
// about a share, fraction or utilisation) with values in [0, 1]; times as
// _timestamp_seconds (no ages, no gauge of the last duration: durations are
// histograms); label names from a bounded set (no per-job label) and
// tenant/node values among the configured tenants and registered nodes.
std::string convention_problem(const std::string& text, const std::set<std::string>& tenants,
                               const std::set<std::string>& nodes, double now) {
  static const std::regex kFamily("fairgpu_[a-z][a-z0-9_]*[a-z0-9]");
  static const std::regex kSample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+))");
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  static const std::set<std::string> kLabels = {"version",  "state", "tenant", "quota",
                                                "gpu_type", "node",  "le"};
  auto ends = [](const std::string& s, const std::string& sfx) {
    return s.size() >= sfx.size() && s.compare(s.size() - sfx.size(), sfx.size(), sfx) == 0;
  };
  std::map<std::string, std::string> type;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, t;
      words >> name >> t;
      type[name] = t;
      if (!std::regex_match(name, kFamily)) return "not fairgpu_ snake case: " + name;
      if (t == "counter" && !ends(name, "_total")) return "counter without _total: " + name;
      if (t != "counter" && ends(name, "_total")) return t + " named _total: " + name;
      if (name.find("_age") != std::string::npos) return "an age, not a timestamp: " + name;
      for (const char* fraction : {"share", "fraction", "utilisation", "utilization"})
        if (name.find(fraction) != std::string::npos && !ends(name, "_ratio"))
          return "a fraction without _ratio: " + name;
      if (t == "gauge" && ends(name, "_seconds") && !ends(name, "_timestamp_seconds"))
        return "a gauge of a duration (a histogram, or a _timestamp_seconds): " + name;
      if (t == "gauge" && name.find("_last_") != std::string::npos &&
          !ends(name, "_timestamp_seconds"))
        return "a last-value gauge: " + name;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::smatch m;
    if (!std::regex_match(line, m, kSample)) return "malformed sample: " + line;
    const std::string name = m[1];
    const double v = std::stod(m[4]);
    if (ends(name, "_ratio") && !(v >= 0 && v <= 1)) return "a ratio outside [0, 1]: " + line;
    if (ends(name, "_timestamp_seconds") && v != 0 && !(v > now - 86400 && v < now + 60))
      return "not a time in seconds since the epoch: " + line;
    std::string rest = m[3];
    while (!rest.empty()) {
      std::smatch lm;
      if (!std::regex_search(rest, lm, kLabel) || lm.position(0) != 0)
        return "malformed labels: " + line;
      const std::string key = lm[1], value = lm[2];
      if (!kLabels.count(key)) return "label " + key + " is not in the bounded set: " + line;
      if (key == "tenant" && !tenants.count(value)) return "unknown tenant label: " + line;
      if (key == "node" && !nodes.count(value)) return "unknown node label: " + line;
      rest = lm.suffix();
      if (!rest.empty() && rest[0] == ',') rest = rest.substr(1);
    }
  }
  return "";
}

TEST(MetricConventions, CatchWhatTheyShould) {
  const std::set<std::string> tenants = {"alice"}, nodes = {"n1"};
  const double now = 1.8e9;
  auto family = [](const std::string& name, const std::string& t, const std::string& sample) {
    return "# HELP " + name + " X.\n# TYPE " + name + " " + t + "\n" + sample + "\n";
  };
  EXPECT_EQ(convention_problem(family("fairgpu_tenant_gpu_share_ratio", "gauge",
                                      "fairgpu_tenant_gpu_share_ratio{tenant=\"alice\"} 0.5"),
                               tenants, nodes, now),
            "");
  for (const std::string& bad :
       {family("fairgpu_tenant_gpu_share", "gauge", "fairgpu_tenant_gpu_share 0.5"),
        family("fairgpu_x_ratio", "gauge", "fairgpu_x_ratio 1.5"),
        family("fairgpu_node_heartbeat_age_seconds", "gauge",
               "fairgpu_node_heartbeat_age_seconds 3"),
        family("fairgpu_last_round_compute_seconds", "gauge",
               "fairgpu_last_round_compute_seconds 0.1"),
        family("fairgpu_x_timestamp_seconds", "gauge", "fairgpu_x_timestamp_seconds 12"),
        family("fairgpu_jobs", "gauge", "fairgpu_jobs{job=\"j-000001\"} 1"),
        family("fairgpu_jobs", "gauge", "fairgpu_jobs{tenant=\"mallory\"} 1"),
        family("fairgpu_jobs", "gauge", "fairgpu_jobs{node=\"n9\"} 1"),
        family("fairgpu_x", "counter", "fairgpu_x 1"), family("fairgpu_X", "gauge", "fairgpu_X 1")})
    EXPECT_NE(convention_problem(bad, tenants, nodes, now), "") << bad;
}

TEST_F(OperatorViews, MetricsFollowPrometheusConventions) {
  // One job that ran to its end, one that runs.
  RunResult r =
      fairgpu({"submit", "--server", http_, "--token", "bob-token", "--name", "short", "--job-type",
               "mlp", "--workers", "1", "--iterations", "1", "--command", "true"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string done = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(wait_for([&] { return job(done)["state"] == "finished"; }, 30)) << server_->text();
  const std::string running = submit("alice-token", "long", 1);
  ASSERT_TRUE(wait_for([&] { return job(running)["state"] == "running"; }, 30)) << server_->text();
  httplib::Client c("127.0.0.1", port_);
  auto res = c.Get("/metrics", {{"Authorization", "Bearer scrape-token"}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const std::string& m = res->body;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_EQ(convention_problem(m, {"alice", "bob"}, {"n1"}, now), "") << m;
  // What the conventions replaced: histograms of durations, times, ratios.
  EXPECT_TRUE(contains(m, "# TYPE fairgpu_round_compute_seconds histogram\n")) << m;
  EXPECT_FALSE(contains(m, "fairgpu_round_compute_seconds_count 0\n")) << m;
  EXPECT_TRUE(contains(m, "fairgpu_node_last_heartbeat_timestamp_seconds{node=\"n1\"} ")) << m;
  EXPECT_TRUE(contains(m, "fairgpu_tenant_gpu_share_ratio{tenant=\"alice\"} 0.5\n")) << m;
  EXPECT_FALSE(contains(m, "j-0000")) << "no per-job label: " << m;

  const std::string promtool = testing_support::find_program_on_path({"promtool"});
  if (promtool.empty()) {
    GTEST_SKIP() << "no promtool (scripts/setup.sh installs Debian's prometheus): its lint "
                    "not run";
  }
  std::ofstream(dir_ / "scrape.txt") << m;
  const std::string cmd = quote(promtool) + " check metrics <" +
                          quote((dir_ / "scrape.txt").string()) + " >" +
                          quote((dir_ / "promtool.out").string()) + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << slurp(dir_ / "promtool.out");
  EXPECT_EQ(slurp(dir_ / "promtool.out"), "");
}

}  // namespace
}  // namespace fairgpu
