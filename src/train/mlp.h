// fairgpu-train's model (issue 5: "a real training program"): a one-hidden-
// layer tanh MLP regressed by mini-batch SGD with momentum onto synthetic data
// that a fixed random "teacher" network plus noise generates from the seed.
//
// Everything here is a pure function of the configuration and the state, with
// no parallelism and no data-dependent evaluation order, so the same binary on
// the same machine computes bit-identical weights whether a run goes straight
// through or is stopped and resumed from checkpoints any number of times.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace fairgpu::train {

// What a checkpoint must agree with before a run may resume from it.
struct TrainConfig {
  std::uint64_t seed = 1;
  std::uint32_t inputs = 32;
  std::uint32_t hidden = 64;
  std::uint32_t batch = 32;
  std::uint32_t samples = 4096;
  double learning_rate = 0.02;
  double momentum = 0.9;
};

// Inputs row-major (samples x inputs) and the teacher's noisy targets.
struct Dataset {
  std::uint32_t inputs = 0;
  std::vector<double> x;
  std::vector<double> y;
  std::size_t size() const { return y.size(); }
};

// The full training state: resuming from it continues the exact same
// trajectory. `params` and `velocity` (the momentum optimiser's state) share
// the flat layout [w1 (hidden x inputs) | b1 (hidden) | w2 (hidden) | b2].
struct TrainState {
  std::uint64_t iteration = 0;  // SGD steps done
  double initial_loss = 0;      // loss of the untrained net, kept for result.json
  std::mt19937_64 batch_rng;    // draws the mini-batches
  std::vector<double> params;
  std::vector<double> velocity;
};

// Number of parameters of the network `config` describes.
std::size_t parameter_count(const TrainConfig& config);

// The seeded synthetic data set (regenerated, not checkpointed: it is a pure
// function of the seed and sizes).
Dataset make_dataset(const TrainConfig& config);

// Seeded initial weights, zero velocity, iteration 0.
TrainState initial_state(const TrainConfig& config, const Dataset& data);

// One SGD-with-momentum step on a mini-batch drawn from state.batch_rng;
// increments state.iteration.
void sgd_step(const TrainConfig& config, const Dataset& data, TrainState& state);

// Mean squared error of `params` over the whole data set.
double dataset_loss(const TrainConfig& config, const Dataset& data,
                    const std::vector<double>& params);

// FNV-1a (64 bit) of a byte range; any single changed byte changes it.
std::uint64_t fnv1a64(const void* data, std::size_t size, std::uint64_t hash = 0xcbf29ce484222325);

// FNV-1a of the weights' bytes: equal iff the weights are bit-identical
// (up to hash collisions).
std::uint64_t weights_checksum(const std::vector<double>& params);

}  // namespace fairgpu::train
