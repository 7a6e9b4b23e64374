// The simulator's event loop (docs/design.md §5): scheduling points every policy
// interval on a virtual clock; a job joins the state when it arrives and the
// policy first sees it at the next scheduling point (or, with mid-round
// starts, at the completion or arrival inside a round that frees room for
// it; not in an idle stretch between rounds); idle stretches with
// nothing active are skipped to the scheduling point at or after the next
// arrival, keeping the interval grid.
#include "fairgpu/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/prefetch.h"
#include "core/task_thread.h"

namespace fairgpu {
namespace {

// Stable points in a row with no event that are simulated as one round
// (RoundSample::rounds): 116 days of 10 s rounds, 9.5 years of 300 s ones.
// Below it a skipped point costs O(running jobs) and is recorded as before,
// so every output of a realistic trace stays what stepping gives, bit for
// bit: a run changes the round-off of its sums and makes one row of the
// series and fairness windows it spans (1,000 points changed the built-in
// compare's tenant_windows.csv rows and so its tenant unfairness ratio).
constexpr std::int64_t kRunLengthMin = 1000000;

// Waiting jobs by (gang, types it runs on): what idle GPUs could serve.
using WaitingClasses = std::map<std::pair<int, std::uint64_t>, int>;

std::uint64_t type_mask(const Job& j) {
  std::uint64_t mask = 0;
  for (std::size_t t = 0; t < j.rate_best.size() && t < 64; ++t)
    if (j.runs_on(t)) mask |= std::uint64_t{1} << t;
  return mask;
}

// Idle GPUs that waiting jobs could use: smallest gangs first, each taking
// its whole gang from the idle GPUs of any types it runs on (mixed types
// run, at the slowest). A greedy count, exact when gangs are all one size;
// it is 0 exactly when no waiting job fits on the idle GPUs.
int idle_usable_by_waiting(const std::vector<int>& idle, const WaitingClasses& waiting) {
  std::vector<int> left = idle;
  int used = 0;
  for (const auto& [key, count] : waiting) {
    const auto [gang, mask] = key;
    for (int c = 0; c < count; ++c) {
      int avail = 0;
      for (std::size_t t = 0; t < left.size(); ++t)
        if (mask >> t & 1) avail += left[t];
      if (avail < gang) break;
      int need = gang;
      for (std::size_t t = 0; t < left.size() && need > 0; ++t) {
        if (!(mask >> t & 1)) continue;
        const int take = std::min(need, left[t]);
        left[t] -= take;
        need -= take;
      }
      used += gang;
    }
  }
  return used;
}

// Feeds a RoundSink its rounds on a second thread, so what the sink does
// with them (the round digest's windows and its streamed series: ~3.5% of a
// 1M-job run, most of it formatting numbers) overlaps the simulation. One
// consumer taking the rounds in order: the sink gets the same calls as
// without the thread, so its outputs are the same. At most kMaxQueued rounds
// wait, so memory stays bounded; an exception of the sink is rethrown by the
// next add() or by finish().
class SinkThread {
 public:
  explicit SinkThread(RoundSink& sink) : sink_(sink), worker_([this] { run(); }) {}
  SinkThread(const SinkThread&) = delete;
  SinkThread& operator=(const SinkThread&) = delete;
  ~SinkThread() { stop(); }  // on an exception of the simulation: the rounds so far

  void add(RoundSample&& round) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return queue_.size() < kMaxQueued || error_; });
    if (error_) std::rethrow_exception(error_);
    queue_.push_back(std::move(round));
    lock.unlock();
    ready_.notify_one();
  }
  // Every round added has reached the sink.
  void finish() {
    stop();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static constexpr std::size_t kMaxQueued = 64;
  void stop() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_one();
    if (worker_.joinable()) worker_.join();
  }
  void run() {
    for (;;) {
      RoundSample round;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        round = std::move(queue_.front());
        queue_.pop_front();
      }
      room_.notify_one();
      try {
        sink_.add(round);
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
        queue_.clear();
        room_.notify_all();
        return;
      }
    }
  }

  RoundSink& sink_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<RoundSample> queue_;
  bool done_ = false;
  std::exception_ptr error_;
  std::thread worker_;  // last: starts once the members above exist
};

}  // namespace

SimResult simulate(const ClusterModel& model, const Workload& workload, RoundPolicy& policy,
                   const SimOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  SchedulerState state = make_scheduler_state(model, workload);
  const std::size_t k = model.cluster.num_types();
  const std::size_t n_tenants = state.tenants.size();
  const double interval = policy.interval();
  if (!(interval > 0.0)) throw std::logic_error("policy interval must be > 0");

  SimResult out;
  out.policy = std::string(policy.name());
  out.level = std::string(policy.level());
  out.round_s = interval;
  out.gpu_types = model.cluster.gpu_types;
  out.capacity = model.capacity;
  out.tenants = state.tenants;
  RoundSink* const sink = options.round_sink;
  out.rounds_streamed = sink != nullptr;

  SimulatedExecutor::RoundSums sums;
  std::vector<std::size_t> device_type;  // flat device -> its type
  std::vector<DeviceRef> device_ref;     // flat device -> its node and index
  for (std::uint32_t n = 0; n < model.cluster.nodes.size(); ++n) {
    const Node& node = model.cluster.nodes[n];
    device_type.insert(device_type.end(), static_cast<std::size_t>(node.gpus), node.type);
    for (int g = 0; g < node.gpus; ++g) device_ref.push_back({n, static_cast<std::uint32_t>(g)});
  }
  SimulatedExecutor executor(&sums);
  VirtualClock clock;

  std::size_t next_job = 0;  // jobs are sorted by arrival
  const std::size_t n = state.jobs.size();
  const double t0 = n ? state.jobs.front().arrival : 0.0;
  out.start = t0;
  if (sink) sink->begin(out);
  std::optional<SinkThread> sink_thread;
  if (sink) sink_thread.emplace(*sink);
  std::size_t finished = 0;
  std::size_t idle_points = 0;  // scheduling points in a row with work waiting and none running

  // Jobs join the state when they arrive (their fair share and contention
  // count from then); the policy sees them at the next scheduling point.
  auto admit_arrivals = [&] {
    for (; next_job < n && state.jobs[next_job].arrival <= state.now + 1e-9; ++next_job)
      admit_job(state, next_job);
  };
  // Inside a round: the waiting jobs by class and the idle GPUs per type
  // (kept current by completions through the executor's sums), so the
  // work-conservation measure and contention are followed event by event.
  WaitingClasses waiting;
  int waiting_jobs = 0;
  // Contended time: the parts of the round in which some active job waits.
  // An arrival that a mid-round start places at once never waited, and a
  // round whose waiting jobs all start mid-round is contended only until
  // they do (counting from the first wait to the round's end made a lightly
  // loaded cluster's arrivals look like contention).
  double contended_from = kUnset;  // NaN: no job waits now
  double throughput_before = 0.0, busy_before = 0.0;  // the sums at contended_from
  // This round's contended parts so far.
  double contended_s = 0.0, contended_throughput = 0.0, contended_busy = 0.0;
  double idle_waiting = 0.0;       // GPU-seconds, this round
  int usable_idle = 0;             // current value of the measure
  auto add_waiting = [&](const Job& j) {
    ++waiting[{j.workers, type_mask(j)}];
    ++waiting_jobs;
  };
  // The sparse per-tenant series (SimOptions::sparse_tenant_series) are
  // gathered for the tenants a round touches only: those with an active job
  // at its start and those of its mid-round starts (every job that runs in
  // a round is one or the other). The dense sums stay allocated and only
  // the touched entries are read and zeroed, so a round costs O(its active
  // jobs), not O(tenants): the same values as make_sparse() of the dense
  // series, which are 0 everywhere else.
  const bool sparse_series = options.tenant_series && options.sparse_tenant_series;
  std::vector<std::uint32_t> round_tenants;  // touched this round, unsorted
  std::vector<char> tenant_touched;          // by tenant
  std::vector<int> round_active_by_tenant;   // by tenant, counted at the round's start
  auto touch_tenant = [&](std::size_t t) {
    if (tenant_touched[t]) return;
    tenant_touched[t] = 1;
    round_tenants.push_back(static_cast<std::uint32_t>(t));
  };
  if (sparse_series) {
    tenant_touched.assign(n_tenants, 0);
    round_active_by_tenant.assign(n_tenants, 0);
  }
  // Mid-round starts (RoundPolicy::midround): the devices free now, kept
  // current from the round's start, the completions' devices and the starts.
  const bool midround = policy.starts_midround();
  std::vector<DeviceRef> free_now;
  bool in_round = false;  // not in an idle stretch between rounds
  auto start_midround = [&](double round_end) {
    // Only mid-round starts take devices inside a round: free_now holds no
    // owned device but between a start and the erase below. It stays sorted
    // (the few freed devices merged in), so the placer need not sort
    // thousands of free devices at every completion of a big run.
    if (!sums.freed.empty()) {
      const auto old_end = static_cast<std::ptrdiff_t>(free_now.size());
      std::sort(sums.freed.begin(), sums.freed.end());
      free_now.insert(free_now.end(), sums.freed.begin(), sums.freed.end());
      std::inplace_merge(free_now.begin(), free_now.begin() + old_end, free_now.end());
      sums.freed.clear();
    }
    if (usable_idle == 0 || free_now.empty()) return;
    const std::vector<Assignment> starts = policy.midround(state, free_now, round_end);
    if (starts.empty()) return;
    executor.start(starts, state);
    for (const Assignment& a : starts) {
      const Job& j = state.jobs[a.job];
      if (sparse_series) touch_tenant(j.tenant);
      auto it = waiting.find({j.workers, type_mask(j)});
      if (it != waiting.end() && --it->second == 0) waiting.erase(it);
      --waiting_jobs;
      for (DeviceRef d : a.devices) --sums.idle_by_type[state.type_of(d)];
    }
    std::erase_if(free_now, [&](DeviceRef d) { return state.device_owner[state.flat(d)] != -1; });
    usable_idle = idle_usable_by_waiting(sums.idle_by_type, waiting);
  };
  auto run_until = [&](double until) {
    while (state.now < until) {
      double stop = std::min(until, executor.next_finish());
      if (next_job < n) stop = std::min(stop, state.jobs[next_job].arrival);
      const double from = state.now;
      const std::size_t completed = executor.run_events(state, std::max(stop, state.now));
      idle_waiting += usable_idle * (state.now - from);
      finished += completed;
      const std::size_t first_new = next_job;
      admit_arrivals();
      for (std::size_t i = first_new; i < next_job; ++i) add_waiting(state.jobs[i]);
      if (!sums.idle_by_type.empty() && (completed > 0 || next_job > first_new)) {
        usable_idle = idle_usable_by_waiting(sums.idle_by_type, waiting);
        if (midround && in_round) start_midround(until);
      }
      if (in_round && (waiting_jobs > 0) == std::isnan(contended_from)) {
        executor.settle_all(state);  // a contended part starts or ends here
        if (waiting_jobs > 0) {
          contended_from = state.now;
          throughput_before = sums.throughput;
          busy_before = sums.busy_gpu_seconds;
        } else {
          contended_s += state.now - contended_from;
          contended_throughput += sums.throughput - throughput_before;
          contended_busy += sums.busy_gpu_seconds - busy_before;
          contended_from = kUnset;
        }
      }
    }
    executor.compact(state);  // finished jobs leave the lists once per call, not per event
  };

  // A round's end: every running job settled up to it, then its sample
  // completed from the sums and handed on. When the policy does not read
  // progress, the settling runs on a second thread while the next round is
  // planned and checked (the plan reads none of the fields it writes, and
  // state.now is set before it starts); the same work in the same order, so
  // the outputs are the same. `pending` is the round awaiting this.
  const bool settle_beside_plan = !policy.reads_progress();
  struct PendingRound {
    RoundSample sample;
    double start = 0.0, end = 0.0;
  };
  std::optional<PendingRound> pending;
  auto count_active_by_tenant = [&](std::vector<int>& count) {
    count.assign(n_tenants, 0);
    for (std::size_t r = 0; r < state.active.size(); ++r) {
      prefetch_ahead(state.jobs, state.active, r, &Job::tenant);
      ++count[state.jobs[state.active[r]].tenant];
    }
  };
  std::vector<int> next_active_by_tenant;  // counted beside the plan
  std::optional<TaskThread> settler;
  if (settle_beside_plan) settler.emplace();
  std::future<void> settling;
  WaitOnExit settled_on_exit(settling);  // it reads the state, the sums and the executor
  auto finish_round = [&] {
    if (!pending) return;
    if (settling.valid())
      settling.get();
    else
      executor.settle_all(state);
    RoundSample& sample = pending->sample;
    const double from = pending->start, until = pending->end;
    sample.end = until;
    sample.busy_gpu_seconds = sums.busy_gpu_seconds;
    sample.idle_waiting_gpu_seconds = idle_waiting;
    sample.throughput_integral = sums.throughput;
    if (until > from) {
      sample.cpus_allocated = sums.cpu_seconds / (until - from);
      sample.memory_gb_allocated = sums.memory_gb_seconds / (until - from);
      sample.cpus_used = sums.cpu_used_seconds / (until - from);
      sample.memory_gb_used = sums.memory_gb_used_seconds / (until - from);
    }
    if (!std::isnan(contended_from)) {  // still waiting at the round's end
      contended_s += until - contended_from;
      contended_throughput += sums.throughput - throughput_before;
      contended_busy += sums.busy_gpu_seconds - busy_before;
    }
    sample.contended_s = contended_s;
    sample.contended_throughput = contended_throughput;
    sample.contended_busy_gpu_seconds = contended_busy;
    if (sparse_series) {
      const double len = until - from;
      sample.sparse = true;
      std::sort(round_tenants.begin(), round_tenants.end());
      for (std::uint32_t t : round_tenants) {
        double& throughput = sums.tenant_throughput[t];
        double* gpus = sums.tenant_gpus.data() + std::size_t{t} * k;
        throughput /= len;
        for (std::size_t j = 0; j < k; ++j) gpus[j] /= len;
        bool any = round_active_by_tenant[t] != 0 || throughput != 0;
        for (std::size_t j = 0; j < k && !any; ++j) any = gpus[j] != 0;
        if (any) {
          sample.sparse_tenants.push_back(t);
          sample.sparse_active_jobs.push_back(round_active_by_tenant[t]);
          sample.sparse_throughput.push_back(throughput);
          sample.sparse_gpus.insert(sample.sparse_gpus.end(), gpus, gpus + k);
        }
        throughput = 0.0;
        std::fill(gpus, gpus + k, 0.0);
        round_active_by_tenant[t] = 0;
        tenant_touched[t] = 0;
      }
      round_tenants.clear();
    } else if (options.tenant_series) {
      const double len = until - from;
      for (double& v : sums.tenant_throughput) v /= len;
      for (double& v : sums.tenant_gpus) v /= len;
      sample.tenant_throughput = std::move(sums.tenant_throughput);
      sample.tenant_gpus = std::move(sums.tenant_gpus);
    }
    if (sink)
      sink_thread->add(std::move(sample));
    else
      out.rounds.push_back(std::move(sample));
    if (options.on_progress) options.on_progress(n ? double(finished) / double(n) : 1.0, until);
    pending.reset();
  };

  state.now = t0;
  admit_arrivals();
  double t = t0;
  // Event-cost simulation: the policy's RoundPolicy::stability() after its
  // last plan. A scheduling point before its end, with no arrival,
  // completion or rate change since that plan (state.changed unset), would
  // get a plan of renewals only (none where no lease ended): the policy is
  // not asked, the simulator renews those leases as apply() would, and the
  // round is accounted as before.
  RoundPolicy::Stability stable;
  std::vector<int> idle_at_end;  // idle GPUs per type at the last round's end
  // At a skipped point t (its ended leases renewed): how many points from t
  // on are stable and event-free: points t + k x interval, k < run, before
  // stable.until, no lease ending at one of them unless the policy renews
  // it, and no arrival, completion or horizon before t + run x interval.
  // Fewer than kRunLengthMin such points are stepped one by one, as
  // before; more are one run, whose leases are renewed to the last point
  // at which each ended, as skipping them one by one would. Only its sums'
  // round-off differs from stepping them (one sum over the run, not one per
  // round); outputs with no run of kRunLengthMin points stay the same.
  auto stable_run = [&](double from, const RoundPolicy::Stability& st) -> std::int64_t {
    double end = std::min(options.horizon_s, executor.next_finish());
    if (next_job < n) end = std::min(end, state.jobs[next_job].arrival);
    double m = std::floor((end - from) / interval);
    if (std::isfinite(st.until)) m = std::min(m, std::ceil((st.until - from) / interval));
    if (!(m >= double(kRunLengthMin))) return 1;  // the usual case on a busy cluster: O(1)
    const bool renews = !std::isnan(st.renewal_s);
    if (!renews)
      for (std::size_t i : state.running)
        m = std::min(m, std::ceil((state.jobs[i].lease_end - 1e-9 - from) / interval));
    m = std::min(m, 1e15);  // the points stay exact integers in a double
    if (!(m >= double(kRunLengthMin))) return 1;
    // The divisions' round-off: every point of the run before until, its end
    // at or before the first event.
    while (m > 1 && (from + m * interval > end || from + (m - 1) * interval >= st.until)) --m;
    if (m < double(kRunLengthMin)) return 1;
    const double last = from + (m - 1) * interval;
    if (renews) {
      // Renewed every `every` points from the first at or after its end.
      const double every = std::max(1.0, std::ceil((st.renewal_s - 1e-9) / interval));
      for (std::size_t i : state.running) {
        Job& j = state.jobs[i];
        if (!(j.lease_end <= last + 1e-9)) continue;
        const double first = std::max(1.0, std::ceil((j.lease_end - 1e-9 - from) / interval));
        const double at = first + std::floor((m - 1 - first) / every) * every;
        j.lease_end = from + at * interval + st.renewal_s;
        j.finish_at_lease_end = false;
      }
    }
    return static_cast<std::int64_t>(m);
  };
  while (t < options.horizon_s) {
    if (state.active.empty()) {
      stable = {};
      finish_round();  // before the idle stretch's events move the state
      if (next_job == n) break;
      // Nothing to do until the next arrival: jump to the first scheduling
      // point after it (the grid stays t0 + i * interval).
      double steps = std::ceil((state.jobs[next_job].arrival - t0) / interval - 1e-9);
      double next_point = std::max(t + interval, t0 + steps * interval);
      run_until(std::min(next_point, options.horizon_s));
      t = next_point;
      continue;
    }
    clock.set(t);
    state.now = clock.now();
    bool skip = !state.changed && t < stable.until;
    if (skip) {
      for (std::size_t i : state.running) {
        Job& j = state.jobs[i];
        if (!state.lease_ended(j)) continue;
        if (std::isnan(stable.renewal_s)) {  // the policy said none would end
          skip = false;
          break;
        }
        j.lease_end = state.now + stable.renewal_s;  // SimulatedExecutor::apply's renewal
        j.finish_at_lease_end = false;
      }
    }
    // Run-length rounds: from a skipped point, the stable points that follow
    // with no event before their round's end make one round of `run` points
    // (RoundSample::rounds), simulated in one step.
    std::int64_t run = 1;
    if (skip) run = stable_run(t, stable);
    const bool counted_ahead = pending && settle_beside_plan && !skip;
    if (counted_ahead)
      settling = settler->submit([&] {
        executor.settle_all(state);
        // The next round's active jobs per tenant: neither the plan nor its
        // application changes the active jobs or their tenants.
        if (options.tenant_series && !sparse_series)
          count_active_by_tenant(next_active_by_tenant);
      });

    RoundPlan plan;  // at a skipped point: the empty plan the policy would give
    if (skip) plan.estimated_throughput = stable.estimated_throughput;
    double compute = 0.0;
    if (skip) {
      // Nothing moved since the last round's end: its idle GPUs are this
      // round's (completions and mid-round starts are events).
      idle_at_end = std::move(sums.idle_by_type);
      finish_round();
    } else {
      const auto plan_start = std::chrono::steady_clock::now();
      plan = policy.plan(state);
      compute =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - plan_start).count();
      validate_plan(plan, state);
      finish_round();
      state.changed = false;
      executor.apply(plan, state);
      stable = policy.stability(state);
    }

    RoundSample sample;
    sample.start = t;
    sample.rounds = run;
    sample.compute_seconds = compute;
    sample.recomputed = plan.recomputed;
    sample.estimated_throughput = plan.estimated_throughput;
    sample.active_jobs = static_cast<int>(state.active.size());
    std::vector<double> tenant_throughput, tenant_gpus;
    if (sparse_series) {  // kept allocated, their touched entries zeroed
      tenant_throughput = std::move(sums.tenant_throughput);
      tenant_gpus = std::move(sums.tenant_gpus);
    }
    sums = {};
    if (skip) {
      sums.idle_by_type = std::move(idle_at_end);
    } else {
      sums.idle_by_type.assign(k, 0);
      for (std::size_t d = 0; d < state.device_owner.size(); ++d)
        if (state.device_owner[d] == -1) ++sums.idle_by_type[device_type[d]];
    }
    waiting.clear();
    waiting_jobs = 0;
    for (std::size_t r = 0; r < state.active.size(); ++r) {
      prefetch_ahead(state.jobs, state.active, r, &Job::state, &Job::workers, &Job::rate_best);
      // A waiting job's rates (type_mask reads them) lie elsewhere on the
      // heap: fetched once its Job, fetched above, is in cache.
      if (r + 4 < state.active.size()) {
        const Job& ahead = state.jobs[state.active[r + 4]];
        if (ahead.state != JobState::kRunning) __builtin_prefetch(ahead.rate_best.data());
      }
      const Job& j = state.jobs[state.active[r]];
      if (j.state != JobState::kRunning) add_waiting(j);
    }
    contended_from = waiting_jobs > 0 ? t : kUnset;
    throughput_before = busy_before = idle_waiting = 0.0;
    contended_s = contended_throughput = contended_busy = 0.0;
    usable_idle = idle_usable_by_waiting(sums.idle_by_type, waiting);
    sample.plan_idle_waiting_gpus = usable_idle;
    if (sparse_series) {
      sums.tenant_throughput = std::move(tenant_throughput);
      sums.tenant_gpus = std::move(tenant_gpus);
      if (sums.tenant_throughput.empty()) {
        sums.tenant_throughput.assign(n_tenants, 0.0);
        sums.tenant_gpus.assign(n_tenants * k, 0.0);
      }
      for (std::size_t i : state.active) {
        const std::size_t tenant = state.jobs[i].tenant;
        ++round_active_by_tenant[tenant];
        touch_tenant(tenant);
      }
    } else if (options.tenant_series) {
      sums.tenant_throughput.assign(n_tenants, 0.0);
      sums.tenant_gpus.assign(n_tenants * k, 0.0);
      if (counted_ahead)
        sample.tenant_active_jobs = std::move(next_active_by_tenant);
      else
        count_active_by_tenant(sample.tenant_active_jobs);
    }
    idle_points = state.running.empty() ? idle_points + static_cast<std::size_t>(run) : 0;
    if (idle_points > 100000)
      throw std::logic_error(fmt::format("policy {} left {} jobs waiting on an idle cluster for "
                                         "100000 scheduling points",
                                         policy.name(), state.active.size()));

    const double until =
        run > 1 ? t + static_cast<double>(run) * interval : std::min(t + interval, options.horizon_s);
    if (midround) {
      free_now.clear();
      for (std::size_t d = 0; d < state.device_owner.size(); ++d)
        if (state.device_owner[d] == -1) free_now.push_back(device_ref[d]);
      sums.collect_freed = true;
    }
    in_round = true;
    run_until(until);
    in_round = false;
    pending.emplace(PendingRound{std::move(sample), t, until});
    if (!settle_beside_plan) finish_round();
    t = until;
  }
  finish_round();

  if (sink_thread) sink_thread->finish();  // every round in the sink, as before
  out.end = t0;
  for (Job& j : state.jobs) {
    if (!std::isnan(j.record.finish)) {
      out.end = std::max(out.end, j.record.finish);
    } else if (j.active()) {
      close_job(state, j);  // unfinished at the horizon: its figures end there
    }
  }
  if (finished < n) out.end = std::max(out.end, state.now);
  out.jobs.reserve(n);
  for (Job& j : state.jobs) out.jobs.push_back(std::move(j.record));
  out.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (sink) sink->end(out);
  return out;
}

}  // namespace fairgpu
