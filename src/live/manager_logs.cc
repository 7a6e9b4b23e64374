// Tenants read their own jobs' output through the server (issue 32, item 7;
// docs/live-protocol.md, GET /v1/jobs/{id}/log): relayed from the agent of
// the node a run ran on (log_relay.h), or on Slurm read from the job's log
// file under checkpoint_dir.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "live/manager.h"
#include "live/request.h"

namespace fairgpu::live {

using nlohmann::json;
using namespace request;

namespace {

// Up to LogRelay::kMaxChunk bytes of `path` from `offset`; found false when
// it is not a regular file (links are not followed).
LogRelay::Chunk read_chunk(const std::string& path, std::int64_t offset) {
  LogRelay::Chunk c;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return c;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    c.found = true;
    c.size = st.st_size;
    if (offset < st.st_size) {
      c.data.resize(static_cast<std::size_t>(LogRelay::kMaxChunk));
      const ssize_t n = ::pread(fd, c.data.data(), c.data.size(), offset);
      c.data.resize(static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    }
  }
  ::close(fd);
  return c;
}

}  // namespace

json Manager::job_log(const Caller& c, const std::string& id, std::int64_t lease,
                      std::int64_t offset) {
  require(c, {Caller::Role::kTenant, Caller::Role::kAdmin});
  if (offset < 0) bad("offset", "expected an integer >= 0");
  std::string slurm_log;
  double heartbeat_s = 1.0;
  {
    std::lock_guard lock(mu_);
    const JobEntry* e = find_job(id);
    if (!e) throw ApiError(404, "job " + id + ": no such job");
    check_owner(c, *e);
    if (slurm_) slurm_log = executor_job(*e).log_path;
    heartbeat_s = config_.heartbeat_s;
  }
  json answer = {{"job", id}, {"offset", offset}};
  LogRelay::Chunk chunk;
  if (!slurm_log.empty()) {  // one log file per job, whatever its runs
    if (lease) bad("lease", "the Slurm backend keeps one log per job: no lease to choose");
    chunk = read_chunk(slurm_log, offset);
    answer["source"] = "slurm";
  } else {
    RunQuery q;
    q.job = id;
    json leases = json::array();
    const StoredRun* chosen = nullptr;
    const std::vector<StoredRun> runs = stored_runs(q);
    for (const StoredRun& r : runs) {
      leases.push_back({{"lease", r.lease}, {"node", r.node}, {"running", r.stop < 0}});
      if (lease ? r.lease == lease : r.rank == 0) chosen = &r;  // default: the latest run
    }
    if (!chosen)
      throw ApiError(404, lease ? fmt::format("job {}: no run under lease {}", id, lease)
                                : fmt::format("job {} has not run yet: no output", id));
    {
      std::lock_guard lock(mu_);
      auto n = nodes_.find(chosen->node);
      if (n == nodes_.end() || n->second.s.state == "lost")
        throw ApiError(503, fmt::format("node {} (where lease {} ran) is lost: its log cannot "
                                        "be read until its agent is back",
                                        chosen->node, chosen->lease));
    }
    const double wait_s = 3 * heartbeat_s + 5;
    std::optional<LogRelay::Chunk> got =
        log_relay_.fetch(chosen->node, chosen->lease, offset, wait_s);
    if (!got)
      throw ApiError(504, fmt::format("the agent of node {} did not send lease {}'s log within "
                                      "{} s",
                                      chosen->node, chosen->lease, wait_s));
    chunk = std::move(*got);
    answer["source"] = "agent";
    answer["lease"] = chosen->lease;
    answer["node"] = chosen->node;
    answer["running"] = chosen->stop < 0;
    answer["runs"] = std::move(leases);
  }
  answer["found"] = chunk.found;
  answer["size"] = chunk.size;
  answer["next_offset"] = offset + static_cast<std::int64_t>(chunk.data.size());
  answer["data"] = LogRelay::base64(chunk.data);
  return answer;
}

}  // namespace fairgpu::live
