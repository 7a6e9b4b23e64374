// The agent's process supervisor (issue 5, docs/design.md §7): fork/exec in a
// session (and so a process group) of its own, the protocol's SIGUSR1 ->
// SIGTERM -> SIGKILL stop sequence as a polled state machine, reaping,
// progress file and log tail; a run's cgroup killed at its end. See process.h
// for what callers may rely on.
#include "live/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "live/node_resources.h"

namespace fairgpu::live {
namespace {

constexpr int kExecFailedStatus = 127;
// What failed in the child, reported through the close-on-exec pipe.
constexpr int kStageExec = 1, kStageSetgroups = 2, kStageSetgid = 3, kStageSetuid = 4,
              kStageChdir = 5, kStageAffinity = 6, kStageCgroup = 7, kStageSetsid = 8,
              kStageNproc = 9;

std::string errno_text(int e) { return std::strerror(e); }

Process::Clock::duration to_duration(double s) {
  return std::chrono::duration_cast<Process::Clock::duration>(
      std::chrono::duration<double>(s < 0 ? 0.0 : s));
}

// The fields of /proc/<pid>/stat after the command name, which may itself hold
// spaces and parentheses (hence the last ')'). Index 0 is field 3 (state).
std::optional<std::vector<std::string>> stat_fields(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  auto close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  if (fields.size() < 20) return std::nullopt;
  return fields;
}

void append_to_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app);
  out << text;
}

}  // namespace

std::optional<std::int64_t> parse_progress(const std::string& text) {
  std::size_t begin = 0, end = text.size();
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (begin < end && space(text[begin])) ++begin;
  while (end > begin && space(text[end - 1])) --end;
  if (begin == end || end - begin > 18) return std::nullopt;  // 18 digits fit int64
  std::int64_t value = 0;
  for (std::size_t i = begin; i < end; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

std::optional<ProgressReport> parse_progress_report(const std::string& text) {
  ProgressReport report;
  if (auto one = parse_progress(text)) {
    report = {*one, 0};
  } else {
    // Two numbers: only whole (ending in the newline the writer puts last).
    if (text.empty() || text.back() != '\n') return std::nullopt;
    const auto space = text.find_first_of(" \t");
    if (space == std::string::npos) return std::nullopt;
    const auto iterations = parse_progress(text.substr(0, space));
    const auto batch = parse_progress(text.substr(space));
    if (!iterations || !batch || *batch < 1 || *batch > (std::int64_t{1} << 30))
      return std::nullopt;
    report = {*iterations, *batch};
  }
  // Beyond what the server takes (issue 30, H2): malformed, never reported.
  if (report.iterations > kMaxProgressIterations) return std::nullopt;
  return report;
}

std::string fit_report_text(const std::string& text, std::size_t max_bytes) {
  // Strict UTF-8 (RFC 3629, as nlohmann::json checks it): the length of the
  // well-formed character at text[i], 0 when the byte there starts none.
  auto char_length = [&text](std::size_t i) -> std::size_t {
    const auto b = [&text](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = b(i);
    if (c < 0x80) return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
    if (c >= 0xC2 && c <= 0xDF) {
      n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return 0;
    }
    if (i + n > text.size()) return 0;
    if (b(i + 1) < lo || b(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k)
      if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
    return n;
  };
  std::string clean;
  clean.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = char_length(i);
    if (n == 0) {
      clean += "\xEF\xBF\xBD";  // U+FFFD, as the JSON encoder would write it
      ++i;
    } else {
      clean.append(text, i, n);
      i += n;
    }
  }
  if (clean.size() <= max_bytes) return clean;
  // Its head says what failed (a launch's reason), its end why a job
  // stopped: both are kept, each from a character's start.
  const std::string mark = fmt::format("\n[{} bytes in all; the middle cut]\n", clean.size());
  if (max_bytes <= mark.size()) return "";
  const std::size_t budget = max_bytes - mark.size();
  auto continuation = [&clean](std::size_t i) {
    return i < clean.size() && (static_cast<unsigned char>(clean[i]) & 0xC0) == 0x80;
  };
  std::size_t head = budget / 2;
  while (head > 0 && continuation(head)) --head;
  std::size_t from = clean.size() - (budget - budget / 2);
  while (continuation(from)) ++from;
  return clean.substr(0, head) + mark + clean.substr(from);
}

std::int64_t ProgressFile::read() {
  // O_NONBLOCK: a FIFO planted by the job must not block the agent.
  const int fd = ::open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return last_;
  struct stat st {};
  std::string text(64, '\0');
  ssize_t n = -1;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = ::read(fd, text.data(), text.size());
  ::close(fd);
  if (n < 0) return last_;
  text.resize(static_cast<std::size_t>(n));
  if (auto v = parse_progress_report(text); v && v->iterations >= last_) {
    last_ = v->iterations;
    if (v->batch_size > 0) batch_size_ = v->batch_size;
  }
  return last_;
}

std::string read_log_tail(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  auto size = static_cast<std::size_t>(std::max<std::streamoff>(0, in.tellg()));
  std::size_t start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string tail(size - start, '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<std::size_t>(in.gcount()));
  if (start > 0) {
    // Begin at a line (and so never in the middle of a UTF-8 character).
    auto nl = tail.find('\n');
    if (nl != std::string::npos && nl + 1 < tail.size()) tail.erase(0, nl + 1);
  }
  return tail;
}

std::optional<unsigned long long> process_start_time(pid_t pid) {
  auto fields = stat_fields(pid);
  if (!fields) return std::nullopt;
  try {
    return std::stoull((*fields)[19]);  // field 22
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool process_alive(pid_t pid) {
  auto fields = stat_fields(pid);
  return fields && (*fields)[0] != "Z" && (*fields)[0] != "X";
}

bool process_group_alive(pid_t pgid) {
  DIR* dir = opendir("/proc");
  if (!dir) return kill(-pgid, 0) == 0;
  bool alive = false;
  while (dirent* entry = readdir(dir)) {
    const char* name = entry->d_name;
    if (name[0] < '0' || name[0] > '9') continue;
    auto fields = stat_fields(static_cast<pid_t>(std::atol(name)));
    if (!fields) continue;
    const std::string& state = (*fields)[0];
    if (state == "Z" || state == "X") continue;
    if ((*fields)[2] == std::to_string(pgid)) {
      alive = true;
      break;
    }
  }
  closedir(dir);
  return alive;
}

LeftoverResult kill_leftover_group(const std::string& pid_file, double wait_s, pid_t* pgid_out) {
  std::ifstream in(pid_file);
  long long pid = 0;
  unsigned long long start = 0;
  if (!(in >> pid >> start) || pid <= 1) return LeftoverResult::kUnreadable;
  const auto pgid = static_cast<pid_t>(pid);
  if (pgid_out) *pgid_out = pgid;
  auto now_start = process_start_time(pgid);
  // Another process with the leader's pid: the old group is gone (Linux does
  // not hand out a pid still used as a process group id).
  if (now_start && *now_start != start) return LeftoverResult::kPidReused;
  if (!process_group_alive(pgid)) return LeftoverResult::kGone;
  kill(-pgid, SIGKILL);
  auto deadline = Process::Clock::now() + to_duration(wait_s);
  while (process_group_alive(pgid) && Process::Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return LeftoverResult::kKilled;
}

namespace {
// Errors of the node's resources rather than of the job's request.
bool node_errno(int e) {
  return e == ENOSPC || e == EDQUOT || e == EROFS || e == EIO || e == ENOMEM || e == EMFILE ||
         e == ENFILE || e == EAGAIN;
}
}  // namespace

std::unique_ptr<Process> Process::launch(const LaunchSpec& spec) {
  std::unique_ptr<Process> p(new Process());
  p->log_path_ = spec.log_path;
  p->progress_ = ProgressFile(spec.progress_path);
  auto fail = [&](std::string why) {
    p->state_ = ProcessState::kLaunchFailed;
    p->failure_ = std::move(why);
    if (!spec.log_path.empty()) append_to_file(spec.log_path, p->failure_ + "\n");
    return std::move(p);
  };
  // The node's trouble, not the job's (issue 30, H9): its disk full, out of
  // descriptors or processes. The run is reported as never started, not as
  // the job's failure.
  auto fail_node = [&](std::string why) {
    p->node_fault_ = true;
    return fail(std::move(why));
  };
  auto fail_errno = [&](std::string why, int e) {
    return node_errno(e) ? fail_node(std::move(why)) : fail(std::move(why));
  };

  if (spec.argv.empty() && spec.shell_command.empty()) return fail("empty command");
  // execve's strings end at a NUL: a byte there would silently cut the
  // command or a variable short (and "K=V\0X=Y" would smuggle in X).
  auto has_nul = [](const std::string& text) { return text.find('\0') != std::string::npos; };
  if (has_nul(spec.shell_command) || std::any_of(spec.argv.begin(), spec.argv.end(), has_nul))
    return fail("command: a NUL byte");
  for (const auto& [name, value] : spec.env)
    if (has_nul(name) || has_nul(value)) return fail("env: a NUL byte in a variable");
  if (!spec.checkpoint_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(spec.checkpoint_dir, ec);
    if (ec)
      return fail_errno(
          fmt::format("cannot create checkpoint dir {}: {}", spec.checkpoint_dir, ec.message()),
          ec.value());
    if (spec.run_as) {
      // The job's own: nobody else's job may read or write it.
      const int dfd =
          ::open(spec.checkpoint_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      const bool ok = dfd >= 0 && fchown(dfd, spec.run_as->uid, spec.run_as->gid) == 0 &&
                      fchmod(dfd, 0700) == 0;
      const int e = errno;
      if (dfd >= 0) ::close(dfd);
      if (!ok)
        return fail(fmt::format("cannot give checkpoint dir {} to uid {}: {}", spec.checkpoint_dir,
                                spec.run_as->uid, errno_text(e)));
    }
  }
  if (!spec.progress_path.empty()) std::remove(spec.progress_path.c_str());

  // Everything the child needs is built before fork: between fork and exec
  // only async-signal-safe calls are allowed (the agent may have threads).
  std::vector<std::string> words = spec.argv;
  if (words.empty()) words = {"/bin/sh", "-c", spec.shell_command};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  // A clean environment: the agent's PATH, HOME and LANG, then the job's.
  std::vector<std::string> env_strings;
  for (const char* key : {"PATH", "HOME", "LANG"})
    if (const char* value = std::getenv(key)) env_strings.push_back(std::string(key) + "=" + value);
  if (!std::getenv("PATH")) env_strings.emplace_back("PATH=/usr/local/bin:/usr/bin:/bin");
  for (const auto& [key, value] : spec.env) {
    std::string prefix = key + "=";
    bool replaced = false;
    for (auto& s : env_strings)
      if (s.compare(0, prefix.size(), prefix) == 0) {
        s = prefix + value;
        replaced = true;
      }
    if (!replaced) env_strings.push_back(prefix + value);
  }
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  const std::string log_path = spec.log_path.empty() ? "/dev/null" : spec.log_path;
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    const int e = errno;
    p->state_ = ProcessState::kLaunchFailed;
    p->failure_ = fmt::format("cannot open log {}: {}", log_path, errno_text(e));
    p->node_fault_ = node_errno(e);
    return p;
  }
  if (spec.run_as && !spec.log_path.empty() &&
      fchown(log_fd, spec.run_as->uid, spec.run_as->gid) != 0) {
    int e = errno;
    close(log_fd);
    return fail(
        fmt::format("cannot give log {} to uid {}: {}", log_path, spec.run_as->uid, errno_text(e)));
  }
  const bool switch_user = spec.run_as.has_value();
  const uid_t run_uid = spec.run_as ? spec.run_as->uid : 0;
  const gid_t run_gid = spec.run_as ? spec.run_as->gid : 0;
  const std::string& working_dir = spec.working_dir;
  // Only for a user of its own: RLIMIT_NPROC counts the agent's own user's
  // processes (the agent among them) for a job that runs as the agent.
  const bool limit_processes = switch_user && spec.max_user_processes > 0;
  const rlimit nproc{static_cast<rlim_t>(spec.max_user_processes),
                     static_cast<rlim_t>(spec.max_user_processes)};
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int err_pipe[2];
  if (null_fd < 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    int e = errno;
    close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return fail_node(fmt::format("cannot prepare launch: {}", errno_text(e)));
  }

  cpu_set_t cpu_mask;
  CPU_ZERO(&cpu_mask);
  for (int c : spec.cpu_affinity)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &cpu_mask);
  const bool pin = !spec.cpu_affinity.empty();
  int cgroup_fd = -1;
  if (!spec.cgroup_dir.empty()) {
    cgroup_fd = open((spec.cgroup_dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (cgroup_fd < 0) {
      int e = errno;
      close(log_fd);
      close(null_fd);
      close(err_pipe[0]);
      close(err_pipe[1]);
      return fail_node(
          fmt::format("cannot open {}/cgroup.procs: {}", spec.cgroup_dir, errno_text(e)));
    }
  }

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    if (cgroup_fd >= 0) close(cgroup_fd);
    close(log_fd);
    close(null_fd);
    close(err_pipe[0]);
    close(err_pipe[1]);
    return fail_node(fmt::format("fork: {}", errno_text(e)));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    auto child_fail = [&](int stage) {
      int report[2] = {stage, errno};
      ssize_t ignored = write(err_pipe[1], report, sizeof report);
      (void)ignored;
      _exit(kExecFailedStatus);
    };
    // A session of its own, not only a process group (issue 30, H1): without
    // a controlling terminal the job cannot open /dev/tty and push keystrokes
    // into the shell that started the agent (TIOCSTI). The session leader
    // also leads a new process group whose id is its pid.
    if (setsid() < 0) child_fail(kStageSetsid);
    // While still the agent's user: the cgroup's files are the agent's.
    if (cgroup_fd >= 0 && write(cgroup_fd, "0", 1) != 1) child_fail(kStageCgroup);
    if (pin && sched_setaffinity(0, sizeof cpu_mask, &cpu_mask) != 0) child_fail(kStageAffinity);
    if (switch_user) {
      // As root, before setuid: the hard limit binds the job, which cannot raise it.
      if (limit_processes && setrlimit(RLIMIT_NPROC, &nproc) != 0) child_fail(kStageNproc);
      if (setgroups(0, nullptr) != 0) child_fail(kStageSetgroups);
      if (setgid(run_gid) != 0) child_fail(kStageSetgid);
      if (setuid(run_uid) != 0) child_fail(kStageSetuid);
    }
    if (!working_dir.empty() && chdir(working_dir.c_str()) != 0) child_fail(kStageChdir);
    // After setuid, which clears the parent-death signal.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(kExecFailedStatus);  // the agent died before the prctl
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; ++s) sigaction(s, &dfl, nullptr);  // ignored ones survive exec
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);  // the agent's sockets stay with the agent
    environ = envp.data();
    execvp(argv[0], argv.data());
    child_fail(kStageExec);
  }

  // No setpgid(pid, pid) here: setsid() fails in a process that already
  // leads a group. The group exists when launch() returns all the same: the
  // pipe below is read until the child has exec'd (or failed).
  if (cgroup_fd >= 0) close(cgroup_fd);
  close(err_pipe[1]);
  close(log_fd);
  close(null_fd);
  int report[2] = {0, 0};
  ssize_t n;
  do {
    n = read(err_pipe[0], report, sizeof report);
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  p->pid_ = pid;
  if (n == static_cast<ssize_t>(sizeof report)) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    p->pid_ = -1;
    if (report[0] == kStageChdir)
      return fail(fmt::format("cannot enter {}: {}", working_dir, errno_text(report[1])));
    if (report[0] == kStageAffinity)
      return fail(fmt::format("cannot pin to CPUs {}: {}", cpu_list_text(spec.cpu_affinity),
                              errno_text(report[1])));
    if (report[0] == kStageCgroup)
      return fail_node(
          fmt::format("cannot join cgroup {}: {}", spec.cgroup_dir, errno_text(report[1])));
    if (report[0] == kStageSetsid)
      return fail(fmt::format("cannot start a session: {}", errno_text(report[1])));
    if (report[0] == kStageNproc)
      return fail(fmt::format("cannot limit uid {} to {} processes: {}", run_uid,
                              spec.max_user_processes, errno_text(report[1])));
    if (report[0] != kStageExec)
      return fail(fmt::format("cannot switch to uid {} gid {}: {}", run_uid, run_gid,
                              errno_text(report[1])));
    return fail(fmt::format("cannot execute '{}': {}", words[0], errno_text(report[1])));
  }
  p->state_ = ProcessState::kRunning;
  p->cgroup_dir_ = spec.cgroup_dir;

  if (!spec.pid_path.empty()) {
    auto start = process_start_time(pid);
    std::ofstream out(spec.pid_path, std::ios::trunc);
    out << pid << ' ' << (start ? *start : 0ULL) << '\n';
    out.close();
    if (!out || !start) {
      // Without its pid file a job could outlive a crashed agent unseen.
      kill(-pid, SIGKILL);
      kill_cgroup(spec.cgroup_dir);
      int status = 0;
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      std::remove(spec.pid_path.c_str());
      p->pid_ = -1;
      return fail_node(fmt::format("cannot write pid file {}", spec.pid_path));
    }
    p->pid_path_ = spec.pid_path;
  }
  return p;
}

Process::~Process() {
  if (state_ != ProcessState::kRunning) return;
  kill_all();
  if (!leader_reaped_) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (!pid_path_.empty()) std::remove(pid_path_.c_str());
  }
  // The caller removes the cgroup (retrying while it is not yet empty).
}

void Process::stop(double grace_s, double kill_after_s) {
  poll();  // an ended job is reported as ended, not as revoked
  if (state_ != ProcessState::kRunning || stop_requested_ || leader_reaped_) return;
  stop_requested_ = true;
  kill(-pid_, SIGUSR1);
  stop_phase_ = 1;
  next_signal_at_ = Clock::now() + to_duration(grace_s);
  kill_after_s_ = kill_after_s;
}

void Process::kill_now() {
  if (state_ != ProcessState::kRunning) return;
  kill_all();
  stop_phase_ = 3;
}

void Process::kill_all() {
  if (!leader_reaped_) kill(-pid_, SIGKILL);
  kill_cgroup(cgroup_dir_);
}

void Process::reap() {
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    signal_ = WTERMSIG(status);
    exit_code_ = 128 + signal_;
  } else {
    exit_code_ = WEXITSTATUS(status);
  }
  if (!pid_path_.empty()) std::remove(pid_path_.c_str());
  read_progress();  // its last word
  leader_reaped_ = true;
  leader_exited_at_ = Clock::now();
}

void Process::end_when_cgroup_empty() {
  if (cgroup_populated(cgroup_dir_)) {
    // Again each poll: a process forking when the cgroup was killed, or one
    // that the fallback without cgroup.kill found after its first sweep.
    kill_cgroup(cgroup_dir_);
    return;
  }
  state_ = ProcessState::kExited;
}

void Process::poll() {
  if (state_ != ProcessState::kRunning) return;
  if (leader_reaped_) return end_when_cgroup_empty();
  siginfo_t info{};
  int rc = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  if (rc == 0 && info.si_pid == pid_) {
    // The leader is a zombie, so its group id is still ours: clear the rest,
    // and what left the group but not the cgroup.
    kill_all();
    reap();
    return end_when_cgroup_empty();
  }
  if (rc < 0 && errno == ECHILD) {  // reaped behind our back: nothing to report but the end
    exit_code_ = -1;
    if (!pid_path_.empty()) std::remove(pid_path_.c_str());
    leader_reaped_ = true;
    leader_exited_at_ = Clock::now();
    kill_cgroup(cgroup_dir_);
    return end_when_cgroup_empty();
  }
  if (!stop_requested_ || Clock::now() < next_signal_at_) return;
  if (stop_phase_ == 1) {
    kill(-pid_, SIGTERM);
    stop_phase_ = 2;
    next_signal_at_ = Clock::now() + to_duration(kill_after_s_);
  } else if (stop_phase_ == 2) {
    kill_all();
    stop_phase_ = 3;
  }
}

std::int64_t Process::read_progress() { return progress_.read(); }

std::string Process::log_tail() const { return read_log_tail(log_path_); }

}  // namespace fairgpu::live
