// Accounting (issue 32, item 6): the window arithmetic, times as given on
// the command line, the sums by tenant and job, and the store's query of
// runs, a store written before runs were recorded included.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "fairgpu/input_error.h"
#include "live/store.h"
#include "live/usage.h"

namespace fairgpu::live {
namespace {

namespace fs = std::filesystem;

TEST(UsageWindow, ClipsARunToTheWindow) {
  EXPECT_DOUBLE_EQ(clipped_seconds(10, 20, 0, 100, 1000), 10);   // inside
  EXPECT_DOUBLE_EQ(clipped_seconds(10, 20, 15, 100, 1000), 5);   // cut at since
  EXPECT_DOUBLE_EQ(clipped_seconds(10, 20, 0, 12, 1000), 2);     // cut at until
  EXPECT_DOUBLE_EQ(clipped_seconds(10, 20, 12, 18, 1000), 6);    // both
  EXPECT_DOUBLE_EQ(clipped_seconds(10, 20, 20, 30, 1000), 0);    // touching: nothing
  EXPECT_DOUBLE_EQ(clipped_seconds(10, 20, 25, 30, 1000), 0);    // after
  EXPECT_DOUBLE_EQ(clipped_seconds(10, 20, 0, 5, 1000), 0);      // before
  EXPECT_DOUBLE_EQ(clipped_seconds(10, -1, 0, 100, 50), 40);     // running: up to now
  EXPECT_DOUBLE_EQ(clipped_seconds(10, -1, 0, 30, 50), 20);      // running, cut at until
}

TEST(UsageWindow, ParsesUnixSecondsAndIso8601) {
  EXPECT_DOUBLE_EQ(parse_time("1795737600", "since"), 1795737600);
  EXPECT_DOUBLE_EQ(parse_time("1795737600.25", "since"), 1795737600.25);
  EXPECT_DOUBLE_EQ(parse_time("2026-11-27", "since"), 1795737600);
  EXPECT_DOUBLE_EQ(parse_time("2026-11-27T03:00", "since"), 1795748400);
  EXPECT_DOUBLE_EQ(parse_time("2026-11-27T03:00:00Z", "since"), 1795748400);
  EXPECT_DOUBLE_EQ(parse_time("2026-11-27 03:00:00.5", "since"), 1795748400.5);
  EXPECT_DOUBLE_EQ(parse_time("2026-11-27T04:00:00+01:00", "since"), 1795748400);
  EXPECT_DOUBLE_EQ(parse_time("2026-11-26T22:30:00-0430", "since"), 1795748400);
  for (const char* bad : {"", "yesterday", "2026-02-30", "2026-13-01", "2026-11-27T25:00",
                          "2026-11-27T03:00:00Q", "1.2.3", "2026-11-27T03", "-5"}) {
    try {
      parse_time(bad, "until");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InputError& e) {
      EXPECT_EQ(e.source(), "until") << bad;
    }
  }
}

TEST(UsageWindow, SumsDeviceSecondsByTenantOrJobAndType) {
  auto run = [](std::string job, std::string tenant, std::string type, int devices, double start,
                double stop) {
    StoredRun r;
    r.job = std::move(job);
    r.tenant = std::move(tenant);
    r.gpu_type = std::move(type);
    r.devices.assign(static_cast<std::size_t>(devices), 0);
    r.start = start;
    r.stop = stop;
    return r;
  };
  const std::vector<StoredRun> runs = {
      run("j-1", "alice", "v100", 2, 0, 100),   // 2 x [50, 100) = 100
      run("j-1", "alice", "k80", 1, 100, 300),  // 1 x [100, 200) = 100
      run("j-2", "alice", "v100", 1, 150, -1),  // running, now 250: [150, 200) = 50
      run("j-3", "bob", "v100", 4, 10, 40),     // before the window: left out
  };
  const auto by_tenant = usage(runs, 50, 200, 250, false);
  ASSERT_EQ(by_tenant.size(), 2u);
  EXPECT_EQ(by_tenant[0].tenant, "alice");
  EXPECT_EQ(by_tenant[0].gpu_type, "k80");
  EXPECT_DOUBLE_EQ(by_tenant[0].gpu_seconds, 100);
  EXPECT_EQ(by_tenant[1].gpu_type, "v100");
  EXPECT_DOUBLE_EQ(by_tenant[1].gpu_seconds, 150);
  EXPECT_EQ(by_tenant[1].runs, 2);
  const auto by_job = usage(runs, 50, 200, 250, true);
  ASSERT_EQ(by_job.size(), 3u);
  EXPECT_EQ(by_job[2].job, "j-2");
  EXPECT_DOUBLE_EQ(by_job[2].gpu_seconds, 50);
  EXPECT_EQ(usage(runs, 0, 1e9, 250, false).size(), 3u);  // bob's too, over all time
}

class StoreRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fairgpu-usage-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

StoredJob job(const std::string& id, const std::string& tenant, std::int64_t seq) {
  StoredJob j;
  j.seq = seq;
  j.id = id;
  j.tenant = tenant;
  j.job_type = "mlp";
  j.command_json = "[\"true\"]";
  j.state = "running";
  return j;
}

StoredLease lease(std::int64_t id, const std::string& job, const std::string& status,
                  double start, double stopped, const std::string& reason) {
  StoredLease l;
  l.id = l.gang = id;
  l.job = job;
  l.node = "n1";
  l.devices = {0, 1};
  l.start = start;
  l.end = start + 1000;  // the planned end, not when it stopped
  l.status = status;
  l.gpu_type = status == "pending" ? "" : "v100";
  l.stopped = stopped;
  l.reason = reason;
  return l;
}

TEST_F(StoreRuns, ReturnsTheRunsThatOverlapTheWindowOfATenantOrJob) {
  Store store(dir_.string());
  store.load();
  StoredNode n;
  n.name = "n1";
  n.gpu_type = "v100";
  n.devices = {0, 1};
  store.put(n);
  store.put(job("j-1", "alice", 1));
  store.put(job("j-2", "bob", 2));
  store.put(lease(1, "j-1", "ended", 100, 200, "revoked"));
  store.put(lease(2, "j-1", "ended", 300, -1, "not_started"));  // never ran
  store.put(lease(3, "j-1", "pending", 300, -1, ""));           // not yet running
  store.put(lease(4, "j-2", "active", 250, -1, ""));            // running
  store.put(lease(5, "j-2", "ended", 50, 90, "finished"));
  store.wait(store.last_ticket());

  auto ids = [&](const RunQuery& q) {
    std::vector<std::int64_t> out;
    for (const StoredRun& r : store.runs(q)) out.push_back(r.lease);
    return out;
  };
  EXPECT_EQ(ids({}), (std::vector<std::int64_t>{1, 4, 5}));
  RunQuery window;
  window.since = 150;
  window.until = 260;
  EXPECT_EQ(ids(window), (std::vector<std::int64_t>{1, 4}));
  window.since = 200;  // lease 1 stopped at 200: no overlap
  EXPECT_EQ(ids(window), (std::vector<std::int64_t>{4}));
  RunQuery alice;
  alice.tenant = "alice";
  EXPECT_EQ(ids(alice), (std::vector<std::int64_t>{1}));
  RunQuery j2;
  j2.job = "j-2";
  EXPECT_EQ(ids(j2), (std::vector<std::int64_t>{4, 5}));
  const auto runs = store.runs(j2);
  EXPECT_EQ(runs[0].tenant, "bob");
  EXPECT_EQ(runs[0].gpu_type, "v100");
  EXPECT_EQ(runs[0].stop, -1);
  EXPECT_EQ(runs[1].stop, 90);
  EXPECT_EQ(runs[1].reason, "finished");
  EXPECT_EQ(runs[1].devices.size(), 2u);
}

// A store from before runs were recorded: its leases table lacks the new
// columns. They are added; an ended lease counts until its lease end, on
// its node's GPU type.
TEST_F(StoreRuns, AStoreFromBeforeRunsWereRecordedIsMigrated) {
  fs::create_directories(dir_);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "fairgpu.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE leases (id INTEGER PRIMARY KEY, job TEXT NOT NULL, node "
                         "TEXT NOT NULL, devices TEXT NOT NULL, start REAL, end REAL, status TEXT "
                         "NOT NULL, profiling INTEGER, profile_from REAL, profile_from_t REAL);"
                         "INSERT INTO leases VALUES (7, 'j-1', 'n1', '[0]', 10, 40, 'ended', 0, "
                         "-1, -1);"
                         "CREATE TABLE nodes (name TEXT PRIMARY KEY, gpu_type TEXT NOT NULL, "
                         "devices TEXT NOT NULL, cpus REAL, memory_gb REAL, epoch INTEGER NOT "
                         "NULL, state TEXT NOT NULL);"
                         "INSERT INTO nodes VALUES ('n1', 'k80', '[0]', 0, 0, 1, 'ready');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Store store(dir_.string());
  const StoreSnapshot snap = store.load();
  ASSERT_EQ(snap.leases.size(), 1u);
  EXPECT_EQ(snap.leases[0].stopped, -1);
  EXPECT_EQ(snap.leases[0].reason, "");
  const auto runs = store.runs({});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].stop, 40);
  EXPECT_EQ(runs[0].gpu_type, "k80");
}

}  // namespace
}  // namespace fairgpu::live
