// SHA-256 of a run's input files, read in 1 MiB blocks so a multi-gigabyte
// trace is hashed in constant memory: through OpenSSL's EVP interface
// (libcrypto) where the build has it (the live manager needs it anyway), else
// (the simulator-only build, -DFAIRGPU_LIVE=OFF) by the FIPS 180-4 algorithm
// below (tests/report_test.cc: FIPS 180-4's test vectors and sha256sum's
// digest of a file).
#include "fairgpu/provenance.h"

#ifdef FAIRGPU_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

#include <array>
#include <cstdint>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "fairgpu/input_error.h"
#include "fairgpu_build_version.h"  // FAIRGPU_VERSION (cmake/fairgpu_version.cmake)

namespace fairgpu {
namespace {

std::string hex(const unsigned char* md, std::size_t len) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

#ifdef FAIRGPU_HAVE_OPENSSL

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("OpenSSL: cannot start a SHA-256 digest");
  }
  void update(const char* data, std::size_t n) {
    if (EVP_DigestUpdate(ctx_.get(), data, n) != 1)
      throw std::runtime_error("OpenSSL: SHA-256 update failed");
  }
  std::string hex_digest() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), md.data(), &len) != 1)
      throw std::runtime_error("OpenSSL: cannot finish a SHA-256 digest");
    return hex(md.data(), len);
  }

 private:
  struct Free {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx_;
};

#else

// FIPS 180-4 SHA-256.
class Sha256 {
 public:
  void update(const char* data, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      block_[fill_++] = static_cast<unsigned char>(data[i]);
      if (fill_ == 64) {
        compress();
        fill_ = 0;
      }
    }
    bytes_ += n;
  }
  std::string hex_digest() {
    const std::uint64_t bits = bytes_ * 8;
    const char one = static_cast<char>(0x80), zero = 0;
    update(&one, 1);
    while (fill_ != 56) update(&zero, 1);
    for (int i = 7; i >= 0; --i) {
      const char b = static_cast<char>((bits >> (8 * i)) & 0xff);
      update(&b, 1);
    }
    std::array<unsigned char, 32> md{};
    for (std::size_t i = 0; i < 8; ++i)
      for (std::size_t k = 0; k < 4; ++k)
        md[4 * i + k] = static_cast<unsigned char>(h_[i] >> (24 - 8 * k));
    return hex(md.data(), md.size());
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void compress() {
    static constexpr std::array<std::uint32_t, 64> k = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    std::array<std::uint32_t, 64> w{};
    for (std::size_t i = 0; i < 16; ++i)
      w[i] = std::uint32_t{block_[4 * i]} << 24 | std::uint32_t{block_[4 * i + 1]} << 16 |
             std::uint32_t{block_[4 * i + 2]} << 8 | std::uint32_t{block_[4 * i + 3]};
    for (std::size_t i = 16; i < 64; ++i) {
      const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::array<std::uint32_t, 8> v = h_;
    for (std::size_t i = 0; i < 64; ++i) {
      const std::uint32_t s1 = rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25);
      const std::uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
      const std::uint32_t t1 = v[7] + s1 + ch + k[i] + w[i];
      const std::uint32_t s0 = rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22);
      const std::uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
      const std::uint32_t t2 = s0 + maj;
      v = {t1 + t2, v[0], v[1], v[2], v[3] + t1, v[4], v[5], v[6]};
    }
    for (std::size_t i = 0; i < 8; ++i) h_[i] += v[i];
  }

  std::array<std::uint32_t, 8> h_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                     0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> block_{};
  std::size_t fill_ = 0;
  std::uint64_t bytes_ = 0;
};

#endif

}  // namespace

std::string fairgpu_version() { return FAIRGPU_VERSION; }

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot read the file");
  Sha256 digest;
  std::string block(1 << 20, '\0');
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got > 0) digest.update(block.data(), got);
  }
  if (in.bad()) throw InputError(path, "", "cannot read the file");
  return digest.hex_digest();
}

}  // namespace fairgpu
