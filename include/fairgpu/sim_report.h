// Metrics and output files of a simulation run (docs/design.md §5 outputs, §6
// definitions), computed from a SimResult after the run.
//
// Every function here is pure: the same SimResult gives byte-identical strings.
// Writers return whole strings, so a caller can write nothing at all when a
// later step fails. A SimResult whose per-round vectors do not match its
// tenants and GPU types is a simulator bug: every function below that takes
// a SimResult then throws std::invalid_argument naming the round.
//
// A long run need not keep its rounds: a RoundDigest given to the simulator
// (SimOptions::round_sink) gathers what the metrics need one round at a time
// and streams the per-round series to files as their windows close; the
// metrics of a result carrying that digest are the same, bit for bit, as
// those of the same run with its rounds kept.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fairgpu/sim_result.h"

namespace fairgpu {

// ρ_FTF above this is an unfair finish (Themis); ρ_job below this is a
// sharing loss (docs/design.md §6, after Astraea §6's sharing-loss ratio).
inline constexpr double kUnfairFtfRho = 1.0;
inline constexpr double kSharingLossRho = 0.95;
// ρ_tenant below this over a window is a sharing loss of the tenant (Astraea
// §6.3's "unfairness ratio" counts the cases < 1).
inline constexpr double kTenantUnfairRho = 1.0;

// How summarise() rates tenants over time.
struct SummaryOptions {
  // Length of the fixed windows of ρ_tenant (Astraea §6.1.4 "at multiple
  // fixed intervals"), in seconds; must be finite and > 0.
  double fairness_window_s = 3600.0;
};

// What the metrics need from a run's rounds, gathered one round at a time:
// sums in round order (so they have the bits of the same sums over kept
// rounds), the compute time of each round (its median is a metric), and the
// GPU-seconds each tenant held per fairness window. Optionally streams
// tenants.csv, utilisation.csv (rows of `series_window_s`, formats below)
// and resources.csv (fairgpu/resource_report.h) as their rows close, so
// memory holds one window of series, not the run. The metrics of a result
// read it through SimResult::digest (summarise() throws if it was made for
// another fairness window); a result that kept its rounds gets one made on
// the spot. add() throws std::invalid_argument for a round that breaks
// SimResult's shape (see check_sim_result()).
class RoundDigest final : public RoundSink {
 public:
  struct Options {
    double fairness_window_s = 3600.0;  // SummaryOptions::fairness_window_s
    double series_window_s = 0.0;       // tenants_csv()'s window_s
    std::ostream* tenants_csv = nullptr;  // each written there if set
    std::ostream* utilisation_csv = nullptr;
    std::ostream* resources_csv = nullptr;
  };
  // Throws std::invalid_argument for a window summarise() or tenants_csv()
  // would refuse.
  explicit RoundDigest(const Options& options);
  ~RoundDigest() override;
  RoundDigest(const RoundDigest&) = delete;
  RoundDigest& operator=(const RoundDigest&) = delete;
  // A digest of a result's kept rounds, fed from begin() to end() here.
  // Throws std::invalid_argument if the result's rounds were streamed.
  static std::shared_ptr<const RoundDigest> of(const SimResult& result, const Options& options);

  void begin(const SimResult& setup) override;
  void add(const RoundSample& round) override;
  void end(const SimResult& result) override;  // writes the last series window

  // Sums over the rounds, each added in round order as summarise() defines it.
  struct Totals {
    // rounds: scheduling points (RoundSample::rounds summed); records: the
    // RoundSamples they came in.
    std::int64_t rounds = 0, records = 0;
    int recomputations = 0;
    double first_start = kUnset, last_end = kUnset;  // of the rounds
    // One per record: its first point's; a run's other points took 0 s.
    std::vector<double> compute_seconds;
    double compute_total_s = 0.0, busy_gpu_seconds = 0.0;
    double throughput_integral = 0.0;  // Σ RoundSample::throughput_integral
    double actual_integral = 0.0;      // Σ tenants' throughput x round length
    bool has_estimate = false;
    double estimated_integral = 0.0, contended_estimated = 0.0;
    double contended_s = 0.0, contended_actual = 0.0, contended_busy = 0.0;
    double idle_waiting_gpu_hours = 0.0, plan_idle_waiting_gpu_hours = 0.0;
    // Per tenant: throughput x length, and the time with an active job.
    std::vector<double> tenant_integral, tenant_active_s;
    // CPU/memory held and used x length, and the rounds' total length.
    double span_s = 0.0, cpu_seconds = 0.0, cpu_used_seconds = 0.0;
    double memory_gb_seconds = 0.0, memory_gb_used_seconds = 0.0;
  };
  const Totals& totals() const { return totals_; }
  double fairness_window_s() const { return options_.fairness_window_s; }
  // Start of fairness window 0: the first arrival or the first round's
  // start, the earlier (tenant_windows()).
  double origin() const { return origin_; }
  // GPU-seconds held by a tenant in a fairness window (rounds straddling a
  // boundary split in proportion to time), keyed (window index, tenant
  // index); only pairs with GPU-seconds > 0. Whole windows inside one run
  // of stable rounds (RoundSample::rounds > 1) are one window, keyed by the
  // first: see merged_windows().
  const std::map<std::pair<std::size_t, std::size_t>, double>& window_gpu_seconds() const {
    return window_gpu_seconds_;
  }
  // Runs of whole fairness windows inside one run of stable rounds, first
  // window index -> the index after the last: nothing arrives, finishes or
  // changes in them, so they make one window (one row of
  // tenant_windows.csv) rather than one per window.
  const std::map<std::size_t, std::size_t>& merged_windows() const { return merged_windows_; }

 private:
  class SeriesWriter;
  Options options_;
  std::size_t tenants_ = 0, types_ = 0;
  double origin_ = kUnset;
  Totals totals_;
  std::map<std::pair<std::size_t, std::size_t>, double> window_gpu_seconds_;
  std::map<std::size_t, std::size_t> merged_windows_;
  std::unique_ptr<SeriesWriter> series_;
};

// Every scalar metric of one run. NaN (kUnset) where a metric has no data,
// e.g. JCT percentiles when no job finished; summary_json prints it as null.
struct SimSummary {
  // Jobs. unfinished = not finished when the simulation ended; never_started
  // is the part of them that never ran.
  int jobs = 0;
  int finished_jobs = 0;
  int unfinished_jobs = 0;
  int never_started_jobs = 0;

  // Span and capacity. makespan = last finish - first arrival; with unfinished
  // jobs the span runs to SimResult::end (when the simulation stopped).
  double makespan_s = kUnset;
  double busy_gpu_seconds = 0.0;  // sum of the rounds' busy GPU-seconds
  double utilisation = kUnset;    // busy GPU-seconds / (GPUs x makespan)

  // JCT = finish - arrival over finished jobs; percentiles by nearest rank.
  double avg_jct_s = kUnset;
  double p50_jct_s = kUnset;
  double p95_jct_s = kUnset;
  double p99_jct_s = kUnset;
  double p999_jct_s = kUnset;  // p99.9 (Synergy reports it): rank ceil(0.999 n)
  double max_jct_s = kUnset;
  // first_start - arrival over the jobs that started (finished or not).
  double avg_queueing_delay_s = kUnset;
  // Slowdown (Astraea §3.2) over finished jobs that held GPUs: JCT / running
  // time, running time = attained GPU-seconds / workers; p95 by nearest rank.
  double avg_slowdown = kUnset;
  double p95_slowdown = kUnset;

  // Finish-time fairness over finished jobs with a defined ρ_FTF (ftf_jobs).
  int ftf_jobs = 0;
  double avg_ftf_rho = kUnset;
  double worst_ftf_rho = kUnset;    // the largest
  double unfair_fraction = kUnset;  // share of ftf_jobs with ρ_FTF > kUnfairFtfRho
  // The same with Shockwave's static contention N = max(1, jobs / GPUs)
  // instead of the time-averaged one (its figures; fairgpu/shockwave_eval.h),
  // over finished jobs with an isolated run time; unfair also at ρ > 1.05,
  // the threshold of its simulation figures.
  double ftf_static_contention = kUnset;
  double worst_ftf_rho_static = kUnset;
  double unfair_fraction_static = kUnset;      // ρ > kUnfairFtfRho
  double unfair_fraction_static_105 = kUnset;  // ρ > 1.05

  // LTGF ρ_job over finished jobs with fair_gpu_seconds > 0 (ltgf_jobs);
  // finished jobs whose fair share is 0 have no ρ and are ltgf_excluded_jobs.
  int ltgf_jobs = 0;
  int ltgf_excluded_jobs = 0;
  double avg_ltgf_rho = kUnset;
  double min_ltgf_rho = kUnset;
  double sharing_loss_fraction = kUnset;  // share of ltgf_jobs with ρ_job < kSharingLossRho
  // The same with Astraea's multi-tenant job fairness (eq. 15, the tenant's
  // fair share split among its active jobs): over finished jobs with a ρ.
  int ltgf_tenant_jobs = 0;
  double avg_ltgf_tenant_rho = kUnset;
  double min_ltgf_tenant_rho = kUnset;
  double tenant_sharing_loss_fraction = kUnset;

  // LTGF ρ_tenant (Astraea eq. 6-12) over fixed windows of fairness_window_s
  // (see tenant_windows()): tenant_windows_rated (tenant, window) pairs have a
  // fair share > 0; the unfairness ratio is the share of them with ρ <
  // kTenantUnfairRho; p5 by nearest rank.
  double fairness_window_s = 3600.0;
  int tenant_windows_rated = 0;
  double tenant_unfairness_ratio = kUnset;
  double min_tenant_rho = kUnset;
  double p5_tenant_rho = kUnset;

  // Jain's index of tenants' weighted normalised throughput, over the tenants
  // that had an active job in some round (active_tenants).
  int active_tenants = 0;
  double jain_index = kUnset;

  // Normalised throughput (OEF §6.1.4), time-averaged over the makespan: one
  // tail job decides these. estimated is NaN when no round carries one
  // (non-share policies); it counts each tenant's shares up to what its
  // active jobs can use.
  double actual_throughput = kUnset;
  double estimated_throughput = kUnset;

  // Efficiency over contended time (docs/design.md §6): the parts of rounds in which
  // some active job waited. contended_s is their total length; throughputs
  // are time averages over it, utilisation = busy GPU-seconds there / (GPUs
  // x contended_s). throughput_per_busy_gpu = normalised throughput integral
  // / busy GPU-seconds over the whole run (what a busy GPU delivered).
  double contended_s = 0.0;
  double contended_actual_throughput = kUnset;
  double contended_estimated_throughput = kUnset;
  double contended_utilisation = kUnset;
  double throughput_per_busy_gpu = kUnset;
  // Work-conservation violations, GPU-hours: GPUs idle while a waiting job
  // could have used them (its gang fits on them, types it runs on), over the
  // whole run, and counted from each scheduling point's plan over its round
  // (idle GPUs right after the plan x round length: what the policy left
  // idle, not what completions freed mid-round).
  double idle_waiting_gpu_hours = 0.0;
  double plan_idle_waiting_gpu_hours = 0.0;

  // Disruption, summed over all jobs.
  int restarts = 0;
  int preemptions = 0;
  int cross_type_placements = 0;
  // Restart overhead paid by the finished jobs (first starts included), in
  // seconds, and its share of their summed JCT.
  double restart_overhead_s = 0.0;
  double restart_overhead_share = kUnset;

  // Scheduler cost: compute time per scheduling point (round).
  std::int64_t rounds = 0;  // scheduling points, skipped ones included
  int recomputations = 0;   // rounds where the share policy re-solved
  double compute_p50_s = kUnset;
  double compute_max_s = kUnset;
  double compute_total_s = 0.0;
  double wall_seconds = 0.0;  // the whole simulation
};

// Throws std::invalid_argument if `result` breaks SimResult's shape
// invariants (see the file comment), or its rounds were streamed and it
// carries no digest.
void check_sim_result(const SimResult& result);
// The per-round part of that check: round `index` of a run with `tenants`
// tenants and `types` GPU types, after a round that ended at `previous_end`
// (NaN for the first).
void check_round(const RoundSample& round, std::size_t index, double previous_end,
                 std::size_t tenants, std::size_t types);

// Throws std::invalid_argument for a bad SimResult or window length.
SimSummary summarise(const SimResult& result, const SummaryOptions& options = {});

// ρ_tenant over fixed windows (Astraea eq. 6-12). Windows are [a, a + w)
// from the first arrival (or the first round, if earlier), the last one cut
// at the run's end (SimResult::end or the last round's end, the later). Per
// tenant j and window:
//   alloc = ∫ GPUs held by j's jobs dt                      (eq. 10-11)
//   fair  = ∫ min(Demand_j(t), Quota_j) dt                  (eq. 7-9)
//   Quota_j = M · W_j / Σ_k W_k over all tenants             (eq. 6)
//   rho   = alloc / fair; NaN (not rated) when fair is 0     (eq. 12)
// fair is exact: Demand_j(t) is the workers of j's jobs (SimResult::jobs)
// with arrival <= t < finish, an unfinished job counting to the run's end, so
// a job arriving or finishing mid-round changes it at that instant (a job
// waiting for the next scheduling point has demand and no GPUs: eq. 8 counts
// that wait against ρ). alloc
// is integrated from the rounds: tenant_gpus is each round's time average,
// exact over whole rounds; a round straddling a window boundary is split in
// proportion to time, which is exact only if the tenant's holdings did not
// change inside the round (a job finishing mid-round moves GPU-seconds
// between the two windows). Only (tenant, window) pairs with alloc or
// fair > 0 are returned (a tenant absent from a window has nothing to rate),
// ordered by window, then tenant index. Nothing is returned without rounds.
// Throws std::invalid_argument, besides the cases above, for a job whose
// tenant is not one of SimResult::tenants, whose arrival is not finite, or
// whose finish comes before its arrival, or with workers < 0.
struct TenantWindow {
  double start = 0.0, end = 0.0;
  std::size_t tenant = 0;  // index into SimResult::tenants
  double alloc_gpu_seconds = 0.0;
  double fair_gpu_seconds = 0.0;
  double rho = kUnset;
};
std::vector<TenantWindow> tenant_windows(const SimResult& result, double window_s);

// Per-job metrics; NaN when undefined.
double job_jct(const JobRecord& job);  // finish - arrival; NaN if unfinished
// JCT / (exclusive_s x contention_avg); NaN if unfinished or the denominator is not > 0.
double ftf_rho(const JobRecord& job);
// attained / fair GPU-seconds over [arrival, finish or end]; NaN if fair is not > 0.
// Defined for unfinished jobs too (their service so far).
double ltgf_rho(const JobRecord& job);
// JCT / (attained GPU-seconds / workers); NaN if unfinished or it never held GPUs.
double job_slowdown(const JobRecord& job);

// Astraea's job fairness inside the tenant (eq. 13-15), one value per job of
// result.jobs: attained / ∫ min(workers, FairShare_tenant(t) · w / Σ active w
// of its tenant) dt over [arrival, finish or end], with FairShare_tenant =
// min(Demand, Quota) (eq. 6-8) from the jobs' exact arrivals and finishes.
// NaN where that fair share is not > 0. Throws std::invalid_argument for the
// bad jobs tenant_windows() rejects.
std::vector<double> ltgf_tenant_rhos(const SimResult& result);

// Nearest-rank percentile: the value of rank ceil(percent/100 x n) in
// ascending order (rank 1 is the smallest), so the result is always one of
// the values. percent in [1, 100]; NaN for no values.
double percentile_nearest_rank(std::vector<double> values, int percent);

// ---- output files ----------------------------------------------------------
//
// CSV: RFC 4180 (a field with a comma, quote or newline is quoted), "\n" line
// ends, a header row. Reals print as fmt "{:.10g}" (shortest form up to 10
// significant digits: milliseconds of a 100-day run), NaN as an empty cell.

// One row per job in workload order:
//   job_id,tenant,job_type,workers,arrival,first_start,finish,jct,queueing_delay,
//   attained_gpu_seconds,restarts,preemptions,cross_type_placements,ftf_rho,ltgf_rho,
//   ltgf_tenant_rho
// ltgf_rho is eq. 5 (JobRecord::fair_gpu_seconds), ltgf_tenant_rho eq. 15
// (ltgf_tenant_rhos()); both also for unfinished jobs, their service so far.
std::string jobs_csv(const SimResult& result);

// Per-round series, or with window_s > 0 aggregated to windows: the rounds
// whose starts fall in [w, w + window_s) from the first round's start make
// one row spanning the first one's start to the last one's end, averaged over
// that span by time (gaps without rounds count as zero), counts and
// integrals summed; a window holding one round prints that round's values
// as they are. Throws std::invalid_argument for a negative or non-finite
// window, or a result whose rounds were streamed (a RoundDigest with a
// stream wrote its series as the run went).
//
// One row per round (window) per tenant that had an active job or held a
// GPU in it (rows of zeros are left out):
//   round_start,round_end,tenant,active_jobs,normalised_throughput,gpus_<type>...
std::string tenants_csv(const SimResult& result, double window_s = 0.0);

// One row per round (window):
//   start,end,busy_gpu_seconds,utilisation,active_jobs,compute_seconds,recomputed,
//   estimated_throughput,actual_throughput,idle_waiting_gpu_seconds,contended_s
// utilisation = busy GPU-seconds / (GPUs x length); actual = sum of the
// tenants' normalised throughput; recomputed counts the re-solves;
// idle_waiting_gpu_seconds: GPU-seconds idle while a waiting job could have
// used them; contended_s: time in which some active job waited.
std::string utilisation_csv(const SimResult& result, double window_s = 0.0);

// One row per rated or served (tenant, window) pair of tenant_windows():
//   window_start,window_end,tenant,alloc_gpu_seconds,fair_gpu_seconds,rho
// rho is empty where the fair share is 0.
std::string tenant_windows_csv(const SimResult& result, const SummaryOptions& options = {});

// The run's setup (policy, level, round_s, gpu_types, capacity by type,
// total_gpus, tenants) then every SimSummary field under its member name
// but the wall-clock ones (timing_json's); NaN as null.
// nlohmann::ordered_json dump(2) plus a newline.
std::string summary_json(const SimResult& result, const SimSummary& summary);
// timing.json: what depends on the machine and its load (wall_seconds and
// the policy's compute_* seconds), kept out of every other file so that two
// runs of the same command write the same bytes there.
std::string timing_json(const SimSummary& summary);

// A metric/value text table for a person (ASCII, fixed width).
std::string summary_table(const SimResult& result, const SimSummary& summary);

// Several runs of one workload side by side, one row per run (named by its
// policy), the key metrics in table units (hours, %, ms), a legend naming
// each column in words, then the same columns as ratios to the first run
// ("1.00x"; "-" where undefined). Fits 120 columns for names up to 24
// characters, so it leaves out the makespan-based figures, p95 JCT, worst
// ρ_FTF and the restart-overhead share, which compare_csv keeps.
std::string compare_table(const std::vector<std::pair<std::string, SimSummary>>& runs);

// The legend compare_table prints under its values: one line (or two) per
// column; with_timed: also the wall-clock column, which only the printed
// table has (report.html and the sweep table do not).
std::string compare_legend(bool with_timed = true);

// compare_table's columns for other renderings (report.html): the
// summary_json key, the two header lines, the factor from SI to table units,
// decimals, and whether the text table shows it.
struct CompareColumnInfo {
  std::string key, top, bottom;
  double scale = 1.0;
  int precision = 2;
  bool in_table = true;
};
std::vector<CompareColumnInfo> compare_column_info();

// compare_table's layout for any values (the sweep's mean ± interval): a
// "policy" column as wide as the longest name, then one column per entry of
// `columns` (its two header lines), right-aligned in `width` characters (a
// UTF-8 character counts one); cell(row, column) gives each value's text.
// Lines end without blanks.
std::string metric_table(const std::vector<CompareColumnInfo>& columns,
                         const std::vector<std::string>& names, std::size_t width,
                         const std::function<std::string(std::size_t, std::size_t)>& cell);

// value / base, as compare_table and compare_csv show ratios to the first
// run: NaN where either is NaN or the base is 0.
double compare_ratio(double value, double base);

// A table value: `precision` decimals, more (up to 6) where those would show
// a nonzero value as 0; "-" for NaN.
std::string table_cell(double value, int precision);

// The same data for machines: policy, then the metrics under their
// SimSummary/summary_json names in SI units (avg_jct_s, ..., compute_p50_s),
// then each again as <name>_ratio to the first run.
std::string compare_csv(const std::vector<std::pair<std::string, SimSummary>>& runs);
// The same with extra columns after the ratios (the CLI's provenance: folder,
// version, seed, inputs, options, the policy's parameters), one row of cells
// per run; throws std::invalid_argument if a row's width differs from the
// header's or there is not one row per run.
std::string compare_csv(const std::vector<std::pair<std::string, SimSummary>>& runs,
                        const std::vector<std::string>& extra_header,
                        const std::vector<std::vector<std::string>>& extra_rows);

}  // namespace fairgpu
