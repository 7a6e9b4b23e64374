// RoundDigest (fairgpu/sim_report.h): the rounds of a run folded into the sums
// summarise() and tenant_windows() read, and the per-round series streamed to
// their files window by window. Every sum is added in round order, as the
// metrics over kept rounds add it, so a streamed run's metrics have the same
// bits; kept rounds go through this same code (RoundDigest::of).
#include <algorithm>
#include <cmath>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fairgpu/resource_report.h"
#include "fairgpu/sim_report.h"
#include "report/csv_cells.h"

namespace fairgpu {

namespace {

void check_series_window(double window_s) {
  if (!(window_s >= 0) || !std::isfinite(window_s))
    throw std::invalid_argument("series window must be a finite number of seconds >= 0");
}

double actual_throughput(const RoundSample& round) {
  double sum = 0.0;
  for (double x : round.tenant_throughput) sum += x;
  for (double x : round.sparse_throughput) sum += x;
  return sum;
}

}  // namespace

// tenants.csv and utilisation.csv (formats in fairgpu/sim_report.h): the
// rounds whose starts fall in one series window, from the first round's
// start, make one row per tenant and one of the cluster, averaged over the
// window's span by time. A window of one round prints that round's own
// values (no multiplying and dividing by its length), so `--series-window 0`
// gives each round exactly. Holds one window's sums: dense per tenant,
// cleared through the list of tenants the window touched.
class RoundDigest::SeriesWriter {
 public:
  SeriesWriter(const SimResult& setup, double window_s, std::ostream* tenants,
               std::ostream* utilisation)
      : window_s_(window_s),
        gpus_(setup.total_gpus()),
        types_(setup.num_types()),
        tenants_out_(tenants),
        utilisation_out_(utilisation) {
    for (const TenantSpec& t : setup.tenants) names_.push_back(csv::field(t.name));
    const std::size_t n = names_.size();
    active_.assign(n, 0.0);
    throughput_.assign(n, 0.0);
    held_.assign(n * types_, 0.0);
    touched_.assign(n, false);
    std::string header;
    if (tenants_out_) {
      std::vector<std::string> cells = {"round_start", "round_end", "tenant", "active_jobs",
                                        "normalised_throughput"};
      for (const auto& type : setup.gpu_types) cells.push_back(csv::field("gpus_" + type));
      csv::add_row(header, cells);
      tenants_out_->write(header.data(), static_cast<std::streamsize>(header.size()));
    }
    if (utilisation_out_) {
      header.clear();
      // No compute_seconds: wall-clock time goes to timing.json only.
      csv::add_row(header, {"start", "end", "busy_gpu_seconds", "utilisation", "active_jobs",
                            "recomputed", "estimated_throughput",
                            "actual_throughput", "idle_waiting_gpu_seconds", "contended_s"});
      utilisation_out_->write(header.data(), static_cast<std::streamsize>(header.size()));
    }
  }

  void add(const RoundSample& round) {
    const double window =
        window_s_ > 0 && rounds_ + closed_ > 0 ? std::floor((round.start - origin_) / window_s_)
                                               : 0.0;
    if (rounds_ > 0 && (window_s_ == 0 || window != window_)) close();
    if (rounds_ == 0) {
      if (closed_ == 0) origin_ = round.start;
      window_ = window;
      start_ = round.start;
      first_ = round;  // kept until a second round shows whether to weight it
    } else {
      if (rounds_ == 1) accumulate(first_, first_.end - first_.start);
      accumulate(round, round.end - round.start);
    }
    end_ = round.end;
    ++rounds_;
  }

  void finish() {
    if (rounds_ > 0) close();
  }

 private:
  // Adds a round, its averages weighted by dt (its length, or 1 for a window
  // of one round).
  void accumulate(const RoundSample& round, double dt) {
    busy_ += round.busy_gpu_seconds;
    active_jobs_ += round.active_jobs * dt;
    recomputed_ += round.recomputed ? 1 : 0;
    if (!std::isnan(round.estimated_throughput)) {
      has_estimate_ = true;
      estimated_ += round.estimated_throughput * dt;
    }
    actual_ += actual_throughput(round) * dt;
    idle_ += round.idle_waiting_gpu_seconds;
    contended_ += round.contended_s;
    if (!tenants_out_) return;
    for_each_tenant(round, types_, [&](std::size_t t, int a, double x, const double* g) {
      if (!touched_[t]) {
        touched_[t] = true;
        touched_list_.push_back(t);
      }
      active_[t] += a * dt;
      throughput_[t] += x * dt;
      for (std::size_t j = 0; j < types_; ++j) held_[t * types_ + j] += g[j] * dt;
    });
  }

  void close() {
    const bool lone = rounds_ == 1;
    if (lone) accumulate(first_, 1.0);
    const double len = end_ - start_;
    // Averages over the window's span (gaps without rounds count as zero).
    const double scale = lone ? 1.0 : (len > 0 ? 1.0 / len : 0.0);
    std::string out;
    if (utilisation_out_) {
      const double capacity_s = gpus_ * len;
      csv::add_row(out, {csv::num(start_), csv::num(end_), csv::num(busy_),
                         csv::num(capacity_s > 0 ? busy_ / capacity_s : kUnset),
                         csv::num(active_jobs_ * scale), std::to_string(recomputed_),
                         csv::num(has_estimate_ ? estimated_ * scale : kUnset),
                         csv::num(actual_ * scale), csv::num(idle_), csv::num(contended_)});
      utilisation_out_->write(out.data(), static_cast<std::streamsize>(out.size()));
      out.clear();
    }
    if (tenants_out_) {
      std::sort(touched_list_.begin(), touched_list_.end());
      for (std::size_t t : touched_list_) {
        double* held = held_.data() + t * types_;
        bool any = active_[t] != 0 || throughput_[t] != 0;
        for (std::size_t j = 0; j < types_ && !any; ++j) any = held[j] != 0;
        if (any) {  // a tenant with nothing active and nothing held: no row
          std::vector<std::string> row = {csv::num(start_), csv::num(end_), names_[t],
                                          csv::num(active_[t] * scale),
                                          csv::num(throughput_[t] * scale)};
          for (std::size_t j = 0; j < types_; ++j) row.push_back(csv::num(held[j] * scale));
          csv::add_row(out, row);
        }
        active_[t] = throughput_[t] = 0.0;
        std::fill(held, held + types_, 0.0);
        touched_[t] = false;
      }
      touched_list_.clear();
      tenants_out_->write(out.data(), static_cast<std::streamsize>(out.size()));
    }
    busy_ = active_jobs_ = estimated_ = actual_ = idle_ = contended_ = 0.0;
    recomputed_ = 0;
    has_estimate_ = false;
    rounds_ = 0;
    ++closed_;
  }

  const double window_s_;
  const double gpus_;
  const std::size_t types_;
  std::ostream* const tenants_out_;
  std::ostream* const utilisation_out_;
  std::vector<std::string> names_;  // CSV fields
  double origin_ = 0.0;             // the first round's start
  // The open window: its index, rounds, span, first round and sums.
  double window_ = 0.0;
  int rounds_ = 0, closed_ = 0;
  double start_ = 0.0, end_ = 0.0;
  RoundSample first_;
  double busy_ = 0, active_jobs_ = 0, estimated_ = 0, actual_ = 0, idle_ = 0,
         contended_ = 0;
  int recomputed_ = 0;
  bool has_estimate_ = false;
  std::vector<double> active_, throughput_, held_;
  std::vector<bool> touched_;
  std::vector<std::size_t> touched_list_;
};

RoundDigest::RoundDigest(const Options& options) : options_(options) {
  if (!(options.fairness_window_s > 0) || !std::isfinite(options.fairness_window_s))
    throw std::invalid_argument(fmt::format("fairness window of {} s, expected a finite length > 0",
                                            options.fairness_window_s));
  check_series_window(options.series_window_s);
}

RoundDigest::~RoundDigest() = default;

std::shared_ptr<const RoundDigest> RoundDigest::of(const SimResult& result,
                                                   const Options& options) {
  if (result.rounds_streamed)
    throw std::invalid_argument("SimResult: its rounds were streamed to a digest, not kept");
  auto digest = std::make_shared<RoundDigest>(options);
  digest->begin(result);
  for (const RoundSample& round : result.rounds) digest->add(round);
  digest->end(result);
  return digest;
}

void RoundDigest::begin(const SimResult& setup) {
  tenants_ = setup.tenants.size();
  types_ = setup.num_types();
  origin_ = setup.start;
  totals_ = {};
  totals_.tenant_integral.assign(tenants_, 0.0);
  totals_.tenant_active_s.assign(tenants_, 0.0);
  window_gpu_seconds_.clear();
  merged_windows_.clear();
  series_.reset();
  if (options_.tenants_csv || options_.utilisation_csv)
    series_ = std::make_unique<SeriesWriter>(setup, options_.series_window_s,
                                             options_.tenants_csv, options_.utilisation_csv);
  if (options_.resources_csv) *options_.resources_csv << resources_csv_header();
}

void RoundDigest::add(const RoundSample& round) {
  check_round(round, static_cast<std::size_t>(totals_.rounds), totals_.last_end, tenants_, types_);
  Totals& s = totals_;
  if (s.rounds == 0) {
    s.first_start = round.start;
    origin_ = std::min(origin_, round.start);
  }
  s.last_end = round.end;
  // A round's throughput values are time averages over the round, so value
  // x length is the exact integral over it.
  const double len = round.end - round.start;
  s.rounds += round.rounds;
  ++s.records;
  if (round.recomputed) ++s.recomputations;
  s.compute_seconds.push_back(round.compute_seconds);
  s.compute_total_s += round.compute_seconds;
  s.busy_gpu_seconds += round.busy_gpu_seconds;
  s.throughput_integral += round.throughput_integral;
  for_each_tenant(round, types_, [&](std::size_t t, int active, double throughput, const double*) {
    s.tenant_integral[t] += throughput * len;
    s.actual_integral += throughput * len;
    if (active > 0) s.tenant_active_s[t] += len;
  });
  // A round without an estimate under a share policy had no allocation in
  // force, i.e. an estimated throughput of 0: same denominator as actual, so
  // the two compare directly (OEF §6.1.4's estimated vs actual).
  if (!std::isnan(round.estimated_throughput)) {
    s.has_estimate = true;
    s.estimated_integral += round.estimated_throughput * len;
    s.contended_estimated += round.estimated_throughput * round.contended_s;
  }
  s.contended_s += round.contended_s;
  s.contended_actual += round.contended_throughput;
  s.contended_busy += round.contended_busy_gpu_seconds;
  s.idle_waiting_gpu_hours += round.idle_waiting_gpu_seconds / 3600.0;
  s.plan_idle_waiting_gpu_hours += round.plan_idle_waiting_gpus * len / 3600.0;
  s.span_s += len;
  s.cpu_seconds += round.cpus_allocated * len;
  s.cpu_used_seconds += round.cpus_used * len;
  s.memory_gb_seconds += round.memory_gb_allocated * len;
  s.memory_gb_used_seconds += round.memory_gb_used * len;

  // GPUs held per fairness window: tenant_gpus are time averages over the
  // round, so a round straddling a boundary is split in proportion to time.
  // Boundaries are origin + i x w, never accumulated, as tenant_windows()
  // computes them.
  if (len > 0) {
    const double w = options_.fairness_window_s;
    auto window_start = [&](std::size_t i) { return origin_ + static_cast<double>(i) * w; };
    auto window_of = [&](double x) {
      auto i = static_cast<std::size_t>(std::max(0.0, std::floor((x - origin_) / w)));
      while (i > 0 && window_start(i) > x) --i;  // round-off in the division
      while (window_start(i + 1) <= x) ++i;
      return i;
    };
    std::size_t i = window_of(round.start);
    // A run of stable rounds: the whole windows inside it are one window
    // (its GPU-seconds constant in time), so a run costs O(1), not
    // O(windows) (a 1e16 s job's run spans 3e12 windows of an hour).
    std::size_t merged_from = 0, merged_to = 0;
    if (round.rounds > 1) {
      const std::size_t first = window_start(i) < round.start ? i + 1 : i;
      const std::size_t last = window_of(round.end);  // the window holding the end
      if (last > first + 1) {
        merged_from = first;
        merged_to = last;
        merged_windows_[first] = last;
      }
    }
    for (; window_start(i) < round.end; ++i) {
      const std::size_t next = i == merged_from && merged_to > i ? merged_to : i + 1;
      const double overlap =
          std::min(round.end, window_start(next)) - std::max(round.start, window_start(i));
      const std::size_t at = i;
      i = next - 1;
      if (!(overlap > 0)) continue;
      for_each_tenant(round, types_, [&](std::size_t t, int, double, const double* gpus) {
        double held = 0.0;
        for (std::size_t j = 0; j < types_; ++j) held += gpus[j];
        if (held > 0) window_gpu_seconds_[{at, t}] += held * overlap;
      });
    }
  }
  if (series_) series_->add(round);
  if (options_.resources_csv) *options_.resources_csv << resources_csv_row(round);
}

void RoundDigest::end(const SimResult&) {
  if (series_) series_->finish();
}

}  // namespace fairgpu
