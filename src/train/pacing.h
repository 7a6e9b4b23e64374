// fairgpu-train's speed emulation (issue 5: "its speed may be scaled per GPU
// type (--speed-map) so heterogeneous clusters can be emulated on CPUs").
//
// This is emulation, not work: every iteration is real SGD arithmetic, done
// as fast as the CPU allows; the Pacer then holds the run back so that it
// completes at most `rate` iterations per second, measured against one steady
// clock from the start of the run (deadline of iteration k = start + k/rate),
// so per-iteration timing errors do not accumulate. A CPU slower than the
// emulated GPU simply runs below the rate.
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

  // Waits until `iterations` iterations (counted from construction) are due,
  // returning early once `stop` becomes non-zero.
  void wait(std::uint64_t iterations, const volatile std::sig_atomic_t& stop) const;

 private:
  double rate_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fairgpu::train
