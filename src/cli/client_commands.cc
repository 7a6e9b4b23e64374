// The live manager's client commands (issue 5, docs/design.md §7): `fairgpu submit`,
// `jobs`, `cancel`, `cluster`, `tenants`, `profiles`, `drain` and `undrain`,
// talking to `fairgpu serve` through live::LiveClient (docs/live-protocol.md).
//
// Every command takes --server (default $FAIRGPU_SERVER, else
// http://127.0.0.1:8470), --token (default $FAIRGPU_TOKEN) or --token-file,
// --ca (an https server's CA) and --json (the server's JSON answer,
// pretty-printed, instead of a table). Tables follow
// `fairgpu simulate`'s style: lower-case headers, text left- and numbers
// right-aligned, "-" where a value does not apply. A refusal by the server
// (4xx) is one line on stderr and exit status 2; an unreachable or failing
// (5xx) server one line and exit status 3.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "fairgpu/input_error.h"
#include "live/client.h"
#include "live/config.h"
#include "live/log_relay.h"
#include "live/slurm/client.h"

namespace fairgpu::cli {
namespace {

using nlohmann::json;

struct ServerArgs {
  std::string url = live::kDefaultServerUrl;
  std::string token;
  std::string token_file;
  std::string ca;
  bool json = false;
};

void add_server_options(CLI::App* c, ServerArgs& a) {
  c->add_option("--server", a.url,
                "server URL (default: $FAIRGPU_SERVER, else http://127.0.0.1:8470)")
      ->envname("FAIRGPU_SERVER");
  c->add_option("--token", a.token,
                "API token of a tenant or the admin (default: $FAIRGPU_TOKEN, which keeps it "
                "out of the process list)")
      ->envname("FAIRGPU_TOKEN");
  c->add_option("--token-file", a.token_file,
                "file holding the API token on its first line, readable by its owner alone "
                "(wins over --token; default: $FAIRGPU_TOKEN_FILE)")
      ->envname("FAIRGPU_TOKEN_FILE");
  c->add_option("--ca", a.ca,
                "PEM file of the CA that signed an https server's certificate (default: "
                "$FAIRGPU_CA, else the system's CAs)")
      ->envname("FAIRGPU_CA");
  c->add_flag("--json", a.json, "print the server's JSON answer instead of a table");
}

live::LiveClient connect(const ServerArgs& a) {
  std::string token = a.token;
  if (!a.token_file.empty()) token = live::read_token_file(a.token_file, "--token-file", "");
  return live::LiveClient(a.url, token, 10.0, a.ca);
}

std::string pretty(const json& j) { return j.dump(2) + "\n"; }

// ---- cells -----------------------------------------------------------------

// Names come from other tenants: control characters would let them move the
// cursor or recolour the terminal, so they are shown as '?'.
std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

// The member `key`, or nullptr when absent or null (fields that do not apply
// yet, such as a queued job's node).
const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// At most `precision` decimals, trailing zeros dropped: "2.5", "0.625", "3".
std::string number(double v, int precision) {
  std::string s = fmt::format("{:.{}f}", v, precision);
  if (s.find('.') != std::string::npos) {
    s.erase(s.find_last_not_of('0') + 1);
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

// Any JSON value as a cell: strings as they are, whole numbers exactly, other
// numbers with up to `precision` decimals, arrays comma-joined, objects as k=v.
std::string cell(const json* v, int precision = 3) {
  if (!v || v->is_null()) return "-";
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    return s.empty() ? "-" : printable(s);
  }
  if (v->is_boolean()) return v->get<bool>() ? "yes" : "no";
  if (v->is_number_integer()) return v->dump();
  if (v->is_number()) return number(v->get<double>(), precision);
  std::string out;
  if (v->is_array()) {
    for (const auto& e : *v) out += (out.empty() ? "" : ",") + cell(&e, precision);
  } else {
    for (const auto& [k, e] : v->items())
      out += (out.empty() ? "" : " ") + printable(k) + "=" + cell(&e, precision);
  }
  return out.empty() ? "-" : out;
}

std::string cell(const json& obj, const char* key, int precision = 3) {
  return cell(member(obj, key), precision);
}

double number_or(const json& obj, const char* key, double fallback) {
  const json* v = member(obj, key);
  return v && v->is_number() ? v->get<double>() : fallback;
}

// "3.2 s", "4.5 min", "2.1 h".
std::string duration(double s) {
  double a = std::fabs(s);
  if (a < 120) return fmt::format("{:.1f} s", s);
  if (a < 7200) return fmt::format("{:.1f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

// The protocol's times are seconds; values after 2001 are Unix times and are
// shown as local wall-clock time, smaller ones (a clock started by the server)
// as they are.
std::string when(const json& obj, const char* key) {
  const json* v = member(obj, key);
  if (!v || !v->is_number()) return cell(v);
  double t = v->get<double>();
  if (t < 1e9) return fmt::format("{:.1f} s (server clock)", t);
  std::time_t secs = static_cast<std::time_t>(t);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", &tm);
  return buf;
}

// A word of an argv for display, quoted for a POSIX shell when needed.
std::string shell_word(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_./=:,+@%") == std::string::npos)
    return printable(w);
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return printable(q + "'");
}

std::string command_text(const json* cmd) {
  if (!cmd) return "-";
  if (cmd->is_string()) return "/bin/sh -c " + shell_word(cmd->get<std::string>());
  if (!cmd->is_array()) return cell(cmd);
  std::string out;
  for (const auto& w : *cmd)
    out += (out.empty() ? "" : " ") + (w.is_string() ? shell_word(w.get<std::string>()) : w.dump());
  return out;
}

// "1200/5000 (24.0%)".
std::string progress(const json& job) {
  const json* total = member(job, "iterations");
  if (!total || !total->is_number()) return "-";
  double done = number_or(job, "iterations_done", 0.0);
  double t = total->get<double>();
  std::string out = number(done, 1) + "/" + number(t, 1);
  if (t > 0) out += fmt::format(" ({:.1f}%)", 100.0 * std::min(done / t, 1.0));
  return out;
}

// "v100/n1" while the job holds GPUs, "-" otherwise.
std::string placement(const json& job) {
  const json* type = member(job, "gpu_type");
  const json* node = member(job, "node");
  if (!type && !node) return "-";
  return cell(type) + "/" + cell(node);
}

// The answer's `key` array (an answer without it is not the protocol's).
const json& list(const json& answer, const char* key, const std::string& what) {
  const json* v = member(answer, key);
  if (!v || !v->is_array())
    throw std::runtime_error(fmt::format("{}: the server's answer has no \"{}\" array", what, key));
  return *v;
}

std::string plural(std::size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// Counts per value of `key`, in order of first appearance: "2 running, 1 queued".
std::string tally(const json& items, const char* key) {
  std::vector<std::pair<std::string, std::size_t>> counts;
  for (const auto& item : items) {
    std::string v = cell(item, key);
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == v; });
    if (it == counts.end())
      counts.emplace_back(v, 1);
    else
      ++it->second;
  }
  std::string out;
  for (const auto& [v, n] : counts) out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, v);
  return out;
}

// ---- tables ----------------------------------------------------------------

// Aligned columns two spaces apart; trailing blanks trimmed.
class Table {
 public:
  // A title starting with '>' is a right-aligned (number) column.
  explicit Table(std::vector<std::string> titles) {
    for (auto& t : titles) {
      bool right = !t.empty() && t.front() == '>';
      columns_.push_back({right ? t.substr(1) : t, right});
    }
  }

  void add(std::vector<std::string> row) {
    row.resize(columns_.size(), "");
    rows_.push_back(std::move(row));
  }

  std::string render(bool header = true) const {
    std::vector<std::size_t> width;
    for (const auto& c : columns_) width.push_back(c.title.size());
    for (const auto& row : rows_)
      for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
    std::string out;
    auto line = [&](auto get) {
      std::string s;
      for (std::size_t i = 0; i < columns_.size(); ++i) {
        if (i > 0) s += "  ";
        s += columns_[i].right ? fmt::format("{:>{}}", get(i), width[i])
                               : fmt::format("{:<{}}", get(i), width[i]);
      }
      s.erase(s.find_last_not_of(' ') + 1);
      out += s + "\n";
    };
    if (header) line([&](std::size_t i) { return columns_[i].title; });
    for (const auto& row : rows_) line([&](std::size_t i) { return row[i]; });
    return out;
  }

 private:
  struct Column {
    std::string title;
    bool right;
  };
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// "key   value" lines with the values aligned.
std::string fields(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::size_t w = 0;
  for (const auto& r : rows) w = std::max(w, r.first.size());
  std::string out;
  for (const auto& [k, v] : rows) out += fmt::format("{:<{}}  {}\n", k, w, v);
  return out;
}

// ---- submit ----------------------------------------------------------------

struct SubmitArgs {
  ServerArgs server;
  std::string file;
  std::string name;
  std::string job_type;
  long long workers = 0;
  long long iterations = 0;
  std::vector<std::string> env;
  double weight = 0;
  std::string tenant;
  std::string shell_command;
  std::vector<std::string> argv;
  // Which of the optional flags were given.
  bool has_weight = false;
};

// The request body from the flags, checked like a --file entry (errors name
// the flag).
json job_from_flags(const SubmitArgs& a) {
  json job = {{"name", a.name}, {"job_type", a.job_type}};
  if (a.name.empty()) throw InputError("options", "--name", "is required (or use --file)");
  if (a.job_type.empty()) throw InputError("options", "--job-type", "is required (or use --file)");
  if (a.workers < 1) throw InputError("options", "--workers", "is required and must be >= 1");
  if (a.iterations < 1) throw InputError("options", "--iterations", "is required and must be >= 1");
  if (a.argv.empty() && a.shell_command.empty())
    throw InputError("options", "command",
                     "missing: give the job's command after `--` (an argv) or as --command "
                     "\"shell string\"");
  if (!a.argv.empty() && !a.shell_command.empty())
    throw InputError("options", "command",
                     "give the job's command either after `--` (an argv) or as --command "
                     "\"shell string\", not both");
  job["workers"] = a.workers;
  job["iterations"] = a.iterations;
  if (!a.argv.empty())
    job["command"] = a.argv;
  else
    job["command"] = a.shell_command;
  if (!a.env.empty()) {
    json env = json::object();
    for (const auto& kv : a.env) {
      auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw InputError("options", "--env", "expected KEY=VALUE, got '" + kv + "'");
      std::string key = kv.substr(0, eq);
      if (env.contains(key)) throw InputError("options", "--env", "'" + key + "' is given twice");
      env[key] = kv.substr(eq + 1);
    }
    job["env"] = std::move(env);
  }
  if (a.has_weight) job["weight"] = a.weight;
  if (!a.tenant.empty()) job["tenant"] = a.tenant;
  try {
    live::check_job_spec(job, "options");
  } catch (const InputError& e) {
    // Name the flag rather than the JSON field ("--job-type", not "job_type").
    std::string flag = e.field();
    flag = flag.substr(0, flag.find_first_of(".["));
    std::replace(flag.begin(), flag.end(), '_', '-');
    throw InputError("options", "--" + flag, e.problem());
  }
  return job;
}

std::string job_id(const json& job) {
  const json* id = member(job, "id");
  if (!id || !id->is_string()) throw std::runtime_error("the server's job object has no \"id\"");
  return printable(id->get<std::string>());
}

std::string run_submit(const SubmitArgs& a) {
  const bool from_file = !a.file.empty();
  // Everything is checked before the first request.
  std::vector<json> jobs =
      from_file ? live::read_job_file(a.file) : std::vector<json>{job_from_flags(a)};
  live::LiveClient client = connect(a.server);
  json answers = json::array();
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    try {
      json answer = client.submit(jobs[i]);
      ids.push_back(job_id(answer));
      answers.push_back(std::move(answer));
    } catch (const InputError& e) {
      if (!from_file) throw;
      // Earlier entries are in the queue now: say which, so they are not
      // submitted twice when the file is fixed and sent again.
      std::string done = ids.empty()
                             ? "nothing was submitted"
                             : "submitted before it: " + fmt::format("{}", fmt::join(ids, " "));
      throw InputError(e.source(), e.field(),
                       fmt::format("{} ({}[{}]; {})", e.problem(), a.file, i, done));
    }
  }
  if (a.server.json) return pretty(from_file ? answers : answers.at(0));
  std::string out;
  for (const auto& id : ids) out += id + "\n";
  return out;
}

// ---- jobs ------------------------------------------------------------------

struct JobsArgs {
  ServerArgs server;
  std::string state;  // comma-separated
  std::string since, until;
  bool all = false;
  std::string tenant;
  std::string format;  // comma-separated column keys; "" = the default columns
  bool noheader = false;
  std::string id;
};

// squeue's TIME: [D-]H:MM:SS, or M:SS under an hour.
std::string clock_time(double s) {
  auto total = static_cast<long long>(std::max(0.0, s));
  const long long d = total / 86400, h = total / 3600 % 24, m = total / 60 % 60, sec = total % 60;
  if (d > 0) return fmt::format("{}-{:02}:{:02}:{:02}", d, h, m, sec);
  if (h > 0) return fmt::format("{}:{:02}:{:02}", h, m, sec);
  return fmt::format("{}:{:02}", m, sec);
}

// Time since the job first started, to its end or now ("-" before its
// first start).
std::string elapsed(const json& j, double now) {
  const json* start = member(j, "started_at");
  if (!start || !start->is_number()) return "-";
  const json* end = member(j, "finished_at");
  return clock_time((end && end->is_number() ? end->get<double>() : now) - start->get<double>());
}

// Why a job waits (squeue's REASON): "Priority", "Resources", ... or "-".
std::string reason(const json& j) {
  const json* p = member(j, "pending");
  return p ? cell(*p, "reason") : "-";
}

// `jobs`' columns: key for --format, title (">": right-aligned), cell.
struct JobColumn {
  const char* key;
  const char* title;
  std::string (*cell)(const json& job, double now);
};

const std::vector<JobColumn>& job_columns() {
  static const std::vector<JobColumn> columns = {
      {"id", "id", [](const json& j, double) { return cell(j, "id"); }},
      {"tenant", "tenant", [](const json& j, double) { return cell(j, "tenant"); }},
      {"name", "name", [](const json& j, double) { return cell(j, "name"); }},
      {"type", "job type", [](const json& j, double) { return cell(j, "job_type"); }},
      {"workers", ">workers", [](const json& j, double) { return cell(j, "workers"); }},
      {"state", "state", [](const json& j, double) { return cell(j, "state"); }},
      {"elapsed", ">elapsed", [](const json& j, double now) { return elapsed(j, now); }},
      {"reason", "reason", [](const json& j, double) { return reason(j); }},
      {"progress", ">progress", [](const json& j, double) { return progress(j); }},
      {"placement", "gpu/node", [](const json& j, double) { return placement(j); }},
      {"restarts", ">restarts", [](const json& j, double) { return cell(j, "restarts"); }},
      {"preemptions", ">preemptions", [](const json& j, double) { return cell(j, "preemptions"); }},
      {"submitted", "submitted", [](const json& j, double) { return when(j, "submitted_at"); }},
  };
  return columns;
}

constexpr const char* kDefaultJobColumns =
    "id,tenant,name,type,workers,state,elapsed,reason,progress,placement,restarts,preemptions";

std::vector<const JobColumn*> parse_job_format(const std::string& format) {
  std::vector<const JobColumn*> out;
  std::string valid;
  for (const auto& c : job_columns()) valid += (valid.empty() ? "" : ",") + std::string(c.key);
  std::string rest = format.empty() ? kDefaultJobColumns : format;
  while (!rest.empty()) {
    const std::string key = rest.substr(0, rest.find(','));
    rest = key.size() < rest.size() ? rest.substr(key.size() + 1) : "";
    auto it = std::find_if(job_columns().begin(), job_columns().end(),
                           [&key](const JobColumn& c) { return key == c.key; });
    if (it == job_columns().end())
      throw InputError("options", "--format",
                       fmt::format("unknown column '{}' (valid: {})", key, valid));
    out.push_back(&*it);
  }
  if (out.empty())
    throw InputError("options", "--format", "names no column (valid: " + valid + ")");
  return out;
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string jobs_table(const json& jobs, const std::vector<const JobColumn*>& columns,
                       bool header) {
  std::vector<std::string> titles;
  for (const JobColumn* c : columns) titles.push_back(c->title);
  Table t(titles);
  const double now = wall_now();
  for (const auto& j : jobs) {
    std::vector<std::string> row;
    for (const JobColumn* c : columns) row.push_back(c->cell(j, now));
    t.add(row);
  }
  return t.render(header);
}

std::string job_detail(const json& j) {
  std::string state = cell(j, "state");
  if (const json* code = member(j, "exit_code")) state += " (exit code " + cell(code) + ")";
  std::string gpus = placement(j);
  if (const json* lease = member(j, "lease")) gpus += ", lease " + cell(lease);
  std::string out = fields(
      {{"job", cell(j, "id")},
       {"name", cell(j, "name")},
       {"tenant", cell(j, "tenant")},
       {"job type", cell(j, "job_type")},
       {"workers", cell(j, "workers")},
       {"state", state},
       {"waits",
        member(j, "pending") ? reason(j) + ": " + cell(*member(j, "pending"), "detail") : "-"},
       {"progress", progress(j)},
       {"command", command_text(member(j, "command"))},
       {"env", cell(j, "env")},
       {"gpu/node", gpus},
       {"submitted", when(j, "submitted_at")},
       {"started", when(j, "started_at")},
       {"finished", when(j, "finished_at")},
       {"restarts", cell(j, "restarts")},
       {"preemptions", cell(j, "preemptions")},
       {"failures", cell(j, "failures")}});
  // The job's history: every run, where, how long and why it stopped.
  if (const json* runs = member(j, "runs"); runs && runs->is_array() && !runs->empty()) {
    Table t({">lease", "node", "gpu type", "devices", "start", "end", ">gpu-hours", "stopped",
             ">exit"});
    for (const auto& r : *runs) {
      std::string exit = "-";
      if (const json* sig = member(r, "signal"); sig && sig->is_number() && sig->get<int>() != 0)
        exit = "signal " + cell(sig);
      else if (member(r, "exit_code"))
        exit = cell(r, "exit_code");
      const json* prof = member(r, "profiling");
      const bool profiling = prof && prof->is_boolean() && prof->get<bool>();
      t.add({cell(r, "lease"), cell(r, "node"), cell(r, "gpu_type"), cell(r, "devices"),
             when(r, "start"), when(r, "end"),
             number(number_or(r, "gpu_seconds", 0) / 3600.0, 3),
             cell(r, "reason") + (profiling ? " (profiling)" : ""), exit});
    }
    out += "runs:\n" + t.render();
  }
  const json* tail = member(j, "log_tail");
  if (state.rfind("failed", 0) == 0 && tail && tail->is_string() &&
      !tail->get<std::string>().empty()) {
    out += "log tail:\n";
    std::string text = tail->get<std::string>();
    std::size_t pos = 0;
    while (pos < text.size()) {
      std::size_t end = text.find('\n', pos);
      if (end == std::string::npos) end = text.size();
      out += "  " + printable(text.substr(pos, end - pos)) + "\n";
      pos = end + 1;
    }
  }
  return out;
}

std::string run_jobs(const JobsArgs& a) {
  for (std::size_t pos = 0; !a.state.empty() && pos <= a.state.size();) {
    std::size_t comma = a.state.find(',', pos);
    if (comma == std::string::npos) comma = a.state.size();
    const std::string one = a.state.substr(pos, comma - pos);
    const auto& states = live::job_states();
    if (std::find(states.begin(), states.end(), one) == states.end())
      throw InputError(
          "options", "--state",
          fmt::format("unknown state '{}' (valid: {})", one, fmt::join(states, ", ")));
    pos = comma + 1;
  }
  const std::vector<const JobColumn*> columns = parse_job_format(a.format);
  live::LiveClient client = connect(a.server);
  if (!a.id.empty()) {
    json job = client.job(a.id);
    return a.server.json ? pretty(job) : job_detail(job);
  }
  json answer = client.jobs({{"state", a.state},
                             {"since", a.since},
                             {"until", a.until},
                             {"all", a.all ? "1" : ""}});
  if (!a.tenant.empty()) {  // the server lists what the token may see; keep one tenant's
    json& all = answer["jobs"];
    if (all.is_array())
      all.erase(std::remove_if(all.begin(), all.end(),
                               [&a](const json& j) { return cell(j, "tenant") != a.tenant; }),
                all.end());
  }
  if (a.server.json) return pretty(answer);
  const json& jobs = list(answer, "jobs", "GET /v1/jobs");
  if (a.noheader) return jobs_table(jobs, columns, false);
  if (jobs.empty()) return a.state.empty() ? "no jobs\n" : "no " + a.state + " jobs\n";
  // (Jobs that ended over job_retention_s ago are listed with --all.)
  return jobs_table(jobs, columns, true) + "\n" + plural(jobs.size(), "job") + " (" +
         tally(jobs, "state") + ")\n";
}

// ---- usage -----------------------------------------------------------------

struct UsageArgs {
  ServerArgs server;
  std::string since, until, tenant;
  std::string by = "tenant";
  std::string format = "table";
};

// A CSV field: quoted when it holds a comma, quote or line break.
std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string run_usage(const UsageArgs& a) {
  if (a.format != "table" && a.format != "csv" && a.format != "json")
    throw InputError("options", "--format",
                     fmt::format("unknown format '{}' (valid: table, csv, json)", a.format));
  if (a.by != "tenant" && a.by != "job")
    throw InputError("options", "--by",
                     fmt::format("unknown grouping '{}' (valid: tenant, job)", a.by));
  json answer = connect(a.server).usage(
      {{"since", a.since}, {"until", a.until}, {"tenant", a.tenant}, {"by", a.by}});
  if (a.server.json || a.format == "json") return pretty(answer);
  const json& rows = list(answer, "usage", "GET /v1/usage");
  const bool by_job = a.by == "job";
  if (a.format == "csv") {
    std::string out = by_job ? "job,tenant,gpu_type,gpu_seconds,gpu_hours,runs\n"
                             : "tenant,gpu_type,gpu_seconds,gpu_hours,runs\n";
    for (const auto& r : rows) {
      const auto text = [&r](const char* key) {
        const json* v = member(r, key);
        return v && v->is_string() ? v->get<std::string>() : std::string();
      };
      if (by_job) out += csv_field(text("job")) + ",";
      out += fmt::format("{},{},{:.3f},{:.6f},{}\n", csv_field(text("tenant")),
                         csv_field(text("gpu_type")), number_or(r, "gpu_seconds", 0),
                         number_or(r, "gpu_hours", 0), cell(r, "runs"));
    }
    return out;
  }
  std::string out = fmt::format("GPU usage from {} to {}\n", when(answer, "since"),
                                when(answer, "until"));
  if (rows.empty()) return out + "no runs in the window\n";
  std::vector<std::string> titles = {"tenant", "gpu type", ">gpu-hours", ">gpu-seconds", ">runs"};
  if (by_job) titles.insert(titles.begin(), "job");
  Table t(titles);
  for (const auto& r : rows) {
    std::vector<std::string> row = {cell(r, "tenant"), cell(r, "gpu_type"),
                                    fmt::format("{:.3f}", number_or(r, "gpu_hours", 0)),
                                    fmt::format("{:.0f}", number_or(r, "gpu_seconds", 0)),
                                    cell(r, "runs")};
    if (by_job) row.insert(row.begin(), cell(r, "job"));
    t.add(row);
  }
  return out + t.render() +
         fmt::format("\ntotal {:.3f} GPU-hours\n", number_or(answer, "gpu_seconds", 0) / 3600.0);
}

// ---- cancel ----------------------------------------------------------------

struct CancelArgs {
  ServerArgs server;
  std::vector<std::string> ids;
};

std::string run_cancel(const CancelArgs& a) {
  live::LiveClient client = connect(a.server);
  json answers = json::array();
  std::string out;
  for (std::size_t i = 0; i < a.ids.size(); ++i) {
    try {
      json job = client.cancel(a.ids[i]);
      out += fmt::format("{}: {}\n", job_id(job), cell(job, "state"));
      answers.push_back(std::move(job));
    } catch (const InputError& e) {
      if (i == 0) throw;
      std::vector<std::string> done(a.ids.begin(), a.ids.begin() + static_cast<std::ptrdiff_t>(i));
      throw InputError(e.source(), e.field(),
                       fmt::format("{} (cancelling {}; cancelled before it: {})", e.problem(),
                                   a.ids[i], fmt::join(done, " ")));
    }
  }
  if (a.server.json) return pretty(answers.size() == 1 ? answers[0] : answers);
  return out;
}

// ---- cluster, tenants, profiles, drain -------------------------------------

struct ClusterArgs {
  ServerArgs server;
  bool devices = false;
};

// One row per node, sinfo-style: its devices, how many runs hold, how many
// are free (on a ready node), the jobs on it, its last heartbeat and why it
// is drained.
std::string node_summary(const json& answer, const json& nodes) {
  std::string out = fmt::format(
      "round {}, policy {}, round length {}\n", cell(answer, "round"), cell(answer, "policy"),
      member(answer, "round_s") ? duration(number_or(answer, "round_s", 0)) : "-");
  if (nodes.empty()) return out + "no nodes registered\n";
  Table t(
      {"node", "gpu type", "state", ">devices", ">busy", ">free", ">jobs", ">heartbeat", "reason"});
  std::size_t devices = 0, busy_total = 0;
  for (const auto& n : nodes) {
    const json* dev = member(n, "devices");
    const std::size_t count = dev && dev->is_array() ? dev->size() : 0;
    const auto busy = static_cast<std::size_t>(std::max(0.0, number_or(n, "devices_busy", 0)));
    std::set<std::string> jobs;
    if (const json* holders = member(n, "holders"); holders && holders->is_array())
      for (const auto& h : *holders) jobs.insert(cell(h, "job"));
    const json* beat = member(n, "last_heartbeat_s_ago");
    const bool ready = cell(n, "state") == "ready";
    devices += count;
    busy_total += busy;
    t.add({cell(n, "name"), cell(n, "gpu_type"), cell(n, "state"), std::to_string(count),
           std::to_string(busy), ready ? std::to_string(count > busy ? count - busy : 0) : "0",
           std::to_string(jobs.size()),
           beat && beat->is_number() ? duration(beat->get<double>()) + " ago" : "-",
           cell(n, "reason")});
  }
  return out + t.render() +
         fmt::format("\n{} ({}), {} devices, {} busy\n", plural(nodes.size(), "node"),
                     tally(nodes, "state"), devices, busy_total);
}

std::string run_cluster(const ClusterArgs& args) {
  const ServerArgs& a = args.server;
  json answer = connect(a).cluster();
  if (a.json) return pretty(answer);
  if (!args.devices) return node_summary(answer, list(answer, "nodes", "GET /v1/cluster"));
  const json& nodes = list(answer, "nodes", "GET /v1/cluster");
  std::string out = fmt::format(
      "round {}, policy {}, round length {}\n", cell(answer, "round"), cell(answer, "policy"),
      member(answer, "round_s") ? duration(number_or(answer, "round_s", 0)) : "-");
  if (nodes.empty()) return out + "no nodes registered\n";
  Table t({"node", "gpu type", ">devices", "state", ">heartbeat", ">device", "job", "tenant",
           ">lease", ">lease left"});
  std::size_t devices = 0, held = 0;
  for (const auto& n : nodes) {
    const json* dev = member(n, "devices");
    std::size_t count = dev && dev->is_array()             ? dev->size()
                        : dev && dev->is_number_unsigned() ? dev->get<std::size_t>()
                                                           : 0;
    devices += count;
    const json* beat = member(n, "last_heartbeat_s_ago");
    std::vector<std::string> node_cells = {
        cell(n, "name"), cell(n, "gpu_type"), dev ? std::to_string(count) : "-", cell(n, "state"),
        beat && beat->is_number() ? duration(beat->get<double>()) + " ago" : "-"};
    const json* holders = member(n, "holders");
    if (!holders || !holders->is_array() || holders->empty()) {
      node_cells.insert(node_cells.end(), {"-", "-", "-", "-", "-"});
      t.add(node_cells);
      continue;
    }
    bool first = true;
    for (const auto& h : *holders) {
      const json* d = member(h, "device");
      held += d && d->is_array() ? d->size() : 1;
      const json* left = member(h, "lease_end_in_s");
      std::vector<std::string> row =
          first ? node_cells : std::vector<std::string>{cell(n, "name"), "", "", "", ""};
      row.insert(row.end(),
                 {cell(d), cell(h, "job"), cell(h, "tenant"), cell(h, "lease"),
                  left && left->is_number() ? duration(std::max(0.0, left->get<double>())) : "-"});
      t.add(row);
      first = false;
    }
  }
  return out + t.render() +
         fmt::format("\n{} ({}), {} devices, {} held\n", plural(nodes.size(), "node"),
                     tally(nodes, "state"), devices, held);
}

std::string run_tenants(const ServerArgs& a) {
  json answer = connect(a).tenants();
  if (a.json) return pretty(answer);
  const json& tenants = list(answer, "tenants", "GET /v1/tenants");
  if (tenants.empty()) return "no tenants\n";
  Table t({"tenant", ">weight", ">active jobs", ">gpus held", ">share", ">norm. throughput"});
  for (const auto& x : tenants)
    t.add({cell(x, "name"), cell(x, "weight"), cell(x, "jobs_active"), cell(x, "gpus_held"),
           cell(x, "share"), cell(x, "normalised_throughput")});
  return t.render();
}

struct ProfilesArgs {
  ServerArgs server;
  std::string reset;  // a job type: forget its measured profiles (admin)
  std::string tenant, gpu_type;
};

std::string run_profiles(const ProfilesArgs& pa) {
  const ServerArgs& a = pa.server;
  if (pa.reset.empty() && (!pa.tenant.empty() || !pa.gpu_type.empty()))
    throw InputError("options", pa.tenant.empty() ? "--gpu-type" : "--tenant", "only with --reset");
  if (!pa.reset.empty()) {
    json answer = connect(a).reset_profiles(pa.reset, pa.tenant, pa.gpu_type);
    if (a.json) return pretty(answer);
    return fmt::format("{}: {} measured profile(s) reset; measured again when next run\n",
                       printable(pa.reset), cell(answer, "removed"));
  }
  json answer = connect(a).profiles();
  if (a.json) return pretty(answer);
  const json& profiles = list(answer, "profiles", "GET /v1/profiles");
  if (profiles.empty()) return "no throughput profiles\n";
  Table t({"job type", "gpu type", ">workers", ">iterations/s", "source", "tenant"});
  for (const auto& p : profiles)
    t.add({cell(p, "job_type"), cell(p, "gpu_type"), cell(p, "workers"),
           cell(member(p, "iterations_per_s"), 2), cell(p, "source"), cell(p, "tenant")});
  return t.render();
}

struct NodeArgs {
  ServerArgs server;
  std::string node;
  std::string reason;
};

std::string run_drain(const NodeArgs& a, bool drain) {
  live::LiveClient client = connect(a.server);
  json node = drain ? client.drain(a.node, a.reason) : client.undrain(a.node);
  if (a.server.json) return pretty(node);
  return fmt::format(
      "node {}: {}{}\n", member(node, "name") ? cell(node, "name") : printable(a.node),
      cell(node, "state"), member(node, "reason") ? " (" + cell(node, "reason") + ")" : "");
}

// ---- logs ------------------------------------------------------------------

struct LogsArgs {
  ServerArgs server;
  std::string job;
  std::string state_dir;
  std::string checkpoint_dir;  // the Slurm backend's checkpoint_dir: its <job>.log
  bool follow = false;
  bool raw = false;
  double poll_s = 0.5;
};

// The job's runs on this node: <state-dir>/runs/<lease>/ whose job_id names
// it, by lease (the order they ran in).
std::vector<std::pair<long long, std::filesystem::path>> job_runs(const LogsArgs& a) {
  namespace fs = std::filesystem;
  std::vector<std::pair<long long, fs::path>> runs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(a.state_dir) / "runs", ec)) {
    std::ifstream in(entry.path() / "job_id");
    std::string id;
    if (!std::getline(in, id) || id != a.job) continue;
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    runs.emplace_back(std::stoll(name), entry.path());
  }
  if (ec)
    throw InputError("--state-dir", "",
                     fmt::format("cannot list {}/runs: {}", a.state_dir, ec.message()));
  std::sort(runs.begin(), runs.end());
  return runs;
}

// A job's output as it may reach the operator's terminal (issue 30, low): a
// job must not move the cursor, retitle the window or answer for the
// operator with escape sequences. Newlines and tabs pass, and so does UTF-8
// text; a carriage return not before a newline becomes a newline (progress
// bars stay readable, nothing is overwritten); every other control byte (C0,
// DEL, the C1 controls U+0080..U+009F) and every byte that is not UTF-8 is
// shown as \xNN. Returns how much of `bytes` it wrote out: at the end of
// what has been read so far (`more`), a character or CR that may go on in
// the next read is left for then.
std::size_t escape_for_terminal(std::string_view bytes, bool more, std::string& out) {
  const auto at = [&bytes](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  auto hex = [&out](unsigned char c) { out += fmt::format("\\x{:02x}", c); };
  std::size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char c = at(i);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c == '\r') {
      if (i + 1 == bytes.size() && more) break;
      out += i + 1 < bytes.size() && bytes[i + 1] == '\n' ? "\r" : "\n";
      ++i;
      continue;
    }
    // A UTF-8 sequence (RFC 3629): its length from the lead byte, the range
    // of the byte after it.
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      lo = c == 0xE0 ? 0xA0 : 0x80;
      hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      lo = c == 0xF0 ? 0x90 : 0x80;
      hi = c == 0xF4 ? 0x8F : 0xBF;
    }
    std::size_t good = n > 0 ? 1 : 0;  // bytes of the sequence that fit
    while (good > 0 && good < n && i + good < bytes.size()) {
      const unsigned char next = at(i + good);
      const bool fits = good == 1 ? next >= lo && next <= hi : next >= 0x80 && next <= 0xBF;
      if (!fits) break;
      ++good;
    }
    if (n > 0 && good < n && i + good == bytes.size() && more) break;  // the rest comes later
    if (n > 0 && good == n && !(c == 0xC2 && at(i + 1) <= 0x9F)) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    // A control byte, a C1 control, or a byte that starts no character.
    const std::size_t shown = n == 2 && good == 2 ? 2 : 1;
    for (std::size_t k = 0; k < shown; ++k) hex(at(i + k));
    i += shown;
  }
  return i;
}

// Writes what `log` holds from `offset` on (escaped unless `raw`); returns
// the new offset.
std::uintmax_t copy_from(const std::filesystem::path& log, std::uintmax_t offset, bool raw) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return offset;
  in.seekg(static_cast<std::streamoff>(offset));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t used = chunk.size();
  if (!raw) {
    std::string shown;
    used = escape_for_terminal(chunk, true, shown);
    chunk = std::move(shown);
  }
  std::fwrite(chunk.data(), 1, chunk.size(), stdout);
  std::fflush(stdout);
  return offset + used;
}

// The Slurm backend: the job's one log file (every run's output, written by
// Slurm on its nodes into the shared checkpoint folder).
std::string slurm_job_logs(const LogsArgs& a) {
  if (const std::string problem = live::name_problem(a.job); !problem.empty())
    throw InputError("logs", "job", "'" + a.job + "': " + problem);
  const std::filesystem::path log = live::slurm::job_log_path(a.checkpoint_dir, a.job);
  if (!a.follow) {
    std::ifstream in(log, std::ios::binary);
    if (!in)
      throw InputError("logs", "--checkpoint-dir",
                       fmt::format("no output of job {} at {} (the Slurm backend writes it there)",
                                   a.job, log.string()));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (a.raw) return text;
    std::string out;
    escape_for_terminal(text, false, out);
    return out;
  }
  for (std::uintmax_t offset = 0;;) {
    offset = copy_from(log, offset, a.raw);
    std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_s));
  }
}

std::string run_logs(const LogsArgs& a) {
  if (!a.checkpoint_dir.empty()) return slurm_job_logs(a);
  auto runs = job_runs(a);
  if (runs.empty() && !a.follow)
    throw InputError("logs", "",
                     fmt::format("no run of job {} under {}/runs (the agent of the node it ran "
                                 "on keeps its output there)",
                                 a.job, a.state_dir));
  std::string out;
  if (!a.follow) {
    for (const auto& [lease, dir] : runs) {
      if (runs.size() > 1) out += fmt::format("==> lease {} <==\n", lease);
      std::ifstream in(dir / "log", std::ios::binary);
      const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (a.raw)
        out += log;
      else
        escape_for_terminal(log, false, out);
    }
    return out;
  }
  // -f: every run's output so far, then what the newest run writes, and the
  // runs that start later (a preempted job resumes under a new lease), until
  // interrupted. Streamed, not composed.
  std::map<long long, std::uintmax_t> offsets;
  for (;;) {
    for (const auto& [lease, dir] : job_runs(a)) {
      if (!offsets.count(lease) && !offsets.empty())
        std::fprintf(stdout, "==> lease %lld <==\n", lease);
      offsets[lease] = copy_from(dir / "log", offsets[lease], a.raw);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_s));
  }
}

// Through the server (a tenant's view, any node): each run's log in lease
// order, fetched in chunks (GET /v1/jobs/{id}/log); on Slurm the job's one
// log. -f: then what the latest run writes, and later runs, until
// interrupted.
std::string run_logs_server(const LogsArgs& a) {
  live::LiveClient client = connect(a.server);
  std::string out;
  // Escaped as they arrive: a character split between chunks waits for the
  // rest (escape_for_terminal's `more`).
  auto emit = [&](std::string& pending, const std::string& bytes, bool more) {
    pending += bytes;
    std::string shown;
    std::size_t used = pending.size();
    if (a.raw)
      shown = pending;
    else
      used = escape_for_terminal(pending, more, shown);
    pending.erase(0, used);
    if (a.follow) {
      std::fwrite(shown.data(), 1, shown.size(), stdout);
      std::fflush(stdout);
    } else {
      out += shown;
    }
  };
  auto decoded = [&](const json& chunk) {
    const json* data = member(chunk, "data");
    std::optional<std::string> bytes =
        data && data->is_string() ? live::LogRelay::unbase64(data->get<std::string>())
                                  : std::nullopt;
    if (!bytes)
      throw std::runtime_error(fmt::format("server {}: GET /v1/jobs/{}/log: no base64 \"data\"",
                                           a.server.url, a.job));
    return *bytes;
  };
  struct Stream {
    std::int64_t offset = 0;
    std::string pending;
    bool done = false;
  };
  std::map<std::int64_t, Stream> streams;  // by lease (0: Slurm's one log)
  bool header = false;
  for (;;) {
    const json latest = client.job_log(a.job, 0, 0);
    std::vector<std::pair<std::int64_t, bool>> runs;  // (lease, running)
    if (cell(latest, "source") == "slurm") {
      runs.push_back({0, true});
    } else if (const json* list = member(latest, "runs"); list && list->is_array()) {
      for (const auto& r : *list) runs.push_back({r.value("lease", 0LL), r.value("running", false)});
    }
    header = header || runs.size() > 1;
    for (const auto& [lease, running] : runs) {
      Stream& s = streams[lease];
      if (s.done) continue;
      if (header && s.offset == 0 && s.pending.empty()) {
        const std::string title = fmt::format("==> lease {} <==\n", lease);
        if (a.follow)
          std::fputs(title.c_str(), stdout);
        else
          out += title;
      }
      for (;;) {
        const json chunk = client.job_log(a.job, lease, s.offset);
        const std::string bytes = decoded(chunk);
        s.offset = chunk.value("next_offset", s.offset + static_cast<std::int64_t>(bytes.size()));
        const bool at_end = bytes.empty() || s.offset >= chunk.value("size", std::int64_t{0});
        emit(s.pending, bytes, !at_end || (a.follow && running));
        if (at_end) break;
      }
      s.done = !running || !a.follow;
    }
    if (!a.follow) {
      if (runs.empty())
        throw InputError("logs", "", fmt::format("job {} has not run yet: no output", a.job));
      return out;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(std::max(a.poll_s, 1.0)));
  }
}

std::string run_node_token(const NodeArgs& a) {
  json answer = connect(a.server).node_token(a.node);
  if (a.server.json) return pretty(answer);
  return cell(answer, "token") + "\n";
}

struct TenantArgs {
  ServerArgs server;
  std::string name;
  double weight = 0.0;  // 0: unchanged (1 for a new tenant)
  std::string token;
};

std::string run_set_tenant(const TenantArgs& a) {
  json body = {{"name", a.name}};
  if (a.weight > 0) body["weight"] = a.weight;
  if (!a.token.empty()) body["token"] = a.token;
  json t = connect(a.server).set_tenant(body);
  if (a.server.json) return pretty(t);
  return fmt::format("tenant {}: weight {}\n", cell(t, "name"), cell(t, "weight"));
}

}  // namespace

void add_client_commands(CLI::App& app, std::vector<std::pair<CLI::App*, Command>>& commands) {
  auto sub = std::make_shared<SubmitArgs>();
  auto* submit = app.add_subcommand(
      "submit",
      "submit a job to `fairgpu serve`: fairgpu submit --name N --job-type T --workers W "
      "--iterations I [--env K=V ...] -- COMMAND ARGS... (or --command \"shell string\", or "
      "--file jobs.json); prints the new job id(s)");
  add_server_options(submit, sub->server);
  auto* file = submit->add_option(
      "--file", sub->file,
      "submit every job of a JSON array of job objects ({\"name\", \"job_type\", \"workers\", "
      "\"iterations\", \"command\", \"env\"?, \"weight\"?, \"tenant\"?}); all are checked "
      "before the first is sent");
  std::vector<CLI::Option*> single = {
      submit->add_option("--name", sub->name, "job name"),
      submit->add_option("--job-type", sub->job_type,
                         "job type (model and batch size; its throughput profile is measured "
                         "first when the server has none)"),
      submit->add_option("--workers", sub->workers, "gang size: GPUs, all or nothing"),
      submit->add_option("--iterations", sub->iterations, "iterations of work"),
      // One value per --env, so a `--` after it still starts the command
      // (CLI11 lets `--` end an open-ended list and swallows it).
      submit->add_option("--env", sub->env, "KEY=VALUE added to the job's environment (repeatable)")
          ->expected(1)
          ->allow_extra_args(false)
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll),
      submit->add_option("--weight", sub->weight, "job weight inside its tenant (> 0)"),
      submit->add_option("--tenant", sub->tenant, "submit for this tenant (admin token only)"),
      submit->add_option("--command", sub->shell_command, "the command as one /bin/sh -c string"),
      submit->add_option("argv", sub->argv, "the command after `--`, run with execvp")};
  for (auto* opt : single) file->excludes(opt);
  single[5]->each([sub](const std::string&) { sub->has_weight = true; });
  commands.push_back({submit, [sub] { return run_submit(*sub); }});

  auto jobs_args = std::make_shared<JobsArgs>();
  auto* jobs = app.add_subcommand(
      "jobs", "list jobs (a tenant sees its own, the admin all), or show one job in detail");
  add_server_options(jobs, jobs_args->server);
  auto* state = jobs->add_option(
      "--state", jobs_args->state,
      "only jobs in these states, comma-separated: profiling, queued, running, finished, "
      "failed, cancelled");
  auto* since = jobs->add_option(
      "--since", jobs_args->since,
      "only jobs not ended before T (unix seconds or ISO-8601, e.g. 2026-11-27T03:00:00Z)");
  auto* until = jobs->add_option("--until", jobs_args->until, "only jobs submitted before T");
  auto* all = jobs->add_flag("--all", jobs_args->all,
                             "list jobs that ended longer ago than the server's job_retention_s "
                             "too (a --since/--until window lists them as well)");
  auto* tenant_filter = jobs->add_option("--tenant", jobs_args->tenant, "only this tenant's jobs");
  auto* format = jobs->add_option(
      "--format", jobs_args->format,
      std::string("columns, comma-separated, of: id, tenant, name, type, workers, state, elapsed "
                  "(since the first start, squeue's TIME), reason (why it waits), progress, "
                  "placement, restarts, preemptions, submitted (default: ") +
          kDefaultJobColumns + ")");
  auto* noheader = jobs->add_flag("--noheader", jobs_args->noheader,
                                  "no header line and no summary line (for scripts)");
  jobs->add_option("id", jobs_args->id,
                   "a job id: show that job in detail, with every run (node, GPU type, "
                   "devices, start, end, GPU-hours, why it stopped, exit)")
      ->excludes(state)
      ->excludes(since)
      ->excludes(until)
      ->excludes(all)
      ->excludes(tenant_filter)
      ->excludes(format)
      ->excludes(noheader);
  commands.push_back({jobs, [jobs_args] { return run_jobs(*jobs_args); }});

  auto usage_args = std::make_shared<UsageArgs>();
  auto* usage = app.add_subcommand(
      "usage",
      "GPU-hours by tenant (or job) and GPU type over a window, from the runs the server "
      "stores; a run counts the part of it inside the window (the admin sees every tenant, a "
      "tenant its own)");
  add_server_options(usage, usage_args->server);
  usage->add_option("--since", usage_args->since,
                    "window start: unix seconds or ISO-8601 (2026-11-27, 2026-11-27T03:00:00Z, "
                    "...; no offset: UTC; default: the beginning)");
  usage->add_option("--until", usage_args->until, "window end, as --since (default: now)");
  usage->add_option("--tenant", usage_args->tenant, "one tenant's only (admin)");
  usage->add_option("--by", usage_args->by, "rows per tenant (default) or per job");
  usage->add_option("--format", usage_args->format, "table (default), csv or json");
  commands.push_back({usage, [usage_args] { return run_usage(*usage_args); }});

  auto cancel_args = std::make_shared<CancelArgs>();
  auto* cancel = app.add_subcommand(
      "cancel", "cancel jobs (a running job is revoked: it checkpoints and stops)");
  add_server_options(cancel, cancel_args->server);
  cancel->add_option("ids", cancel_args->ids, "job ids")->required();
  commands.push_back({cancel, [cancel_args] { return run_cancel(*cancel_args); }});

  auto cluster_args = std::make_shared<ClusterArgs>();
  auto* cluster = app.add_subcommand(
      "cluster",
      "one row per node: GPU type, state, devices busy and free, jobs, last heartbeat and "
      "drain reason (--devices: who holds which device until when)");
  add_server_options(cluster, cluster_args->server);
  cluster->add_flag("--devices", cluster_args->devices,
                    "one row per lease holder: device, job, tenant, lease and time left");
  commands.push_back({cluster, [cluster_args] { return run_cluster(*cluster_args); }});

  auto tenants_args = std::make_shared<ServerArgs>();
  auto* tenants = app.add_subcommand(
      "tenants", "tenants with weight, active jobs, GPUs held, share and normalised throughput");
  add_server_options(tenants, *tenants_args);
  commands.push_back({tenants, [tenants_args] { return run_tenants(*tenants_args); }});

  auto tenant_args = std::make_shared<TenantArgs>();
  auto* tenant = app.add_subcommand(
      "tenant", "add a tenant or change its weight or API token (admin; takes effect at the next round)");
  add_server_options(tenant, tenant_args->server);
  tenant->add_option("name", tenant_args->name, "tenant name")->required();
  tenant->add_option("--weight", tenant_args->weight, "weight (> 0; a new tenant's default is 1)")
      ->check(CLI::PositiveNumber);
  tenant->add_option("--new-token", tenant_args->token,
                     "the tenant's API token (required for a new tenant; >= 8 characters)");
  commands.push_back({tenant, [tenant_args] { return run_set_tenant(*tenant_args); }});

  auto profiles_args = std::make_shared<ProfilesArgs>();
  auto* profiles = app.add_subcommand(
      "profiles", "throughput profiles: iterations/s per job type, GPU type and workers");
  add_server_options(profiles, profiles_args->server);
  profiles->add_option("--reset", profiles_args->reset,
                       "forget the measured profiles of this job type (admin); its jobs are "
                       "profiled again");
  profiles->add_option("--tenant", profiles_args->tenant, "with --reset: that tenant's only");
  profiles->add_option("--gpu-type", profiles_args->gpu_type,
                       "with --reset: on that GPU type only");
  commands.push_back({profiles, [profiles_args] { return run_profiles(*profiles_args); }});

  for (bool drain : {true, false}) {
    auto node_args = std::make_shared<NodeArgs>();
    auto* c = app.add_subcommand(drain ? "drain" : "undrain",
                                 drain ? "stop placing jobs on a node (admin)"
                                       : "place jobs on a drained node again (admin)");
    add_server_options(c, node_args->server);
    c->add_option("node", node_args->node, "node name")->required();
    if (drain)
      c->add_option("--reason", node_args->reason,
                    "why (kept and shown by `fairgpu cluster` until the node is undrained)");
    commands.push_back({c, [node_args, drain] { return run_drain(*node_args, drain); }});
  }
  {
    auto logs_args = std::make_shared<LogsArgs>();
    auto* logs = app.add_subcommand(
        "logs",
        "print a job's output (stdout and stderr of each of its runs, in lease order): with a "
        "token (--token, --token-file or their variables) through the server, from whichever "
        "node ran it (a tenant's own jobs; on Slurm the job's log file); else, or with "
        "--state-dir, read on the node where it ran from the agent's state dir; -f follows it, "
        "new runs included, until interrupted");
    add_server_options(logs, logs_args->server);
    logs->add_option("job", logs_args->job, "job id")->required();
    logs->add_option("--state-dir", logs_args->state_dir,
                     "read on this node: the agent's --state-dir (default, without a token: "
                     "./fairgpu-agent-<host name>)");
    logs->add_option("--checkpoint-dir", logs_args->checkpoint_dir,
                     "the Slurm backend, read on the server's host: serve's checkpoint_dir, "
                     "where Slurm writes each job's output as <job>.log");
    logs->add_flag("-f,--follow", logs_args->follow, "keep printing what the job writes");
    logs->add_flag("--raw", logs_args->raw,
                   "write the output's bytes as they are (default: control characters other "
                   "than newline and tab, and bytes that are not UTF-8, are shown as \\xNN, so "
                   "that a job's escape sequences never reach the terminal)");
    commands.push_back({logs, [logs_args] {
                          const ServerArgs& server = logs_args->server;
                          if (logs_args->state_dir.empty() && logs_args->checkpoint_dir.empty() &&
                              (!server.token.empty() || !server.token_file.empty()))
                            return run_logs_server(*logs_args);
                          if (logs_args->state_dir.empty()) {
                            char host[256] = {};
                            gethostname(host, sizeof host - 1);
                            std::string name(host);
                            logs_args->state_dir =
                                "./fairgpu-agent-" + name.substr(0, name.find('.'));
                          }
                          return run_logs(*logs_args);
                        }});
  }

  auto token_args = std::make_shared<NodeArgs>();
  auto* node_token = app.add_subcommand(
      "node-token",
      "issue a new token for a node's agent (admin); prints it. It authorises that node's "
      "registration and heartbeats only and replaces the one issued before. Keep it in a file "
      "readable by the agent alone and start the agent with --token-file");
  add_server_options(node_token, token_args->server);
  node_token->add_option("node", token_args->node, "node name")->required();
  commands.push_back({node_token, [token_args] { return run_node_token(*token_args); }});
}

}  // namespace fairgpu::cli
