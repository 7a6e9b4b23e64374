// `fairgpu sweep`: a grid of seeds x policies x scenario variants (load,
// cluster, round), each cell a `fairgpu simulate` run in its own process (as
// many at once as there are cores), then per policy and variant the mean and
// 95% Student-t confidence interval of every compare metric over the seeds
// (sweep.csv, a table, report.html). Runs are processes rather than threads:
// a run is then exactly what `fairgpu simulate` with the same arguments
// gives, with its own folder, provenance and report, and a crash stays in one
// run.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/in_process.h"
#include "fairgpu/html_report.h"
#include "fairgpu/input_error.h"
#include "fairgpu/policy_options.h"
#include "fairgpu/provenance.h"
#include "fairgpu/sim_report.h"
#include "fairgpu/sweep_stats.h"
#include "report/csv_cells.h"

extern char** environ;

namespace fairgpu::cli {
namespace {

namespace fs = std::filesystem;

struct SweepArgs {
  std::string policies = "oef-coop,gavel";
  std::string seeds = "1-5";
  std::string loads, clusters, rounds;
  std::string out = "fairgpu-out/sweep";
  int jobs = 0;  // processes at once; 0: one per core
  bool quiet = false;
  std::vector<std::string> passthrough;  // scenario options for every run
  ReportOptions report;                  // the sweep's report.html and figures/
};

std::vector<std::string> split(const std::string& list, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty()) out.push_back(item);
  return out;
}

// "1-5", "1,2,7" or a mix ("1-3,10").
std::vector<unsigned long> parse_seeds(const std::string& text) {
  std::vector<unsigned long> out;
  auto number = [&](const std::string& s) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18)
      throw InputError("options", "seeds", fmt::format("'{}' is not a seed or a range A-B", text));
    return std::stoul(s);
  };
  for (const std::string& item : split(text, ',')) {
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      out.push_back(number(item));
      continue;
    }
    const unsigned long a = number(item.substr(0, dash)), b = number(item.substr(dash + 1));
    if (b < a || b - a > 10000)
      throw InputError("options", "seeds",
                       fmt::format("'{}' is not a range A-B with A <= B", item));
    for (unsigned long s = a; s <= b; ++s) out.push_back(s);
  }
  if (out.empty()) throw InputError("options", "seeds", "no seed given");
  std::vector<unsigned long> sorted = out;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    throw InputError("options", "seeds", "a seed is given twice");
  return out;
}

// One scenario variant: the values of the swept scenario options ("" = not
// swept, the run's default).
struct Variant {
  std::string load, cluster, round;
  std::string folder() const {
    std::string name;
    auto add = [&name](const char* key, const std::string& v) {
      if (v.empty()) return;
      name += fmt::format("{}{}-{}", name.empty() ? "" : "_", key,
                          policy_folder_name(fs::path(v).filename().string()));
    };
    add("load", load);
    add("cluster", cluster);
    add("round", round);
    return name.empty() ? "default" : name;
  }
};

struct Run {
  std::size_t variant, policy;
  unsigned long seed;
  fs::path dir;
  std::vector<std::string> args;
  int status = -1;
};

// Numbers given as text are checked here, so a typo fails before any run.
void check_numbers(const std::vector<std::string>& values, const char* option) {
  for (const auto& v : values) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end != v.c_str() + v.size() || !(x > 0) || !std::isfinite(x))
      throw InputError("options", option, fmt::format("'{}' is not a number > 0", v));
  }
}

std::string g_program;  // set_program(): the Python module names the program

std::string self_path() {
  if (!g_program.empty()) return g_program;
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find the fairgpu binary: " + ec.message());
  return p.string();
}

// Starts `args` with stdout to /dev/null and stderr to `err`; returns its pid.
pid_t spawn(const std::string& exe, const std::vector<std::string>& args, const fs::path& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot start {}: error {}", exe, rc));
  return pid;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

using csv::num;
// The metrics a sweep summarises: compare's columns but the scheduler's
// wall-clock compute time, which is not a result and would make the same
// grid give different files.
std::vector<CompareColumnInfo> sweep_metrics() {
  std::vector<CompareColumnInfo> out;
  for (const auto& c : compare_column_info())
    if (c.key.rfind("compute_", 0) != 0) out.push_back(c);
  return out;
}

std::string run_sweep(const SweepArgs& a) {
  const std::vector<unsigned long> seeds = parse_seeds(a.seeds);
  const std::vector<std::string> policies = split_policies(a.policies);
  std::vector<std::string> folders;
  for (const auto& p : policies) {
    parse_policy_specifier(p);  // syntax; the first run checks the keys
    folders.push_back(policy_folder_name(p));
  }
  if (a.jobs < 0) throw InputError("options", "jobs", "must be >= 0");
  check_report_options(a.report);
  for (const std::string& opt : a.passthrough)
    for (const char* owned : {"--seed", "--policy", "--out", "--load", "--cluster", "--round"})
      if (opt == owned || opt.rfind(std::string(owned) + "=", 0) == 0)
        throw InputError("options", opt.substr(2),
                         "set by the sweep; use --seeds, --policies, --loads, --clusters, "
                         "--rounds or --out");
  // --jobs goes to each run as the workload's number of jobs; -j is how many
  // runs at once. A --jobs below 10 is most likely the latter meant.
  for (std::size_t i = 0; i < a.passthrough.size(); ++i) {
    const std::string& opt = a.passthrough[i];
    std::string value;
    if (opt == "--jobs" && i + 1 < a.passthrough.size()) value = a.passthrough[i + 1];
    if (opt.rfind("--jobs=", 0) == 0) value = opt.substr(7);
    if (value.size() == 1 && std::isdigit(static_cast<unsigned char>(value[0])))
      std::fprintf(stderr,
                   "fairgpu: note: --jobs %s is each run's number of jobs (a workload of %s); "
                   "runs at once: -j/--jobs-at-once\n",
                   value.c_str(), value.c_str());
  }
  std::vector<std::string> loads = split(a.loads, ','), clusters = split(a.clusters, ','),
                           rounds = split(a.rounds, ',');
  check_numbers(loads, "loads");
  check_numbers(rounds, "rounds");
  for (const auto& c : clusters)
    if (!fs::exists(c)) throw InputError(c, "", "cannot open the file");
  if (loads.empty()) loads = {""};
  if (clusters.empty()) clusters = {""};
  if (rounds.empty()) rounds = {""};
  std::vector<Variant> variants;
  for (const auto& l : loads)
    for (const auto& c : clusters)
      for (const auto& r : rounds) variants.push_back({l, c, r});

  const fs::path out(a.out);
  std::vector<Run> runs;
  for (std::size_t v = 0; v < variants.size(); ++v)
    for (std::size_t p = 0; p < policies.size(); ++p)
      for (unsigned long seed : seeds) {
        Run r{v,    p,
              seed, out / "runs" / variants[v].folder() / folders[p] / fmt::format("seed-{}", seed),
              {},   -1};
        r.args = {"simulate",           "--quiet", "--policy",    policies[p], "--seed",
                  std::to_string(seed), "--out",   r.dir.string()};
        if (!variants[v].load.empty()) r.args.insert(r.args.end(), {"--load", variants[v].load});
        if (!variants[v].cluster.empty())
          r.args.insert(r.args.end(), {"--cluster", variants[v].cluster});
        if (!variants[v].round.empty()) r.args.insert(r.args.end(), {"--round", variants[v].round});
        r.args.insert(r.args.end(), a.passthrough.begin(), a.passthrough.end());
        // Each run's own figures as SVG only: a PDF per figure of every run
        // would cost more than the run; `fairgpu report RUN` adds them.
        r.args.insert(r.args.end(), {"--figure-axes", a.report.axes, "--no-pdf"});
        runs.push_back(std::move(r));
      }

  // A sweep replaces its folder's earlier runs wholesale.
  std::error_code ec;
  fs::remove_all(out / "runs", ec);
  fs::create_directories(out / "runs", ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", out.string(), ec.message()));

  const std::string exe = self_path();
  const std::size_t parallel =
      a.jobs > 0 ? std::size_t(a.jobs) : std::max(1u, std::thread::hardware_concurrency());
  // On a terminal one line rewritten in place; elsewhere (a log, CI) one line
  // per finished run. --quiet: none.
  const bool tty = isatty(fileno(stderr));
  const bool progress = !a.quiet && tty;
  const bool lines = !a.quiet && !tty;
  const auto start = std::chrono::steady_clock::now();
  std::map<pid_t, std::size_t> running;
  std::size_t next = 0, done = 0;
  const Run* failed = nullptr;
  while (done < runs.size()) {
    while (!failed && next < runs.size() && running.size() < parallel) {
      Run& r = runs[next];
      fs::create_directories(r.dir.parent_path());
      running[spawn(exe, r.args, r.dir.string() + ".stderr")] = next++;
    }
    if (running.empty()) break;
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) throw std::runtime_error("waitpid failed");
    auto it = running.find(pid);
    if (it == running.end()) continue;
    Run& r = runs[it->second];
    running.erase(it);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    ++done;
    if (r.status != 0 && !failed) failed = &r;
    if (progress) {
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\rsweep: %zu of %zu runs done (%zu at once), %.0f s   ", done,
                   runs.size(), parallel, wall);
    }
    if (lines && r.status == 0)  // a failed run is the sweep's one error line
      std::fprintf(stderr, "fairgpu: sweep: %s done (%zu of %zu runs), %.0f s\n",
                   r.dir.lexically_relative(out / "runs").string().c_str(), done, runs.size(),
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  if (progress) std::fprintf(stderr, "\r\033[K");
  if (failed) {
    std::string err = slurp(failed->dir.string() + ".stderr");
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    const auto nl = err.rfind('\n');
    if (nl != std::string::npos) err = err.substr(nl + 1);
    if (err.rfind("fairgpu: ", 0) == 0) err = err.substr(9);
    fs::remove_all(out / "runs", ec);  // no partial sweep
    if (failed->status == 2) throw InputError("sweep run " + failed->dir.string(), "", err);
    throw std::runtime_error(fmt::format("sweep run {} failed (status {}): {}",
                                         failed->dir.string(), failed->status, err));
  }
  for (const Run& r : runs) fs::remove(r.dir.string() + ".stderr", ec);

  // Per variant and policy, mean and CI over the seeds.
  const auto metrics = sweep_metrics();
  std::string csv = "policy,load,cluster,round_s,seeds";
  for (const auto& m : metrics) csv += "," + m.key + "_mean," + m.key + "_ci95";
  csv += ",folders\n";
  struct Row {
    std::string label;
    std::vector<MeanCi> stats;
  };
  std::vector<Row> rows;
  // Every input file any run read (a cluster per variant, the trace, ...).
  nlohmann::ordered_json inputs = nlohmann::ordered_json::array();
  std::set<std::string> inputs_seen;
  for (std::size_t v = 0; v < variants.size(); ++v)
    for (std::size_t p = 0; p < policies.size(); ++p) {
      std::vector<std::vector<double>> values(metrics.size());
      std::string dirs;
      for (const Run& r : runs) {
        if (r.variant != v || r.policy != p) continue;
        const auto summary = nlohmann::ordered_json::parse(slurp(r.dir / "summary.json"));
        if (summary.contains("provenance") && summary["provenance"].contains("inputs"))
          for (const auto& in : summary["provenance"]["inputs"])
            if (inputs_seen.insert(in.dump()).second) inputs.push_back(in);
        for (std::size_t m = 0; m < metrics.size(); ++m) {
          const auto& x = summary.contains(metrics[m].key) ? summary[metrics[m].key] : nullptr;
          values[m].push_back(x.is_number() ? x.get<double>() : std::nan(""));
        }
        dirs += (dirs.empty() ? "" : ";") + fs::relative(r.dir, out).string();
      }
      Row row{policies[p], {}};
      const std::string variant = variants[v].folder();
      if (variant != "default") row.label += " [" + variant + "]";
      csv += fmt::format("{},{},{},{},{}", csv::field(policies[p]), variants[v].load,
                         csv::field(variants[v].cluster), variants[v].round, seeds.size());
      for (const auto& vals : values) {
        row.stats.push_back(mean_ci95(vals));
        csv += "," + num(row.stats.back().mean) + "," + num(row.stats.back().half_width);
      }
      csv += "," + csv::field(dirs) + "\n";
      rows.push_back(std::move(row));
    }
  // The sweep's own provenance: report.html shows it rather than one run's.
  nlohmann::ordered_json prov;
  prov["fairgpu_version"] = fairgpu_version();
  prov["command"] = "sweep";
  std::vector<std::string> arguments = {"--policies", a.policies, "--seeds", a.seeds};
  for (const auto& [flag, value] : {std::pair<const char*, const std::string&>{"--loads", a.loads},
                                    {"--clusters", a.clusters},
                                    {"--rounds", a.rounds}})
    if (!value.empty()) arguments.insert(arguments.end(), {flag, value});
  arguments.insert(arguments.end(), a.passthrough.begin(), a.passthrough.end());
  prov["arguments"] = arguments;
  prov["policies"] = policies;
  prov["seeds"] = seeds;
  nlohmann::ordered_json variant_names = nlohmann::ordered_json::array();
  for (const Variant& v : variants) variant_names.push_back(v.folder());
  prov["variants"] = variant_names;
  prov["runs"] = runs.size();
  prov["inputs"] = inputs;
  write_files(out.string(),
              {{"sweep.csv", csv},
               {"sweep.json", nlohmann::ordered_json{{"provenance", prov}}.dump(2) + "\n"}});
  write_report_noting(out.string(), a.report);

  // The table: the compare table's columns, mean ± half-width.
  std::string table = fmt::format("sweep: {} policies x {} variants x {} seeds = {} runs\n\n",
                                  policies.size(), variants.size(), seeds.size(), runs.size());
  std::vector<CompareColumnInfo> shown;
  std::vector<std::size_t> shown_index;
  for (std::size_t m = 0; m < metrics.size(); ++m)
    if (metrics[m].in_table) shown.push_back(metrics[m]), shown_index.push_back(m);
  std::vector<std::string> labels;
  for (const Row& r : rows) labels.push_back(r.label);
  table += metric_table(shown, labels, 15, [&](std::size_t row, std::size_t column) {
    const std::size_t m = shown_index[column];
    const MeanCi& s = rows[row].stats[m];
    const double k = metrics[m].scale;
    if (std::isnan(s.mean)) return std::string("-");
    const std::string mean = table_cell(s.mean * k, metrics[m].precision);
    return std::isnan(s.half_width)
               ? mean
               : mean + "±" + table_cell(s.half_width * k, metrics[m].precision);
  });
  table += "\nmean ± half-width of the 95% confidence interval over the seeds (Student's t)\n";
  table += compare_legend(false);
  return fmt::format(
      "{}wrote {}/ (sweep.csv, sweep.json, report.html, figures/, "
      "runs/<variant>/<policy>/seed-<s>/)\n",
      table, out.string());
}

}  // namespace

void set_program(const std::string& path) { g_program = path; }

void add_sweep_command(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands) {
  auto args = std::make_shared<SweepArgs>();
  auto* sweep = app.add_subcommand(
      "sweep",
      "run a grid of seeds x policies x scenario variants (each a simulate run, in parallel) "
      "and report each metric's mean and 95% confidence interval over the seeds");
  sweep->add_option("--policies", args->policies,
                    "comma-separated, each NAME or NAME:key=value[:key=value...] (default "
                    "oef-coop,gavel)");
  sweep->add_option("--seeds", args->seeds,
                    "seeds: A-B and/or a comma-separated list (default 1-5)");
  sweep->add_option("--loads", args->loads,
                    "comma-separated offered loads, each a variant run with --load X");
  sweep->add_option("--clusters", args->clusters,
                    "comma-separated cluster JSON files, each a variant run with --cluster F");
  sweep->add_option("--rounds", args->rounds,
                    "comma-separated round lengths in seconds, each a variant run with --round S");
  sweep->add_option("--out", args->out, "folder (default fairgpu-out/sweep)");
  sweep->add_option("-j,--jobs-at-once", args->jobs, "runs at once (default: one per core)");
  sweep->add_flag("--quiet", args->quiet,
                  "no progress on stderr (by default a line per finished run, rewritten in place "
                  "on a terminal)");
  add_report_options(sweep, args->report);
  sweep->allow_extras();
  sweep->footer(
      "Every other option (--trace, --jobs, --gen-tenants, --arrivals-per-hour, --horizon-hours, "
      "...) is passed to each run as 'fairgpu simulate' takes it.");
  commands.push_back({sweep, [args, sweep] {
                        args->passthrough = sweep->remaining();
                        return run_sweep(*args);
                      }});
}

}  // namespace fairgpu::cli
