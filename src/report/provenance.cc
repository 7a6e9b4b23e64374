// SHA-256 through OpenSSL's EVP interface (libcrypto), read in 1 MiB blocks
// so a multi-gigabyte trace is hashed in constant memory.
#include "fairgpu/provenance.h"

#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "fairgpu/input_error.h"
#include "fairgpu_build_version.h"  // FAIRGPU_VERSION (cmake/fairgpu_version.cmake)

namespace fairgpu {
namespace {

struct DigestDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
using Digest = std::unique_ptr<EVP_MD_CTX, DigestDeleter>;

Digest new_sha256() {
  Digest ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("OpenSSL: cannot start a SHA-256 digest");
  return ctx;
}

std::string finish_hex(EVP_MD_CTX* ctx) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, md.data(), &len) != 1)
    throw std::runtime_error("OpenSSL: cannot finish a SHA-256 digest");
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

}  // namespace

std::string fairgpu_version() { return FAIRGPU_VERSION; }

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot read the file");
  Digest ctx = new_sha256();
  std::string block(1 << 20, '\0');
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got > 0 && EVP_DigestUpdate(ctx.get(), block.data(), got) != 1)
      throw std::runtime_error("OpenSSL: SHA-256 update failed");
  }
  if (in.bad()) throw InputError(path, "", "cannot read the file");
  return finish_hex(ctx.get());
}

}  // namespace fairgpu
