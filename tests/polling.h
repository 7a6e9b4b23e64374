// Waiting in tests for something another process or thread does: a deadline
// on the steady clock, checked every 10 ms.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace fairgpu::testing_support {

// Seconds since `t` on the steady clock.
inline double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Polls `condition` until it holds (true) or `timeout_s` passes (false).
inline bool wait_for(const std::function<bool()>& condition, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  while (!condition()) {
    if (since(start) > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace fairgpu::testing_support
