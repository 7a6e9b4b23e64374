// fairgpu-train: the demo training workload of fairgpu's live cluster manager
// (issue 5). It trains the MLP of mlp.h by SGD with momentum for --iterations
// steps and follows the job protocol of docs/live-protocol.md:
//  - resumes from <checkpoint dir>/checkpoint.bin when it exists (refusing one
//    that is corrupt or was written under another configuration);
//  - checkpoints atomically every --checkpoint-every iterations and, on SIGUSR1
//    or SIGTERM, at the next iteration boundary, then exits 0;
//  - keeps the progress file (total iterations done) current; with
//    --batch-schedule (batch_schedule.h) also the batch size, rewritten at
//    once when it changes;
//  - at the end writes the final checkpoint and result.json and prints
//    "final loss: <%.17g>".
// With --base-rate it emulates a device of a given speed (pacing.h).
//
// A gang over several nodes runs one fairgpu-train per node with the
// rendezvous variables torchrun reads (MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
// RANK, NODE_RANK, LOCAL_WORLD_SIZE; docs/live-protocol.md). It prints them.
// The process of RANK 0 trains and checkpoints as above (the model is small
// enough for one process: the other ranks stand in for data-parallel
// replicas). The others follow: they neither train nor write anything, and
// exit 0 when rank 0's result.json appears in the shared checkpoint
// directory (the job finished) or on SIGUSR1/SIGTERM (the gang is revoked:
// rank 0 checkpoints). So every part of the gang ends cleanly together.
//
// Exit status: 0 finished or stopped by a signal after checkpointing; 2 bad
// input (one line on stderr); 1 any other error.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "train/batch_schedule.h"
#include "train/checkpoint.h"
#include "train/mlp.h"
#include "train/pacing.h"

namespace fairgpu::train {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

// How often the progress file is rewritten while training (the brief asks for
// at most 0.2 s; more often lets the agent and the tests see finer progress
// for a cost of one small write + rename).
constexpr std::chrono::milliseconds kProgressInterval{50};

// Set by SIGUSR1/SIGTERM (only an async-signal-safe store); acted on at the
// next iteration boundary.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int signal) { g_stop_signal = signal; }

void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

struct Options {
  TrainConfig config;
  std::uint64_t iterations = 0;
  std::uint64_t checkpoint_every = 200;
  std::string checkpoint_dir = env_or_empty("FAIRGPU_CHECKPOINT_DIR");
  std::string progress_file = env_or_empty("FAIRGPU_PROGRESS_FILE");
  std::string speed_map;
  std::string gpu_type = env_or_empty("FAIRGPU_GPU_TYPE");
  std::string scaling;
  std::optional<double> base_rate;
  std::optional<double> cross_node_factor;
  std::string batch_schedule;
};

// The emulated rate in iterations/s (0: unpaced) and a line describing it;
// `spread`: this process stands for only some of the gang's workers (the
// others are on other nodes).
std::pair<double, std::string> emulated_rate(const Options& o, bool spread) {
  if (!o.base_rate) {
    if (!o.speed_map.empty()) throw BadInput("--speed-map needs --base-rate");
    if (!o.scaling.empty()) throw BadInput("--scaling needs --base-rate");
    if (o.cross_node_factor) throw BadInput("--cross-node-factor needs --base-rate");
    return {0.0, "unpaced"};
  }
  if (o.cross_node_factor && !(*o.cross_node_factor > 0 && *o.cross_node_factor <= 1))
    throw BadInput(
        fmt::format("--cross-node-factor: must be in (0, 1], got {}", *o.cross_node_factor));
  if (!std::isfinite(*o.base_rate) || *o.base_rate <= 0)
    throw BadInput(fmt::format("--base-rate: must be positive, got {}", *o.base_rate));
  double speed = 1;
  if (!o.speed_map.empty()) {
    const auto map = parse_speed_map(o.speed_map, "--speed-map");
    if (o.gpu_type.empty())
      throw BadInput("--speed-map needs a GPU type: --gpu-type or FAIRGPU_GPU_TYPE");
    auto it = map.find(o.gpu_type);
    if (it == map.end())
      throw BadInput(
          fmt::format("--speed-map: no speed for GPU type '{}' in '{}'", o.gpu_type, o.speed_map));
    speed = it->second;
  }
  std::uint32_t workers = 1;
  if (const std::string text = env_or_empty("FAIRGPU_NUM_WORKERS"); !text.empty()) {
    const char* end = text.data() + text.size();
    if (std::from_chars(text.data(), end, workers).ptr != end || workers == 0)
      throw BadInput(
          fmt::format("FAIRGPU_NUM_WORKERS: expected a positive integer, got '{}'", text));
  }
  // Default: perfectly linear data-parallel scaling.
  double scaling = workers;
  if (!o.scaling.empty()) {
    const auto map = parse_scaling_map(o.scaling, "--scaling");
    auto it = map.find(workers);
    if (it == map.end())
      throw BadInput(fmt::format(
          "--scaling: no factor for {} workers (FAIRGPU_NUM_WORKERS) in '{}'", workers, o.scaling));
    scaling = it->second;
  }
  // A gang over several nodes pays for its communication, as a profile
  // without figures of its own for that charges it (consolidated x factor).
  const double cross_node = spread && o.cross_node_factor ? *o.cross_node_factor : 1.0;
  const double rate = *o.base_rate * speed * scaling * cross_node;
  return {rate, fmt::format("emulating {} iterations/s (base {} x speed {} of '{}' x scaling {} "
                            "for {} worker{}{})",
                            rate, *o.base_rate, speed, o.gpu_type, scaling, workers,
                            workers == 1 ? "" : "s",
                            cross_node != 1.0 ? fmt::format(" x {} over nodes", cross_node) : "")};
}

void validate(const Options& o) {
  const TrainConfig& c = o.config;
  if (c.batch == 0) throw BadInput("--batch: must be at least 1");
  if (c.hidden == 0) throw BadInput("--hidden: must be at least 1");
  if (!std::isfinite(c.learning_rate) || c.learning_rate <= 0)
    throw BadInput(fmt::format("--lr: must be positive, got {}", c.learning_rate));
  if (!std::isfinite(c.momentum) || c.momentum < 0 || c.momentum >= 1)
    throw BadInput(fmt::format("--momentum: must be in [0, 1), got {}", c.momentum));
}

class ProgressFile {
 public:
  // With a batch schedule every write also gives the batch size of the
  // next step ("ITERATIONS BATCH", docs/live-protocol.md).
  ProgressFile(std::string path, const BatchSchedule* schedule)
      : path_(std::move(path)), schedule_(schedule) {}

  // Rewrites the file now (atomically; not fsync'd: the checkpoint, not this
  // file, is what a restart trusts).
  void write(std::uint64_t iterations) {
    last_ = std::chrono::steady_clock::now();
    if (path_.empty()) return;
    write_file_atomically(path_,
                          schedule_
                              ? fmt::format("{} {}\n", iterations, schedule_->batch_at(iterations))
                              : fmt::format("{}\n", iterations),
                          false);
  }

  void write_if_due(std::uint64_t iterations) {
    if (std::chrono::steady_clock::now() - last_ >= kProgressInterval) write(iterations);
  }

 private:
  std::string path_;
  const BatchSchedule* schedule_ = nullptr;
  std::chrono::steady_clock::time_point last_;
};

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

// The rendezvous variables (all absent: a process of its own, rank 0 of 1).
struct Rendezvous {
  std::string master_addr = "127.0.0.1";
  std::uint32_t master_port = 29500, world_size = 1, rank = 0, node_rank = 0, local_world_size = 1;
  bool given = false;
};

Rendezvous read_rendezvous() {
  Rendezvous r;
  auto number = [&r](const char* name, std::uint32_t& out, std::uint32_t lo, std::uint32_t hi) {
    const std::string text = env_or_empty(name);
    if (text.empty()) return;
    r.given = true;
    const char* end = text.data() + text.size();
    if (std::from_chars(text.data(), end, out).ptr != end || out < lo || out > hi)
      throw BadInput(
          fmt::format("{}: expected an integer in {}..{}, got '{}'", name, lo, hi, text));
  };
  if (const std::string addr = env_or_empty("MASTER_ADDR"); !addr.empty()) {
    r.master_addr = addr;
    r.given = true;
  }
  number("MASTER_PORT", r.master_port, 1, 65535);
  number("WORLD_SIZE", r.world_size, 1, 1u << 20);
  number("RANK", r.rank, 0, 1u << 20);
  number("NODE_RANK", r.node_rank, 0, 1u << 20);
  r.local_world_size = r.world_size;
  number("LOCAL_WORLD_SIZE", r.local_world_size, 1, 1u << 20);
  if (r.rank + r.local_world_size > r.world_size)
    throw BadInput(fmt::format("RANK {} + LOCAL_WORLD_SIZE {} exceeds WORLD_SIZE {}", r.rank,
                               r.local_world_size, r.world_size));
  return r;
}

// A rank other than 0 (see the file's comment): waits for rank 0's result or
// a stop signal, and exits 0 either way.
int follow(const Options& o, const Rendezvous& r) {
  if (o.checkpoint_dir.empty())
    throw BadInput(
        fmt::format("RANK {}: a rank other than 0 needs the checkpoint directory "
                    "(FAIRGPU_CHECKPOINT_DIR) to see rank 0's result",
                    r.rank));
  const std::filesystem::path result = std::filesystem::path(o.checkpoint_dir) / "result.json";
  say(fmt::format("fairgpu-train: rank {} follows rank 0 at {}:{}", r.rank, r.master_addr,
                  r.master_port));
  while (!g_stop_signal) {
    std::error_code ec;
    if (std::filesystem::exists(result, ec)) {
      std::ifstream in(result);
      const std::string text((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
      const auto done = nlohmann::json::parse(text, nullptr, false);
      if (done.is_object() && done.value("iterations", std::uint64_t{0}) >= o.iterations) {
        say(fmt::format("fairgpu-train: rank {}: rank 0 finished", r.rank));
        return kExitOk;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  say(fmt::format("fairgpu-train: rank {} stopped by signal {}", r.rank,
                  static_cast<int>(g_stop_signal)));
  return kExitOk;
}

int train(const Options& o) {
  validate(o);
  const Rendezvous rdv = read_rendezvous();
  if (rdv.given)
    say(
        fmt::format("fairgpu-train: rendezvous MASTER_ADDR={} MASTER_PORT={} WORLD_SIZE={} "
                    "RANK={} NODE_RANK={} LOCAL_WORLD_SIZE={}",
                    rdv.master_addr, rdv.master_port, rdv.world_size, rdv.rank, rdv.node_rank,
                    rdv.local_world_size));
  if (rdv.rank != 0) return follow(o, rdv);
  const auto [rate, rate_text] = emulated_rate(o, rdv.local_world_size < rdv.world_size);
  const TrainConfig& config = o.config;
  // Checked before anything is printed or written.
  const BatchSchedule schedule = o.batch_schedule.empty()
                                     ? BatchSchedule()
                                     : BatchSchedule::parse(o.batch_schedule, config.samples);
  const Dataset data = make_dataset(config);

  std::filesystem::path checkpoint;
  if (!o.checkpoint_dir.empty()) {
    std::filesystem::create_directories(o.checkpoint_dir);
    checkpoint = std::filesystem::path(o.checkpoint_dir) / "checkpoint.bin";
  }
  TrainState state;
  if (!checkpoint.empty() && std::filesystem::exists(checkpoint)) {
    state = read_checkpoint(checkpoint, config);
    if (state.iteration > o.iterations)
      throw BadInput(fmt::format("{}: checkpoint is at iteration {}, beyond --iterations {}",
                                 checkpoint.string(), state.iteration, o.iterations));
    say(fmt::format("fairgpu-train: resumed from {} at iteration {} of {}", checkpoint.string(),
                    state.iteration, o.iterations));
  } else {
    state = initial_state(config, data);
    say(fmt::format("fairgpu-train: starting at iteration 0 of {}, initial loss {:.17g}",
                    o.iterations, state.initial_loss));
  }
  if (rate > 0) say("fairgpu-train: " + rate_text);
  if (!schedule.empty()) {
    say(fmt::format("fairgpu-train: batch schedule {}, batch {} at iteration {}", o.batch_schedule,
                    schedule.batch_at(state.iteration), state.iteration));
  }

  ProgressFile progress(o.progress_file, schedule.empty() ? nullptr : &schedule);
  TrainConfig step_config = config;
  progress.write(state.iteration);
  Pacer pacer(rate);
  const std::uint64_t first = state.iteration;
  while (state.iteration < o.iterations) {
    if (g_stop_signal) {
      if (checkpoint.empty()) {
        progress.write(state.iteration);
        say(
            fmt::format("fairgpu-train: stopped at iteration {} without a checkpoint (no "
                        "checkpoint directory)",
                        state.iteration));
        return kExitOk;
      }
      write_checkpoint(checkpoint, config, state);
      progress.write(state.iteration);
      say(fmt::format("fairgpu-train: checkpointed at iteration {}", state.iteration));
      return kExitOk;
    }
    if (!schedule.empty()) {
      const std::uint32_t batch = schedule.batch_at(state.iteration);
      if (batch != step_config.batch && state.iteration > first) {
        say(fmt::format("fairgpu-train: batch size {} from iteration {}", batch, state.iteration));
        progress.write(state.iteration);  // a change is reported when it happens
      }
      step_config.batch = batch;
    }
    sgd_step(step_config, data, state);
    if (!checkpoint.empty() && o.checkpoint_every > 0 &&
        state.iteration % o.checkpoint_every == 0 && state.iteration < o.iterations) {
      write_checkpoint(checkpoint, config, state);
      progress.write(state.iteration);
    } else {
      progress.write_if_due(state.iteration);
    }
    pacer.wait(state.iteration - first, g_stop_signal);
  }

  const double final_loss = dataset_loss(config, data, state.params);
  const std::string checksum = fmt::format("{:016x}", weights_checksum(state.params));
  if (!checkpoint.empty()) {
    write_checkpoint(checkpoint, config, state);
    const nlohmann::json result = {{"iterations", state.iteration},
                                   {"seed", config.seed},
                                   {"initial_loss", state.initial_loss},
                                   {"final_loss", final_loss},
                                   {"weights_checksum", checksum}};
    write_file_atomically(std::filesystem::path(o.checkpoint_dir) / "result.json",
                          result.dump(2) + "\n", true);
  }
  progress.write(state.iteration);
  say(fmt::format("weights checksum: {}", checksum));
  say(fmt::format("final loss: {:.17g}", final_loss));
  return kExitOk;
}

// Single-line messages: CLI11 sometimes spreads one over several lines.
std::string flatten(std::string text) {
  for (char& c : text)
    if (c == '\n') c = ' ';
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{"fairgpu-train: demo training job (MLP + SGD) for fairgpu's live manager"};
  app.add_option("--iterations", o.iterations, "total SGD iterations")->required();
  app.add_option("--seed", o.config.seed, "seed of data, initial weights and batches")
      ->capture_default_str();
  app.add_option("--batch", o.config.batch, "mini-batch size")->capture_default_str();
  app.add_option("--batch-schedule", o.batch_schedule,
                 "batch size per epoch, EPOCH:BATCH,... from epoch 0 (e.g. 0:32,10:64; an epoch "
                 "is ceil(4096 samples / batch) steps); overrides --batch and adds the batch "
                 "size to the progress file");
  app.add_option("--lr", o.config.learning_rate, "learning rate")->capture_default_str();
  app.add_option("--momentum", o.config.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--hidden", o.config.hidden, "hidden units")->capture_default_str();
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "checkpoint every N iterations (0: only on signal and at the end)")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "checkpoint and result directory (default $FAIRGPU_CHECKPOINT_DIR; none: no "
                 "checkpoints)");
  app.add_option("--progress-file", o.progress_file,
                 "file kept holding the iterations done (default $FAIRGPU_PROGRESS_FILE)");
  app.add_option("--speed-map", o.speed_map,
                 "emulated speed per GPU type, e.g. k80=1,p100=2.5,v100=4 (needs --base-rate)");
  app.add_option("--gpu-type", o.gpu_type, "GPU type to emulate (default $FAIRGPU_GPU_TYPE)");
  app.add_option("--base-rate", o.base_rate,
                 "emulated iterations/s at speed 1 with 1 worker (default: unpaced)");
  app.add_option("--scaling", o.scaling,
                 "throughput factor per $FAIRGPU_NUM_WORKERS, e.g. 1=1,2=1.8,4=3.2 (default "
                 "linear)");
  app.add_option("--cross-node-factor", o.cross_node_factor,
                 "throughput factor, in (0, 1], of a gang whose workers span nodes "
                 "(LOCAL_WORLD_SIZE < WORLD_SIZE), as a profile's cross_node_factor (default 1)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::fprintf(stderr, "fairgpu-train: %s; run 'fairgpu-train --help'\n",
                 flatten(e.what()).c_str());
    return kExitBadInput;
  }
  return train(o);
}

}  // namespace
}  // namespace fairgpu::train

int main(int argc, char** argv) {
  // First of all, so a stop request that comes early is not fatal.
  fairgpu::train::install_signal_handlers();
  try {
    return fairgpu::train::run(argc, argv);
  } catch (const fairgpu::train::BadInput& e) {
    std::fprintf(stderr, "fairgpu-train: %s\n", fairgpu::train::flatten(e.what()).c_str());
    return fairgpu::train::kExitBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fairgpu-train: error: %s\n", fairgpu::train::flatten(e.what()).c_str());
    return fairgpu::train::kExitFailure;
  }
}
