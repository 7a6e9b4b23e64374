// SHA-256 of a run's input files through OpenSSL's EVP interface
// (libcrypto, in every build), read in 1 MiB blocks so a multi-gigabyte trace
// is hashed in constant memory.
#include "fairgpu/provenance.h"

#include <openssl/evp.h>

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
