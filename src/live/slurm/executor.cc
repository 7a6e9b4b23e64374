#include "live/slurm/executor.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "live/log.h"

namespace fairgpu::live::slurm {

SlurmExecutor::SlurmExecutor(SlurmClient& client, SlurmExecutorOptions options)
    : client_(client), options_(std::move(options)) {}

void SlurmExecutor::log_slurm_state(Tracked& t, const JobDetail* d) {
  // Only runs it waits on: an idle job is held by design, a done one is over.
  const char* phase = "";
  switch (t.phase) {
    case Phase::kIdle:
    case Phase::kDone:
      return;
    case Phase::kAdopted: phase = "adopted"; break;
    case Phase::kStarting: phase = "starting"; break;
    case Phase::kRunning: phase = "running"; break;
    case Phase::kRevoking: phase = "revoking"; break;
    case Phase::kRequeued: phase = "requeued"; break;
    case Phase::kFenced: phase = "fenced"; break;
  }
  std::string nodes;
  if (d)
    for (const std::string& n : d->nodes) nodes += (nodes.empty() ? "" : ",") + n;
  const std::string state = d ? job_state_name(d->state) : "GONE";
  const std::string seen = std::string(phase) + "|" + state + "|" +
                           (d ? d->reason : "") + "|" + (d && d->held ? "1" : "0") + "|" + nodes;
  if (seen == t.slurm_seen) return;
  t.slurm_seen = seen;
  log::info("slurm_run_state", {{"job", t.spec.job},
                                {"lease", t.lease},
                                {"slurm_job", t.slurm_id},
                                {"phase", phase},
                                {"state", state},
                                {"reason", d ? d->reason : ""},
                                {"held", d && d->held},
                                {"nodes", nodes}});
}

bool uniform_placement(const std::vector<Placement>& placement) {
  return std::all_of(placement.begin(), placement.end(), [&](const Placement& p) {
    return p.devices.size() == placement.front().devices.size();
  });
}

std::int64_t SlurmExecutor::slurm_id(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.slurm_id;
}

std::vector<ExecutorNode> SlurmExecutor::nodes() {
  const std::vector<NodeInfo> infos = client_.read_nodes();
  const JobsSnapshot snap = client_.read_jobs();
  // GPU indices fairgpu's own runs hold, per node: free for its plans.
  std::map<std::string, std::set<int>> ours;
  for (const auto& [id, d] : snap.detail) {
    if (!job_of_slurm_id_.count(id) || !holds_nodes(d.state)) continue;
    for (const NodeGpus& g : d.per_node) ours[g.node].insert(g.indices.begin(), g.indices.end());
  }
  std::vector<ExecutorNode> out;
  settling_.clear();
  std::map<std::string, Taken> seen;
  for (const NodeInfo& n : infos) {
    if (n.base_state == "UNKNOWN" &&
        std::find(n.flags.begin(), n.flags.end(), "NOT_RESPONDING") == n.flags.end())
      settling_.insert(n.name);
    if (!n.usable()) continue;
    if (!options_.partition.empty() && std::find(n.partitions.begin(), n.partitions.end(),
                                                 options_.partition) == n.partitions.end())
      continue;
    const std::string type = n.gpu_type();
    if (type.empty()) continue;  // no GPUs, or several types (an untyped pin cannot choose)
    const std::set<int>& mine = ours[n.name];
    Taken now;  // by jobs that are not fairgpu's, as this read sees them
    for (const Gres& g : n.gres_used) {
      int unindexed = g.count - static_cast<int>(g.indices.size());
      for (int i : g.indices)
        if (!mine.count(i)) now.indices.insert(i);
      now.without_index += std::max(0, unindexed);
    }
    // The node and the jobs are two reads: a fairgpu run that ends or starts
    // between them looks like another user's job for this read alone. A GPU
    // counts as taken when the read before saw it taken too (a node's first
    // read: as it is), so such a run neither shrinks the node nor revokes
    // the lease on that GPU.
    Taken taken = now;
    if (auto before = taken_before_.find(n.name); before != taken_before_.end()) {
      taken.indices.clear();
      for (int i : now.indices)
        if (before->second.indices.count(i)) taken.indices.insert(i);
      taken.without_index = std::min(now.without_index, before->second.without_index);
    }
    seen[n.name] = now;
    ExecutorNode e;
    e.name = n.name;
    e.gpu_type = type;
    e.cpus = n.cpus;
    e.memory_mb = n.memory_mb;
    for (int i = 0; i < n.gpu_count(); ++i)
      if (!taken.indices.count(i)) e.devices.push_back(i);
    // GRES in use without indices: the highest devices count as taken.
    for (int k = 0; k < taken.without_index && !e.devices.empty(); ++k) e.devices.pop_back();
    out.push_back(std::move(e));
  }
  taken_before_ = std::move(seen);
  return out;
}

std::string SlurmExecutor::admit(const ExecutorJob& job) {
  if (jobs_.count(job.job))
    throw std::logic_error("slurm executor: job " + job.job + " admitted twice");
  const std::string& user = job.run_as_user.empty() ? options_.submitter : job.run_as_user;
  auto stray = strays_.find(job.job);
  auto own = stray == strays_.end()
                 ? std::vector<std::int64_t>::iterator{}
                 : std::find_if(stray->second.begin(), stray->second.end(), [&](std::int64_t id) {
                     return user.empty() || stray_user_[id] == user;
                   });
  if (stray != strays_.end() && own != stray->second.end()) {
    // Submitted already (the id never reached the store): taken over. The
    // next poll settles it like a job adopted after a restart.
    const std::int64_t id = *own;
    stray->second.erase(own);
    if (stray->second.empty()) strays_.erase(stray);
    std::error_code ec;
    std::filesystem::create_directories(job.checkpoint_dir, ec);
    return track(job, id, Phase::kAdopted);
  }
  return track(job, client_.submit(submit_spec(job)), Phase::kIdle);
}

SubmitSpec SlurmExecutor::submit_spec(const ExecutorJob& job) const {
  SubmitSpec s;
  s.job = job.job;
  s.argv = job.argv;
  s.shell_command = job.shell_command;
  s.env = job.env;
  s.nodes = job.nodes;
  s.gpus_per_node = job.gpus_per_node;
  s.checkpoint_dir = job.checkpoint_dir;
  s.progress_file = job.progress_file;
  s.log_path = job.log_path;
  s.comment = options_.instance;
  s.run_as_user = job.run_as_user;
  s.account = job.account;
  return s;
}

void SlurmExecutor::resubmit_lost() {
  for (auto& [name, t] : jobs_) {
    if (!t.lost || t.lease != 0 || t.phase != Phase::kIdle) continue;
    try {
      const std::int64_t id = client_.submit(submit_spec(t.spec));
      t.slurm_id = id;
      t.lost = false;
      job_of_slurm_id_[id] = name;
      resubmitted_.push_back({name, id});
      log::warn("slurm_job_resubmitted", {{"job", name}, {"slurm_job", id}});
    } catch (const SlurmError& e) {
      log::warn("slurm_submit_failed", {{"job", name}, {"error", e.what()}});
    }
  }
}

std::string SlurmExecutor::track(const ExecutorJob& job, std::int64_t slurm_id, Phase phase) {
  Tracked t;
  t.spec = job;
  t.slurm_id = slurm_id;
  t.phase = phase;
  jobs_[job.job] = std::move(t);
  job_of_slurm_id_[slurm_id] = job.job;
  return std::to_string(slurm_id);
}

void SlurmExecutor::adopt(const ExecutorJob& job, const std::string& handle,
                          std::int64_t active_lease) {
  std::int64_t id = 0;
  for (char c : handle) {
    if (c < '0' || c > '9' || id > (INT64_MAX - 9) / 10)
      throw SlurmError("slurm executor: job " + job.job + ": bad Slurm job id '" + handle + "'");
    id = id * 10 + (c - '0');
  }
  if (id == 0)
    throw SlurmError("slurm executor: job " + job.job + ": bad Slurm job id '" + handle + "'");
  Tracked t;
  t.spec = job;
  t.slurm_id = id;
  t.lease = active_lease;
  t.phase = Phase::kAdopted;
  if (active_lease != 0 && !job.progress_file.empty()) t.progress.emplace(job.progress_file);
  jobs_[job.job] = std::move(t);
  job_of_slurm_id_[id] = job.job;
}

SlurmExecutor::Tracked* SlurmExecutor::by_lease(std::int64_t lease) {
  for (auto& [name, t] : jobs_)
    if (t.lease == lease && lease != 0) return &t;
  return nullptr;
}

void SlurmExecutor::ended(Tracked& t, std::vector<RunEvent>& events, bool revoked,
                          const std::string& detail) {
  if (t.lease != 0) {
    RunEvent e;
    e.kind = RunEvent::Kind::kEnded;
    e.lease = t.lease;
    e.job = t.spec.job;
    e.exit_code = t.exit_code;
    e.signal = t.signal;
    e.revoked = revoked;
    e.detail = detail;
    events.push_back(std::move(e));
  }
  if (t.unstarted.empty()) t.unstarted_runs = 0;
  t.lease = 0;
  t.progress.reset();
  t.reported_iterations = -1;
  t.exit_code = -1;
  t.signal = 0;
}

void SlurmExecutor::flush(RoundWrites& writes, std::vector<RunEvent>& events) {
  (void)events;
  if (writes.empty()) return;
  const auto refusals = client_.apply(writes);
  for (const auto& [id, why] : refusals) {
    auto name = job_of_slurm_id_.find(id);
    if (name == job_of_slurm_id_.end()) continue;
    Tracked& t = jobs_.at(name->second);
    // A start refused (pin or release): the job may be released unpinned or
    // not at all. It goes back to held through requeuehold, and its run is
    // reported ended (never started) once it is held again.
    if (t.phase == Phase::kStarting) {
      t.phase = Phase::kRevoking;
      t.requeue_at = 0;
      t.exit_code = -1;
      t.start_refused = "start refused by Slurm: " + why;
    }
  }
  writes = RoundWrites{};
}

void SlurmExecutor::apply(const std::vector<RunStart>& starts,
                          const std::vector<std::int64_t>& revokes, double now) {
  std::vector<std::int64_t> signal_ids;
  for (std::int64_t lease : revokes) {
    Tracked* t = by_lease(lease);  // none: the run ended meanwhile (kEnded on its way)
    // (kAdopted: a revoke the lease manager decided before a restart.)
    if (!t || t->lost ||
        (t->phase != Phase::kStarting && t->phase != Phase::kRunning &&
         t->phase != Phase::kAdopted))
      continue;
    signal_ids.push_back(t->slurm_id);
    t->phase = Phase::kRevoking;
    t->requeue_at = now + options_.grace_s;
  }
  RoundWrites w;
  // A start that cannot be carried out ends that run alone (reported at the
  // next poll); the round's other starts go on. It failed to launch, or, when
  // `retry_later`, it never started and is not the job's failure.
  auto end_start = [&](const RunStart& s, const std::string& why, bool retry_later = false) {
    RunEvent e;
    e.kind = RunEvent::Kind::kEnded;
    e.lease = s.lease;
    e.job = s.job;
    e.exit_code = -1;
    e.launch_failed = !retry_later;
    e.revoked = retry_later;
    e.never_started = retry_later;
    e.detail = why;
    carried_.push_back(std::move(e));
  };
  auto fail_start = [&](const RunStart& s, const std::string& why) { end_start(s, why); };
  for (const RunStart& s : starts) {
    auto it = jobs_.find(s.job);
    if (it == jobs_.end()) {
      fail_start(s, "start of a job the Slurm backend does not track");
      continue;
    }
    Tracked& t = it->second;
    // A run that failed left a final Slurm job: a retry requeues it (held)
    // in the same exchange, before its pin and release.
    const bool retry = t.phase == Phase::kDone && !t.cancelled;
    if (t.phase != Phase::kIdle && !retry) {
      fail_start(s, "start of job " + s.job + " whose previous run has not ended");
      continue;
    }
    if (t.lost) {  // not in Slurm until its submission goes through: the next lease
      end_start(s, "job " + s.job + " is being submitted to Slurm again (Slurm lost it)", true);
      continue;
    }
    // The run's shape: its nodes, the same GPU count on each (Slurm's
    // --gres counts per node; the lease manager starts no other spread).
    const int per_node = s.placement.empty() ? 0 : static_cast<int>(s.placement[0].devices.size());
    if (per_node == 0 || !uniform_placement(s.placement)) {
      fail_start(s, "placed with unequal GPU counts over its nodes (Slurm's --gres is per node)");
      continue;
    }
    try {
      write_run_file(t.spec.checkpoint_dir, s.lease, s.gpu_type, per_node,
                     kMasterPortBase + static_cast<int>(s.lease % kMasterPortSpan));
    } catch (const SlurmError& e) {
      fail_start(s, e.what());
      continue;
    }
    if (retry) w.requeue_hold.push_back(t.slurm_id);
    RoundWrites::Pin pin;
    pin.job = t.slurm_id;
    pin.gpus_per_node = per_node;
    // The plan's CPU and memory grant (Synergy's, or every policy's
    // GPU-proportional share): CPUs over all nodes, memory per node, in what
    // Slurm counts (whole CPUs, MB), rounded down so that the grants of one
    // node never add up to more than it has (at least 1 of each).
    double cpus = 0, memory_gb = 0;
    for (const Placement& p : s.placement) {
      pin.nodes.push_back(p.node);
      cpus += p.cpus;
      memory_gb = std::max(memory_gb, p.memory_gb);
    }
    if (cpus > 0) pin.cpus = std::max(1, static_cast<int>(std::floor(cpus + 1e-6)));
    if (memory_gb > 0)
      pin.memory_mb_per_node =
          std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(memory_gb * 1024 + 1e-6)));
    t.nodes = pin.nodes;
    t.pin = pin;
    w.pins.push_back(std::move(pin));
    w.release.push_back(t.slurm_id);
    t.lease = s.lease;
    t.phase = Phase::kStarting;
    t.exit_code = -1;
    t.signal = 0;
    t.start_refused.clear();
    t.reported_iterations = -1;
    if (!t.spec.progress_file.empty()) t.progress.emplace(t.spec.progress_file);
  }
  // A signal that finds no process (the script not started yet) is lost;
  // the requeuehold after the grace period reaches the job in any case.
  // scancel --signal fails as a whole (no per-job line) when a job is still
  // pending; the signal is best effort either way.
  if (!signal_ids.empty()) {
    try {
      client_.signal_checkpoint(signal_ids);
    } catch (const SlurmError&) {
    }
  }
  flush(w, carried_);
}

void SlurmExecutor::cancel(const std::string& job) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  Tracked& t = it->second;
  t.cancelled = true;
  if (t.lost) return;  // nothing in Slurm to cancel: the next poll ends it
  try {
    client_.cancel({t.slurm_id});
    t.cancel_sent = true;
  } catch (const SlurmError&) {
    // Slurm unreachable: the next poll that reads Slurm sends it again.
  }
}

std::vector<std::int64_t> SlurmExecutor::cancel_strays() {
  std::vector<std::int64_t> ids;
  for (const auto& [job, stray] : strays_) ids.insert(ids.end(), stray.begin(), stray.end());
  strays_.clear();
  if (!ids.empty()) client_.cancel(ids);
  return ids;
}

std::vector<RunEvent> SlurmExecutor::poll(double now) {
  std::vector<RunEvent> events = std::move(carried_);
  carried_.clear();
  RoundWrites due;
  // A run whose progress reached the job's total has done its work: it ends
  // on its own (final in Slurm, below), not through a requeue.
  auto work_done = [](Tracked& t) {
    return t.spec.iterations > 0 && t.progress &&
           static_cast<double>(t.progress->read()) >= t.spec.iterations;
  };
  for (auto& [name, t] : jobs_) {
    if (t.phase == Phase::kRevoking && now >= t.requeue_at && !t.cancelled && !work_done(t)) {
      due.requeue_hold.push_back(t.slurm_id);
      t.phase = Phase::kRequeued;
    }
  }
  flush(due, events);

  strays_.clear();
  stray_user_.clear();
  const JobsSnapshot snap = client_.read_jobs();
  // A line Slurm printed that does not read fails the exchange only when it
  // is one of ours; other users' jobs never stop scheduling.
  for (const auto& [id, why] : snap.unreadable)
    if (job_of_slurm_id_.count(id)) throw SlurmError(why);
  // Cancels that did not reach Slurm (unreachable then), while not final.
  std::vector<std::int64_t> cancels;
  for (auto& [name, t] : jobs_) {
    if (!t.cancelled || t.cancel_sent || t.phase == Phase::kDone) continue;
    auto it = snap.detail.find(t.slurm_id);
    if (it != snap.detail.end() && !is_final(it->second.state)) cancels.push_back(t.slurm_id);
  }
  if (!cancels.empty()) client_.cancel(cancels);
  for (auto& [name, t] : jobs_)
    if (t.cancelled) t.cancel_sent = true;
  if (!options_.instance.empty()) {
    for (const auto& [id, d] : snap.detail) {  // by id: lowest first
      if (job_of_slurm_id_.count(id) || is_final(d.state) || d.comment != options_.instance ||
          (!options_.users.empty() && !options_.users.count(d.user)) ||
          d.name.rfind("fairgpu-", 0) != 0)
        continue;
      strays_[d.name.substr(8)].push_back(id);
      stray_user_[id] = d.user;
    }
  }
  std::optional<std::vector<NodeInfo>> node_infos;
  // A node that answers again: its slurmd has killed what a failed run left.
  auto node_responds = [&](const std::string& node) {
    if (!node_infos) node_infos = client_.read_nodes();
    for (const NodeInfo& n : *node_infos) {
      if (n.name != node) continue;
      for (const std::string& f : n.flags)
        if (f == "NOT_RESPONDING" || f == "COMPLETING") return false;
      return n.base_state != "UNKNOWN";
    }
    return true;  // left the configuration
  };

  // Its nodes answer and no process of its run holds the fence: a node that
  // answers again has only been told to kill what a failed run left (its
  // slurmd kills it moments later), so the fence, not the node, says done.
  auto run_gone = [&](const Tracked& t) {
    return std::all_of(t.nodes.begin(), t.nodes.end(), node_responds) &&
           run_processes_gone(t.spec.checkpoint_dir);
  };
  // Held again, and (a revoke on a node that failed) its processes are gone.
  auto held_again = [&](Tracked& t, const JobDetail& d) {
    return d.state == JobState::kPending && d.held && run_gone(t);
  };

  RoundWrites writes;
  std::vector<std::string> exited;  // revoked runs that exited: requeueheld below
  // A run that ended before its command started: the wrapper refused it for
  // want of GPUs, or Slurm failed it before the wrapper's began mark (seen
  // when Slurm relaunched a requeued job on the node it had just left: exit
  // 1, no output). Held again and reported ended as never started
  // (requeued_ended), not as the job's failure.
  auto never_began = [&](Tracked& t, const std::string& name, const JobDetail& d) {
    if (t.lease == 0 || t.unstarted_runs >= kMaxUnstartedRuns) return false;
    if (t.exit_code == kNoGpuExitCode && take_no_gpu_mark(t.spec.checkpoint_dir, t.lease)) {
      t.unstarted = "Slurm started it without its GPUs: requeued, not failed";
    } else if ((d.state == JobState::kFailed || d.state == JobState::kNodeFail ||
                d.state == JobState::kBootFail) &&
               !run_began(t.spec.checkpoint_dir, t.lease)) {
      t.unstarted = "Slurm ended it " + std::string(job_state_name(d.state)) + " (exit " +
                    std::to_string(t.exit_code) + ") before its command started: requeued, not failed";
      log::warn("slurm_run_never_began", {{"job", name},
                                          {"lease", t.lease},
                                          {"slurm_job", t.slurm_id},
                                          {"state", job_state_name(d.state)},
                                          {"exit_code", t.exit_code},
                                          {"reason", d.reason}});
    } else {
      return false;
    }
    ++t.unstarted_runs;
    writes.requeue_hold.push_back(t.slurm_id);
    exited.push_back(name);
    t.phase = Phase::kRequeued;
    return true;
  };
  for (auto& [name, t] : jobs_) {
    if (t.phase == Phase::kDone) continue;
    auto it = snap.detail.find(t.slurm_id);
    // Slurm lost it: slurmctld died (kill -9, a crash) before it saved the
    // job and came back without it (its id may go to another job later).
    if (!t.lost && (it == snap.detail.end() || it->second.name != "fairgpu-" + name)) {
      log_slurm_state(t, nullptr);
      if (t.cancelled) {
        ended(t, events, false, "cancelled");
        t.phase = Phase::kDone;
        continue;
      }
      log::warn("slurm_job_lost", {{"job", name}, {"slurm_job", t.slurm_id}, {"lease", t.lease}});
      job_of_slurm_id_.erase(t.slurm_id);
      t.slurm_id = 0;
      t.lost = true;
    }
    if (t.lost) {
      // Once no process of its run is left (the restarted slurmctld has the
      // orphan killed), a run that had done its work ends as finished; any
      // other ends as revoked (the next run resumes from the checkpoint) and
      // the job is submitted again (resubmit_lost, below), unless cancelled.
      if (t.lease != 0) {
        if (!run_gone(t)) continue;
        if (work_done(t)) {
          t.exit_code = 0;
          t.signal = 0;
          ended(t, events, false, "Slurm lost its job after the run did its work");
          t.lost = false;
          t.phase = Phase::kDone;
          continue;
        }
        ended(t, events, !t.cancelled, "Slurm lost its job");
      }
      t.start_refused.clear();
      t.unstarted.clear();
      t.phase = t.cancelled ? Phase::kDone : Phase::kIdle;
      if (t.cancelled) t.lost = false;
      continue;
    }
    log_slurm_state(t, &it->second);
    const JobDetail& d = it->second;
    const bool pending = d.state == JobState::kPending;
    if (holds_nodes(d.state) && !d.nodes.empty()) t.nodes = d.nodes;
    if (is_final(d.state)) {
      t.exit_code = d.exit_code;
      t.signal = d.exit_signal;
    }
    if (t.cancelled && (is_final(d.state) || pending)) {
      if (is_final(d.state)) {
        ended(t, events, false, "cancelled");
        t.phase = Phase::kDone;
      }
      continue;
    }
    // Progress of a run that is on its nodes.
    if ((t.phase == Phase::kRunning || t.phase == Phase::kRevoking) && t.progress) {
      const std::int64_t iterations = t.progress->read();
      if (iterations != t.reported_iterations && iterations > 0) {
        RunEvent e;
        e.kind = RunEvent::Kind::kProgress;
        e.lease = t.lease;
        e.job = t.spec.job;
        e.iterations = static_cast<double>(iterations);
        events.push_back(e);
        t.reported_iterations = iterations;
      }
    }
    switch (t.phase) {
      case Phase::kAdopted:
        if (holds_nodes(d.state)) {
          if (t.lease != 0) {
            t.phase = Phase::kRunning;
          } else {  // running without a lease (released by someone else)
            writes.requeue_hold.push_back(t.slurm_id);
            t.phase = Phase::kRequeued;
          }
        } else if (is_final(d.state)) {
          ended(t, events, false, "ended while fairgpu was down");
          t.phase = Phase::kDone;
        } else if (pending) {
          // Requeued (by a revoke's requeuehold or a node failure): it did
          // not fail. Fenced like a node failure's requeue.
          if (!d.held) writes.hold.push_back(t.slurm_id);
          if (d.held && run_gone(t)) {
            ended(t, events, true, "requeued while fairgpu was down");
            t.phase = Phase::kIdle;
          }
        }
        break;
      case Phase::kStarting:
        if (d.state == JobState::kRunning) {
          t.phase = Phase::kRunning;
          RunEvent e;
          e.kind = RunEvent::Kind::kRunning;
          e.lease = t.lease;
          e.job = t.spec.job;
          e.nodes = d.nodes;
          for (const NodeGpus& g : d.per_node)
            if (!g.indices.empty()) e.node_devices.push_back({g.node, g.indices});
          events.push_back(std::move(e));
        } else if (is_final(d.state)) {
          if (never_began(t, name, d)) break;
          ended(t, events, false, job_state_name(d.state));
          t.phase = Phase::kDone;
        } else if (pending && d.held) {
          // Its round's scontrol failed before the release (or the pin):
          // both again (a pin is idempotent).
          writes.pins.push_back(t.pin);
          writes.release.push_back(t.slurm_id);
        }
        break;
      case Phase::kRunning:
        if (is_final(d.state)) {
          if (never_began(t, name, d)) break;
          ended(t, events, false, job_state_name(d.state));
          t.phase = Phase::kDone;
        } else if (pending) {
          // Requeued by Slurm (its node failed): hold it, wait for the node.
          if (!d.held) writes.hold.push_back(t.slurm_id);
          t.phase = Phase::kFenced;
        }
        break;
      case Phase::kRevoking:
        // Completed with its work done during the grace period: a finished
        // run. Ended otherwise (checkpointed on the signal, or killed by it on
        // its way out): requeuehold now, not when the grace period is over,
        // since its next run or the run that takes its GPUs waits for it; the
        // next run resumes from the checkpoint. Still running: requeuehold
        // when the grace period is over.
        if (d.state == JobState::kCompleted && work_done(t)) {
          ended(t, events, false, job_state_name(d.state));
          t.phase = Phase::kDone;
        } else if (is_final(d.state)) {
          writes.requeue_hold.push_back(t.slurm_id);
          exited.push_back(name);
          t.phase = Phase::kRequeued;
        } else if (held_again(t, d)) {
          // Held again already: a revoke sent again after a restart, whose
          // requeuehold went through before fairgpu was killed. (Waiting for
          // the grace period left it revoking for good when its work was
          // done: no requeue is due then.)
          requeued_ended(t, events);
        }
        break;
      case Phase::kRequeued:
        if (held_again(t, d)) {
          requeued_ended(t, events);
        } else if (is_final(d.state) || d.state == JobState::kRunning) {
          // Refused, raced, or its scontrol failed (it still runs): again.
          writes.requeue_hold.push_back(t.slurm_id);
        } else if (pending && !d.held) {
          // Released but never started (its node drained meanwhile): Slurm
          // refuses to requeue a pending job; a hold stops it.
          writes.hold.push_back(t.slurm_id);
        }
        break;
      case Phase::kFenced:
        if (pending && !d.held) writes.hold.push_back(t.slurm_id);
        // Ended as revoked, not as the job's failure: as on agents, where a
        // lost node's jobs wait again without a failure counted (a slurmd
        // killed while it launched a run left it requeued, never started).
        if (pending && d.held && run_gone(t)) {
          ended(t, events, true, "node failure: requeued by Slurm");
          t.phase = Phase::kIdle;
        }
        break;
      case Phase::kIdle:
        if (pending && !d.held) writes.hold.push_back(t.slurm_id);
        if (holds_nodes(d.state)) {  // released by someone else
          writes.requeue_hold.push_back(t.slurm_id);
          t.phase = Phase::kRequeued;
        }
        break;
      case Phase::kDone:
        break;
    }
  }
  try {
    flush(writes, events);
  } catch (const SlurmError&) {
    // The phases above already moved on: their events are not lost, the
    // next poll hands them over (and redoes the writes from Slurm's state).
    carried_ = std::move(events);
    throw;
  }
  resubmit_lost();
  // The requeueholds of runs that exited take effect at once: read again so
  // that their ends are reported now, not one poll later (if the read fails,
  // the next poll sees them held).
  if (!exited.empty()) {
    try {
      const JobsSnapshot again = client_.read_jobs();
      for (const std::string& name : exited) {
        Tracked& t = jobs_.at(name);
        auto it = again.detail.find(t.slurm_id);
        if (t.phase == Phase::kRequeued && it != again.detail.end() && held_again(t, it->second))
          requeued_ended(t, events);
      }
    } catch (const SlurmError&) {
    }
  }
  return events;
}

void SlurmExecutor::requeued_ended(Tracked& t, std::vector<RunEvent>& events) {
  if (!t.unstarted.empty()) {  // as a revoked run: the job waits for its next lease
    ended(t, events, true, t.unstarted);
    t.unstarted.clear();
  } else {
    const std::string why = t.start_refused.empty() ? "revoked" : t.start_refused;
    ended(t, events, t.start_refused.empty(), why);
  }
  t.start_refused.clear();
  t.phase = Phase::kIdle;
}

}  // namespace fairgpu::live::slurm
