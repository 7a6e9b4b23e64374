// SQLite store of the live manager with group commit (see store.h).
#include "live/store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "fairgpu/input_error.h"
#include "live/log.h"

namespace fairgpu::live {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, name TEXT, tenant TEXT NOT NULL,
  job_type TEXT NOT NULL, workers INTEGER NOT NULL, weight REAL NOT NULL, command TEXT NOT NULL,
  env TEXT NOT NULL, iterations REAL NOT NULL, done REAL NOT NULL, attained REAL NOT NULL,
  state TEXT NOT NULL, submitted_at REAL, started_at REAL, finished_at REAL, restarts INTEGER,
  preemptions INTEGER, failures INTEGER, exit_code INTEGER, log_tail TEXT);
CREATE TABLE IF NOT EXISTS nodes (
  name TEXT PRIMARY KEY, gpu_type TEXT NOT NULL, devices TEXT NOT NULL, cpus REAL,
  memory_gb REAL, epoch INTEGER NOT NULL, state TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
  id INTEGER PRIMARY KEY, job TEXT NOT NULL, node TEXT NOT NULL, devices TEXT NOT NULL,
  start REAL, end REAL, status TEXT NOT NULL, profiling INTEGER, profile_from REAL,
  profile_from_t REAL);
CREATE TABLE IF NOT EXISTS profiles (
  job_type TEXT NOT NULL, gpu_type TEXT NOT NULL, workers INTEGER NOT NULL, rate REAL NOT NULL,
  source TEXT NOT NULL, PRIMARY KEY (job_type, gpu_type, workers));
CREATE TABLE IF NOT EXISTS tenant_profiles (
  job_type TEXT NOT NULL, gpu_type TEXT NOT NULL, tenant TEXT NOT NULL, workers INTEGER NOT NULL,
  rate REAL NOT NULL, PRIMARY KEY (job_type, gpu_type, tenant));
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
)sql";

// Columns added after the first schema, appended to their tables when a store
// written by an older fairgpu lacks them (its rows get the defaults).
struct AddedColumn {
  const char* table;
  const char* column;
  const char* definition;
};
constexpr AddedColumn kAddedColumns[] = {
    {"nodes", "address", "TEXT NOT NULL DEFAULT ''"},
    {"leases", "gang", "INTEGER NOT NULL DEFAULT 0"},
    {"leases", "rank", "INTEGER NOT NULL DEFAULT 0"},
    {"leases", "parts", "INTEGER NOT NULL DEFAULT 1"},
    {"leases", "cpus", "REAL NOT NULL DEFAULT 0"},
    {"leases", "memory_gb", "REAL NOT NULL DEFAULT 0"},
    {"leases", "gpu_type", "TEXT NOT NULL DEFAULT ''"},
    {"leases", "stopped", "REAL NOT NULL DEFAULT -1"},
    {"leases", "exit_code", "INTEGER NOT NULL DEFAULT -1"},
    {"leases", "signal", "INTEGER NOT NULL DEFAULT 0"},
    {"leases", "reason", "TEXT NOT NULL DEFAULT ''"},
};

std::string devices_json(const std::vector<int>& d) { return nlohmann::json(d).dump(); }
std::vector<int> parse_devices(const char* text) {
  return nlohmann::json::parse(text ? text : "[]").get<std::vector<int>>();
}
const char* col_text(sqlite3_stmt* st, int i) {
  return reinterpret_cast<const char*>(sqlite3_column_text(st, i));
}
std::string col_string(sqlite3_stmt* st, int i) {
  const char* t = col_text(st, i);
  return t ? t : "";
}

}  // namespace

Store::Store(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  path_ = (std::filesystem::path(dir) / "fairgpu.db").string();
  // One server per store: two would both write the rows and both answer the
  // agents, which would then flip between their epochs. The lock goes with
  // the process (a kill -9 frees it).
  const std::string lock_path = (std::filesystem::path(dir) / "lock").string();
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd_ < 0)
    throw InputError("data_dir", "",
                     fmt::format("cannot open {}: {}", lock_path, std::strerror(errno)));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw InputError(
        "data_dir", "",
        e == EWOULDBLOCK
            ? fmt::format("{} is in use by another fairgpu serve (locked {})", dir, lock_path)
            : fmt::format("cannot lock {}: {}", lock_path, std::strerror(e)));
  }
  auto fail = [&](const std::string& what) {
    std::string msg = fmt::format("{}: {}: {}", path_, what, db_ ? sqlite3_errmsg(db_) : "");
    if (db_) sqlite3_close(db_);
    db_ = nullptr;
    if (lock_fd_ >= 0) ::close(lock_fd_);
    lock_fd_ = -1;
    throw std::runtime_error(msg);
  };
  // Tenants' jobs may run on this machine (a local agent, Slurm): the store
  // holds every tenant's jobs and tokens, so it is serve's alone. SQLite
  // gives its -wal and -shm files the database file's mode; an older store
  // made with the umask's mode is tightened.
  for (const char* suffix : {"", "-wal", "-shm"}) {
    const std::string file = path_ + suffix;
    const int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (*suffix ? 0 : O_CREAT);
    const int fd = ::open(file.c_str(), flags, 0600);
    if (fd < 0 && errno == ENOENT && *suffix) continue;
    if (fd < 0 || ::fchmod(fd, 0600) != 0) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      ::close(lock_fd_);
      lock_fd_ = -1;
      throw InputError("data_dir", "",
                       fmt::format("cannot open {} as serve's alone: {}", file, why));
    }
    ::close(fd);
  }
  if (sqlite3_open_v2(path_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    fail("cannot open");
  // The busy timeout comes first: switching to WAL (or recovering the WAL
  // after a kill -9) needs a lock that a reader of the store may hold.
  if (sqlite3_busy_timeout(db_, 5000) != SQLITE_OK) fail("busy_timeout");
  // WAL + FULL: a commit is fsync'd to the log before it returns, so it
  // survives a crash of the process and of the machine.
  for (const char* pragma :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL", "PRAGMA foreign_keys=OFF"})
    if (sqlite3_exec(db_, pragma, nullptr, nullptr, nullptr) != SQLITE_OK) fail(pragma);
  if (sqlite3_exec(db_, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK) fail("schema");
  for (const AddedColumn& added : kAddedColumns) {
    bool present = false;
    sqlite3_stmt* st = nullptr;
    const std::string info = fmt::format("PRAGMA table_info({})", added.table);
    if (sqlite3_prepare_v2(db_, info.c_str(), -1, &st, nullptr) != SQLITE_OK) fail(info);
    while (sqlite3_step(st) == SQLITE_ROW) present |= col_string(st, 1) == added.column;
    sqlite3_finalize(st);
    if (present) continue;
    const std::string alter =
        fmt::format("ALTER TABLE {} ADD COLUMN {} {}", added.table, added.column, added.definition);
    if (sqlite3_exec(db_, alter.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) fail(alter);
  }
  // Measured profiles from before they were kept per tenant (issue 30, M2)
  // move to tenant_profiles as unattributed (tenant ""), once: the manager
  // uses them as the shared profile until a corroborated one or an admin's
  // reset replaces them.
  if (sqlite3_exec(db_,
                   "BEGIN IMMEDIATE; INSERT OR IGNORE INTO tenant_profiles SELECT job_type, "
                   "gpu_type, '', workers, rate FROM profiles WHERE source = 'measured' ORDER BY "
                   "workers; DELETE FROM profiles WHERE source = 'measured'; COMMIT",
                   nullptr, nullptr, nullptr) != SQLITE_OK)
    fail("moving measured profiles to tenant_profiles");
  const std::map<std::string, const char*> sql = {
      {"job",
       "INSERT OR REPLACE INTO jobs VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,"
       "?16,?17,?18,?19,?20,?21)"},
      {"node",
       "INSERT OR REPLACE INTO nodes (name, gpu_type, devices, cpus, memory_gb, epoch, state, "
       "address) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)"},
      {"lease",
       "INSERT OR REPLACE INTO leases (id, job, node, devices, start, end, status, profiling, "
       "profile_from, profile_from_t, gang, rank, parts, cpus, memory_gb, gpu_type, stopped, "
       "exit_code, signal, reason) VALUES "
       "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20)"},
      {"profile", "INSERT OR REPLACE INTO tenant_profiles VALUES (?1,?2,?3,?4,?5)"},
      {"profile_reset",
       "DELETE FROM tenant_profiles WHERE job_type = ?1 AND (?2 = '' OR gpu_type = ?2) AND "
       "(?3 = 1 OR tenant = ?4)"},
      {"meta", "INSERT OR REPLACE INTO meta VALUES (?1,?2)"},
      {"begin", "BEGIN IMMEDIATE"},
      {"commit", "COMMIT"},
  };
  for (const auto& [name, text] : sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, text, -1, &st, nullptr) != SQLITE_OK) fail("prepare " + name);
    stmts_[name] = st;
  }
  // Readers see the last commit (WAL) and never block the committer.
  if (sqlite3_open_v2(path_.c_str(), &reader_, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK ||
      sqlite3_busy_timeout(reader_, 5000) != SQLITE_OK) {
    if (reader_) sqlite3_close(reader_);
    reader_ = nullptr;
    for (auto& [name, st] : stmts_) sqlite3_finalize(st);
    fail("cannot open for reading");
  }
  committer_ = std::thread([this] { run(); });
}

Store::~Store() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  queued_cv_.notify_all();
  if (committer_.joinable()) committer_.join();
  for (auto& [name, st] : stmts_) sqlite3_finalize(st);
  if (reader_) sqlite3_close(reader_);
  if (db_) sqlite3_close(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

StoreSnapshot Store::load() const {
  StoreSnapshot out;
  auto each = [&](const char* sql, auto&& row) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &st, nullptr) != SQLITE_OK)
      throw std::runtime_error(fmt::format("{}: {}", path_, sqlite3_errmsg(db_)));
    while (sqlite3_step(st) == SQLITE_ROW) row(st);
    sqlite3_finalize(st);
  };
  each("SELECT * FROM jobs ORDER BY seq", [&](sqlite3_stmt* st) {
    StoredJob j;
    j.seq = sqlite3_column_int64(st, 0);
    j.id = col_string(st, 1);
    j.name = col_string(st, 2);
    j.tenant = col_string(st, 3);
    j.job_type = col_string(st, 4);
    j.workers = sqlite3_column_int(st, 5);
    j.weight = sqlite3_column_double(st, 6);
    j.command_json = col_string(st, 7);
    j.env_json = col_string(st, 8);
    j.iterations = sqlite3_column_double(st, 9);
    j.done = sqlite3_column_double(st, 10);
    j.attained = sqlite3_column_double(st, 11);
    j.state = col_string(st, 12);
    j.submitted_at = sqlite3_column_double(st, 13);
    j.started_at = sqlite3_column_double(st, 14);
    j.finished_at = sqlite3_column_double(st, 15);
    j.restarts = sqlite3_column_int(st, 16);
    j.preemptions = sqlite3_column_int(st, 17);
    j.failures = sqlite3_column_int(st, 18);
    j.exit_code = sqlite3_column_int(st, 19);
    j.log_tail = col_string(st, 20);
    out.jobs.push_back(std::move(j));
  });
  each(
      "SELECT name, gpu_type, devices, cpus, memory_gb, epoch, state, address FROM nodes "
      "ORDER BY name",
      [&](sqlite3_stmt* st) {
        StoredNode n;
        n.name = col_string(st, 0);
        n.gpu_type = col_string(st, 1);
        n.devices = parse_devices(col_text(st, 2));
        n.cpus = sqlite3_column_double(st, 3);
        n.memory_gb = sqlite3_column_double(st, 4);
        n.epoch = sqlite3_column_int64(st, 5);
        n.state = col_string(st, 6);
        n.address = col_string(st, 7);
        out.nodes.push_back(std::move(n));
      });
  each(
      "SELECT id, job, node, devices, start, end, status, profiling, profile_from, "
      "profile_from_t, gang, rank, parts, cpus, memory_gb, gpu_type, stopped, exit_code, signal, "
      "reason FROM leases ORDER BY id",
      [&](sqlite3_stmt* st) {
        StoredLease l;
        l.id = sqlite3_column_int64(st, 0);
        l.job = col_string(st, 1);
        l.node = col_string(st, 2);
        l.devices = parse_devices(col_text(st, 3));
        l.start = sqlite3_column_double(st, 4);
        l.end = sqlite3_column_double(st, 5);
        l.status = col_string(st, 6);
        l.profiling = sqlite3_column_int(st, 7) != 0;
        l.profile_from = sqlite3_column_double(st, 8);
        l.profile_from_t = sqlite3_column_double(st, 9);
        l.gang = sqlite3_column_int64(st, 10);
        l.rank = sqlite3_column_int(st, 11);
        l.parts = sqlite3_column_int(st, 12);
        l.cpus = sqlite3_column_double(st, 13);
        l.memory_gb = sqlite3_column_double(st, 14);
        l.gpu_type = col_string(st, 15);
        l.stopped = sqlite3_column_double(st, 16);
        l.exit_code = sqlite3_column_int(st, 17);
        l.signal = sqlite3_column_int(st, 18);
        l.reason = col_string(st, 19);
        if (l.gang == 0) {  // written before gangs: a lease on its own
          l.gang = l.id;
          l.rank = 0;
          l.parts = 1;
        }
        out.leases.push_back(std::move(l));
      });
  each("SELECT job_type, gpu_type, tenant, workers, rate FROM tenant_profiles ORDER BY rowid",
       [&](sqlite3_stmt* st) {
         out.profiles.push_back({col_string(st, 0), col_string(st, 1), sqlite3_column_int(st, 3),
                                 sqlite3_column_double(st, 4), "measured", col_string(st, 2)});
       });
  each("SELECT key, value FROM meta",
       [&](sqlite3_stmt* st) { out.meta[col_string(st, 0)] = col_string(st, 1); });
  return out;
}

std::vector<StoredRun> Store::runs(const RunQuery& q) const {
  // A run: a part that became active (not pending, not ended unstarted).
  // Its GPU type is the one recorded at its start, else (a row from before
  // it was recorded) its node's. A row from before `stopped` was recorded
  // that has ended stops at its lease's end.
  constexpr const char* kSql =
      "SELECT l.id, l.gang, l.rank, l.job, COALESCE(j.tenant, ''), l.node, "
      "CASE WHEN l.gpu_type = '' THEN COALESCE(n.gpu_type, '') ELSE l.gpu_type END, l.devices, "
      "l.start, CASE WHEN l.stopped >= 0 THEN l.stopped WHEN l.status = 'ended' THEN l.end "
      "ELSE -1 END AS stop, l.status, l.reason, l.exit_code, l.signal, l.profiling "
      "FROM leases l LEFT JOIN jobs j ON j.id = l.job LEFT JOIN nodes n ON n.name = l.node "
      "WHERE l.status != 'pending' AND l.reason != 'not_started' AND l.start < ?1 "
      "AND (stop < 0 OR stop > ?2) AND (?3 = '' OR j.tenant = ?3) AND (?4 = '' OR l.job = ?4) "
      "ORDER BY l.id";
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(reader_, kSql, -1, &st, nullptr) != SQLITE_OK)
    throw std::runtime_error(fmt::format("{}: runs: {}", path_, sqlite3_errmsg(reader_)));
  sqlite3_bind_double(st, 1, q.until);
  sqlite3_bind_double(st, 2, q.since);
  sqlite3_bind_text(st, 3, q.tenant.c_str(), static_cast<int>(q.tenant.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, q.job.c_str(), static_cast<int>(q.job.size()), SQLITE_TRANSIENT);
  std::vector<StoredRun> out;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    StoredRun r;
    r.lease = sqlite3_column_int64(st, 0);
    r.gang = sqlite3_column_int64(st, 1);
    if (r.gang == 0) r.gang = r.lease;  // written before gangs
    r.rank = sqlite3_column_int(st, 2);
    r.job = col_string(st, 3);
    r.tenant = col_string(st, 4);
    r.node = col_string(st, 5);
    r.gpu_type = col_string(st, 6);
    r.devices = parse_devices(col_text(st, 7));
    r.start = sqlite3_column_double(st, 8);
    r.stop = sqlite3_column_double(st, 9);
    r.status = col_string(st, 10);
    r.reason = col_string(st, 11);
    r.exit_code = sqlite3_column_int(st, 12);
    r.signal = sqlite3_column_int(st, 13);
    r.profiling = sqlite3_column_int(st, 14) != 0;
    out.push_back(std::move(r));
  }
  const std::string error = rc == SQLITE_DONE ? "" : sqlite3_errmsg(reader_);
  sqlite3_finalize(st);
  if (!error.empty()) throw std::runtime_error(fmt::format("{}: runs: {}", path_, error));
  return out;
}

std::uint64_t Store::put(StoredRow row) {
  std::uint64_t ticket;
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(row));
    ticket = ++next_ticket_;
  }
  queued_cv_.notify_one();
  return ticket;
}

void Store::wait(std::uint64_t ticket) {
  std::unique_lock lock(mu_);
  durable_cv_.wait(lock, [&] { return durable_ >= ticket || failed_ >= ticket; });
  if (durable_ < ticket) throw std::runtime_error(error_);
}

std::uint64_t Store::last_ticket() const {
  std::lock_guard lock(mu_);
  return next_ticket_;
}

std::uint64_t Store::transactions() const {
  std::lock_guard lock(mu_);
  return transactions_;
}

void Store::write(const StoredRow& row) {
  sqlite3_stmt* st = nullptr;
  auto text = [&](int i, const std::string& v) {
    sqlite3_bind_text(st, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  };
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, StoredJob>) {
          st = stmts_.at("job");
          sqlite3_bind_int64(st, 1, r.seq);
          text(2, r.id);
          text(3, r.name);
          text(4, r.tenant);
          text(5, r.job_type);
          sqlite3_bind_int(st, 6, r.workers);
          sqlite3_bind_double(st, 7, r.weight);
          text(8, r.command_json);
          text(9, r.env_json);
          sqlite3_bind_double(st, 10, r.iterations);
          sqlite3_bind_double(st, 11, r.done);
          sqlite3_bind_double(st, 12, r.attained);
          text(13, r.state);
          sqlite3_bind_double(st, 14, r.submitted_at);
          sqlite3_bind_double(st, 15, r.started_at);
          sqlite3_bind_double(st, 16, r.finished_at);
          sqlite3_bind_int(st, 17, r.restarts);
          sqlite3_bind_int(st, 18, r.preemptions);
          sqlite3_bind_int(st, 19, r.failures);
          sqlite3_bind_int(st, 20, r.exit_code);
          text(21, r.log_tail);
        } else if constexpr (std::is_same_v<T, StoredNode>) {
          st = stmts_.at("node");
          text(1, r.name);
          text(2, r.gpu_type);
          text(3, devices_json(r.devices));
          sqlite3_bind_double(st, 4, r.cpus);
          sqlite3_bind_double(st, 5, r.memory_gb);
          sqlite3_bind_int64(st, 6, r.epoch);
          text(7, r.state);
          text(8, r.address);
        } else if constexpr (std::is_same_v<T, StoredLease>) {
          st = stmts_.at("lease");
          sqlite3_bind_int64(st, 1, r.id);
          text(2, r.job);
          text(3, r.node);
          text(4, devices_json(r.devices));
          sqlite3_bind_double(st, 5, r.start);
          sqlite3_bind_double(st, 6, r.end);
          text(7, r.status);
          sqlite3_bind_int(st, 8, r.profiling ? 1 : 0);
          sqlite3_bind_double(st, 9, r.profile_from);
          sqlite3_bind_double(st, 10, r.profile_from_t);
          sqlite3_bind_int64(st, 11, r.gang);
          sqlite3_bind_int(st, 12, r.rank);
          sqlite3_bind_int(st, 13, r.parts);
          sqlite3_bind_double(st, 14, r.cpus);
          sqlite3_bind_double(st, 15, r.memory_gb);
          text(16, r.gpu_type);
          sqlite3_bind_double(st, 17, r.stopped);
          sqlite3_bind_int(st, 18, r.exit_code);
          sqlite3_bind_int(st, 19, r.signal);
          text(20, r.reason);
        } else if constexpr (std::is_same_v<T, StoredProfile>) {
          st = stmts_.at("profile");
          text(1, r.job_type);
          text(2, r.gpu_type);
          text(3, r.tenant);
          sqlite3_bind_int(st, 4, r.workers);
          sqlite3_bind_double(st, 5, r.rate);
        } else if constexpr (std::is_same_v<T, StoredProfileReset>) {
          st = stmts_.at("profile_reset");
          text(1, r.job_type);
          text(2, r.gpu_type);
          sqlite3_bind_int(st, 3, r.all_tenants ? 1 : 0);
          text(4, r.tenant);
        } else {
          st = stmts_.at("meta");
          text(1, r.key);
          text(2, r.value);
        }
      },
      row);
  const int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) throw std::runtime_error(fmt::format("{}: write: {}", path_, sqlite3_errmsg(db_)));
}

void Store::run() {
  std::vector<StoredRow> batch;  // rows of a failed commit stay here, first
  bool failing = false;
  for (;;) {
    std::uint64_t upto = 0;
    {
      std::unique_lock lock(mu_);
      if (failing) {  // the next attempt after kRetryS, or at once to stop
        queued_cv_.wait_for(lock, std::chrono::duration<double>(kRetryS), [&] { return stop_; });
      } else {
        queued_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      }
      if (queue_.empty() && batch.empty()) return;  // stopping with nothing left
      batch.insert(batch.end(), std::make_move_iterator(queue_.begin()),
                   std::make_move_iterator(queue_.end()));
      queue_.clear();
      upto = next_ticket_;
    }
    std::string error;
    try {
      auto step = [&](const char* name) {
        sqlite3_stmt* st = stmts_.at(name);
        const int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE)
          throw std::runtime_error(fmt::format("{}: {}: {}", path_, name, sqlite3_errmsg(db_)));
      };
      step("begin");
      for (const StoredRow& row : batch) write(row);
      step("commit");
    } catch (const std::exception& e) {
      error = e.what();
      // Nothing of the batch is kept: it is tried again whole.
      if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    }
    bool stopping = false;
    {
      std::lock_guard lock(mu_);
      if (error.empty()) {
        durable_ = upto;
        ++transactions_;
      } else {
        failed_ = upto;
        error_ = error;
      }
      stopping = stop_;
    }
    durable_cv_.notify_all();
    if (error.empty()) {
      if (failing) log::info("store_recovered", {{"path", path_}});
      failing = false;
      batch.clear();
    } else {
      if (!failing) log::write(log::Level::kError, "store_commit_failed",
                               {{"error", error}, {"retry_s", kRetryS}});
      failing = true;
      // Stopping: what cannot be committed now is lost with the process, as
      // at a kill -9; none of it was acknowledged.
      if (stopping) {
        std::lock_guard lock(mu_);
        failed_ = next_ticket_;
        durable_cv_.notify_all();
        return;
      }
    }
  }
}

}  // namespace fairgpu::live
