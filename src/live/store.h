// The live manager's durable state (docs/design.md §7): jobs, nodes, leases and
// measured profiles in SQLite, WAL mode with synchronous=FULL, so a row is on
// disk before the request that wrote it is acknowledged and a kill -9 at any
// moment loses nothing acknowledged.
//
// Writes go through one committer thread that takes everything queued and
// commits it as one transaction (group commit, as LevelDB's write batches
// do): a thousand concurrent submissions cost a handful of fsyncs, not a
// thousand. A writer gets a ticket and waits for it when its caller must not
// be answered before the row is durable. Rows are whole-row upserts in queue
// order, so the last queued version of a row wins.
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace fairgpu::live {

struct StoredJob {
  std::int64_t seq = 0;  // submission order (1, 2, ...); the id is "j-<seq>"
  std::string id, name, tenant, job_type;
  int workers = 1;
  double weight = 1.0;
  std::string command_json;  // argv array or shell string, as submitted
  std::string env_json = "{}";
  double iterations = 0.0;
  double done = 0.0;      // iterations done, as last reported
  double attained = 0.0;  // GPU-seconds held
  std::string state;      // profiling | queued | running | finished | failed | cancelled
  double submitted_at = 0.0, started_at = -1.0, finished_at = -1.0;
  int restarts = 0, preemptions = 0, failures = 0;
  int exit_code = -1;
  std::string log_tail;
};

struct StoredNode {
  std::string name, gpu_type;
  std::vector<int> devices;
  double cpus = 0.0, memory_gb = 0.0;
  std::int64_t epoch = 0;
  std::string state = "ready";  // ready | drained | lost
  // Where the node's jobs reach each other (a gang's MASTER_ADDR): the
  // agent's --address, else the address its registration came from.
  std::string address;
};

struct StoredLease {
  std::int64_t id = 0;
  std::string job, node;
  std::vector<int> devices;  // device ids on the node
  double start = 0.0, end = 0.0;  // wall clock (unix seconds)
  // pending (waiting for the job's or the devices' previous run to stop) |
  // active | revoking | ended
  std::string status = "pending";
  bool profiling = false;
  double profile_from = -1.0;  // profiling: iterations at the first progress report
  double profile_from_t = -1.0;
  // A job on several nodes runs one part lease per node (manager.h). The
  // parts of one gang have consecutive ids gang, gang + 1, ...; `rank` is
  // the part's node rank and `parts` their number. A lease on one node is a
  // gang of one part (gang = id).
  std::int64_t gang = 0;
  int rank = 0;
  int parts = 1;
  // CPUs and memory (GB) the policy granted this part on its node (issue
  // 15; 0 = none declared): the agent pins the job and limits its memory.
  double cpus = 0.0;
  double memory_gb = 0.0;
  // The run's record (issue 32, item 6: accounting and job history). A part
  // that became active is a run from `start` (its activation) to `stopped`
  // (-1 while it runs) on `gpu_type`, the node's type when it started; why
  // it stopped: finished | failed | revoked | lost | ended, or not_started
  // for a lease that ended before it ran (no run). Rows of a store written
  // before these columns have gpu_type "" (the node's), stopped -1 and reason
  // "": an ended one counts until its `end`.
  std::string gpu_type;
  double stopped = -1.0;
  int exit_code = -1, signal = 0;
  std::string reason;
};

// One run as the store keeps it (Store::runs): a part lease that ran, with
// its job's tenant. stop < 0: still running.
struct StoredRun {
  std::int64_t lease = 0, gang = 0;
  int rank = 0;
  std::string job, tenant, node, gpu_type;
  std::vector<int> devices;
  double start = 0.0, stop = -1.0;
  std::string status, reason;
  int exit_code = -1, signal = 0;
  bool profiling = false;
};

// Which runs Store::runs returns: those overlapping [since, until) (a run
// still going overlaps every window from its start on), of one tenant
// and/or one job when not empty.
struct RunQuery {
  double since = -1e300, until = 1e300;
  std::string tenant, job;
};

// A measured profile (issue 30, M2): one per (job type, GPU type, tenant),
// the tenant whose job was measured ("": unattributed, measured before
// profiles were kept per tenant). Stored in table tenant_profiles; a newer
// measurement of the same key replaces the older one.
struct StoredProfile {
  std::string job_type, gpu_type;
  int workers = 1;
  double rate = 0.0;  // iterations/s of the whole job
  std::string source;  // measured
  std::string tenant;
};

// Deletes measured profiles of a job type (the admin's reset): on every GPU
// type when gpu_type is "", of every tenant (unattributed ones included)
// when all_tenants.
struct StoredProfileReset {
  std::string job_type, gpu_type, tenant;
  bool all_tenants = true;
};

struct StoredMeta {
  std::string key;
  std::string value;
};

using StoredRow =
    std::variant<StoredJob, StoredNode, StoredLease, StoredProfile, StoredProfileReset, StoredMeta>;

struct StoreSnapshot {
  std::vector<StoredJob> jobs;  // by seq
  std::vector<StoredNode> nodes;
  std::vector<StoredLease> leases;  // by id
  std::vector<StoredProfile> profiles;
  std::map<std::string, std::string> meta;
};

class Store {
 public:
  // Opens (creating if needed) `<dir>/fairgpu.db`; throws std::runtime_error
  // naming the file when SQLite refuses, and InputError("data_dir") when
  // another process holds `<dir>/lock` (one server per store).
  explicit Store(const std::string& dir);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  StoreSnapshot load() const;  // call before the first write
  // The runs that match, by lease id, read from what is committed (a
  // connection of its own: safe beside the committer, from any thread).
  std::vector<StoredRun> runs(const RunQuery& q) const;

  // Queues a row; returns its ticket. Thread-safe.
  std::uint64_t put(StoredRow row);
  // Blocks until every row up to `ticket` is committed; throws
  // std::runtime_error naming the cause when a commit that held it failed
  // (a full disk: issue 30, H9). Such rows are not dropped: the committer
  // tries them again, with what is queued after them, every kRetryS until a
  // commit succeeds (space freed), so a row whose wait threw may still be
  // committed later; the caller decides what that means for its request.
  void wait(std::uint64_t ticket);
  // Seconds between commit attempts while commits fail.
  static constexpr double kRetryS = 1.0;
  std::uint64_t transactions() const;  // committed so far (for benchmarks)
  // The ticket of the last row queued: wait() on it covers every row so far.
  std::uint64_t last_ticket() const;

 private:
  void run();
  void write(const StoredRow& row);

  std::string path_;
  int lock_fd_ = -1;  // flock'd <dir>/lock, held while the store is open
  sqlite3* db_ = nullptr;
  sqlite3* reader_ = nullptr;  // read-only, for runs()
  std::map<std::string, sqlite3_stmt*> stmts_;

  mutable std::mutex mu_;
  std::condition_variable queued_cv_, durable_cv_;
  std::deque<StoredRow> queue_;
  std::uint64_t next_ticket_ = 0;  // tickets handed out
  std::uint64_t durable_ = 0;      // committed up to here
  std::uint64_t failed_ = 0;       // the last failed commit held rows up to here
  std::uint64_t transactions_ = 0;
  std::string error_;              // why the last commit failed
  bool stop_ = false;
  std::thread committer_;
};

}  // namespace fairgpu::live
