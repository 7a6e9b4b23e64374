#include "live/random_hex.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <cerrno>
#include <stdexcept>
#include <vector>

namespace fairgpu::live {

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buffer(bytes);
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(buffer.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("getrandom failed");
    got += static_cast<std::size_t>(n);
  }
  std::string hex;
  hex.reserve(2 * bytes);
  for (unsigned char b : buffer) hex += fmt::format("{:02x}", b);
  return hex;
}

}  // namespace fairgpu::live
