// A failure that may pass by itself (the server is unreachable or answered
// 5xx): caught once by the CLI, one line on stderr and exit status 3, so that
// scripts can retry it and not a bad input (status 2).
#pragma once

#include <stdexcept>
#include <string>

namespace fairgpu {

class TransientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fairgpu
