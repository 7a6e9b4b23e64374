// The live manager's two performance targets (issue 5), each against a
// baseline measured in the same run:
//
//   cmake -B build-bench -DFAIRGPU_BUILD_BENCH=ON && ninja -C build-bench fairgpu_bench
//   build-bench/fairgpu_bench --benchmark_filter=Live
//
// LiveSubmit: durable submissions per second over HTTP on loopback (target
// >= 5,000/s): `threads` clients with keep-alive connections POST /v1/jobs to
// a real server (Manager + HttpServer, SQLite WAL synchronous=FULL); every
// 201 means the row was committed. Baselines: LiveSubmitCommitEach, the same
// rows committed one transaction (one fsync) each, the rate a store without
// group commit would cap submissions at; and LiveHttpNoop, GET /metrics, the
// HTTP ceiling.
//
// LiveRound: one scheduling point with 1,000 registered agents (4 GPUs each,
// three types) and 10,000 active jobs from 20 tenants (target <= 100 ms):
// Manager::schedule(), i.e. the policy's plan, the lease bookkeeping and the
// commit of every decision. Baseline: plan_only_ms, the same policy's plan()
// alone on the same state just before, as the simulator runs it.
#include <benchmark/benchmark.h>
#include <httplib.h>
#include <sqlite3.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "live/manager.h"
#include "live/server.h"

namespace fairgpu::live {
namespace {

using nlohmann::json;

std::string fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("fairgpu-bench-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

ServeConfig config_in(const std::string& dir, const std::string& policy) {
  ServeConfig c;
  c.data_dir = dir + "/data";
  c.policy = policy;
  c.policy_options.round_s = 60;
  c.admin_token = "admin-token";
  for (int t = 0; t < 20; ++t)
    c.tenants.push_back({"t" + std::to_string(t), 1.0 + t % 3, "token-" + std::to_string(t), ""});
  // Three job types on three GPU types, Gavel-like speedups.
  std::ofstream(dir + "/profiles.json") << R"json({
    "k80": {"('a', 1)": {"null": 1.0}, "('b', 1)": {"null": 1.0}, "('c', 1)": {"null": 1.0}},
    "p100": {"('a', 1)": {"null": 2.5}, "('b', 1)": {"null": 1.5}, "('c', 1)": {"null": 3.0}},
    "v100": {"('a', 1)": {"null": 4.0}, "('b', 1)": {"null": 2.0}, "('c', 1)": {"null": 6.0}}})json";
  c.profiles_file = dir + "/profiles.json";
  return c;
}

const char* kSubmitBody =
    R"({"job_type": "a", "workers": 1, "iterations": 1000, "command": ["fairgpu-train", "--iterations", "1000"]})";

void run_clients(benchmark::State& state, int port, const std::function<bool(httplib::Client&)>& one) {
  const int threads = static_cast<int>(state.range(0));
  const int per_thread = 2000;
  std::atomic<long> failures = 0;
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&] {
        httplib::Client cli("127.0.0.1", port);
        cli.set_keep_alive(true);
        cli.set_tcp_nodelay(true);
        for (int i = 0; i < per_thread; ++i)
          if (!one(cli)) ++failures;
      });
    for (auto& th : pool) th.join();
  }
  state.SetItemsProcessed(state.iterations() * threads * per_thread);
  state.counters["failures"] = static_cast<double>(failures.load());
}

struct RunningServer {
  explicit RunningServer(const std::string& name)
      : dir(fresh_dir(name)), manager(config_in(dir, "oef-coop")), server(manager) {
    port = server.bind("127.0.0.1", 0);
    thread = std::thread([this] { server.serve(); });
    // Wait until it answers.
    httplib::Client probe("127.0.0.1", port);
    while (!probe.Get("/metrics")) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~RunningServer() {
    server.stop();
    thread.join();
    std::filesystem::remove_all(dir);
  }
  std::string dir;
  Manager manager;
  HttpServer server;
  int port = 0;
  std::thread thread;
};

void LiveSubmit(benchmark::State& state) {
  RunningServer s("submit");
  httplib::Headers auth = {{"Authorization", "Bearer token-0"}};
  run_clients(state, s.port, [&](httplib::Client& cli) {
    auto r = cli.Post("/v1/jobs", auth, kSubmitBody, "application/json");
    return r && r->status == 201;
  });
}
BENCHMARK(LiveSubmit)->Arg(16)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);

void LiveHttpNoop(benchmark::State& state) {
  RunningServer s("noop");
  run_clients(state, s.port, [&](httplib::Client& cli) {
    auto r = cli.Get("/metrics");
    return r && r->status == 200;
  });
}
BENCHMARK(LiveHttpNoop)->Arg(16)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);

// The same job rows, one transaction (one fsync) per row: no group commit.
void LiveSubmitCommitEach(benchmark::State& state) {
  const std::string dir = fresh_dir("commit-each");
  sqlite3* db = nullptr;
  sqlite3_open((dir + "/each.db").c_str(), &db);
  sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", nullptr, nullptr, nullptr);
  sqlite3_exec(db, "CREATE TABLE jobs (seq INTEGER PRIMARY KEY, body TEXT)", nullptr, nullptr, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO jobs (body) VALUES (?1)", -1, &st, nullptr);
  const int rows = 500;
  for (auto _ : state) {
    for (int i = 0; i < rows; ++i) {
      sqlite3_bind_text(st, 1, kSubmitBody, -1, SQLITE_STATIC);
      sqlite3_step(st);
      sqlite3_reset(st);
    }
  }
  state.SetItemsProcessed(state.iterations() * rows);
  sqlite3_finalize(st);
  sqlite3_close(db);
  std::filesystem::remove_all(dir);
}
BENCHMARK(LiveSubmitCommitEach)->UseRealTime()->Unit(benchmark::kMillisecond)->Iterations(1);

// 1,000 agents and 10,000 jobs, registered and submitted through the API.
struct BigCluster {
  explicit BigCluster(const std::string& policy, const std::string& name) : dir(fresh_dir(name)) {
    manager = std::make_unique<Manager>(config_in(dir, policy), [this] { return now; });
    const Caller admin = manager->authenticate("Bearer admin-token");
    const char* types[] = {"k80", "p100", "v100"};
    for (int n = 0; n < 1000; ++n)
      manager->register_agent(
          manager->authenticate("Bearer " +
                                manager->issue_node_token(admin, "n" + std::to_string(n))["token"]
                                    .get<std::string>()),
          {{"node", "n" + std::to_string(n)},
           {"gpu_type", types[n % 3]},
           {"devices", {0, 1, 2, 3}}});
    std::mt19937 rng(3);
    std::vector<std::thread> pool;
    for (int t = 0; t < 20; ++t)
      pool.emplace_back([&, t] {
        const Caller tenant = manager->authenticate("Bearer token-" + std::to_string(t));
        const char* jt[] = {"a", "b", "c"};
        const int sizes[] = {1, 1, 1, 2, 2, 4};
        for (int i = 0; i < 500; ++i)
          manager->submit(tenant, {{"job_type", jt[(i + t) % 3]},
                                   {"workers", sizes[(i * 7 + t) % 6]},
                                   {"iterations", 1e6},
                                   {"command", "true"}});
      });
    for (auto& th : pool) th.join();
    manager->schedule();  // the first point builds the model and starts the cluster
    now += 60;
  }
  ~BigCluster() {
    manager.reset();
    std::filesystem::remove_all(dir);
  }
  std::string dir;
  double now = 1e9;
  std::unique_ptr<Manager> manager;
};

void LiveRound(benchmark::State& state, const std::string& policy) {
  BigCluster c(policy, "round-" + policy);
  double plan_only = 0.0;
  for (auto _ : state) {
    plan_only += c.manager->time_plan_only();
    const double seconds = c.manager->schedule();  // every lease ended: the full decision
    state.SetIterationTime(seconds);
    c.now += 60;
  }
  state.counters["plan_only_ms"] = 1e3 * plan_only / static_cast<double>(state.iterations());
}
BENCHMARK_CAPTURE(LiveRound, oef_coop, std::string("oef-coop"))->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(LiveRound, gavel, std::string("gavel"))->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK_CAPTURE(LiveRound, astraea, std::string("astraea"))->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace fairgpu::live
