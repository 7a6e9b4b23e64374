#include "live/slurm/parse.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <utility>

#include "fairgpu/input_error.h"

namespace fairgpu::live::slurm {
namespace {

struct StateName {
  JobState state;
  const char* name;
};
constexpr std::array<StateName, 24> kStateNames{{
    {JobState::kPending, "PENDING"},           {JobState::kRunning, "RUNNING"},
    {JobState::kSuspended, "SUSPENDED"},       {JobState::kCompleting, "COMPLETING"},
    {JobState::kCompleted, "COMPLETED"},       {JobState::kConfiguring, "CONFIGURING"},
    {JobState::kCancelled, "CANCELLED"},       {JobState::kFailed, "FAILED"},
    {JobState::kTimeout, "TIMEOUT"},           {JobState::kPreempted, "PREEMPTED"},
    {JobState::kNodeFail, "NODE_FAIL"},        {JobState::kRevoked, "REVOKED"},
    {JobState::kSpecialExit, "SPECIAL_EXIT"},  {JobState::kBootFail, "BOOT_FAIL"},
    {JobState::kDeadline, "DEADLINE"},         {JobState::kOutOfMemory, "OUT_OF_MEMORY"},
    {JobState::kRequeued, "REQUEUED"},         {JobState::kRequeueHold, "REQUEUE_HOLD"},
    {JobState::kRequeueFed, "REQUEUE_FED"},    {JobState::kResizing, "RESIZING"},
    {JobState::kResvDelHold, "RESV_DEL_HOLD"}, {JobState::kSignaling, "SIGNALING"},
    {JobState::kStageOut, "STAGE_OUT"},        {JobState::kStopped, "STOPPED"},
}};

// Node states of 22.05 (scontrol prints BASE+FLAG+FLAG...).
const std::set<std::string_view> kNodeBaseStates{"UNKNOWN", "DOWN",  "IDLE",  "ALLOCATED",
                                                 "ERROR",   "MIXED", "FUTURE"};
const std::set<std::string_view> kNodeFlags{"CLOUD",          "COMPLETING",    "DRAIN",
                                            "DYNAMIC_FUTURE", "DYNAMIC_NORM",  "FAIL",
                                            "INVALID_REG",    "MAINTENANCE",   "NOT_RESPONDING",
                                            "PERFCTRS",       "PLANNED",       "POWER_DOWN",
                                            "POWER_UP",       "POWERED_DOWN",  "POWERING_DOWN",
                                            "POWERING_UP",    "REBOOT_ISSUED", "REBOOT_REQUESTED",
                                            "RESERVED",       "RESUME",        "UNDRAIN",
                                            "DRAINED",        "DRAINING"};
// Flags under which a node takes no new job.
const std::set<std::string_view> kUnusableFlags{
    "DRAIN",          "DRAINED",       "DRAINING",         "FAIL",
    "NOT_RESPONDING", "POWER_DOWN",    "POWERED_DOWN",     "POWERING_DOWN",
    "POWERING_UP",    "REBOOT_ISSUED", "REBOOT_REQUESTED", "INVALID_REG",
    "MAINTENANCE",    "FUTURE",        "DYNAMIC_FUTURE"};

[[noreturn]] void fail(const std::string& source, const std::string& field,
                       const std::string& problem) {
  throw InputError(source, field, problem);
}

std::string quoted(std::string_view s) {
  constexpr std::size_t kMax = 60;
  std::string out = "'";
  out.append(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out + "'";
}

template <typename Int>
bool parse_int(std::string_view s, Int& out) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

template <typename Int>
Int need_int(std::string_view s, const std::string& source, const std::string& field) {
  Int v{};
  if (!parse_int(s, v)) fail(source, field, "not a non-negative integer: " + quoted(s));
  return v;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// Splits at `sep` outside parentheses/brackets.
std::vector<std::string_view> split_top(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '(' || c == '[') ++depth;
    if ((c == ')' || c == ']') && depth > 0) --depth;
    if (c == sep && depth == 0) {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(s.substr(start));
  return parts;
}

bool host_char_ok(char c) { return c > ' ' && c != ',' && c != '[' && c != ']' && c != 0x7f; }

// Expands one host expression (no top-level comma) into `out`, prefixed.
void expand_host(std::string_view expr, const std::string& prefix, std::vector<std::string>& out,
                 const std::string& source, const std::string& field) {
  const std::size_t open = expr.find('[');
  if (open == std::string_view::npos) {
    if (expr.find(']') != std::string_view::npos) fail(source, field, "']' without '['");
    for (char c : expr)
      if (!host_char_ok(c)) fail(source, field, "bad character in host name " + quoted(expr));
    out.push_back(prefix + std::string(expr));
    if (out.size() > kMaxHostListNames) fail(source, field, "host list names too many nodes");
    return;
  }
  const std::size_t close = expr.find(']', open);
  if (close == std::string_view::npos) fail(source, field, "'[' without ']'");
  const std::string_view head = expr.substr(0, open);
  for (char c : head)
    if (!host_char_ok(c)) fail(source, field, "bad character in host name " + quoted(expr));
  const std::string_view ranges = expr.substr(open + 1, close - open - 1);
  const std::string_view rest = expr.substr(close + 1);
  if (ranges.empty()) fail(source, field, "empty range '[]'");
  for (std::string_view range : split_top(ranges, ',')) {
    const std::size_t dash = range.find('-');
    const std::string_view lo_text = range.substr(0, dash);
    const std::string_view hi_text =
        dash == std::string_view::npos ? lo_text : range.substr(dash + 1);
    std::uint64_t lo = 0, hi = 0;
    if (!parse_int(lo_text, lo) || !parse_int(hi_text, hi))
      fail(source, field, "bad range " + quoted(range));
    if (hi < lo) fail(source, field, "range goes down: " + quoted(range));
    if (hi - lo >= kMaxHostListNames) fail(source, field, "host list names too many nodes");
    const std::size_t width = lo_text.size();
    for (std::uint64_t v = lo; v <= hi; ++v) {
      std::string number = std::to_string(v);
      if (number.size() < width) number.insert(0, width - number.size(), '0');
      expand_host(rest, prefix + std::string(head) + number, out, source, field);
    }
  }
}

// A scontrol -o record: its Key=Value fields in order. A word that does not
// start with "Key=" continues the previous value (values may hold spaces).
using Fields = std::vector<std::pair<std::string_view, std::string_view>>;

bool is_key_char(char c, bool first) {
  if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) return true;
  if (first) return false;
  return (c >= '0' && c <= '9') || c == '_' || c == ':' || c == '/';
}

Fields split_fields(std::string_view line) {
  Fields fields;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    std::size_t end = line.find(' ', i);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view word = line.substr(i, end - i);
    std::size_t k = 0;
    while (k < word.size() && is_key_char(word[k], k == 0)) ++k;
    if (k > 0 && k < word.size() && word[k] == '=') {
      fields.emplace_back(word.substr(0, k), word.substr(k + 1));
    } else if (!fields.empty()) {
      // Continuation: widen the previous value up to this word's end.
      auto& value = fields.back().second;
      const char* begin = value.data();
      value = std::string_view(begin, static_cast<std::size_t>(line.data() + end - begin));
    } else {
      fields.emplace_back(std::string_view(), word);
    }
    i = end;
  }
  return fields;
}

// First occurrence of each key.
std::map<std::string_view, std::string_view> first_of(const Fields& fields) {
  std::map<std::string_view, std::string_view> m;
  for (const auto& f : fields) m.emplace(f.first, f.second);
  return m;
}

std::string_view need_field(const std::map<std::string_view, std::string_view>& m,
                            std::string_view key, const std::string& source,
                            const std::string& where) {
  auto it = m.find(key);
  if (it == m.end()) fail(source, where + std::string(key), "missing");
  return it->second;
}

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

JobState need_state(std::string_view name, const std::string& source, const std::string& field) {
  auto s = job_state_from_name(name);
  if (!s) fail(source, field, "unknown job state " + quoted(name));
  return *s;
}

std::vector<Gres> gpu_entries(std::vector<Gres> all) {
  all.erase(std::remove_if(all.begin(), all.end(), [](const Gres& g) { return g.name != "gpu"; }),
            all.end());
  return all;
}

}  // namespace

std::optional<JobState> job_state_from_name(std::string_view name) {
  for (const auto& s : kStateNames)
    if (name == s.name) return s.state;
  return std::nullopt;
}

const char* job_state_name(JobState state) {
  for (const auto& s : kStateNames)
    if (s.state == state) return s.name;
  return "?";
}

bool holds_nodes(JobState state) {
  switch (state) {
    case JobState::kRunning:
    case JobState::kConfiguring:
    case JobState::kCompleting:
    case JobState::kSuspended:
    case JobState::kSignaling:
    case JobState::kStageOut:
    case JobState::kResizing:
    case JobState::kStopped:
      return true;
    default:
      return false;
  }
}

bool is_final(JobState state) {
  switch (state) {
    case JobState::kCompleted:
    case JobState::kCancelled:
    case JobState::kFailed:
    case JobState::kTimeout:
    case JobState::kPreempted:
    case JobState::kNodeFail:
    case JobState::kBootFail:
    case JobState::kDeadline:
    case JobState::kOutOfMemory:
    case JobState::kRevoked:
    case JobState::kSpecialExit:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> expand_host_list(std::string_view list, const std::string& source,
                                          const std::string& field) {
  std::vector<std::string> out;
  list = trim(list);
  if (list.empty() || list == "(null)") return out;
  for (std::string_view item : split_top(list, ',')) {
    if (item.empty()) fail(source, field, "empty name in host list " + quoted(list));
    expand_host(item, "", out, source, field);
  }
  return out;
}

std::vector<int> expand_index_list(std::string_view list, const std::string& source,
                                   const std::string& field) {
  std::vector<int> out;
  if (list.empty()) fail(source, field, "empty index list");
  for (std::string_view range : split_top(list, ',')) {
    const std::size_t dash = range.find('-');
    int lo = 0, hi = 0;
    if (!parse_int(range.substr(0, dash), lo) ||
        !parse_int(dash == std::string_view::npos ? range : range.substr(dash + 1), hi) ||
        hi < lo || hi > 65535)
      fail(source, field, "bad index range " + quoted(range));
    if (!out.empty() && lo <= out.back())
      fail(source, field, "index list not ascending " + quoted(list));
    for (int v = lo; v <= hi; ++v) out.push_back(v);
  }
  return out;
}

std::vector<Gres> parse_gres_list(std::string_view text, const std::string& source,
                                  const std::string& field) {
  std::vector<Gres> out;
  text = trim(text);
  if (text.empty() || text == "(null)" || text == "N/A") return out;
  for (std::string_view entry : split_top(text, ',')) {
    Gres g;
    std::string_view paren;
    const std::size_t open = entry.find('(');
    if (open != std::string_view::npos) {
      if (entry.back() != ')') fail(source, field, "unclosed '(' in " + quoted(entry));
      paren = entry.substr(open + 1, entry.size() - open - 2);
      entry = entry.substr(0, open);
    }
    const std::vector<std::string_view> parts = split_top(entry, ':');
    if (parts[0].empty()) fail(source, field, "GRES without a name: " + quoted(entry));
    g.name = std::string(parts[0]);
    if (g.name != "gpu") {  // other GRES (mps, shard, nic): only named, never scheduled
      out.push_back(std::move(g));
      continue;
    }
    if (parts.size() == 2) {
      g.count = need_int<int>(parts[1], source, field);
    } else if (parts.size() == 3) {
      if (parts[1].empty()) fail(source, field, "empty GPU type in " + quoted(entry));
      g.type = std::string(parts[1]);
      g.count = need_int<int>(parts[2], source, field);
    } else {
      fail(source, field, "not gpu[:type]:count: " + quoted(entry));
    }
    if (g.count > 65536) fail(source, field, "GPU count out of range: " + quoted(entry));
    // "(IDX:0-1,3)" or "(IDX:N/A)": the indices held; "(S:0-1)": sockets.
    if (paren.substr(0, 4) == "IDX:") {
      const std::string_view idx = paren.substr(4);
      if (idx != "N/A") g.indices = expand_index_list(idx, source, field);
      if (g.indices.size() > static_cast<std::size_t>(g.count))
        fail(source, field, "more GPU indices than GPUs in " + quoted(entry));
    } else if (!paren.empty() && paren.substr(0, 2) != "S:") {
      fail(source, field, "unknown GRES detail " + quoted(paren));
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<QueueEntry> parse_squeue(std::string_view text) {
  const std::string source = "squeue";
  std::vector<QueueEntry> out;
  std::set<std::int64_t> seen;
  const auto lines = split_lines(text);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    if (blank(lines[n])) continue;
    const std::string where = "line " + std::to_string(n + 1) + ": ";
    const auto cols = split_top(lines[n], '|');
    if (cols.size() != 6)
      fail(source, "line " + std::to_string(n + 1),
           "expected 6 '|'-separated columns (" + std::string(kSqueueFormat) + "), got " +
               std::to_string(cols.size()));
    QueueEntry e;
    e.job_id = need_int<std::int64_t>(cols[0], source, where + "job id");
    if (e.job_id == 0) fail(source, where + "job id", "0 is not a job id");
    if (!seen.insert(e.job_id).second)
      fail(source, where + "job id", "job " + std::to_string(e.job_id) + " listed twice");
    e.state = need_state(cols[1], source, where + "state");
    e.reason = std::string(cols[2]);
    e.nodes = expand_host_list(cols[3], source, where + "nodes");
    // TresPerNode: "gres:gpu:2", "gres:gpu:v100:2", "gres/gpu:2", "N/A".
    for (std::string_view tres : split_top(cols[4], ',')) {
      if (tres.empty() || tres == "N/A" || tres == "(null)") continue;
      if (tres.substr(0, 5) != "gres:" && tres.substr(0, 5) != "gres/")
        fail(source, where + "tres per node", "not a GRES: " + quoted(tres));
      for (const Gres& g : parse_gres_list(tres.substr(5), source, where + "tres per node"))
        if (g.name == "gpu") e.gpus_per_node += g.count;
    }
    if (cols[5].empty()) fail(source, where + "user", "empty");
    e.user = std::string(cols[5]);
    out.push_back(std::move(e));
  }
  return out;
}

namespace {
// The fields of one `scontrol -d -o show job` line after its JobId.
void read_job_fields(const Fields& fields, const std::string& source, JobDetail& d) {
  const auto m = first_of(fields);
  const std::string where = "job " + std::to_string(d.job_id) + ": ";
  d.name = std::string(need_field(m, "JobName", source, where));
  d.state = need_state(need_field(m, "JobState", source, where), source, where + "JobState");
  d.reason = std::string(need_field(m, "Reason", source, where));
  const std::string_view priority = need_field(m, "Priority", source, where);
  std::uint64_t prio = 0;
  if (!parse_int(priority, prio))
    fail(source, where + "Priority", "not a number: " + quoted(priority));
  d.held = d.state == JobState::kPending && prio == 0;
  d.restarts =
      need_int<int>(need_field(m, "Restarts", source, where), source, where + "Restarts");
  const std::string_view exit = need_field(m, "ExitCode", source, where);
  const std::size_t colon = exit.find(':');
  if (colon == std::string_view::npos)
    fail(source, where + "ExitCode", "not E:S: " + quoted(exit));
  d.exit_code = need_int<int>(exit.substr(0, colon), source, where + "ExitCode");
  d.exit_signal = need_int<int>(exit.substr(colon + 1), source, where + "ExitCode");
  if (d.exit_code > 255 || d.exit_signal > 255)
    fail(source, where + "ExitCode", "out of range: " + quoted(exit));
  d.nodes =
      expand_host_list(need_field(m, "NodeList", source, where), source, where + "NodeList");
  d.required_nodes = expand_host_list(need_field(m, "ReqNodeList", source, where), source,
                                      where + "ReqNodeList");
  d.partition = std::string(need_field(m, "Partition", source, where));
  const std::string_view user = need_field(m, "UserId", source, where);
  d.user = std::string(user.substr(0, user.find('(')));
  if (auto it = m.find("Comment"); it != m.end()) d.comment = std::string(trim(it->second));
  // -d: "Nodes=n1 CPU_IDs=1 Mem=100 GRES=gpu:v100:1(IDX:3)" per group of
  // nodes, one contiguous run of these keys (a later "Nodes=" is text).
  bool in_groups = false, groups_done = false;
  std::vector<std::string> group;
  for (const auto& [key, value] : fields) {
    const bool group_key = key == "Nodes" || key == "CPU_IDs" || key == "Mem" || key == "GRES";
    if (!group_key) {
      if (in_groups) groups_done = true;
      in_groups = false;
      continue;
    }
    if (groups_done) break;
    if (key == "Nodes") {
      in_groups = true;
      group = expand_host_list(value, source, where + "Nodes");
      for (const std::string& node : group) d.per_node.push_back(NodeGpus{node, "", {}});
    } else if (key == "GRES" && in_groups) {
      for (const Gres& g : parse_gres_list(value, source, where + "GRES")) {
        if (g.name != "gpu") continue;
        for (std::size_t k = d.per_node.size() - group.size(); k < d.per_node.size(); ++k) {
          NodeGpus& ng = d.per_node[k];
          // A node with several GPU types: "v100+k80" (fairgpu plans
          // only nodes with one type, NodeInfo::gpu_type).
          if (ng.gpu_type.empty())
            ng.gpu_type = g.type;
          else if (ng.gpu_type != g.type)
            ng.gpu_type += "+" + g.type;
          ng.indices.insert(ng.indices.end(), g.indices.begin(), g.indices.end());
        }
      }
    }
  }
}
}  // namespace

std::vector<JobDetail> parse_job_details(std::string_view text,
                                         std::map<std::int64_t, std::string>* unreadable) {
  const std::string source = "scontrol show job";
  std::vector<JobDetail> out;
  std::set<std::int64_t> seen;
  const auto lines = split_lines(text);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    if (blank(line) || trim(line) == "No jobs in the system") continue;
    std::string where = "line " + std::to_string(n + 1) + ": ";
    const Fields fields = split_fields(line);
    if (fields.empty() || fields[0].first != "JobId")
      fail(source, "line " + std::to_string(n + 1), "does not start with JobId=");
    JobDetail d;
    d.job_id = need_int<std::int64_t>(fields[0].second, source, where + "JobId");
    if (d.job_id == 0) fail(source, where + "JobId", "0 is not a job id");
    if (!seen.insert(d.job_id).second)
      fail(source, where + "JobId", "job " + std::to_string(d.job_id) + " listed twice");
    try {
      read_job_fields(fields, source, d);
    } catch (const InputError& e) {
      if (!unreadable) throw;
      (*unreadable)[d.job_id] = e.what();
      continue;
    }
    out.push_back(std::move(d));
  }
  return out;
}


bool NodeInfo::usable() const {
  if (base_state != "IDLE" && base_state != "MIXED" && base_state != "ALLOCATED") return false;
  for (const std::string& f : flags)
    if (kUnusableFlags.count(f)) return false;
  return true;
}

std::string NodeInfo::gpu_type() const {
  std::string type;
  for (const Gres& g : gres) {
    if (g.count == 0) continue;
    if (!type.empty() && type != g.type) return "";
    type = g.type;
  }
  return type;
}

int NodeInfo::gpu_count() const {
  int n = 0;
  for (const Gres& g : gres) n += g.count;
  return n;
}

int NodeInfo::gpus_used() const {
  int n = 0;
  for (const Gres& g : gres_used) n += g.count;
  return n;
}

std::vector<NodeInfo> parse_nodes(std::string_view text) {
  const std::string source = "scontrol show node";
  std::vector<NodeInfo> out;
  std::set<std::string> seen;
  const auto lines = split_lines(text);
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const std::string_view line = lines[n];
    if (blank(line) || trim(line) == "No nodes in the system") continue;
    const Fields fields = split_fields(line);
    if (fields.empty() || fields[0].first != "NodeName")
      fail(source, "line " + std::to_string(n + 1), "does not start with NodeName=");
    const auto m = first_of(fields);
    NodeInfo node;
    node.name = std::string(fields[0].second);
    if (node.name.empty()) fail(source, "line " + std::to_string(n + 1) + ": NodeName", "empty");
    const std::string where = "node " + node.name + ": ";
    if (!seen.insert(node.name).second) fail(source, where + "NodeName", "listed twice");
    const std::string_view state = need_field(m, "State", source, where);
    const auto parts = split_top(state, '+');
    if (!kNodeBaseStates.count(parts[0]))
      fail(source, where + "State", "unknown node state " + quoted(parts[0]));
    node.base_state = std::string(parts[0]);
    for (std::size_t i = 1; i < parts.size(); ++i) {
      if (!kNodeFlags.count(parts[i]))
        fail(source, where + "State", "unknown node state flag " + quoted(parts[i]));
      node.flags.emplace_back(parts[i]);
    }
    node.gres =
        gpu_entries(parse_gres_list(need_field(m, "Gres", source, where), source, where + "Gres"));
    if (auto it = m.find("GresUsed"); it != m.end())
      node.gres_used = gpu_entries(parse_gres_list(it->second, source, where + "GresUsed"));
    node.cpus = need_int<int>(need_field(m, "CPUTot", source, where), source, where + "CPUTot");
    node.cpus_allocated =
        need_int<int>(need_field(m, "CPUAlloc", source, where), source, where + "CPUAlloc");
    node.memory_mb = need_int<std::int64_t>(need_field(m, "RealMemory", source, where), source,
                                            where + "RealMemory");
    node.memory_allocated_mb = need_int<std::int64_t>(need_field(m, "AllocMem", source, where),
                                                      source, where + "AllocMem");
    for (std::string_view p : split_top(trim(need_field(m, "Partitions", source, where)), ','))
      if (!p.empty() && p != "(null)") node.partitions.emplace_back(p);
    if (auto it = m.find("Reason"); it != m.end()) node.reason = std::string(trim(it->second));
    out.push_back(std::move(node));
  }
  return out;
}

std::int64_t parse_sbatch_output(std::string_view text) {
  const std::string source = "sbatch --parsable";
  text = trim(text);
  if (text.find('\n') != std::string_view::npos)
    fail(source, "job id", "more than one line: " + quoted(text));
  const std::string_view id = text.substr(0, text.find(';'));
  const auto v = need_int<std::int64_t>(id, source, "job id");
  if (v == 0) fail(source, "job id", "0 is not a job id");
  return v;
}

std::vector<std::string> split_batch_output(std::string_view output,
                                            const std::vector<std::string>& commands) {
  const std::string source = "scontrol (batch)";
  std::vector<std::string> errors(commands.size());
  std::size_t next = 0;  // the next command whose echo is expected
  bool started = false;
  for (std::string_view line : split_lines(output)) {
    if (blank(line)) continue;
    if (next < commands.size() && line == "scontrol: " + commands[next]) {
      ++next;
      started = true;
      continue;
    }
    if (trim(line) == "scontrol:") continue;  // the prompt at end of input
    if (!started) fail(source, "line", "output before the first command's echo: " + quoted(line));
    std::string& e = errors[next - 1];
    if (!e.empty()) e += "; ";
    e += std::string(trim(line));
  }
  if (next != commands.size())
    fail(source, "command " + std::to_string(next + 1),
         "not echoed (scontrol stopped early?): " +
             quoted(next < commands.size() ? commands[next] : ""));
  return errors;
}

}  // namespace fairgpu::live::slurm
