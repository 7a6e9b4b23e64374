// fairgpu-train's speed emulation (issue 5: "its speed may be scaled per GPU
// type (--speed-map) so heterogeneous clusters can be emulated on CPUs").
//
// This is emulation, not work: every iteration is real SGD arithmetic, done
// as fast as the CPU allows; the Pacer then holds the run back so that it
// completes at most `rate` iterations per second, measured against one steady
// clock from the start of the run (deadline of iteration k = start + k/rate),
// so per-iteration timing errors do not accumulate. A CPU slower than the
// emulated GPU simply runs below the rate. A run held back by the machine
// (its CPU taken by others) for longer than Pacer::kCatchUp does not make up
// for it afterwards: a device runs no faster after a stall, so the schedule
// moves on instead of letting a burst run above the rate (profiles measured
// over such a burst read 3x the rate on a loaded machine).
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <map>
#include <string>

namespace fairgpu::train {

// Parses "k80=1,p100=2.5,v100=4": GPU type -> positive speed factor. Throws
// BadInput naming `option` and the bad entry.
std::map<std::string, double> parse_speed_map(const std::string& text, const std::string& option);

// Parses "1=1,2=1.8,4=3.2": number of data-parallel workers -> positive
// throughput factor. Throws BadInput naming `option` and the bad entry.
std::map<std::uint32_t, double> parse_scaling_map(const std::string& text,
                                                  const std::string& option);

class Pacer {
 public:
  // rate <= 0: no pacing.
  explicit Pacer(double rate);

  // How far behind its schedule a run may fall and still catch up.
  static constexpr std::chrono::milliseconds kCatchUp{100};

  // Waits until `iterations` iterations (counted from construction) are due,
  // returning early once `stop` becomes non-zero.
  void wait(std::uint64_t iterations, const volatile std::sig_atomic_t& stop);

 private:
  double rate_;
  std::chrono::steady_clock::time_point start_;  // moved on by stalls past kCatchUp
};

}  // namespace fairgpu::train
