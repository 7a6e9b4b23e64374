// The lease manager on Slurm (`"backend": "slurm"`, docs/executors.md,
// specs/slurm.md). Slurm is push-style: every poll_s the run thread's tick
// sends Slurm what was decided since the last one, once it is durable in the
// store (submissions as held jobs, starts, revokes, cancels), then reads
// Slurm's queue and nodes and hands the events to the same lease logic as
// the agents' reports. Only that thread talks to Slurm, and never under mu_:
// a slow or restarting slurmctld delays the next tick, not the API.
//
// Choices where the issue is silent:
//   - a held Slurm job takes a new shape at each pin (NumNodes=,
//     TresPerNode=), so a gang the plan spreads over nodes is one Slurm job
//     over them (its part leases end together, with the job's one run), and
//     a gang larger than every node runs when a GPU type's pool holds it.
//     Slurm counts GPUs per node, so the plan spreads gangs evenly
//     (Executor::gangs_spread_evenly); a start spread unevenly all the same
//     (a Python policy's plan) is ended unstarted (slurm_uneven_spread in the
//     log) and the job waits for its next lease;
//   - a node Slurm does not offer (drained, down, not responding, GPUs of
//     several types) is "lost" here: its leases are revoked, and the
//     executor reports each run ended only once Slurm shows its processes
//     gone (a held job on a node that responds again);
//   - the job's Slurm id is stored as meta "slurm_job:<job>". Each job is
//     submitted with Comment=fairgpu-instance=<tag>, a random tag stored once
//     per store (meta "slurm_instance"): a job without a stored id (a crash
//     between sbatch and the store, an sbatch that timed out but went
//     through) takes over its Slurm job found by name and tag instead of
//     submitting again, and such jobs that no stored job owns (a cancel that
//     never reached Slurm, a duplicate) are cancelled;
//   - Slurm unreachable (slurmctld down or restarting): a tick whose poll
//     fails keeps its starts, revokes and submissions for the next one; the
//     API keeps answering, nodes and runs stay as they are (a node that
//     Slurm shows UNKNOWN while it registers again is not lost), and
//     fairgpu_slurm_errors_total counts the failed exchanges. What a failed
//     exchange left half done is redone from what Slurm shows (executor.h).
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "fairgpu/input_error.h"
#include "live/log.h"
#include "live/manager.h"
#include "live/process.h"
#include "live/random_hex.h"
#include "live/request.h"
#include "live/slurm/executor.h"

namespace fairgpu::live {

using namespace request;

namespace {

constexpr const char* kSlurmJobMeta = "slurm_job:";
constexpr const char* kSlurmInstanceMeta = "slurm_instance";

// A new instance tag: 64 random bits from the kernel.
std::string new_instance_tag() { return "fairgpu-instance=" + random_hex(8); }

std::string effective_user() {
  const passwd* pw = ::getpwuid(::geteuid());
  return pw ? pw->pw_name : std::to_string(::geteuid());
}

// The last 2 KiB of a job's log (what the agents report as log_tail).
std::string log_tail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 2048);
  in.seekg(from);
  std::string tail(static_cast<std::size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return tail;
}

}  // namespace

void Manager::connect_slurm() {
  slurm::SlurmSettings settings;
  settings.partition = config_.slurm.partition;
  settings.conf = config_.slurm.conf;
  settings.sbatch = config_.slurm.sbatch;
  settings.scontrol = config_.slurm.scontrol;
  settings.squeue = config_.slurm.squeue;
  settings.scancel = config_.slurm.scancel;
  settings.timeout_s = config_.slurm.timeout_s;
  try {
    auto client = std::make_unique<slurm::CommandLineSlurm>(settings);
    client->check();
    slurm_client_ = std::move(client);
  } catch (const InputError& e) {
    throw InputError(config_.source, "slurm." + e.field(), e.problem());
  } catch (const slurm::SlurmError& e) {
    throw InputError(config_.source, "slurm",
                     std::string("no Slurm controller answers: ") + e.what());
  }
  slurm_as_tenants_ = ::geteuid() == 0;
  check_slurm_run_as(config_);
  slurm_ = std::make_unique<slurm::SlurmExecutor>(
      *slurm_client_, slurm::SlurmExecutorOptions{settings.partition, config_.grace_s});
  executor_ = slurm_.get();
}

void Manager::check_slurm_run_as(const ServeConfig& config) const {
  if (!slurm_as_tenants_) {
    log::warn("slurm_jobs_run_as_serve",
              {{"user", effective_user()},
               {"why",
                "serve is not root: Slurm runs every job as the user that submits it, so "
                "jobs can read what that user can (the store, the tokens)"}});
    return;
  }
  std::vector<std::string> as_root;
  for (std::size_t i = 0; i < config.tenants.size(); ++i) {
    const TenantConfig& t = config.tenants[i];
    if (t.unix_user.empty()) {
      as_root.push_back(t.name);
      continue;
    }
    if (const std::string problem = slurm::run_as_problem(t.unix_user); !problem.empty())
      throw InputError(config.source, fmt::format("tenants[{}].unix_user", i),
                       problem + " (Slurm runs the tenant's jobs as it)");
  }
  if (!as_root.empty())
    log::warn("slurm_jobs_run_as_root",
              {{"tenants", as_root},
               {"why", "no unix_user: their jobs run as root, the user that runs serve"}});
}

std::string Manager::slurm_run_as(const std::string& tenant) const {
  if (!slurm_as_tenants_) return "";
  auto it = tenant_index_.find(tenant);
  return it == tenant_index_.end() ? "" : config_.tenants[it->second].unix_user;
}

void Manager::adopt_slurm_jobs(const std::string& stored_instance) {
  std::string instance = stored_instance;
  if (instance.empty()) {
    instance = new_instance_tag();
    store_->wait(store_->put(StoredMeta{kSlurmInstanceMeta, instance}));
  }
  std::set<std::string> users{effective_user()};
  for (const TenantConfig& t : config_.tenants)
    if (slurm_as_tenants_ && !t.unix_user.empty()) users.insert(t.unix_user);
  slurm_->set_identity(instance, users, effective_user());
  // Reconcile: every stored job not finished is taken back with its Slurm id
  // (read by the constructor) and its run (a lease active, exited or being
  // revoked); the first poll compares them with Slurm's queue.
  std::map<std::string, std::int64_t> run_of;  // job -> its run's lease (the gang)
  std::vector<std::int64_t> revoking;
  for (const auto& [id, l] : leases_) {
    if (l.status == "pending") continue;  // not started
    run_of[l.job] = l.gang;
    if (l.status == "revoking" && l.id == l.gang) revoking.push_back(l.gang);
  }
  for (const JobEntry& e : jobs_) {
    auto run = run_of.find(e.s.id);
    // A job cancelled while its run was still stopping (slurmctld down, or
    // fairgpu killed before the next exchange) is followed too: its run ends
    // when Slurm shows it gone, which frees its GPUs for the plan. The cancel
    // may never have reached Slurm: it is sent again.
    const bool run_outlives_job = terminal(e.s.state) && run != run_of.end();
    if (terminal(e.s.state) && !run_outlives_job) continue;
    auto id = slurm_ids_.find(e.s.id);
    if (id == slurm_ids_.end()) {
      if (!run_outlives_job) to_admit_.push_back(e.s.id);  // (a run always has its Slurm id)
      continue;
    }
    slurm_->adopt(executor_job(e), std::to_string(id->second),
                  run == run_of.end() ? 0 : run->second);
    if (run_outlives_job) slurm_->cancel(e.s.id);
  }
  if (!revoking.empty()) slurm_->apply({}, revoking, now());
}

std::int64_t Manager::slurm_job(const std::string& job) const {
  std::lock_guard lock(mu_);
  auto it = slurm_ids_.find(job);
  return it == slurm_ids_.end() ? 0 : it->second;
}

bool Manager::launchable(const JobEntry& e) const {
  return e.stored && (!slurm_ || slurm_ids_.count(e.s.id) > 0);
}

ExecutorJob Manager::executor_job(const JobEntry& e) const {
  ExecutorJob j;
  j.job = e.s.id;
  j.tenant = e.s.tenant;
  if (e.command.is_array())
    j.argv = e.command.get<std::vector<std::string>>();
  else
    j.shell_command = e.command.get<std::string>();
  j.env.assign(e.env.begin(), e.env.end());
  // Submitted as one GPU on one node (a shape every node can hold, so sbatch
  // accepts a gang larger than a node); each run's pin sets its shape.
  j.nodes = 1;
  j.gpus_per_node = 1;
  j.iterations = e.s.iterations;
  // Slurm's nodes reach these paths: the checkpoint directory is shared.
  const std::string root = std::filesystem::absolute(config_.checkpoint_dir).string();
  j.checkpoint_dir = root + "/" + e.s.id;
  j.progress_file = j.checkpoint_dir + "/.fairgpu-progress";
  j.log_path = slurm::job_log_path(root, e.s.id);
  j.run_as_user = slurm_run_as(e.s.tenant);
  if (auto t = tenant_index_.find(e.s.tenant); t != tenant_index_.end())
    j.account = config_.tenants[t->second].account;
  return j;
}

void Manager::to_executor(std::vector<RunStart> starts, std::vector<std::int64_t> revokes) {
  if (!slurm_) {
    executor_->apply(starts, revokes, now());
    return;
  }
  for (RunStart& s : starts) out_starts_.push_back(std::move(s));
  for (std::int64_t id : revokes)
    if (leases_.count(id) && leases_.at(id).id == leases_.at(id).gang) out_revokes_.push_back(id);
}

void Manager::tick_slurm() {
  std::lock_guard io(slurm_io_);
  std::vector<RunStart> starts;
  std::vector<std::int64_t> revokes;
  std::vector<std::string> cancels;
  std::map<std::string, bool> drains;
  std::vector<ExecutorJob> admits;
  std::uint64_t decided = 0;
  {
    std::lock_guard lock(mu_);
    Tickets tickets;
    revokes.swap(out_revokes_);
    cancels.swap(out_cancels_);
    drains.swap(out_drains_);
    std::vector<RunStart> queued;
    queued.swap(out_starts_);
    for (RunStart& s : queued) {
      auto l = leases_.find(s.lease);
      if (l == leases_.end()) continue;
      const bool even = slurm::uniform_placement(s.placement);
      if (l->second.status == "active" && even) {
        starts.push_back(std::move(s));
        continue;
      }
      // Revoked before it reached Slurm: it never starts, so its lease ends
      // now and the job waits for its next one. So does a start spread with
      // unequal GPU counts per node, which one Slurm job cannot run.
      if (!even)
        log::warn("slurm_uneven_spread",
                  {{"job", s.job},
                   {"lease", s.lease},
                   {"why", "Slurm's --gres counts GPUs per node: not started, the job waits"}});
      std::erase(revokes, s.lease);
      RunEvent never;
      never.kind = RunEvent::Kind::kEnded;
      never.lease = s.lease;
      never.exit_code = -1;
      never.revoked = true;
      never.never_started = true;
      run_ended(l->second, never, tickets);
      for (std::int64_t id : part_ids(s.lease)) tickets.push_back(end_lease(leases_.at(id)));
    }
    for (const std::string& id : to_admit_)
      if (const JobEntry* e = find_job(id); e && !terminal(e->s.state))
        admits.push_back(executor_job(*e));
    to_admit_.clear();
    std::erase_if(out_revokes_, [&](std::int64_t id) { return !leases_.count(id); });
    // run_ended took the job out of the policy's state, as a report of a
    // run that never started does on the agents: no rebuild, which would
    // make a new policy (the placer's credits and quantum forgotten).
    decided = store_->last_ticket();
  }
  // Decisions are durable before Slurm hears of them.
  store_->wait(decided);

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, std::int64_t>> admitted, resubmitted;
  std::vector<std::pair<std::string, std::string>> refused;  // job, why (never runs)
  std::vector<std::string> retry;
  std::vector<RunEvent> events;
  std::vector<ExecutorNode> nodes;
  std::set<std::string> settling;
  bool polled = false, applied = false, read = false;
  try {
    // Cancels are marked first (sent now, or by the poll once Slurm
    // answers). The poll comes before the rest: after a restart it settles
    // the adopted jobs before they are started again, and it finds the
    // strays the submissions below take over.
    for (const std::string& job : cancels) slurm_->cancel(job);
    events = slurm_->poll(now());
    polled = true;
    // Jobs Slurm lost (slurmctld killed before it saved them), submitted
    // again: their new ids are stored as an admit's are.
    for (const auto& [job, id] : slurm_->take_resubmitted()) resubmitted.push_back({job, id});
    for (const ExecutorJob& j : admits) {
      try {
        admitted.push_back({j.job, std::stoll(slurm_->admit(j))});
      } catch (const InputError& e) {
        refused.push_back({j.job, e.what()});
      } catch (const std::exception& e) {
        retry.push_back(j.job);
        log::warn("slurm_submit_failed", {{"job", j.job}, {"error", e.what()}});
      }
    }
    // From here on the executor holds the starts and revokes: a write that
    // fails is redone from what Slurm shows at its next poll.
    applied = true;
    slurm_->apply(starts, revokes, now());
    for (std::int64_t id : slurm_->cancel_strays())
      log::warn("slurm_stray_cancelled", {{"slurm_job", id}});
    // Drains before the nodes are read: a node undrained here is offered
    // again by this read, not lost for one tick.
    for (auto it = drains.begin(); it != drains.end(); it = drains.erase(it))
      slurm_->set_node_drained(it->first, it->second);
    nodes = slurm_->nodes();
    settling = slurm_->settling_nodes();
    read = true;
  } catch (const std::exception& e) {
    // Slurm unreachable (slurmctld restarting): the next tick tries again.
    ++slurm_errors_;
    log::warn("slurm_exchange_failed", {{"error", e.what()}});
  }
  if (!polled)  // not tried: submitted at the next tick
    for (const ExecutorJob& j : admits) retry.push_back(j.job);
  if (!drains.empty()) {  // not sent: at the next tick, unless decided again since
    std::lock_guard lock(mu_);
    for (const auto& [node, drained] : drains) out_drains_.emplace(node, drained);
  }
  if (!applied) {  // not handed to the executor: sent at the next tick
    std::lock_guard lock(mu_);
    out_starts_.insert(out_starts_.begin(), std::make_move_iterator(starts.begin()),
                       std::make_move_iterator(starts.end()));
    out_revokes_.insert(out_revokes_.begin(), revokes.begin(), revokes.end());
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  Tickets tickets;
  {
    std::lock_guard lock(mu_);
    ++slurm_polls_;
    slurm_exchange_.observe(took);
    for (const std::string& job : retry) to_admit_.push_back(job);
    for (const auto& [job, id] : admitted) {
      slurm_ids_[job] = id;
      tickets.push_back(store_->put(StoredMeta{kSlurmJobMeta + job, std::to_string(id)}));
      JobEntry& e = job_by_id(job);
      // Into the policy's state as a submission to the agents is: a rebuild
      // would start a new policy, which forgets what the one in force
      // remembers between rounds (when it last solved, the shares it keeps).
      if (e.s.state == "queued" && e.sched == kNone) admit(e);
    }
    for (const auto& [job, id] : resubmitted) {
      slurm_ids_[job] = id;
      tickets.push_back(store_->put(StoredMeta{kSlurmJobMeta + job, std::to_string(id)}));
    }
    for (const auto& [job, why] : refused) {
      JobEntry& e = job_by_id(job);
      if (terminal(e.s.state)) continue;
      state_finish(e);
      e.s.state = "failed";
      e.s.finished_at = now();
      e.s.log_tail = why;
      tickets.push_back(persist(e));
    }
    for (RunEvent& ev : events) slurm_event(std::move(ev), tickets);
    if (read) sync_slurm_nodes(nodes, settling, tickets);
    slurm_unreachable_ = !polled;
    activate_pending(tickets);
  }
  if (!tickets.empty()) store_->wait(*std::max_element(tickets.begin(), tickets.end()));
}

void Manager::slurm_event(RunEvent ev, Tickets& tickets) {
  auto lit = leases_.find(ev.lease);
  if (lit == leases_.end()) return;
  StoredLease& l = lit->second;
  switch (ev.kind) {
    case RunEvent::Kind::kRunning:
      adopt_slurm_devices(l, ev.node_devices, tickets);
      [[fallthrough]];
    case RunEvent::Kind::kProgress:
      ev.nodes = {l.node};
      run_running(ev, tickets);  // revocations reach Slurm through revoke()
      return;
    case RunEvent::Kind::kEnded: {
      const JobEntry* e = find_job(l.job);
      if (e) {  // the run's last progress, from its file
        const ExecutorJob j = executor_job(*e);
        ev.iterations =
            static_cast<double>(std::max<std::int64_t>(0, ProgressFile(j.progress_file).read()));
        ev.detail = log_tail(j.log_path);
      }
      const std::int64_t gang = l.gang;
      // One Slurm job ran every part of a gang: a clean exit is every
      // part's, so the job finishes now rather than waiting for parts that
      // report nothing on their own.
      if (!ev.launch_failed && !ev.never_started && ev.exit_code == 0 && ev.signal == 0)
        for (std::int64_t id : part_ids(gang))
          if (StoredLease& part = leases_.at(id);
              id != l.id && part.status != "exited" && part.status != "ended") {
            part.status = "exited";
            tickets.push_back(persist(part));
          }
      run_ended(l, ev, tickets);
      // One Slurm job ran every part: the others are gone too.
      for (std::int64_t id : part_ids(gang)) tickets.push_back(end_lease(leases_.at(id)));
      return;
    }
    case RunEvent::Kind::kNodeLost:
      return;
  }
}

// Slurm 22.05 picks a job's GPU indices on each node itself: once Slurm
// starts a run, the devices the plan chose for it become the ones Slurm
// gave it, so that the plan and Slurm agree on who holds which GPU. On each
// node this is a swap of names: a device Slurm gave that the plan had for
// another lease (one not started yet, or whose names were stale) changes
// places with one the plan had for this run, in every lease on that node
// that may still run and in the policy's state (the devices its running jobs
// hold), so no device is in two leases. A count that differs from the
// plan's (never: the pin asks for it) is left alone.
void Manager::adopt_slurm_devices(const StoredLease& started,
                                  const std::vector<std::pair<std::string, std::vector<int>>>& given,
                                  Tickets& tickets) {
  for (std::int64_t id : part_ids(started.gang)) {
    const StoredLease& part = leases_.at(id);
    auto g = std::find_if(given.begin(), given.end(),
                          [&](const auto& x) { return x.first == part.node; });
    if (g == given.end()) continue;
    std::vector<int> now = g->second, before = part.devices;
    std::sort(now.begin(), now.end());
    std::sort(before.begin(), before.end());
    if (now == before || now.size() != before.size()) continue;
    std::vector<int> freed, gained;
    std::set_difference(before.begin(), before.end(), now.begin(), now.end(),
                        std::back_inserter(freed));
    std::set_difference(now.begin(), now.end(), before.begin(), before.end(),
                        std::back_inserter(gained));
    std::map<int, int> swap;
    for (std::size_t k = 0; k < freed.size(); ++k) {
      swap[freed[k]] = gained[k];
      swap[gained[k]] = freed[k];
    }
    const std::string node = part.node;
    log::info("slurm_devices_adopted", {{"lease", id},
                                        {"job", part.job},
                                        {"node", node},
                                        {"planned", part.devices},
                                        {"slurm", g->second}});
    for (auto& [other_id, l] : leases_) {
      if (l.node != node || l.status == "ended") continue;
      bool changed = false;
      for (int& d : l.devices)
        if (auto m = swap.find(d); m != swap.end()) {
          d = m->second;
          changed = true;
        }
      if (changed) tickets.push_back(persist(l));
    }
    if (!model_) continue;
    for (Job& j : state_.jobs)
      for (DeviceRef& d : j.devices) {
        const auto& [name, device] = flat_device_[state_.flat(d)];
        if (name != node) continue;
        auto m = swap.find(device);
        if (m == swap.end()) continue;
        if (auto ref = device_ref_.find({name, m->second}); ref != device_ref_.end()) d = ref->second;
      }
    // ... and so do the devices' owners, which mid-round starts read as the
    // free devices: left as planned, they offered the device Slurm gave this
    // run to another job (an invalid plan that stopped the server).
    for (const auto& [from, to] : swap) {
      if (from > to) continue;  // each pair once
      auto a = device_ref_.find({node, from}), b = device_ref_.find({node, to});
      if (a == device_ref_.end() || b == device_ref_.end()) continue;
      std::swap(state_.device_owner[state_.flat(a->second)],
                state_.device_owner[state_.flat(b->second)]);
    }
  }
}

void Manager::sync_slurm_nodes(const std::vector<ExecutorNode>& seen,
                               const std::set<std::string>& settling, Tickets& tickets) {
  const double t = now();
  std::set<std::string> offered;
  bool changed = false;
  for (const ExecutorNode& x : seen) {
    offered.insert(x.name);
    NodeEntry& n = nodes_[x.name];
    n.last_heard = t;
    const bool is_new = n.s.name.empty();
    const double memory_gb = static_cast<double>(x.memory_mb) / 1024.0;
    const bool same = !is_new && n.s.gpu_type == x.gpu_type && n.s.devices == x.devices &&
                      n.s.cpus == x.cpus && n.s.memory_gb == memory_gb;
    if (same && n.s.state != "lost") continue;
    if (!is_new && n.s.gpu_type != x.gpu_type) {
      evict_node(x.name, tickets);
    } else if (!is_new) {
      // Runs on GPUs that Slurm's other jobs now hold (the plan's ids count
      // GPUs per node) stop.
      std::vector<std::int64_t> off;
      for (const auto& [id, l] : leases_)
        if (l.node == x.name)
          for (int d : l.devices)
            if (std::find(x.devices.begin(), x.devices.end(), d) == x.devices.end())
              off.push_back(id);
      for (std::int64_t id : off)
        if (leases_.count(id)) revoke(leases_.at(id), tickets);
    }
    n.s.name = x.name;
    n.s.gpu_type = x.gpu_type;
    n.s.devices = x.devices;
    n.s.cpus = x.cpus;
    n.s.memory_gb = memory_gb;
    n.s.address = x.name;
    if (is_new) n.s.epoch = 1;
    if (is_new || n.s.state == "lost") n.s.state = "ready";
    tickets.push_back(persist(n));
    changed = true;
  }
  for (auto& [name, n] : nodes_) {
    // Registering again after slurmctld restarted: neither offered nor lost.
    if (offered.count(name) || settling.count(name) || n.s.state != "ready") continue;
    n.s.state = "lost";  // drained, down or not responding in Slurm
    evict_node(name, tickets);
    tickets.push_back(persist(n));
    changed = true;
  }
  if (!changed) return;
  refresh_ready_types();
  for (JobEntry& e : jobs_)  // a new GPU type: job types to profile there
    if (e.s.state == "queued" && !fully_profiled(e.s.tenant, e.s.job_type)) {
      e.s.state = "profiling";
      tickets.push_back(persist(e));
    }
  rebuild_needed_ = true;
}

}  // namespace fairgpu::live
