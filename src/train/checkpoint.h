// fairgpu-train's checkpoint and output files (issue 5: "checkpoints its full
// state (weights, optimiser state, RNG state, iteration) atomically (write then
// rename)", progress file, result).
//
// Checkpoint format (native byte order: it is read back by the same binary on
// the same kind of machine): the 8-byte magic "FGTRAIN\0", a u32 format
// version, a u64 payload length, the payload, and the FNV-1a-64 of everything
// before it. A torn or corrupted file fails the length or checksum test and is
// reported as bad input, never silently replaced by a fresh start.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

#include "train/mlp.h"

namespace fairgpu::train {

// Bad input (command line, checkpoint, environment): one line, exit 2.
class BadInput : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `bytes` to `path` through `path`.tmp and a rename, so a reader sees
// the old file or the new one, never a mix. With `durable`, the data is
// fsync'd before the rename and the directory after it, so the new file also
// survives a machine crash. Throws std::runtime_error on I/O errors.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes,
                           bool durable);

// Writes the checkpoint of `state` under `config` durably and atomically.
void write_checkpoint(const std::filesystem::path& path, const TrainConfig& config,
                      const TrainState& state);

// Reads a checkpoint and checks that it was written under `config` (seed,
// sizes, hyper-parameters). Throws BadInput naming `path` when the file is
// torn or corrupt or its configuration differs; std::runtime_error when it
// cannot be read.
TrainState read_checkpoint(const std::filesystem::path& path, const TrainConfig& config);

}  // namespace fairgpu::train
