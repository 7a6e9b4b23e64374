// The agent's CPUs and memory (see node_resources.h).
#include "live/node_resources.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "fairgpu/input_error.h"

namespace fairgpu::live {
namespace {

std::string slurp_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Writes `text` to a control file; "" on success, else strerror.
std::string write_control(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size())) return std::strerror(n < 0 ? e : EIO);
  return "";
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  for (std::string w; in >> w;)
    if (w == word) return true;
  return false;
}

}  // namespace

std::vector<int> affinity_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

double total_memory_gb() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0.0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemTotal:") return kb / (1024.0 * 1024.0);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0
             ? static_cast<double>(pages) * static_cast<double>(page) / (1024.0 * 1024.0 * 1024.0)
             : 0.0;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(std::remove_if(item.begin(), item.end(),
                              [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
               item.end());
    if (item.empty()) continue;
    const auto dash = item.find('-');
    auto number = [&text](const std::string& s) {
      if (s.empty() || s.size() > 4 ||
          !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          std::stoi(s) >= CPU_SETSIZE)
        throw InputError(
            "--cpu-list", "",
            fmt::format("'{}' is not a list of CPU ids 0..{} (as 0-3,6)", text, CPU_SETSIZE - 1));
      return std::stoi(s);
    };
    const int lo = number(item.substr(0, dash));
    const int hi = dash == std::string::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo)
      throw InputError("--cpu-list", "",
                       fmt::format("'{}': range {} ends below its start", text, item));
    for (int c = lo; c <= hi; ++c) out.push_back(c);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> pick_cores(const std::vector<int>& cores, const std::map<int, int>& pinned,
                            double granted) {
  if (cores.empty()) return {};
  const auto want = static_cast<std::size_t>(
      std::clamp<double>(std::round(granted), 1.0, static_cast<double>(cores.size())));
  std::vector<std::pair<int, int>> by_load;  // (jobs pinned, core)
  for (int c : cores) {
    auto it = pinned.find(c);
    by_load.push_back({it == pinned.end() ? 0 : it->second, c});
  }
  std::sort(by_load.begin(), by_load.end());
  std::vector<int> out;
  for (std::size_t i = 0; i < want; ++i) out.push_back(by_load[i].second);
  std::sort(out.begin(), out.end());
  return out;
}

std::string cgroup2_mount() {
  // Field 5 of the mountinfo line whose filesystem type (after " - ") is
  // cgroup2.
  std::ifstream mounts("/proc/self/mountinfo");
  for (std::string line; std::getline(mounts, line);) {
    const auto sep = line.find(" - ");
    if (sep == std::string::npos || line.compare(sep + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, sep));
    std::string f[5];
    for (auto& x : f) fields >> x;
    return f[4];
  }
  return "";
}

std::string own_cgroup_dir() {
  const std::string mount_point = cgroup2_mount();
  if (mount_point.empty()) return "";
  std::ifstream cgroup("/proc/self/cgroup");
  for (std::string line; std::getline(cgroup, line);)
    if (line.rfind("0::", 0) == 0) {
      std::string path = line.substr(3);
      if (path == "/") path.clear();
      return mount_point + path;
    }
  return "";
}

CgroupPlan plan_cgroups(const std::string& configured, const std::string& own, bool own_is_root,
                        const std::string& node) {
  CgroupPlan plan;
  if (configured == "none") return plan;
  std::string parent = configured.empty() ? own : configured;
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
  if (parent.empty()) return plan;
  const std::string leaf = agent_leaf_name(node);
  // Already in its leaf (an agent started from there, as by an exec): the
  // runs go beside it, not under it.
  if (configured.empty() && parent.size() > leaf.size() + 1 &&
      parent.compare(parent.size() - leaf.size() - 1, std::string::npos, "/" + leaf) == 0) {
    plan.runs_parent = parent.substr(0, parent.size() - leaf.size() - 1);
    return plan;
  }
  plan.runs_parent = parent;
  // The root cgroup is exempt from the no-internal-processes rule.
  if (own == parent && !own_is_root) plan.agent_leaf = parent + "/" + leaf;
  return plan;
}

std::string agent_leaf_name(const std::string& node) {
  // '@' is no node name's character: no run's cgroup (fairgpu-<node>-...)
  // of any node starts with this name.
  return "fairgpu-agent@" + node;
}

bool is_root_cgroup(const std::string& dir) {
  // Every cgroup but the root has a cgroup.type file.
  struct stat st {};
  return !dir.empty() && ::stat((dir + "/cgroup.type").c_str(), &st) != 0 && errno == ENOENT &&
         ::stat((dir + "/cgroup.procs").c_str(), &st) == 0;
}

std::string move_into_cgroup(const std::string& dir, pid_t pid) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fmt::format("cannot create cgroup {}: {}", dir, std::strerror(errno));
  // A pid in cgroup.procs moves its whole thread group.
  if (const std::string e = write_control(dir + "/cgroup.procs", std::to_string(pid)); !e.empty())
    return fmt::format("cannot move pid {} into cgroup {}: {}", pid, dir, e);
  return "";
}

std::string enable_child_controller(const std::string& parent, const std::string& controller) {
  if (has_word(slurp_file(parent + "/cgroup.subtree_control"), controller)) return "";
  if (!has_word(slurp_file(parent + "/cgroup.controllers"), controller))
    return fmt::format("the {} controller is not available in {}", controller, parent);
  const std::string e = write_control(parent + "/cgroup.subtree_control", "+" + controller);
  if (e.empty()) return "";
  std::string why =
      fmt::format("cannot enable the {} controller for children of {}: {}", controller, parent, e);
  if (e != std::strerror(EBUSY)) return why;
  // cgroup v2's no-internal-processes rule: name who is in the way.
  std::istringstream procs(slurp_file(parent + "/cgroup.procs"));
  std::vector<std::string> who;
  int n = 0;
  for (std::string pid; procs >> pid; ++n) {
    if (who.size() == 4) continue;
    std::string comm = slurp_file("/proc/" + pid + "/comm");
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    who.push_back(pid + (comm.empty() ? "" : " " + comm));
  }
  if (n == 0) return why;
  std::string list;
  for (const auto& w : who) list += (list.empty() ? "" : ", ") + w;
  if (n > static_cast<int>(who.size()))
    list += fmt::format(" and {} more", n - static_cast<int>(who.size()));
  return why + fmt::format(
                   " ({} process{} live there: {}; a cgroup holding processes cannot give "
                   "controllers to its children: start the agent alone in its cgroup, or name "
                   "one it may use with --cgroup)",
                   n, n == 1 ? "" : "es", list);
}

RunCgroup make_run_cgroup(const std::string& parent, const std::string& name,
                          const RunLimits& limits) {
  RunCgroup out;
  if (parent.empty()) {
    out.problem = "no cgroup v2 hierarchy";
    return out;
  }
  const std::string dir = parent + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    out.problem = fmt::format("cannot create cgroup {}: {}", dir, std::strerror(errno));
    return out;
  }
  struct stat st {};
  // A directory that is no cgroup (--cgroup naming a plain folder): the
  // kernel gives every cgroup its cgroup.procs.
  if (::stat((dir + "/cgroup.procs").c_str(), &st) != 0) {
    ::rmdir(dir.c_str());
    out.problem = fmt::format("{} is not in a cgroup v2 hierarchy", parent);
    return out;
  }
  // `file` of the controller `controller` in the run's cgroup set to
  // `value`; "" or why not.
  auto set = [&](const std::string& controller, const std::string& file,
                 const std::string& value) -> std::string {
    if (::stat((dir + "/" + file).c_str(), &st) != 0) {
      if (std::string e = enable_child_controller(parent, controller); !e.empty()) return e;
      if (::stat((dir + "/" + file).c_str(), &st) != 0)
        return fmt::format("cannot enable the {} controller for children of {}: {} missing",
                           controller, parent, file);
    }
    if (const std::string e = write_control(dir + "/" + file, value); !e.empty())
      return fmt::format("cannot write {}/{}: {}", dir, file, e);
    return "";
  };
  if (limits.memory_bytes > 0) {
    out.memory_problem = set("memory", "memory.max", std::to_string(limits.memory_bytes));
    // Without this a job over its limit would swap instead of being held to it.
    if (out.memory_problem.empty()) write_control(dir + "/memory.swap.max", "0");
  }
  if (limits.max_pids > 0)
    out.pids_problem = set("pids", "pids.max", std::to_string(limits.max_pids));
  out.dir = dir;
  return out;
}

std::string run_cgroup_name(const std::string& node, pid_t agent_pid, std::int64_t lease) {
  return fmt::format("fairgpu-{}-{}-lease-{}", node, agent_pid, lease);
}

pid_t run_cgroup_agent(const std::string& name, const std::string& node) {
  const std::string prefix = "fairgpu-" + node + "-";
  if (name.rfind(prefix, 0) != 0) return 0;
  // The rest must be exactly DIGITS-lease-DIGITS: node names may hold '-',
  // so "fairgpu-n1-" also begins the cgroups of a node "n1-b".
  const std::string rest = name.substr(prefix.size());
  const auto is_number = [](const std::string& s) {
    return !s.empty() && s.size() <= 18 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const auto mark = rest.find("-lease-");
  if (mark == std::string::npos || !is_number(rest.substr(0, mark)) ||
      !is_number(rest.substr(mark + 7)))
    return 0;
  const long long pid = std::stoll(rest.substr(0, mark));
  return pid > 0 && pid <= std::numeric_limits<pid_t>::max() ? static_cast<pid_t>(pid) : 0;
}

namespace {

// The pids of cgroup.procs (a stand-in's "0" is no process).
std::vector<pid_t> cgroup_pids(const std::string& dir) {
  std::vector<pid_t> out;
  std::istringstream in(slurp_file(dir + "/cgroup.procs"));
  for (long long pid; in >> pid;)
    if (pid > 0 && pid <= std::numeric_limits<pid_t>::max()) out.push_back(static_cast<pid_t>(pid));
  return out;
}

}  // namespace

std::string kill_cgroup(const std::string& dir) {
  if (dir.empty()) return "";
  const std::string e = write_control(dir + "/cgroup.kill", "1");
  if (e.empty()) return "";
  if (e != std::strerror(ENOENT)) return fmt::format("cannot write {}/cgroup.kill: {}", dir, e);
  // A kernel before 5.14. A pid read here may have exited since and been
  // reused (a race cgroup.kill has not); the caller's retries catch forks.
  for (pid_t pid : cgroup_pids(dir)) ::kill(pid, SIGKILL);
  return "";
}

bool cgroup_populated(const std::string& dir) {
  if (dir.empty()) return false;
  std::istringstream events(slurp_file(dir + "/cgroup.events"));
  for (std::string key, value; events >> key >> value;)
    if (key == "populated") return value != "0";
  return !cgroup_pids(dir).empty();
}

bool remove_cgroup(const std::string& dir) {
  if (dir.empty()) return true;
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

}  // namespace fairgpu::live
