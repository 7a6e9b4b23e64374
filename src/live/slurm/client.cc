#include "live/slurm/client.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fairgpu/input_error.h"
#include "live/executor.h"
#include "live/slurm/command.h"

namespace fairgpu::live::slurm {
namespace {

// Single-quotes a word for /bin/sh.
std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line.empty() ? "(no output)" : line;
}

// The line of scontrol's or scancel's output that says slurmctld could not
// be reached ("" when none does). Each such command takes about 9 s to give
// up.
std::string unreachable_line(const std::string& output) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line.find("Unable to contact slurm controller") != std::string::npos ||
        line.find("Unexpected message received") != std::string::npos)
      return line;
  return "";
}

std::string join_ids(const std::vector<std::int64_t>& ids, const char* sep) {
  std::string out;
  for (std::int64_t id : ids) {
    if (!out.empty()) out += sep;
    out += std::to_string(id);
  }
  return out;
}

void check_submit(const SubmitSpec& spec) {
  const std::string source = "slurm submit " + spec.job;
  auto refuse = [&](const std::string& field, const std::string& problem) {
    throw InputError(source, field, problem);
  };
  if (spec.job.empty()) refuse("job", "empty");
  for (char c : spec.job)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'))
      refuse("job", "only letters, digits, '-', '_' and '.'");
  if (spec.argv.empty() && spec.shell_command.empty()) refuse("command", "empty");
  if (spec.nodes < 1 || spec.nodes > 10000) refuse("nodes", "out of 1..10000");
  if (spec.gpus_per_node < 0 || spec.gpus_per_node > 1024)
    refuse("gpus_per_node", "out of 0..1024");
  if (spec.cpus_per_node < 0) refuse("cpus_per_node", "negative");
  if (spec.memory_mb_per_node < 0) refuse("memory_mb_per_node", "negative");
  if (spec.checkpoint_dir.empty() || spec.checkpoint_dir[0] != '/')
    refuse("checkpoint_dir", "not an absolute path");
  for (const auto& [field, value] :
       {std::pair<std::string, std::string>{"checkpoint_dir", spec.checkpoint_dir},
        {"progress_file", spec.progress_file}}) {
    if (value.find_first_of(",\n\r") != std::string::npos)
      refuse(field, "contains ',' or a line break (sbatch --export cannot carry it)");
  }
  for (const auto& [field, value] : {std::pair<std::string, std::string>{"log_path", spec.log_path},
                                     {"working_dir", spec.working_dir}}) {
    if (value.find_first_of("%\\\n\r") != std::string::npos)
      refuse(field, "contains '%', '\\' or a line break (Slurm reads them as patterns)");
  }
  for (const auto& kv : spec.env)
    if (!valid_env_name(kv.first)) refuse("env", "bad variable name '" + kv.first + "'");
  for (char c : spec.comment)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_.:=", c)))
      refuse("comment", "only letters, digits and '-_.:='");
  for (char c : spec.account)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_.", c)))
      refuse("account", "only letters, digits and '-_.'");
}

}  // namespace

std::string job_log_path(const std::string& checkpoint_root, const std::string& job) {
  return checkpoint_root + "/" + job + ".log";
}

std::string run_file_path(const std::string& checkpoint_dir) {
  return checkpoint_dir + "/.fairgpu-run";
}

std::string no_gpu_file_path(const std::string& checkpoint_dir) {
  return checkpoint_dir + "/.fairgpu-no-gpu";
}

bool take_no_gpu_mark(const std::string& checkpoint_dir, std::int64_t lease) {
  const std::string path = no_gpu_file_path(checkpoint_dir);
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  std::getline(in, line);
  in.close();
  ::unlink(path.c_str());
  return line == std::to_string(lease);
}

std::string began_file_path(const std::string& checkpoint_dir) {
  return checkpoint_dir + "/.fairgpu-began";
}

bool run_began(const std::string& checkpoint_dir, std::int64_t lease) {
  std::ifstream in(began_file_path(checkpoint_dir));
  std::string line;
  return in && std::getline(in, line) && line == std::to_string(lease);
}

std::string fence_file_path(const std::string& checkpoint_dir) {
  return checkpoint_dir + "/.fairgpu-fence";
}

bool run_processes_gone(const std::string& checkpoint_dir) {
  // Every process of a run holds a shared flock on the fence file (the
  // wrapper's fd 9, inherited). An exclusive one granted here means none is
  // left anywhere the checkpoint directory is shared with. No file: no run
  // took it (or the job removed it: its own run's fence, nobody else's).
  const std::string path = fence_file_path(checkpoint_dir);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return true;
  struct stat st {};
  bool gone = true;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0)
      ::flock(fd, LOCK_UN);
    else
      gone = errno != EWOULDBLOCK;
  }
  ::close(fd);
  return gone;
}

void write_run_file(const std::string& checkpoint_dir, std::int64_t lease,
                    const std::string& gpu_type, int gpus_per_node, int master_port) {
  const std::string path = run_file_path(checkpoint_dir);
  // The directory may be the job's own (run as a tenant's user) and serve
  // root: a fresh file of a name nobody chose (mkostemp: O_EXCL, so never
  // written through a link or into what the job left there); rename
  // replaces a link at path, not its target.
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) throw SlurmError("cannot write " + tmp + ": " + std::strerror(errno));
  ::fchmod(fd, 0644);
  std::string text =
      "FAIRGPU_LEASE_ID=" + std::to_string(lease) + "\nFAIRGPU_GPU_TYPE=" + gpu_type + "\n";
  if (gpus_per_node > 0) text += "FAIRGPU_GPUS_PER_NODE=" + std::to_string(gpus_per_node) + "\n";
  if (master_port > 0) text += "MASTER_PORT=" + std::to_string(master_port) + "\n";
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    throw SlurmError("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    ::unlink(tmp.c_str());
    throw SlurmError("cannot rename " + tmp + " to " + path + ": " + ec.message());
  }
}

std::string submit_script(const SubmitSpec& spec) {
  std::ostringstream s;
  s << "#!/bin/sh\n"
       "# fairgpu job "
    << spec.job
    << ": the wrapper of its Slurm job.\n"
       "# This run's lease, GPU type, GPUs per node and port, written before the release.\n"
       "run_file=\"$FAIRGPU_CHECKPOINT_DIR/.fairgpu-run\"\n"
       "want="
    << spec.gpus_per_node
    << "\n"
       "export MASTER_PORT="
    << kMasterPortBase
    << "\n"
       "if [ -r \"$run_file\" ]; then\n"
       "  while IFS='=' read -r key value; do\n"
       "    case \"$key\" in\n"
       "      FAIRGPU_LEASE_ID|FAIRGPU_GPU_TYPE|MASTER_PORT) export \"$key=$value\" ;;\n"
       "      FAIRGPU_GPUS_PER_NODE) want=$value ;;\n"
       "    esac\n"
       "  done <\"$run_file\"\n"
       "fi\n"
       "gpus=${SLURM_GPUS_ON_NODE:-0}\n"
       "nodes=${SLURM_JOB_NUM_NODES:-1}\n"
       "export FAIRGPU_NUM_WORKERS=$(( gpus * nodes ))\n"
       "# Started without its GPUs (Slurm did so right after its controller's\n"
       "# restart): refused, for fairgpu to requeue as never started.\n"
       "if [ \"$gpus\" -lt \"$want\" ]; then\n"
       "  echo \"fairgpu: Slurm started this run with $gpus of its $want GPUs per node; "
       "refused\" >&2\n"
       "  printf '%s\\n' \"$FAIRGPU_LEASE_ID\" >\"$FAIRGPU_CHECKPOINT_DIR/.fairgpu-no-gpu\"\n"
       "  exit "
    << kNoGpuExitCode
    << "\n"
       "fi\n"
       "# The rendezvous, as the agents set it: one process per node, standing\n"
       "# for its node's GPUs. The batch script runs on the first node; each\n"
       "# srun task sets its own rank below.\n"
       "export WORLD_SIZE=$FAIRGPU_NUM_WORKERS LOCAL_WORLD_SIZE=$gpus FAIRGPU_NUM_NODES=$nodes\n"
       "export MASTER_ADDR=127.0.0.1 NODE_RANK=0 RANK=0\n"
       "# The run's fence: each of its processes holds fd 9's shared lock, so\n"
       "# fairgpu sees when none is left (a node whose slurmd died).\n"
       "exec 9>>\"$FAIRGPU_CHECKPOINT_DIR/.fairgpu-fence\" && flock -s 9\n"
       "# Began: what fails from here on is the job's own doing.\n"
       "printf '%s\\n' \"$FAIRGPU_LEASE_ID\" >\"$FAIRGPU_CHECKPOINT_DIR/.fairgpu-began\" || true\n";
  for (const auto& [name, value] : spec.env)
    s << "export " << name << "=" << sh_quote(value) << "\n";
  std::string command;
  if (!spec.argv.empty()) {
    for (std::size_t i = 0; i < spec.argv.size(); ++i)
      command += (i ? " " : "") + sh_quote(spec.argv[i]);
  } else {
    command = "/bin/sh -c " + sh_quote(spec.shell_command);
  }
  // A run over several nodes: one task per node through srun (--export=ALL:
  // sbatch's --export list, SLURM_EXPORT_ENV, would otherwise keep the
  // variables set above from the tasks). Each task takes the fence on its
  // node; MASTER_ADDR is the address srun was started from, the first node.
  s << "if [ \"$nodes\" -gt 1 ]; then\n"
       "  exec srun --export=ALL --nodes=\"$nodes\" --ntasks-per-node=1 --kill-on-bad-exit=1 "
       "/bin/sh -c "
       "'exec 9>>\"$FAIRGPU_CHECKPOINT_DIR/.fairgpu-fence\" && flock -s 9; "
       "export MASTER_ADDR=\"${SLURM_LAUNCH_NODE_IPADDR:-$MASTER_ADDR}\" NODE_RANK=\"$SLURM_NODEID\" "
       "RANK=$((SLURM_NODEID * LOCAL_WORLD_SIZE)); exec \"$@\"' "
       "fairgpu-task "
    << command
    << "\n"
       "fi\n"
       "exec "
    << command << "\n";
  return s.str();
}

namespace {
// Any user of this machine's user database, root included.
std::optional<UnixUser> lookup_user(const std::string& name) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (name.empty() || getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found)
    return std::nullopt;
  return UnixUser{pw.pw_name, pw.pw_uid, pw.pw_gid};
}
}  // namespace

std::optional<UnixUser> find_run_as_user(const std::string& name) {
  std::optional<UnixUser> user = lookup_user(name);
  if (user && user->uid == 0) return std::nullopt;
  return user;
}

std::string run_as_problem(const std::string& name) {
  const std::optional<UnixUser> user = lookup_user(name);
  if (!user) return "no user '" + name + "' on this machine";
  if (user->uid == 0) return "'" + name + "' is root";
  return "";
}

void give_to(const UnixUser& user, const std::string& checkpoint_dir, const std::string& log_path) {
  // The directory holds the job's checkpoints and progress (and the run
  // file, which serve writes as root): the job's alone. The log is opened
  // by slurmstepd as the job's user, so it must exist as theirs.
  if (::chown(checkpoint_dir.c_str(), user.uid, user.gid) != 0 ||
      ::chmod(checkpoint_dir.c_str(), 0700) != 0)
    throw SlurmError("cannot give " + checkpoint_dir + " to " + user.name + ": " +
                     std::strerror(errno));
  if (log_path.empty()) return;
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 || ::fchown(fd, user.uid, user.gid) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw SlurmError("cannot give " + log_path + " to " + user.name + ": " + why);
  }
  ::close(fd);
}

std::vector<std::string> round_commands(const RoundWrites& writes) {
  std::vector<std::string> cmds;
  for (std::int64_t j : writes.requeue_hold) cmds.push_back("requeuehold " + std::to_string(j));
  for (std::int64_t j : writes.hold) cmds.push_back("hold " + std::to_string(j));
  for (const auto& pin : writes.pins) {
    std::string nodes;
    for (const auto& n : pin.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    std::string cmd =
        "update JobId=" + std::to_string(pin.job) + " NodeList=" + nodes + " StartTime=now";
    if (pin.gpus_per_node > 0)
      cmd += " NumNodes=" + std::to_string(pin.nodes.size()) + "-" + std::to_string(pin.nodes.size()) +
             " TresPerNode=gres:gpu:" + std::to_string(pin.gpus_per_node);
    if (pin.cpus > 0) cmd += " NumCPUs=" + std::to_string(pin.cpus);
    if (pin.memory_mb_per_node > 0)
      cmd += " MinMemoryNode=" + std::to_string(pin.memory_mb_per_node);
    cmds.push_back(std::move(cmd));
  }
  if (!writes.release.empty()) cmds.push_back("release " + join_ids(writes.release, ","));
  return cmds;
}

CommandLineSlurm::CommandLineSlurm(SlurmSettings settings) : settings_(std::move(settings)) {
  if (!settings_.conf.empty() && ::access(settings_.conf.c_str(), R_OK) != 0)
    throw InputError("slurm", "conf", "cannot read " + settings_.conf);
  if (settings_.timeout_s <= 0 || settings_.timeout_s > 3600)
    throw InputError("slurm", "timeout_s", "out of (0, 3600]");
}

void CommandLineSlurm::check() {
  std::vector<std::string> argv{settings_.scontrol, "-o", "show", "partition"};
  if (!settings_.partition.empty()) argv.push_back(settings_.partition);
  const CommandResult r = run(argv, "", /*merge=*/true);
  if (r.exit_code == 0) return;
  if (!settings_.partition.empty() && r.out.find("not found") != std::string::npos)
    throw InputError("slurm", "partition", "no partition '" + settings_.partition + "' in Slurm");
  throw SlurmError(settings_.scontrol + ": exit status " + std::to_string(r.exit_code) + ": " +
                   first_line(r.out));
}

CommandResult CommandLineSlurm::run(std::vector<std::string> argv, const std::string& input,
                                    bool merge, double timeout_s) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.input = input;
  spec.timeout_s = timeout_s > 0 ? timeout_s : settings_.timeout_s;
  spec.merge_stderr = merge;
  if (!settings_.conf.empty()) spec.env.emplace_back("SLURM_CONF", settings_.conf);
  // scontrol reads a batch through readline, which wraps its echo of a line
  // longer than the terminal's width (80 columns unless COLUMNS says
  // otherwise) with cursor movements, so the echo no longer matches the
  // command (a pin with a CPU and memory grant is about 80 columns).
  spec.env.emplace_back("COLUMNS", "1000000");
  const std::string name = spec.argv[0];
  CommandResult r;
  try {
    r = run_command(spec);
  } catch (const std::exception& e) {
    throw SlurmError(name + ": " + e.what());
  }
  if (!r.started) throw SlurmError(name + ": " + first_line(merge ? r.out : r.err));
  if (r.timed_out)
    throw SlurmError(name + ": no answer within " + std::to_string(spec.timeout_s) +
                     " s (is slurmctld reachable?)");
  return r;
}

std::string CommandLineSlurm::run_ok(std::vector<std::string> argv) {
  const std::string name = argv[0];
  CommandResult r = run(std::move(argv), "", false);
  if (r.exit_code != 0)
    throw SlurmError(name + ": exit status " + std::to_string(r.exit_code) + ": " +
                     first_line(r.err.empty() ? r.out : r.err));
  return r.out;
}

std::int64_t CommandLineSlurm::submit(const SubmitSpec& spec) {
  check_submit(spec);
  std::error_code ec;
  std::filesystem::create_directories(spec.checkpoint_dir, ec);
  if (ec) throw SlurmError("cannot create " + spec.checkpoint_dir + ": " + ec.message());
  std::optional<UnixUser> run_as;
  if (!spec.run_as_user.empty()) {
    run_as = find_run_as_user(spec.run_as_user);
    if (!run_as)
      throw SlurmError("job " + spec.job + ": run as '" + spec.run_as_user +
                       "': " + run_as_problem(spec.run_as_user));
    give_to(*run_as, spec.checkpoint_dir, spec.log_path);
  }
  std::vector<std::string> argv{settings_.sbatch,
                                "--parsable",
                                "--hold",
                                "--requeue",
                                "--job-name=fairgpu-" + spec.job,
                                "--nodes=" + std::to_string(spec.nodes)};
  if (spec.gpus_per_node > 0) argv.push_back("--gres=gpu:" + std::to_string(spec.gpus_per_node));
  if (spec.nodes > 1) argv.push_back("--ntasks-per-node=1");
  if (spec.cpus_per_node > 0)
    argv.push_back("--cpus-per-task=" + std::to_string(spec.cpus_per_node));
  if (spec.memory_mb_per_node > 0)
    argv.push_back("--mem=" + std::to_string(spec.memory_mb_per_node));
  if (!settings_.partition.empty()) argv.push_back("--partition=" + settings_.partition);
  argv.push_back("--output=" + (spec.log_path.empty() ? std::string("/dev/null") : spec.log_path));
  if (!spec.working_dir.empty())
    argv.push_back("--chdir=" + spec.working_dir);
  else if (run_as)  // serve's own directory is not the job's to enter
    argv.push_back("--chdir=" + spec.checkpoint_dir);
  if (run_as) {
    argv.push_back("--uid=" + run_as->name);
    argv.push_back("--gid=" + std::to_string(run_as->gid));
  }
  if (!spec.comment.empty()) argv.push_back("--comment=" + spec.comment);
  if (!spec.account.empty()) argv.push_back("--account=" + spec.account);
  // Not ALL: nothing of fairgpu's own environment reaches the job.
  std::string exports =
      "--export=FAIRGPU_JOB_ID=" + spec.job + ",FAIRGPU_CHECKPOINT_DIR=" + spec.checkpoint_dir;
  if (!spec.progress_file.empty()) exports += ",FAIRGPU_PROGRESS_FILE=" + spec.progress_file;
  argv.push_back(exports);
  const CommandResult r = run(argv, submit_script(spec), /*merge=*/false);
  if (r.exit_code != 0)
    throw SlurmError("sbatch (job " + spec.job + "): exit status " + std::to_string(r.exit_code) +
                     ": " + first_line(r.err.empty() ? r.out : r.err));
  const std::string& out = r.out;
  try {
    return parse_sbatch_output(out);
  } catch (const InputError& e) {
    throw SlurmError(e.what());
  }
}

std::map<std::int64_t, std::string> CommandLineSlurm::apply(const RoundWrites& writes) {
  std::map<std::int64_t, std::string> refusals;
  const std::vector<std::string> cmds = round_commands(writes);
  if (cmds.empty()) return refusals;
  std::string input;
  for (const auto& c : cmds) input += c + "\n";
  const CommandResult r = run({settings_.scontrol}, input, /*merge=*/true);
  const std::string& out = r.out;
  const int status = r.exit_code;
  if (const std::string why = unreachable_line(out); !why.empty())
    throw SlurmError("scontrol: slurmctld unreachable: " + why);
  std::vector<std::string> errors;
  try {
    errors = split_batch_output(out, cmds);
  } catch (const InputError& e) {
    throw SlurmError(std::string(e.what()) + " (exit status " + std::to_string(status) + ")");
  }
  // Attribute each command's errors to its job(s).
  std::size_t k = 0;
  auto note = [&](std::int64_t job, const std::string& error) {
    if (error.empty()) return;
    std::string& e = refusals[job];
    e += (e.empty() ? "" : "; ") + error;
  };
  for (std::int64_t j : writes.requeue_hold) note(j, errors[k++]);
  for (std::int64_t j : writes.hold) note(j, errors[k++]);
  for (const auto& pin : writes.pins) note(pin.job, errors[k++]);
  if (!writes.release.empty()) {
    // "... for job 998" names the job; an error naming none goes to all.
    const std::string& e = errors[k++];
    if (!e.empty()) {
      bool named = false;
      for (std::int64_t j : writes.release) {
        if (e.find("job " + std::to_string(j)) != std::string::npos) {
          note(j, e);
          named = true;
        }
      }
      if (!named)
        for (std::int64_t j : writes.release) note(j, e);
    }
  }
  return refusals;
}

std::map<std::int64_t, std::string> CommandLineSlurm::scancel(std::vector<std::string> args,
                                                              const std::vector<std::int64_t>& jobs,
                                                              double timeout_s) {
  std::map<std::int64_t, std::string> refusals;
  if (jobs.empty()) return refusals;
  std::vector<std::string> argv{settings_.scancel};
  argv.insert(argv.end(), args.begin(), args.end());
  for (std::int64_t j : jobs) argv.push_back(std::to_string(j));
  const CommandResult r = run(argv, "", /*merge=*/true, timeout_s);
  const std::string& out = r.out;
  const int status = r.exit_code;
  if (const std::string why = unreachable_line(out); !why.empty())
    throw SlurmError("scancel: slurmctld unreachable: " + why);
  // "scancel: error: Kill job error on job id 8: Job can not be altered now"
  std::istringstream lines(out);
  std::string line;
  bool any = false;
  while (std::getline(lines, line)) {
    const std::size_t at = line.find("job id ");
    if (at == std::string::npos) continue;
    std::size_t end = at + 7;
    std::int64_t id = 0;
    while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end])))
      id = id * 10 + (line[end++] - '0');
    std::string why = line.substr(std::min(line.size(), end + 2));
    refusals[id] = why;
    any = true;
  }
  if (status != 0 && !any)
    throw SlurmError("scancel: exit status " + std::to_string(status) + ": " + first_line(out));
  return refusals;
}

std::map<std::int64_t, std::string> CommandLineSlurm::signal_checkpoint(
    const std::vector<std::int64_t>& jobs) {
  // Best effort (requeuehold follows), and scancel retries for seconds a job
  // that is starting or completing: a short timeout keeps the round going.
  return scancel({"--signal=USR1", "--full"}, jobs,
                 std::min(settings_.timeout_s, settings_.signal_timeout_s));
}

std::map<std::int64_t, std::string> CommandLineSlurm::cancel(
    const std::vector<std::int64_t>& jobs) {
  return scancel({}, jobs);
}

JobsSnapshot CommandLineSlurm::read_jobs() {
  std::vector<std::string> squeue{settings_.squeue, "-h", "-t", "all", "-o", kSqueueFormat};
  if (!settings_.partition.empty()) squeue.push_back("--partition=" + settings_.partition);
  const std::string queue_text = run_ok(squeue);
  const std::string detail_text = run_ok({settings_.scontrol, "-d", "-o", "show", "job"});
  JobsSnapshot snap;
  try {
    snap.queue = parse_squeue(queue_text);
    for (JobDetail& d : parse_job_details(detail_text, &snap.unreadable)) {
      const std::int64_t id = d.job_id;
      snap.detail.emplace(id, std::move(d));
    }
  } catch (const InputError& e) {
    throw SlurmError(e.what());
  }
  return snap;
}

std::vector<NodeInfo> CommandLineSlurm::read_nodes() {
  const std::string text = run_ok({settings_.scontrol, "-d", "-o", "show", "node"});
  try {
    return parse_nodes(text);
  } catch (const InputError& e) {
    throw SlurmError(e.what());
  }
}

void CommandLineSlurm::set_node_drained(const std::string& node, bool drained) {
  std::vector<std::string> argv{settings_.scontrol, "update", "NodeName=" + node};
  if (drained) {
    argv.push_back("State=DRAIN");
    argv.push_back("Reason=fairgpu");
  } else {
    argv.push_back("State=RESUME");
  }
  run_ok(std::move(argv));
}

}  // namespace fairgpu::live::slurm
