// The agent's process supervisor (issue 5, docs/design.md §7, docs/live-protocol.md
// "launch" and "revoke"): starts one job command in a session and process
// group of its own, stops it with the protocol's signal sequence, reaps it
// and reads what the job leaves behind (its progress file, the tail of its
// log).
//
// Nothing here blocks for long: the stop sequence is a state machine that
// poll() advances, so one thread supervises many runs at once.
//
// Guarantees a caller may rely on:
// - the job leads a session of its own (setsid in the child): it has no
//   controlling terminal, so it can neither open /dev/tty nor type into the
//   terminal the agent was started from (issue 30, H1); its session id and
//   process group id are its pid, and both exist when launch() returns (the
//   parent waits for the exec through a close-on-exec pipe);
// - the job gets SIGKILL when the thread that launched it dies
//   (PR_SET_PDEATHSIG, with a getppid() check against the race where the
//   parent died before the prctl): a kill -9'd agent takes its jobs with it.
//   Only the group leader carries this; what it forks is cleaned up by the
//   next agent through the pid file (see pid_path), and what left the group
//   through the run's cgroup (the agent kills its predecessor's at start);
// - when the leader has exited, whatever is left of its process group is
//   SIGKILLed before the exit is reported (observed with waitid(WNOWAIT),
//   so the group id cannot have been reused yet): a job's stray children do
//   not keep holding the GPUs after its run is reported ended;
// - with a cgroup (LaunchSpec::cgroup_dir), the end of the job is the end of
//   every process in that cgroup (issue 30, M1): when the leader exits or the
//   stop sequence reaches SIGKILL, the cgroup is killed (kill_cgroup), so a
//   child that left the job's session (setsid, a double fork) dies too, and
//   the job stays kRunning until the cgroup is empty (no timer: a process
//   the kernel is still tearing down holds the GPUs as long as it lives);
// - a Process destroyed while its job runs SIGKILLs the group and the
//   cgroup and reaps the leader.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fairgpu::live {

// The user a job runs as (a root agent's jobs never run as root).
struct RunAs {
  uid_t uid = 0;
  gid_t gid = 0;
};

// What to run and where its files go.
struct LaunchSpec {
  // The command: an argv array run with execvp (searched in the job's PATH)
  // when not empty, else `shell_command` run with /bin/sh -c.
  std::vector<std::string> argv;
  std::string shell_command;
  // The job's whole environment, besides PATH, HOME and LANG taken from the
  // agent's (nothing else of the agent's environment reaches the job: not its
  // token, not its flags). In order; a later entry overrides an earlier one.
  std::vector<std::pair<std::string, std::string>> env;
  // stdout and stderr (truncated at launch, mode 0600, owned by run_as when
  // set); stdin is /dev/null.
  std::string log_path;
  // Created (mkdir -p) before launch when not empty; with run_as, the last
  // component is then owned by that user, mode 0700.
  std::string checkpoint_dir;
  // When set: setgroups({}), setgid, setuid before exec (the agent is root).
  std::optional<RunAs> run_as;
  // The job's working directory; "" = the agent's.
  std::string working_dir;
  // The job's progress file; a stale one is removed before launch.
  std::string progress_path;
  // When not empty: "<pid> <start time>\n" is written here before launch()
  // returns and removed when the job is reaped, so that the next agent of the
  // node can kill the group if this one dies (kill_leftover_group).
  std::string pid_path;
  // When not empty: the job runs on these CPUs only (sched_setaffinity in
  // the child before exec; its children inherit the mask).
  std::vector<int> cpu_affinity;
  // When not empty: a cgroup v2 directory the job is moved into before exec
  // (the child writes itself to its cgroup.procs), so that everything it
  // forks is held to that cgroup's limits and ends with the job (see above).
  // The caller makes and removes it.
  std::string cgroup_dir;
  // When not 0 and run_as is set: RLIMIT_NPROC (soft and hard) in the child
  // before setuid, so that a fork bomb fails its forks even where no cgroup
  // pids controller holds it. The kernel counts every process of the user,
  // so runs of one user on a node share it.
  std::uint64_t max_user_processes = 0;
};

// The protocol's bounds on what an agent reports of a run (the server
// refuses a run's report beyond them: docs/live-protocol.md).
constexpr std::int64_t kMaxProgressIterations = 1'000'000'000'000'000;  // 1e15
constexpr std::size_t kMaxLogTailBytes = 64 * 1024;

// The progress file a job rewrites with its total iterations done: a decimal
// integer, surrounding whitespace allowed; or "ITERATIONS BATCH" and a
// newline, BATCH the batch size the job now trains at (issue 14, Shockwave
// live: a regime change is reported when it happens). A missing, empty or
// malformed file (e.g. read between the writer's truncate and write; the
// two-number form without its newline) keeps the last good value, and so
// does a smaller number (a torn write): within one run the count never goes
// down. Only a regular file is read, never through a symbolic link (the job
// owns the directory; the agent may be root).
class ProgressFile {
 public:
  explicit ProgressFile(std::string path) : path_(std::move(path)) {}
  std::int64_t read();
  std::int64_t last() const { return last_; }
  // The last batch size reported with a count not below the last; 0: none.
  std::int64_t batch_size() const { return batch_size_; }

 private:
  std::string path_;
  std::int64_t last_ = 0;
  std::int64_t batch_size_ = 0;
};

enum class ProcessState { kRunning, kExited, kLaunchFailed };

class Process {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts spec's command. A command that cannot start (empty command, a
  // NUL byte in the command or the env,
  // checkpoint dir or log file that cannot be created, exec failure passed
  // back through a close-on-exec pipe) gives a Process in kLaunchFailed
  // with the reason in failure() (also written to the log).
  static std::unique_ptr<Process> launch(const LaunchSpec& spec);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  ProcessState state() const { return state_; }
  pid_t pid() const { return pid_; }
  // Why the launch failed (kLaunchFailed only).
  const std::string& failure() const { return failure_; }
  // Whether the launch failed for the node's reason (its disk full, e.g. the
  // pid file not written; out of descriptors or processes), not the job's.
  bool node_fault() const { return node_fault_; }

  // Starts the stop sequence: SIGUSR1 to the group now, SIGTERM grace_s
  // later, SIGKILL (group and cgroup) kill_after_s after that. Idempotent (a
  // second call keeps the first deadlines); does nothing once the job has
  // ended or its leader has exited.
  void stop(double grace_s, double kill_after_s);
  // Whether stop() was called before the job ended (the protocol's
  // `revoked`).
  bool stop_requested() const { return stop_requested_; }
  // Whether the leader has exited and been reaped: the job is still running
  // only while its cgroup is not yet empty, and there is nothing to stop.
  bool leader_exited() const { return leader_reaped_; }
  // When poll() saw that (leader_exited() only).
  Clock::time_point leader_exited_at() const { return leader_exited_at_; }
  // SIGKILL to the group and the cgroup now (no grace).
  void kill_now();

  // Reaps the job if it ended and sends the stop sequence's next signal when
  // it is due. Call it often (every few tens of milliseconds).
  void poll();

  // kExited only: the exit status, or the signal that killed the job (then
  // exit_code() is 128 + signal, the shell's convention, and signal() > 0).
  int exit_code() const { return exit_code_; }
  int signal() const { return signal_; }

  // The last good value of the progress file (see ProgressFile).
  std::int64_t read_progress();
  // The batch size it last gave (0: none).
  std::int64_t batch_size() const { return progress_.batch_size(); }
  // The last ~2 KB of the log (read_log_tail).
  std::string log_tail() const;

 private:
  Process() = default;
  void reap();
  // SIGKILL to what is left: the group while the leader is unreaped (its
  // pgid cannot have been reused), the cgroup.
  void kill_all();
  // kExited once the cgroup is empty (at once without one).
  void end_when_cgroup_empty();

  ProcessState state_ = ProcessState::kLaunchFailed;
  pid_t pid_ = -1;
  std::string failure_;
  bool node_fault_ = false;
  std::string log_path_;
  std::string pid_path_;
  std::string cgroup_dir_;
  bool leader_reaped_ = false;  // exit_code_ and signal_ are set
  Clock::time_point leader_exited_at_{};
  ProgressFile progress_{""};
  bool stop_requested_ = false;
  int stop_phase_ = 0;  // signals sent so far: 1 USR1, 2 TERM, 3 KILL
  Clock::time_point next_signal_at_{};
  double kill_after_s_ = 0.0;
  int exit_code_ = 0;
  int signal_ = 0;
};

// Parses a progress file's content; nullopt unless it is digits with optional
// whitespace around.
std::optional<std::int64_t> parse_progress(const std::string& text);
// The same or "ITERATIONS BATCH\n" (batch_size 0 for the one-number form;
// the batch in 1..2^30; ITERATIONS at most kMaxProgressIterations).
struct ProgressReport {
  std::int64_t iterations = 0;
  std::int64_t batch_size = 0;
};
std::optional<ProgressReport> parse_progress_report(const std::string& text);

// `text` as an agent may report it (a log tail, a launch failure): valid
// UTF-8 (a byte that is not is replaced by U+FFFD, so that the JSON encoder
// grows nothing) of at most `max_bytes` bytes; when longer, its head and its
// end around a "[N bytes in all; the middle cut]" line.
std::string fit_report_text(const std::string& text, std::size_t max_bytes = kMaxLogTailBytes);

// The last `max_bytes` of a file (empty when it cannot be read). When cut, it
// starts after the first newline of that window, so it begins at a line.
std::string read_log_tail(const std::string& path, std::size_t max_bytes = 2048);

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), the
// pid-reuse guard of pid files; nullopt when there is no such process.
std::optional<unsigned long long> process_start_time(pid_t pid);

// Whether process `pid` is alive (not a zombie), from /proc.
bool process_alive(pid_t pid);

// Whether some process of group `pgid` is alive (not a zombie), from /proc.
bool process_group_alive(pid_t pgid);

// What kill_leftover_group did with a pid file.
enum class LeftoverResult { kKilled, kGone, kPidReused, kUnreadable };

// Reads a pid file written for LaunchSpec::pid_path and SIGKILLs the group it
// names unless its pid now belongs to another process (start time differs),
// then waits up to `wait_s` for the group to die. Does not remove the file.
LeftoverResult kill_leftover_group(const std::string& pid_file, double wait_s, pid_t* pgid_out);

}  // namespace fairgpu::live
