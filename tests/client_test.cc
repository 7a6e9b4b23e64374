// Tests of the live manager's client (issue 5): live::LiveClient and the
// `fairgpu submit | jobs | cancel | cluster | tenants | profiles | drain`
// commands, against a fake `fairgpu serve` (an httplib::Server on 127.0.0.1,
// any free port, in a thread) that records what it receives and answers
// canned protocol JSON (docs/live-protocol.md). They check what goes over the
// wire (bearer token, the submit body, percent-encoded ids, URL prefixes),
// that a bad --file entry stops everything before the first request, how
// statuses map to errors (4xx: InputError and exit 2 with one
// line; unreachable and 5xx: TransientError and exit 3) and that the tables
// show the server's data.
#include "live/client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/transient_error.h"
#include "run_binary.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using live::LiveClient;
using nlohmann::json;
using testing_support::quote;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::slurp;
namespace fs = std::filesystem;

struct Received {
  std::string method;
  std::string target;  // as sent, before the server decodes it
  std::string path;
  std::string authorization;
  std::string body;
  std::multimap<std::string, std::string> params;
};

// A stand-in for `fairgpu serve`: answers "METHOD /path" with a canned status
// and body (404 {"error"} for anything else) and records every request.
class FakeServer {
 public:
  FakeServer() {
    auto handle = [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mutex_);
      Received r{req.method, req.target, req.path, req.get_header_value("Authorization"),
                 req.body,   {}};
      for (const auto& [k, v] : req.params) r.params.emplace(k, v);
      received_.push_back(std::move(r));
      auto it = answers_.find(req.method + " " + req.path);
      if (it == answers_.end()) {
        res.status = 404;
        res.set_content(R"({"error": "no such route in the fake server"})", "application/json");
        return;
      }
      res.status = it->second.first;
      res.set_content(it->second.second, "application/json");
    };
    server_.Get(".*", handle);
    server_.Post(".*", handle);
    server_.Delete(".*", handle);
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("fake server: cannot bind");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // The socket already listens (connections wait in its backlog); waiting
    // for the accept loop only makes stop() in the destructor unambiguous.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!server_.is_running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  }
  ~FakeServer() {
    server_.stop();
    thread_.join();
  }

  void answer(const std::string& route, int status, const json& body) {
    answer_raw(route, status, body.dump());
  }
  void answer_raw(const std::string& route, int status, const std::string& body) {
    std::lock_guard<std::mutex> lock(mutex_);
    answers_[route] = {status, body};
  }
  std::vector<Received> received() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<std::string, std::pair<int, std::string>> answers_;
  std::vector<Received> received_;
};

json running_job() {
  return {{"id", "j-000003"},
          {"name", "resnet-a"},
          {"tenant", "alice"},
          {"job_type", "resnet50"},
          {"workers", 2},
          {"command", {"fairgpu-train", "--seed", "3"}},
          {"env", {{"K", "V"}}},
          {"iterations", 5000},
          {"iterations_done", 1200},
          {"state", "running"},
          {"submitted_at", 1.7e9},
          {"started_at", 1.7e9 + 5},
          {"finished_at", nullptr},
          {"restarts", 1},
          {"preemptions", 4},
          {"failures", 0},
          {"gpu_type", "v100"},
          {"node", "n1"},
          {"lease", 17},
          {"exit_code", nullptr},
          {"log_tail", ""}};
}

json failed_job() {
  json j = running_job();
  j["id"] = "j-000009";
  j["name"] = "bert-b";
  j["state"] = "failed";
  j["gpu_type"] = nullptr;
  j["node"] = nullptr;
  j["lease"] = nullptr;
  j["exit_code"] = 3;
  j["iterations_done"] = 40;
  j["log_tail"] = "loading data\nTraceback: out of memory\n";
  return j;
}

json job_answer(const std::string& id) {
  json j = running_job();
  j["id"] = id;
  j["state"] = "queued";
  return j;
}

class Client : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fairgpu-client-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  // The binary with --server and --token in front of `args`' options.
  RunResult run(std::vector<std::string> args, const std::string& token = "tok-alice") {
    args.insert(args.begin() + 1, {"--server", server_.url(), "--token", token});
    return run_binary(args, dir_);
  }

  fs::path dir_;
  FakeServer server_;
};

std::size_t lines(const std::string& s) {
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n'));
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ---- LiveClient ------------------------------------------------------------

TEST_F(Client, SendsTheBearerTokenAndTheStateFilter) {
  server_.answer("GET /v1/jobs", 200, {{"jobs", {running_job()}}});
  json answer = LiveClient(server_.url(), "tok-alice").jobs("running");
  EXPECT_EQ(answer["jobs"][0]["id"], "j-000003");
  LiveClient(server_.url(), "").jobs();
  auto got = server_.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].method, "GET");
  EXPECT_EQ(got[0].path, "/v1/jobs");
  EXPECT_EQ(got[0].authorization, "Bearer tok-alice");
  ASSERT_EQ(got[0].params.count("state"), 1u);
  EXPECT_EQ(got[0].params.find("state")->second, "running");
  // No token: no header at all (the server answers 401 with its reason).
  EXPECT_EQ(got[1].authorization, "");
  EXPECT_EQ(got[1].params.count("state"), 0u);
}

TEST_F(Client, EveryCallUsesItsProtocolRoute) {
  for (const char* route :
       {"POST /v1/jobs", "GET /v1/jobs/j-000003", "POST /v1/jobs/j-000003/cancel",
        "GET /v1/cluster", "GET /v1/tenants", "GET /v1/profiles", "POST /v1/nodes/n1/drain",
        "POST /v1/nodes/n1/undrain"})
    server_.answer(route, 200, {{"route", route}});
  LiveClient c(server_.url(), "tok-admin");
  EXPECT_EQ(c.submit({{"name", "x"}})["route"], "POST /v1/jobs");
  EXPECT_EQ(c.job("j-000003")["route"], "GET /v1/jobs/j-000003");
  EXPECT_EQ(c.cancel("j-000003")["route"], "POST /v1/jobs/j-000003/cancel");
  EXPECT_EQ(c.cluster()["route"], "GET /v1/cluster");
  EXPECT_EQ(c.tenants()["route"], "GET /v1/tenants");
  EXPECT_EQ(c.profiles()["route"], "GET /v1/profiles");
  EXPECT_EQ(c.drain("n1")["route"], "POST /v1/nodes/n1/drain");
  EXPECT_EQ(c.undrain("n1")["route"], "POST /v1/nodes/n1/undrain");
  auto got = server_.received();
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(json::parse(got[0].body), json({{"name", "x"}}));
  EXPECT_EQ(got[2].body, "{}");  // a POST without a body of its own still sends JSON
  for (const auto& r : got) EXPECT_EQ(r.authorization, "Bearer tok-admin");
}

TEST_F(Client, IdsArePercentEncodedAndAUrlPrefixIsKept) {
  server_.answer("POST /api/v1/jobs/j 1/x/cancel", 200, {{"id", "j 1/x"}});
  // A trailing slash on the URL does not double the path's.
  LiveClient c(server_.url() + "/api/", "t");
  EXPECT_EQ(c.cancel("j 1/x")["id"], "j 1/x");
  auto got = server_.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].target, "/api/v1/jobs/j%201%2Fx/cancel");
}

TEST_F(Client, RefusalsAreInputErrorsCarryingTheServersLine) {
  server_.answer("POST /v1/jobs/j-000003/cancel", 403,
                 {{"error", "job j-000003 belongs to tenant bob"}});
  server_.answer_raw("GET /v1/jobs/j-000404", 404, "no such job\nsecond line");
  server_.answer("GET /v1/cluster", 401, {{"error", "missing token"}});
  server_.answer("GET /v1/tenants", 500, {{"error", "database is locked"}});
  server_.answer_raw("GET /v1/profiles", 200, "<html>not json</html>");
  LiveClient c(server_.url(), "tok-alice");
  const std::string where = "server " + server_.url();
  try {
    c.cancel("j-000003");
    FAIL() << "a 403 must throw";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), where + ": 403: job j-000003 belongs to tenant bob");
  }
  try {
    c.job("j-000404");
    FAIL() << "a 404 must throw";
  } catch (const InputError& e) {
    // A body that is not the protocol's {"error"}: its first line.
    EXPECT_EQ(std::string(e.what()), where + ": 404: no such job");
  }
  try {
    LiveClient(server_.url(), "").cluster();
    FAIL() << "a 401 must throw";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), where + ": 401: missing token (no token was sent)");
  }
  // The server's own failures are not bad input: a 5xx is a TransientError
  // (exit 3), an answer outside the protocol a std::runtime_error (exit 1).
  try {
    c.tenants();
    FAIL() << "a 500 must throw";
  } catch (const TransientError& e) {
    EXPECT_TRUE(contains(e.what(), server_.url() + ": GET /v1/tenants: 500: database is locked"))
        << e.what();
  }
  try {
    c.profiles();
    FAIL() << "an answer that is not JSON must throw";
  } catch (const TransientError&) {
    ADD_FAILURE() << "not JSON: not a failure that passes";
  } catch (const InputError&) {
    ADD_FAILURE() << "not JSON: not the user's error";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), server_.url())) << e.what();
  }
}

TEST_F(Client, AnUnreachableServerIsATransientError) {
  // A port that was free a moment ago: bound, never listened on, closed.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  std::string url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  try {
    LiveClient(url, "t").cluster();
    FAIL() << "nothing listens on " << url;
  } catch (const TransientError& e) {  // may pass: exit status 3
    EXPECT_TRUE(contains(e.what(), "cannot reach server " + url + ": ")) << e.what();
  }
  RunResult r = run_binary({"cluster", "--server", url}, dir_);
  EXPECT_EQ(r.status, 3);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
}

TEST_F(Client, MalformedUrlsAreInputErrors) {
  for (const char* bad :
       {"127.0.0.1:8470", "ftp://h", "http://", "http://:80", "http://h:", "http://h:0",
        "http://h:65536", "http://h:8x", "http://u@h", "http://h/x?y=1", "http://[::1"}) {
    SCOPED_TRACE(bad);
    try {
      LiveClient c(bad, "t");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_TRUE(contains(e.what(), std::string("server URL '") + bad + "'")) << e.what();
    }
  }
  for (const char* good : {"http://h", "http://h:1/", "http://[::1]:8470", "http://h:65535/p/q"})
    EXPECT_NO_THROW(LiveClient(good, "t")) << good;
}

// ---- job specifications ----------------------------------------------------

TEST_F(Client, JobSpecsAreCheckedFieldByField) {
  const json good = {{"name", "a"},
                     {"job_type", "resnet50"},
                     {"workers", 2},
                     {"iterations", 100},
                     {"command", {"prog", "--x"}}};
  EXPECT_NO_THROW(live::check_job_spec(good, "f"));
  json shell = good;
  shell["command"] = "echo hi";
  shell["env"] = {{"A", ""}};
  shell["weight"] = 0.5;
  shell["tenant"] = "bob";
  shell["workers"] = 4.0;      // a whole number, however written
  shell["iterations"] = 12.5;  // work need not be whole iterations
  EXPECT_NO_THROW(live::check_job_spec(shell, "f"));

  struct Case {
    const char* key;
    json value;  // null: remove the key
    std::string field;
  };
  const std::vector<Case> cases = {{"name", nullptr, "name"},
                                   {"name", "", "name"},
                                   {"job_type", 3, "job_type"},
                                   {"workers", "2", "workers"},
                                   {"workers", 0, "workers"},
                                   {"workers", 1.5, "workers"},
                                   {"iterations", -4, "iterations"},
                                   {"iterations", nullptr, "iterations"},
                                   {"iterations", "9", "iterations"},
                                   {"env", {{"FAIRGPU_JOB_ID", "x"}}, "env.FAIRGPU_JOB_ID"},
                                   {"command", json::array(), "command"},
                                   {"command", {"p", 1}, "command[1]"},
                                   {"command", {""}, "command[0]"},
                                   {"command", " ", "command"},
                                   {"command", {{"p", 1}}, "command"},
                                   {"env", {{"A", 1}}, "env.A"},
                                   {"env", {{"A=B", "x"}}, "env.A=B"},
                                   {"env", "A=1", "env"},
                                   {"weight", 0, "weight"},
                                   {"weight", "1", "weight"},
                                   {"tenant", "", "tenant"},
                                   {"worker", 2, "worker"}};
  for (const auto& c : cases) {
    json job = good;
    if (c.value.is_null())
      job.erase(c.key);
    else
      job[c.key] = c.value;
    SCOPED_TRACE(job.dump());
    try {
      live::check_job_spec(job, "jobs.json", "[4]");
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.source(), "jobs.json");
      EXPECT_EQ(e.field(), "[4]." + c.field);
    }
  }
  try {
    live::check_job_spec(json::array(), "jobs.json", "[0]");
    ADD_FAILURE() << "accepted an array";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "[0]");
  }
}

// ---- the fairgpu binary ----------------------------------------------------

TEST_F(Client, SubmitSendsTheArgvAfterDashDashAndTheEnvMap) {
  server_.answer("POST /v1/jobs", 201, job_answer("j-000007"));
  RunResult r = run({"submit", "--name", "resnet-a", "--job-type", "resnet50", "--workers", "2",
                     "--iterations", "5000", "--env", "A=1", "--env", "B=x=y", "--",
                     "fairgpu-train", "--seed", "3", "--iterations", "5000"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "j-000007\n");
  EXPECT_EQ(r.err, "");
  r = run({"submit", "--name", "sh", "--job-type", "bert", "--workers", "1", "--iterations", "10",
           "--weight", "2.5", "--tenant", "bob", "--command", "echo hi && exit 3"},
          "tok-admin");
  EXPECT_EQ(r.status, 0) << r.err;
  auto got = server_.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].authorization, "Bearer tok-alice");
  json body = json::parse(got[0].body);
  EXPECT_EQ(body, json({{"name", "resnet-a"},
                        {"job_type", "resnet50"},
                        {"workers", 2},
                        {"iterations", 5000},
                        {"command", {"fairgpu-train", "--seed", "3", "--iterations", "5000"}},
                        {"env", {{"A", "1"}, {"B", "x=y"}}}}));
  EXPECT_TRUE(body["workers"].is_number_integer());
  body = json::parse(got[1].body);
  EXPECT_EQ(got[1].authorization, "Bearer tok-admin");
  EXPECT_EQ(body["command"], "echo hi && exit 3");
  EXPECT_EQ(body["weight"], 2.5);
  EXPECT_EQ(body["tenant"], "bob");
  EXPECT_FALSE(body.contains("env"));
}

TEST_F(Client, BadSubmitFlagsSendNothing) {
  server_.answer("POST /v1/jobs", 201, job_answer("j-000007"));
  const std::vector<std::string> base = {
      "submit", "--name", "a", "--job-type", "t", "--workers", "1", "--iterations", "5"};
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  for (const auto& args : {with({}),                                   // no command
                           with({"--command", "x", "--", "prog"}),     // two commands
                           with({"--env", "NOEQUALS", "--", "prog"}),  // bad --env
                           with({"--weight", "0", "--", "prog"}),      // bad weight
                           with({"--workers", "0", "--", "prog"})}) {  // bad workers
    RunResult r = run(args);
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
  }
  // Each mistake in its own words (issue 12: a missing command said "not both").
  EXPECT_TRUE(contains(run(with({})).err, "command: missing:")) << run(with({})).err;
  EXPECT_FALSE(contains(run(with({})).err, "not both"));
  EXPECT_TRUE(contains(run(with({"--command", "x", "--", "prog"})).err, "not both"));
  EXPECT_TRUE(server_.received().empty());
}

TEST_F(Client, SubmitFileIsCheckedBeforeTheFirstRequest) {
  server_.answer("POST /v1/jobs", 201, job_answer("j-000011"));
  json good = {
      {"name", "a"}, {"job_type", "t"}, {"workers", 1}, {"iterations", 9}, {"command", {"p"}}};
  json bad = good;
  bad["workers"] = "2";
  std::string bad_file = write("bad.json", json::array({good, good, bad}).dump());
  RunResult r = run({"submit", "--file", bad_file});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, bad_file + ": [2].workers: expected a whole number")) << r.err;
  EXPECT_TRUE(server_.received().empty());

  for (const std::string& text :
       {std::string("{\"jobs\": []}"), std::string("[]"), std::string("[{\"name\": \"a\",]")}) {
    RunResult e = run({"submit", "--file", write("odd.json", text)});
    EXPECT_EQ(e.status, 2) << text;
    EXPECT_EQ(lines(e.err), 1u) << e.err;
  }
  EXPECT_TRUE(server_.received().empty());

  json second = good;
  second["name"] = "b";
  r = run({"submit", "--file", write("good.json", json::array({good, second}).dump())});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "j-000011\nj-000011\n");
  auto got = server_.received();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(json::parse(got[0].body), good);
  EXPECT_EQ(json::parse(got[1].body), second);
}

TEST_F(Client, ARefusalExitsTwoWithTheServersLine) {
  server_.answer("POST /v1/jobs/j-000003/cancel", 403,
                 {{"error", "job j-000003 belongs to tenant bob"}});
  RunResult r = run({"cancel", "j-000003"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "fairgpu: server " + server_.url() + ": 403: job j-000003 belongs to tenant bob\n");

  server_.answer("GET /v1/cluster", 503, {{"error", "shutting down"}});
  r = run({"cluster"});
  EXPECT_EQ(r.status, 3);  // the server's failure, not the user's: may pass
  EXPECT_EQ(lines(r.err), 1u) << r.err;

  // Cancelling several: the error says which were cancelled before it.
  server_.answer("POST /v1/jobs/j-000001/cancel", 200, [] {
    json j = job_answer("j-000001");
    j["state"] = "cancelled";
    return j;
  }());
  r = run({"cancel", "j-000001", "j-000003"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "cancelled before it: j-000001")) << r.err;
  r = run({"cancel", "j-000001"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "j-000001: cancelled\n");
}

TEST_F(Client, TablesShowTheServersData) {
  json waiting = running_job();
  waiting["id"] = "j-000011";
  waiting["state"] = "queued";
  waiting["pending"] = {{"reason", "Priority"}, {"detail", "fair share"}};
  waiting["started_at"] = nullptr;  // never ran
  json failed = failed_job();
  failed["finished_at"] = 1.7e9 + 5 + 3725;  // ran 1 h 2 min 5 s
  server_.answer("GET /v1/jobs", 200, {{"jobs", {running_job(), failed, waiting}}});
  server_.answer("GET /v1/jobs/j-000009", 200, failed_job());
  server_.answer("GET /v1/jobs/j-000011", 200, waiting);
  server_.answer("GET /v1/cluster", 200,
                 {{"round", 12},
                  {"policy", "oef-coop"},
                  {"round_s", 60},
                  {"nodes",
                   {{{"name", "n1"},
                     {"gpu_type", "v100"},
                     {"devices", {0, 1, 2, 3}},
                     {"state", "ready"},
                     {"devices_busy", 2},
                     {"last_heartbeat_s_ago", 0.4},
                     {"holders",
                      {{{"device", 0},
                        {"job", "j-000003"},
                        {"tenant", "alice"},
                        {"lease", 17},
                        {"lease_end_in_s", 42.0}},
                       {{"device", 1},
                        {"job", "j-000003"},
                        {"tenant", "alice"},
                        {"lease", 17},
                        {"lease_end_in_s", 42.0}}}}},
                    {{"name", "n2"},
                     {"gpu_type", "k80"},
                     {"devices", {0, 1}},
                     {"state", "drained"},
                     {"reason", "fan failure"},
                     {"devices_busy", 0},
                     {"last_heartbeat_s_ago", 1.5},
                     {"holders", json::array()}}}}});
  server_.answer("GET /v1/tenants", 200,
                 {{"tenants",
                   {{{"name", "alice"},
                     {"weight", 1},
                     {"jobs_active", 2},
                     {"gpus_held", 2},
                     {"share", 0.625},
                     {"normalised_throughput", 1.8}}}}});
  server_.answer("GET /v1/profiles", 200,
                 {{"profiles",
                   {{{"job_type", "resnet50"},
                     {"gpu_type", "v100"},
                     {"workers", 2},
                     {"iterations_per_s", 10.256},
                     {"source", "measured"}}}}});

  RunResult r = run({"jobs"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines(r.out), 6u) << r.out;  // header, 3 jobs, blank, count
  EXPECT_TRUE(contains(r.out, "1200/5000 (24.0%)")) << r.out;
  EXPECT_TRUE(contains(r.out, "v100/n1")) << r.out;
  EXPECT_TRUE(contains(r.out, "3 jobs (1 running, 1 failed, 1 queued)")) << r.out;
  // Why a job waits (issue 12): the reason column, aligned.
  EXPECT_EQ(r.out.find("reason") - 0, r.out.find("Priority") - (r.out.rfind('\n', r.out.find("Priority")) + 1))
      << r.out;
  // Aligned columns: "state" starts at the same offset in every line.
  std::size_t header_at = r.out.find("state");
  std::size_t row_at = r.out.find("running") - (r.out.find('\n') + 1);
  EXPECT_EQ(header_at, row_at) << r.out;

  r = run({"jobs", "j-000009"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "failed (exit code 3)")) << r.out;
  EXPECT_TRUE(contains(r.out, "log tail:\n  loading data\n  Traceback: out of memory\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "fairgpu-train --seed 3")) << r.out;
  r = run({"jobs", "j-000011"});
  EXPECT_TRUE(contains(r.out, "Priority: fair share")) << r.out;

  // Slurm-like filters and columns: --tenant, --format, --noheader, elapsed.
  r = run({"jobs", "--tenant", "alice", "--format", "id,state,elapsed,reason", "--noheader"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines(r.out), 3u) << r.out;  // every job above is alice's; no header, no summary
  EXPECT_FALSE(contains(r.out, "elapsed")) << r.out;
  EXPECT_TRUE(contains(r.out, "j-000009  failed         1:02:05  -\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "j-000011  queued               -  Priority\n")) << r.out;
  // Still running since 2023: days, squeue-style.
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex("j-000003  running  [0-9]+-[0-9]{2}:[0-9]{2}:[0-9]{2}  -\n")))
      << r.out;
  r = run({"jobs", "--tenant", "bob", "--noheader"});
  EXPECT_EQ(r.out, "") << r.out;
  r = run({"jobs", "--format", "id,bogus"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--format: unknown column 'bogus'")) << r.err;

  // Per node by default (sinfo-like), per device with --devices.
  r = run({"cluster"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(lines(r.out), 6u) << r.out;  // title, header, 2 nodes, blank, total
  EXPECT_TRUE(contains(r.out, "n1    v100      ready          4     2     2     1  0.4 s ago  -\n"))
      << r.out;
  EXPECT_TRUE(contains(
      r.out, "n2    k80       drained        2     0     0     0  1.5 s ago  fan failure\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "2 nodes (1 ready, 1 drained), 6 devices, 2 busy")) << r.out;
  r = run({"cluster", "--devices"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "round 12, policy oef-coop")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 7)
      << r.out;  // title, header, 3 rows, blank, total
  EXPECT_TRUE(contains(r.out, "2 nodes (1 ready, 1 drained), 6 devices, 2 held")) << r.out;
  EXPECT_TRUE(contains(r.out, "42.0 s")) << r.out;

  r = run({"tenants"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "alice")) << r.out;
  EXPECT_TRUE(contains(r.out, "0.625")) << r.out;

  r = run({"profiles", "--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["profiles"][0]["iterations_per_s"], 10.256);
  r = run({"profiles"});
  EXPECT_TRUE(contains(r.out, "10.26")) << r.out;

  r = run({"jobs", "--state", "sleeping"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--state")) << r.err;
}

// Issue 30, M2: `fairgpu profiles --reset TYPE [--tenant T] [--gpu-type G]`
// is DELETE /v1/profiles/TYPE with the filters as parameters.
TEST_F(Client, ProfilesResetSendsTheDeleteWithItsFilters) {
  server_.answer("DELETE /v1/profiles/resnet 50", 200,
                 {{"job_type", "resnet 50"}, {"removed", 2}, {"tenant", "mallory"}});
  RunResult r =
      run({"profiles", "--reset", "resnet 50", "--tenant", "mallory", "--gpu-type", "v100"},
          "tok-admin");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "resnet 50: 2 measured profile(s) reset; measured again when next run\n");
  auto got = server_.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].method, "DELETE");
  EXPECT_EQ(got[0].path, "/v1/profiles/resnet 50");
  EXPECT_EQ(got[0].params,
            (std::multimap<std::string, std::string>{{"gpu_type", "v100"}, {"tenant", "mallory"}}));
  EXPECT_EQ(got[0].authorization, "Bearer tok-admin");

  r = run({"profiles", "--tenant", "mallory"});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--tenant")) << r.err;
  EXPECT_EQ(server_.received().size(), 1u) << "nothing sent";
}

TEST_F(Client, ServerAndTokenComeFromTheEnvironment) {
  server_.answer("POST /v1/nodes/n2/drain", 200, {{"name", "n2"}, {"state", "drained"}});
  std::string cmd = "FAIRGPU_SERVER=" + quote(server_.url()) + " FAIRGPU_TOKEN=tok-env " +
                    quote(FAIRGPU_BINARY) + " drain n2 >" + quote((dir_ / "out").string()) + " 2>" +
                    quote((dir_ / "err").string());
  int raw = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(raw));
  EXPECT_EQ(WEXITSTATUS(raw), 0) << slurp(dir_ / "err");
  EXPECT_EQ(slurp(dir_ / "out"), "node n2: drained\n");
  auto got = server_.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].authorization, "Bearer tok-env");
}

}  // namespace
}  // namespace fairgpu
