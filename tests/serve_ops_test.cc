// Operating `fairgpu serve` and `fairgpu agent` (issue 18): TLS end to end
// with a certificate the test makes (openssl), tokens from files and the
// environment, /metrics behind a token, exit statuses (2 for a refusal, 3
// for a server that cannot be reached), and a second server on the same port
// or store refused with one line.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

std::size_t lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

class ServeOps : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fairgpu-ops-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    // A root agent runs jobs as other users, who must pass through it.
    fs::permissions(dir_, fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
    fs::create_directories(dir_ / "scratch");
    std::ofstream(dir_ / "profiles.json") << R"json({"slow": {"('mlp', 1)": {"null": 1000}}})json";
    write_secret("alice.token", "alice-token\n");
    config_ = {
        {"listen", "127.0.0.1:0"},
        {"data_dir", (dir_ / "data").string()},
        {"checkpoint_dir", (dir_ / "ckpt").string()},
        {"policy", "fifo"},
        {"round_s", 0.5},
        {"heartbeat_s", 0.2},
        {"heartbeat_timeout_s", 3},
        {"grace_s", 2},
        {"kill_after_s", 1},
        {"profiles", (dir_ / "profiles.json").string()},
        {"admin_token", "admin-token"},
        {"tenants",
         {{{"name", "alice"}, {"weight", 2}, {"token_file", (dir_ / "alice.token").string()}},
          {{"name", "bob"}, {"token", "bob-token"}}}}};
  }
  void TearDown() override {
    agent_.reset();
    server_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void write_secret(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    fs::permissions(dir_ / name, fs::perms::owner_read | fs::perms::owner_write);
  }

  // A self-signed certificate for 127.0.0.1 (its own CA): <name>.pem and
  // <name>.key.
  void make_certificate(const std::string& name) {
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
        quote((dir_ / (name + ".key")).string()) + " -out " +
        quote((dir_ / (name + ".pem")).string()) + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    fs::permissions(dir_ / (name + ".key"), fs::perms::owner_read | fs::perms::owner_write);
  }

  fs::path write_config(const std::string& name = "serve.json") {
    std::ofstream(dir_ / name) << config_.dump(2);
    return dir_ / name;
  }

  std::vector<std::string> serve_argv(const fs::path& config, const fs::path& port_file) const {
    return {FAIRGPU_BINARY,  "serve",       "--config",
            config.string(), "--port-file", port_file.string()};
  }

  // Starts the server and waits for its port.
  void start_server() {
    const fs::path config = write_config();
    fs::remove(dir_ / "port");
    server_ = std::make_unique<Daemon>(serve_argv(config, dir_ / "port"), dir_ / "server.log");
    ASSERT_TRUE(wait_for([&] { return fs::exists(dir_ / "port"); }, 10)) << server_->text();
    port_ = std::stoi(slurp(dir_ / "port"));
  }

  std::string url(const std::string& scheme) const {
    return scheme + "://127.0.0.1:" + std::to_string(port_);
  }

  // Starts an agent of `gpus` on `node` with a token the admin issues (http).
  void start_agent(const std::string& node, const std::string& gpus,
                   const std::vector<std::string>& extra = {}) {
    RunResult r = fairgpu({"node-token", node, "--server", url("http"), "--token", "admin-token"});
    ASSERT_EQ(r.status, 0) << r.err;
    write_secret(node + ".token", r.out);
    std::vector<std::string> argv = {FAIRGPU_BINARY, "agent",
                                     "--server",     url("http"),
                                     "--node",       node,
                                     "--gpus",       gpus,
                                     "--token-file", (dir_ / (node + ".token")).string(),
                                     "--state-dir",  (dir_ / ("agent-" + node)).string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    agent_ = std::make_unique<Daemon>(argv, dir_ / ("agent-" + node + ".log"));
  }

  RunResult fairgpu(const std::vector<std::string>& args) {
    return run_binary(args, dir_ / "scratch", {}, 30);
  }

  fs::path dir_;
  json config_;
  int port_ = 0;
  std::unique_ptr<Daemon> server_, agent_;
};

// ---- TLS -------------------------------------------------------------------

TEST_F(ServeOps, TlsEndToEnd) {
  make_certificate("server");
  make_certificate("other");  // a CA that did not sign the server's
  config_["tls"] = {{"cert", (dir_ / "server.pem").string()},
                    {"key", (dir_ / "server.key").string()}};
  ::setenv("FAIRGPU_TEST_BOB_TOKEN", "bob-env-token", 1);
  config_["tenants"][1].erase("token");
  config_["tenants"][1]["token_env"] = "FAIRGPU_TEST_BOB_TOKEN";
  start_server();
  ASSERT_TRUE(contains(server_->text(), "listening url=https://127.0.0.1:")) << server_->text();
  const std::string https = url("https"), ca = (dir_ / "server.pem").string();

  // The admin issues the node's token over https; the agent registers with it.
  RunResult r =
      fairgpu({"node-token", "n1", "--server", https, "--ca", ca, "--token", "admin-token"});
  ASSERT_EQ(r.status, 0) << r.err;
  write_secret("n1.token", r.out);
  agent_ = std::make_unique<Daemon>(
      std::vector<std::string>{FAIRGPU_BINARY, "agent", "--server", https, "--ca", ca, "--node",
                               "n1", "--gpus", "slow:1", "--token-file",
                               (dir_ / "n1.token").string(), "--state-dir",
                               (dir_ / "agent").string()},
      dir_ / "agent.log");

  // A tenant whose token is in a file submits; the job runs on the agent,
  // which speaks to the server over TLS too.
  r = fairgpu({"submit",
               "--server",
               https,
               "--ca",
               ca,
               "--token-file",
               (dir_ / "alice.token").string(),
               "--name",
               "t",
               "--job-type",
               "mlp",
               "--workers",
               "1",
               "--iterations",
               "40",
               "--",
               FAIRGPU_TRAIN_BINARY,
               "--iterations",
               "40",
               "--base-rate",
               "1000",
               "--checkpoint-every",
               "10"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  json job;
  ASSERT_TRUE(wait_for(
      [&] {
        RunResult q = fairgpu(
            {"jobs", id, "--json", "--server", https, "--ca", ca, "--token", "admin-token"});
        if (q.status != 0) return false;
        job = json::parse(q.out);
        return job["state"] == "finished";
      },
      30))
      << job.dump() << "\n"
      << server_->text() << agent_->text();
  // The token from the environment authenticates bob (who sees no alice job).
  r = fairgpu({"jobs", "--json", "--server", https, "--ca", ca, "--token", "bob-env-token"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["jobs"].size(), 0u);

  // A CA that did not sign the server's certificate: refused, one line,
  // nothing sent (status 2: the user's to fix).
  r = fairgpu(
      {"jobs", "--server", https, "--ca", (dir_ / "other.pem").string(), "--token", "admin-token"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "certificate could not be verified")) << r.err;
  EXPECT_EQ(r.out, "");
  // No --ca: the system's CAs do not know a self-signed certificate either.
  r = fairgpu({"jobs", "--server", https, "--token", "admin-token"});
  EXPECT_EQ(r.status, 2) << r.err;

  // Plain http to the TLS server gets no answer: the client finds that the
  // server speaks TLS and says so in one line, status 2 (the URL is the
  // user's to fix), and nothing of the API answers in clear.
  for (const char* command : {"jobs", "cluster"}) {
    r = fairgpu({command, "--server", url("http"), "--token", "admin-token"});
    EXPECT_EQ(r.status, 2) << command << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_TRUE(contains(r.err, "it speaks TLS: use https://")) << r.err;
  }
  httplib::Client plain("127.0.0.1", port_);
  plain.set_read_timeout(3, 0);
  auto res = plain.Get("/v1/jobs", {{"Authorization", "Bearer admin-token"}});
  EXPECT_TRUE(!res || res->status >= 400);

  // An agent with the wrong CA does not register: it keeps retrying and
  // says why.
  Daemon wrong_ca(
      {FAIRGPU_BINARY, "agent", "--server", https, "--ca", (dir_ / "other.pem").string(), "--node",
       "n1", "--gpus", "slow:1", "--token-file", (dir_ / "n1.token").string(), "--state-dir",
       (dir_ / "agent2").string()},
      dir_ / "agent2.log");
  EXPECT_TRUE(
      wait_for([&] { return contains(slurp(dir_ / "agent2.log"), "cannot register"); }, 10));
  EXPECT_TRUE(contains(slurp(dir_ / "agent2.log"), "certificate could not be verified"))
      << slurp(dir_ / "agent2.log");
  wrong_ca.stop(SIGTERM);

  // /metrics: refused without a token, answered with the admin's.
  httplib::SSLClient tls("127.0.0.1", port_);
  tls.enable_server_certificate_verification(true);
  tls.set_ca_cert_path(ca);
  res = tls.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 401);
  EXPECT_FALSE(contains(res->body, "alice"));
  res = tls.Get("/metrics", {{"Authorization", "Bearer alice-token"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);
  res = tls.Get("/metrics", {{"Authorization", "Bearer admin-token"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_TRUE(contains(res->body, "fairgpu_jobs{state=\"finished\"} 1")) << res->body;
}

TEST_F(ServeOps, MetricsOpenWhenConfigured) {
  config_["metrics_open"] = true;
  config_["metrics_token"] = "scrape-token";
  start_server();
  httplib::Client c("127.0.0.1", port_);
  auto res = c.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST_F(ServeOps, MetricsTokenOpensMetricsAlone) {
  config_["metrics_token_file"] = (dir_ / "scrape.token").string();
  write_secret("scrape.token", "scrape-token\n");
  start_server();
  httplib::Client c("127.0.0.1", port_);
  auto res = c.Get("/metrics", {{"Authorization", "Bearer scrape-token"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = c.Get("/v1/jobs", {{"Authorization", "Bearer scrape-token"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401);  // it opens /metrics, nothing else
}

// Issue 32, defect 4: every error answer is the documented JSON error, also
// those httplib gives before a route runs (a POST with no body, no route).
TEST_F(ServeOps, ErrorsWithoutABodyAreJsonErrorsToo) {
  start_server();
  httplib::Client c("127.0.0.1", port_);
  const httplib::Headers admin = {{"Authorization", "Bearer admin-token"}};
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    httplib::Result res = which == 0   ? c.Post("/v1/jobs", admin, "", "application/json")
                          : which == 1 ? c.Post("/v1/jobs", admin)
                                       : c.Get("/v1/no-such-route", admin);
    ASSERT_TRUE(res);
    EXPECT_GE(res->status, 400);
    const json body = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(body.is_object()) << res->status << " '" << res->body << "'";
    EXPECT_TRUE(body.contains("error")) << res->body;
  }
}

TEST_F(ServeOps, BadTlsAndTokenConfigsAreOneLineErrors) {
  struct Case {
    std::function<void(json&)> edit;
    std::string expect;
  };
  write_secret("open.token", "open-token-1\n");
  fs::permissions(dir_ / "open.token", fs::perms::others_read, fs::perm_options::add);
  std::ofstream(dir_ / "junk.pem") << "not a certificate\n";
  write_secret("junk.key", "not a key\n");
  make_certificate("open");
  fs::permissions(dir_ / "open.key", fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::add);
  const std::vector<Case> cases = {
      {[&](json& c) {
         c["tls"] = {{"cert", (dir_ / "junk.pem").string()}};
       },
       "tls.key: missing required field"},
      {[&](json& c) {
         c["tls"] = {{"cert", (dir_ / "junk.pem").string()}, {"key", (dir_ / "junk.key").string()}};
       },
       ": tls: cannot load the certificate"},
      {[&](json& c) {
         c["tls"] = {{"cert", (dir_ / "open.pem").string()}, {"key", (dir_ / "open.key").string()}};
       },
       "tls.key: " + (dir_ / "open.key").string() + " is readable by others (mode 644)"},
      {[&](json& c) { c["tenants"][0]["token_file"] = (dir_ / "open.token").string(); },
       "tenants[0].token_file: " + (dir_ / "open.token").string() + " is readable by others"},
      {[&](json& c) { c["tenants"][1]["token_file"] = (dir_ / "alice.token").string(); },
       "tenants[1].token: give one of token, token_file and token_env"},
      {[&](json& c) {
         c["admin_token_env"] = "FAIRGPU_TEST_NOT_SET";
         c.erase("admin_token");
       },
       "admin_token_env: the environment variable FAIRGPU_TEST_NOT_SET is not set"},
      {[&](json& c) { c["metrics_open"] = "yes"; }, "metrics_open: expected true or false"},
  };
  for (const Case& k : cases) {
    json saved = config_;
    k.edit(config_);
    const fs::path config = write_config("bad.json");
    config_ = saved;
    RunResult r = fairgpu({"serve", "--config", config.string()});
    EXPECT_EQ(r.status, 2) << k.expect;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_TRUE(contains(r.err, k.expect)) << r.err;
  }
  // --port, like the config's listen, is a port number.
  const fs::path config = write_config("good.json");
  RunResult r = fairgpu({"serve", "--config", config.string(), "--port", "99999"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "--port")) << r.err;
}

// ---- logs, reload -----------------------------------------------------------

json job_of(const fs::path& dir, const std::string& url, const std::string& id) {
  RunResult q = run_binary({"jobs", id, "--json", "--server", url, "--token", "admin-token"},
                           dir / "scratch", {}, 30);
  return q.status == 0 ? json::parse(q.out) : json(nullptr);
}

TEST_F(ServeOps, ReloadChangesAWeightWithNoLeaseDropped) {
  start_server();
  const std::string http = url("http");
  start_agent("n1", "slow:1");
  // A long job: it holds its lease across the reload.
  RunResult r = fairgpu({"submit",
                         "--server",
                         http,
                         "--token",
                         "alice-token",
                         "--name",
                         "long",
                         "--job-type",
                         "mlp",
                         "--workers",
                         "1",
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
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  json job;
  ASSERT_TRUE(wait_for(
      [&] {
        job = job_of(dir_, http, id);
        return job.is_object() && job["state"] == "running" && job["iterations_done"] > 0;
      },
      20))
      << job.dump() << server_->text();
  const json lease = job["lease"];

  // The submission and the lease decision, one line each, with the job's
  // and the tenant's ids (text format: timestamp, level, event, key=value).
  const std::string log = server_->text();
  EXPECT_TRUE(contains(log, " info  submit job=" + id + " tenant=alice name=long")) << log;
  EXPECT_TRUE(contains(log, " info  lease_start job=" + id + " tenant=alice lease=" + lease.dump()))
      << log;
  EXPECT_TRUE(
      contains(log, " info  launch lease=" + lease.dump() + " job=" + id + " tenant=alice node=n1"))
      << log;
  EXPECT_TRUE(contains(slurp(dir_ / "agent-n1.log"),
                       "launch lease " + lease.dump() + " job " + id + " on devices 0"))
      << slurp(dir_ / "agent-n1.log");

  // Bob's weight 1 -> 3, and a new tenant, by SIGHUP.
  config_["tenants"][1]["weight"] = 3;
  config_["tenants"].push_back({{"name", "carol"}, {"token", "carol-token"}});
  write_config();
  server_->signal(SIGHUP);
  ASSERT_TRUE(wait_for([&] { return contains(server_->text(), "info  reload "); }, 10))
      << server_->text();
  EXPECT_TRUE(contains(server_->text(), "tenant bob weight 1 -> 3")) << server_->text();
  ASSERT_TRUE(server_->running());
  r = fairgpu({"tenants", "--json", "--server", http, "--token", "admin-token"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<std::string, double> weights;
  const json tenants = json::parse(r.out);
  for (const json& t : tenants["tenants"])
    weights[t["name"].get<std::string>()] = t["weight"].get<double>();
  EXPECT_EQ(weights["bob"], 3) << r.out;
  EXPECT_EQ(weights["alice"], 2);
  r = fairgpu({"jobs", "--server", http, "--token", "carol-token"});
  EXPECT_EQ(r.status, 0) << r.err;  // the new tenant's token works at once

  // Three more rounds: the job keeps its lease, never stopped or moved.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  job = job_of(dir_, http, id);
  EXPECT_EQ(job["state"], "running");
  EXPECT_EQ(job["lease"], lease);
  EXPECT_EQ(job["preemptions"], 0);
  EXPECT_EQ(job["restarts"], 0);
  EXPECT_FALSE(contains(server_->text(), "revoke")) << server_->text();

  // A broken config on SIGHUP: one warning, the server goes on unchanged.
  std::ofstream(dir_ / "serve.json") << "{ not json";
  server_->signal(SIGHUP);
  ASSERT_TRUE(wait_for([&] { return contains(server_->text(), "reload_failed"); }, 10));
  EXPECT_TRUE(server_->running());
  EXPECT_EQ(job_of(dir_, http, id)["lease"], lease);
  // SIGTERM stops it cleanly (status 0, "stopped").
  EXPECT_EQ(server_->stop(SIGTERM), 0);
  EXPECT_TRUE(contains(slurp(dir_ / "server.log"), "info  stopped"));
}

TEST_F(ServeOps, JsonLogLines) {
  fs::remove(dir_ / "port");
  server_ = std::make_unique<Daemon>(
      std::vector<std::string>{FAIRGPU_BINARY, "serve", "--config", write_config().string(),
                               "--port-file", (dir_ / "port").string(), "--log-format", "json"},
      dir_ / "server.log");
  ASSERT_TRUE(wait_for([&] { return fs::exists(dir_ / "port"); }, 10)) << server_->text();
  port_ = std::stoi(slurp(dir_ / "port"));
  const std::string http = url("http");
  start_agent("n1", "slow:1", {"--log-format", "json"});
  RunResult r = fairgpu({"submit", "--server", http, "--token", "bob-token", "--name", "short",
                         "--job-type", "mlp", "--workers", "1", "--iterations", "20", "--",
                         FAIRGPU_TRAIN_BINARY, "--iterations", "20", "--base-rate", "1000"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(wait_for([&] { return contains(server_->text(), "\"job_finished\""); }, 20))
      << server_->text();
  // Every line is one JSON object with a time, a level and an event.
  std::map<std::string, json> first;  // event -> its first line
  std::istringstream lines_in(server_->text());
  for (std::string line; std::getline(lines_in, line);) {
    json j = json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line;
    ASSERT_TRUE(j.contains("time") && j.contains("level") && j.contains("event")) << line;
    first.emplace(j["event"], j);
  }
  for (const char* event : {"submit", "lease_start", "launch", "exit", "job_finished"}) {
    ASSERT_TRUE(first.count(event)) << event << "\n" << server_->text();
    EXPECT_EQ(first[event]["job"], id) << first[event];
    EXPECT_EQ(first[event]["tenant"], "bob") << first[event];
    EXPECT_EQ(first[event]["level"], "info");
  }
  // The agent's lines too: structured events as the server's (issue 32,
  // item 9), with the node, and the lease, job and tenant of a run, as
  // fields; the text line as msg.
  std::map<std::string, json> agent;  // event -> its first line
  std::istringstream agent_in(slurp(dir_ / "agent-n1.log"));
  for (std::string line; std::getline(agent_in, line);) {
    json j = json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line;
    ASSERT_TRUE(j.contains("time") && j.contains("level") && j.contains("msg")) << line;
    EXPECT_NE(j["event"], "message") << "an agent line without its event: " << line;
    EXPECT_EQ(j["node"], "n1") << line;
    agent.emplace(j["event"], j);
  }
  const std::string agent_log = slurp(dir_ / "agent-n1.log");
  ASSERT_TRUE(agent.count("registered")) << agent_log;
  EXPECT_EQ(agent["registered"]["gpu_type"], "slow");
  EXPECT_EQ(agent["registered"]["devices"], json::array({0}));
  ASSERT_TRUE(agent.count("launch")) << agent_log;
  EXPECT_EQ(agent["launch"]["job"], id);
  EXPECT_EQ(agent["launch"]["tenant"], "bob");
  EXPECT_EQ(agent["launch"]["devices"], json::array({0}));
  EXPECT_GT(agent["launch"]["pid"].get<int>(), 0);
  ASSERT_TRUE(agent.count("exit")) << agent_log;
  EXPECT_EQ(agent["exit"]["job"], id);
  EXPECT_EQ(agent["exit"]["exit_code"], 0);
  EXPECT_EQ(agent["exit"]["revoked"], false);
}

// ---- metrics ---------------------------------------------------------------

// What is wrong with a Prometheus text exposition (format 0.0.4), or "":
// every sample belongs to a family with exactly one TYPE (and a HELP) given
// before its samples, samples of a family are together, names and label
// names are valid, label values quoted, values numbers, no sample repeats;
// a counter's name ends in _total and its name without _total is no other
// family; a histogram has cumulative buckets ending at le="+Inf", whose count
// equals _count, and a _sum.
std::string exposition_problem(const std::string& text) {
  static const std::regex kName("[a-zA-Z_:][a-zA-Z0-9_:]*");
  static const std::regex kSample(
      R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ([-+]?[0-9.eE+-]+|NaN|\+Inf|-Inf))");
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)")re");
  std::map<std::string, std::string> type;  // family -> type
  std::set<std::string> help, done, samples;
  std::string current;
  struct Hist {
    std::vector<std::pair<double, double>> buckets;  // (le, count), in order
    bool sum = false;
    double count = -1;
  };
  std::map<std::string, Hist> hists;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    std::smatch m;
    if (line.rfind("# HELP ", 0) == 0) {
      std::string name = line.substr(7, line.find(' ', 7) - 7);
      if (!help.insert(name).second) return "two HELP lines for " + name;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string name, t;
      words >> name >> t;
      if (!std::regex_match(name, kName)) return "bad family name " + name;
      if (t != "counter" && t != "gauge" && t != "histogram" && t != "summary" && t != "untyped")
        return "bad type " + t;
      if (!type.emplace(name, t).second) return "two TYPE lines for " + name;
      if (!help.count(name)) return "no HELP before TYPE for " + name;
      if (t == "counter" && (name.size() < 6 || name.substr(name.size() - 6) != "_total"))
        return "counter " + name + " does not end in _total";
      continue;
    }
    if (line[0] == '#') continue;
    if (!std::regex_match(line, m, kSample)) return "malformed sample: " + line;
    const std::string name = m[1], labels = m[3];
    std::string fam = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string sfx = suffix;
      if (name.size() > sfx.size() && name.substr(name.size() - sfx.size()) == sfx &&
          type.count(name.substr(0, name.size() - sfx.size())) &&
          type[name.substr(0, name.size() - sfx.size())] == "histogram")
        fam = name.substr(0, name.size() - sfx.size());
    }
    if (!type.count(fam)) return "sample of a family without TYPE: " + line;
    if (fam != current) {
      if (done.count(fam)) return "samples of " + fam + " are not together";
      if (!current.empty()) done.insert(current);
      current = fam;
    }
    if (!samples.insert(name + "{" + labels + "}").second) return "repeated sample: " + line;
    std::string rest = labels, le;
    while (!rest.empty()) {
      std::smatch lm;
      if (!std::regex_search(rest, lm, kLabel) || lm.position(0) != 0)
        return "malformed labels: " + line;
      if (lm[1] == "le") le = lm[2];
      rest = lm.suffix();
      if (!rest.empty() && rest[0] == ',') rest = rest.substr(1);
    }
    const double v = std::stod(m[4]);
    if (type[fam] == "histogram") {
      Hist& h = hists[fam];
      if (name == fam + "_bucket") {
        if (le.empty()) return "bucket without le: " + line;
        h.buckets.push_back({le == "+Inf" ? INFINITY : std::stod(le), v});
      } else if (name == fam + "_sum") {
        h.sum = true;
      } else if (name == fam + "_count") {
        h.count = v;
      } else {
        return "histogram sample " + name;
      }
    }
  }
  for (const auto& [name, t] : type) {
    if (t == "counter" && type.count(name.substr(0, name.size() - 6)))
      return "counter " + name + " clashes with the family " + name.substr(0, name.size() - 6);
  }
  for (const auto& [name, h] : hists) {
    if (h.buckets.empty() || !std::isinf(h.buckets.back().first))
      return name + ": the last bucket is not le=\"+Inf\"";
    for (std::size_t i = 1; i < h.buckets.size(); ++i)
      if (!(h.buckets[i].first > h.buckets[i - 1].first) ||
          h.buckets[i].second < h.buckets[i - 1].second)
        return name + ": buckets not ascending and cumulative";
    if (!h.sum) return name + ": no _sum";
    if (h.count != h.buckets.back().second) return name + ": _count is not the +Inf bucket";
  }
  return "";
}

TEST(ExpositionCheck, CatchesWhatItShould) {
  const std::string good =
      "# HELP a_total A.\n# TYPE a_total counter\na_total 1\n"
      "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\n"
      "h_sum 3\nh_count 2\n";
  EXPECT_EQ(exposition_problem(good), "");
  // The clash fairgpu had: a gauge X beside a counter X_total.
  EXPECT_NE(exposition_problem(good + "# HELP a A.\n# TYPE a gauge\na 1\n"), "");
  EXPECT_NE(exposition_problem("# TYPE b gauge\nb 1\n"), "");  // no HELP
  EXPECT_NE(exposition_problem("b 1\n"), "");                  // no TYPE
  EXPECT_NE(exposition_problem("# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
                               "h_bucket{le=\"+Inf\"} 1\nh_sum 3\nh_count 1\n"),
            "");  // not cumulative
  EXPECT_NE(exposition_problem("# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\n"
                               "h_sum 3\nh_count 1\n"),
            "");  // no +Inf
  EXPECT_NE(exposition_problem("# HELP g G.\n# TYPE g gauge\ng{x=\"1} 1\n"), "");
}

TEST_F(ServeOps, MetricsPassAStrictExpositionCheck) {
  start_server();
  const std::string http = url("http");
  start_agent("n1", "slow:1");
  // Shorter than a heartbeat: it ends before any heartbeat reports it
  // running, and still has a start (its lease's) and a queue wait.
  RunResult r =
      fairgpu({"submit", "--server", http, "--token", "bob-token", "--name", "short", "--job-type",
               "mlp", "--workers", "1", "--iterations", "1", "--command", "true"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(wait_for([&] { return job_of(dir_, http, id)["state"] == "finished"; }, 20))
      << server_->text();
  httplib::Client c("127.0.0.1", port_);
  auto res = c.Get("/metrics", {{"Authorization", "Bearer admin-token"}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const std::string& m = res->body;
  EXPECT_EQ(exposition_problem(m), "") << m;
  EXPECT_TRUE(contains(m, "fairgpu_job_queue_wait_seconds_count 1\n")) << m;
  EXPECT_TRUE(contains(m, "fairgpu_job_duration_seconds_count 1\n")) << m;
  EXPECT_TRUE(contains(m, "fairgpu_job_duration_seconds_bucket{le=\"+Inf\"} 1\n")) << m;
  EXPECT_TRUE(contains(m, "fairgpu_node_state{node=\"n1\",gpu_type=\"slow\",state=\"ready\"} 1\n"))
      << m;
  EXPECT_TRUE(contains(m, "fairgpu_node_devices{node=\"n1\"} 1\n")) << m;
  EXPECT_TRUE(contains(m, "fairgpu_node_last_heartbeat_timestamp_seconds{node=\"n1\"} ")) << m;
  EXPECT_TRUE(contains(m, "fairgpu_build_info{version=\"")) << m;
}

// ---- drain reasons, job logs -------------------------------------------------

TEST_F(ServeOps, DrainReasonIsKeptAndLogsAreRead) {
  start_server();
  const std::string http = url("http");
  start_agent("n1", "slow:1");
  RunResult r = fairgpu({"submit", "--server", http, "--token", "alice-token", "--name", "echo",
                         "--job-type", "mlp", "--workers", "1", "--iterations", "1", "--command",
                         "echo hello from $FAIRGPU_JOB_ID; echo to stderr >&2"});
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string id = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(wait_for(
      [&] {
        json j = job_of(dir_, http, id);
        return j.is_object() && j["state"] != "queued" && j["state"] != "running";
      },
      20))
      << server_->text();
  // The job's output, read where it ran (the agent's state dir).
  const std::string state_dir = (dir_ / "agent-n1").string();
  r = fairgpu({"logs", id, "--state-dir", state_dir});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "to stderr\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "hello from")) << r.out;
  // -f prints the same, then keeps following until stopped.
  RunResult follow =
      run_binary({"logs", id, "-f", "--state-dir", state_dir}, dir_ / "scratch", {}, 2);
  EXPECT_EQ(follow.status, 137);  // killed by the timeout: it was following
  EXPECT_EQ(follow.out, r.out);
  r = fairgpu({"logs", "j-999999", "--state-dir", state_dir});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "no run of job j-999999")) << r.err;

  // drain --reason: kept, shown by cluster, gone with undrain.
  r = fairgpu(
      {"drain", "n1", "--reason", "fan failure", "--server", http, "--token", "admin-token"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "node n1: drained (fan failure)\n");
  r = fairgpu({"cluster", "--server", http, "--token", "admin-token"});
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex("n1 +slow +drained +1 +0 +0 +0 .* fan failure\n")))
      << r.out;
  // Kept across a restart of the server.
  server_->stop(SIGTERM);
  start_server();
  r = fairgpu({"cluster", "--json", "--server", url("http"), "--token", "admin-token"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["nodes"][0]["reason"], "fan failure") << r.out;
  r = fairgpu({"undrain", "n1", "--server", url("http"), "--token", "admin-token"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = fairgpu({"cluster", "--json", "--server", url("http"), "--token", "admin-token"});
  EXPECT_FALSE(json::parse(r.out)["nodes"][0].contains("reason")) << r.out;
}

// ---- exit statuses ----------------------------------------------------------

TEST_F(ServeOps, SecondServerOnTheSamePortOrStoreIsRefused) {
  start_server();
  // The same store (data_dir), another port.
  RunResult r = fairgpu({"serve", "--config", write_config().string(), "--port", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "in use by another fairgpu serve")) << r.err;
  // Another store, the same port.
  config_["data_dir"] = (dir_ / "data2").string();
  r = fairgpu(
      {"serve", "--config", write_config("second.json").string(), "--port", std::to_string(port_)});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot listen on 127.0.0.1:" + std::to_string(port_))) << r.err;
  // Refused before it made a store (issue 32, defect 4).
  EXPECT_FALSE(fs::exists(dir_ / "data2")) << "a store made by a server that could not listen";
  EXPECT_TRUE(server_->running());
}

TEST_F(ServeOps, UnreachableServerExitsThreeRefusalTwo) {
  start_server();
  RunResult r = fairgpu({"jobs", "--server", url("http"), "--token", "wrong-token"});
  EXPECT_EQ(r.status, 2) << r.err;  // 401: the user's to fix
  EXPECT_EQ(server_->stop(SIGTERM), 0);
  r = fairgpu({"jobs", "--server", url("http"), "--token", "admin-token"});
  EXPECT_EQ(r.status, 3) << r.err;  // nothing listens: may pass
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot reach server")) << r.err;
}

// ---- request size, quotas (issue 30, M3) ------------------------------------

// What a raw HTTP exchange over a plain TCP socket got back.
struct RawExchange {
  std::string answer;   // everything read
  bool closed = false;  // the server closed the connection (EOF or reset)
};

// Sends `head` and then `body` (as 1 MiB chunks when `chunked`, else as is)
// to 127.0.0.1:port from a thread of its own, reading the answer meanwhile
// until the server closes the connection or `bound_s` passes.
RawExchange raw_exchange(int port, const std::string& head, const std::string& body, bool chunked,
                         double bound_s) {
  RawExchange out;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return out;
  timeval step{1, 0};  // a blocked send or recv gives way every second
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &step, sizeof step);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &step, sizeof step);
  std::atomic<bool> done = false;
  std::thread sender([&] {
    auto send_all = [&](const std::string& bytes) {
      std::size_t sent = 0;
      while (sent < bytes.size() && !done) {
        const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
        if (n > 0) sent += static_cast<std::size_t>(n);
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
      }
      return sent == bytes.size();
    };
    if (!send_all(head)) return;
    if (!chunked) {
      send_all(body);
      return;
    }
    constexpr std::size_t kChunk = 1 << 20;
    for (std::size_t at = 0; at < body.size(); at += kChunk) {
      const std::string piece = body.substr(at, kChunk);
      if (!send_all(fmt::format("{:x}\r\n", piece.size()) + piece + "\r\n")) return;
    }
    send_all("0\r\n\r\n");
  });
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(bound_s);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      out.answer.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      out.closed = true;  // EOF, or reset (the server left the body unread)
      break;
    }
  }
  done = true;
  ::shutdown(fd, SHUT_RDWR);
  sender.join();
  ::close(fd);
  return out;
}

TEST_F(ServeOps, BodiesOverEightMiBAreRefusedWhateverTheirFraming) {
  start_server();
  const std::string big(24 << 20, ' ');  // 24 MiB, three times the cap
  auto head = [](const std::string& request_line, const std::string& framing) {
    return request_line + "\r\nHost: 127.0.0.1\r\nAuthorization: Bearer alice-token\r\n" +
           "Content-Type: application/json\r\n" + framing + "\r\n\r\n";
  };
  struct Case {
    std::string what, head;
    bool chunked;
  };
  const std::vector<Case> cases = {
      {"chunked submission", head("POST /v1/jobs HTTP/1.1", "Transfer-Encoding: chunked"), true},
      {"chunked PUT, no route", head("PUT /v1/jobs HTTP/1.1", "Transfer-Encoding: chunked"), true},
      {"Content-Length", head("POST /v1/jobs HTTP/1.1", "Content-Length: " + std::to_string(big.size())),
       false},
  };
  for (const Case& k : cases) {
    // A generous bound: the answer is expected at once, but the machine may
    // be loaded; nothing here measures speed.
    const RawExchange r = raw_exchange(port_, k.head, big, k.chunked, 30);
    EXPECT_EQ(r.answer.rfind("HTTP/1.1 413 ", 0), 0u) << k.what << ": " << r.answer;
    EXPECT_TRUE(contains(r.answer, "larger than 8388608 bytes (8 MiB)")) << k.what << ": " << r.answer;
    EXPECT_TRUE(r.closed) << k.what << ": the connection was left open";
    // One answer: what was left of the body was not read as further
    // requests (each of which would get a 400 of its own).
    std::size_t answers = 0;
    for (std::size_t p = r.answer.find("HTTP/1.1 "); p != std::string::npos;
         p = r.answer.find("HTTP/1.1 ", p + 1))
      ++answers;
    EXPECT_EQ(answers, 1u) << k.what << ": " << r.answer.substr(0, 2000);
  }
  // A chunked body under the cap is read as any other.
  const std::string job =
      json{{"job_type", "mlp"}, {"workers", 1}, {"iterations", 1}, {"command", {"true"}}}.dump();
  const RawExchange ok = raw_exchange(
      port_, head("POST /v1/jobs HTTP/1.1", "Transfer-Encoding: chunked\r\nConnection: close"), job,
      true, 30);
  EXPECT_EQ(ok.answer.rfind("HTTP/1.1 201 ", 0), 0u) << ok.answer;
  // The server goes on answering, and stored only that one.
  httplib::Client c("127.0.0.1", port_);
  auto res = c.Get("/v1/jobs", {{"Authorization", "Bearer admin-token"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["jobs"].size(), 1u) << res->body;
}

TEST_F(ServeOps, BadQuotasAreOneLineErrors) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& c) { c["quotas"] = {{"max_jobs_queued", -2}}; },
       "quotas.max_jobs_queued: expected an integer in 0..1000000 (0: unlimited), got -2"},
      {[](json& c) { c["tenants"][1]["quotas"] = {{"max_gpus_running", "four"}}; },
       "tenants[1].quotas.max_gpus_running: expected an integer in 0..1000000 (0: unlimited), "
       "got \"four\""},
      {[](json& c) { c["tenants"][0]["quotas"] = {{"max_gpus_per_job", 1e9}}; },
       "tenants[0].quotas.max_gpus_per_job: expected an integer in 0..4096"},
  };
  for (const auto& [edit, expect] : cases) {
    json saved = config_;
    edit(config_);
    const fs::path config = write_config("bad.json");
    config_ = saved;
    RunResult r = fairgpu({"serve", "--config", config.string()});
    EXPECT_EQ(r.status, 2) << expect;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_TRUE(contains(r.err, config.string() + ": " + expect)) << r.err;
  }
}

// A live run: alice may hold one GPU at a time; bob's job runs beside hers.
TEST_F(ServeOps, GpuQuotaHoldsATenantInALiveRun) {
  config_["tenants"][0]["quotas"] = {{"max_gpus_running", 1}};
  start_server();
  httplib::Client c("127.0.0.1", port_);
  auto submit = [&](const std::string& token, const std::string& name) {
    const json body = {{"name", name},
                       {"job_type", "mlp"},
                       {"workers", 1},
                       {"iterations", 400},
                       {"command",
                        {FAIRGPU_TRAIN_BINARY, "--iterations", "400", "--base-rate", "200",
                         "--checkpoint-every", "100"}}};
    auto res = c.Post("/v1/jobs", {{"Authorization", "Bearer " + token}}, body.dump(),
                      "application/json");
    EXPECT_TRUE(res && res->status == 201) << (res ? res->body : "no answer");
    return res ? json::parse(res->body)["id"].get<std::string>() : "";
  };
  const std::string a1 = submit("alice-token", "a1");
  const std::string a2 = submit("alice-token", "a2");
  const std::string b1 = submit("bob-token", "b1");
  start_agent("n1", "slow:2");  // after the submissions: the first round sees all three
  // Until all three finish, alice never holds more than one GPU.
  std::int64_t most_alice = 0;
  std::string last_tenants;
  ASSERT_TRUE(wait_for(
      [&] {
        auto t = c.Get("/v1/tenants", {{"Authorization", "Bearer admin-token"}});
        if (t && t->status == 200) {
          last_tenants = t->body;
          const json tenants = json::parse(t->body);
          for (const json& row : tenants["tenants"])
            if (row["name"] == "alice")
              most_alice = std::max(most_alice, row["gpus_held"].get<std::int64_t>());
        }
        auto j = c.Get("/v1/jobs?state=finished", {{"Authorization", "Bearer admin-token"}});
        return j && j->status == 200 && json::parse(j->body)["jobs"].size() == 3;
      },
      120))
      << server_->text();
  EXPECT_EQ(most_alice, 1) << last_tenants;
  // The server's log, in order: alice's second job started only after her
  // first finished; bob's started before that, on the GPU alice could not use.
  const std::string log = server_->text();
  auto at = [&](const std::string& what) {
    const std::size_t p = log.find(what);
    EXPECT_NE(p, std::string::npos) << what << "\n" << log;
    return p;
  };
  const std::size_t a1_start = at("lease_start job=" + a1), a1_end = at("job_finished job=" + a1);
  const std::size_t a2_start = at("lease_start job=" + a2), b1_start = at("lease_start job=" + b1);
  EXPECT_LT(a1_start, a1_end);
  EXPECT_GT(a2_start, a1_end) << log;
  EXPECT_LT(b1_start, a1_end) << log;
}

}  // namespace
}  // namespace fairgpu
