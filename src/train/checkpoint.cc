// fairgpu-train's checkpoint encoding and atomic file writes (issue 5). See
// checkpoint.h for the format.
#include "train/checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>

namespace fairgpu::train {
namespace {

constexpr char kMagic[8] = {'F', 'G', 'T', 'R', 'A', 'I', 'N', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderSize = sizeof(kMagic) + sizeof(std::uint32_t) + sizeof(std::uint64_t);
constexpr std::size_t kTrailerSize = sizeof(std::uint64_t);

template <typename T>
void put(std::string& out, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

void put_doubles(std::string& out, const std::vector<double>& v) {
  put<std::uint64_t>(out, v.size());
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
}

// Reads the payload front to back; running past its end means a corrupt file.
class Reader {
 public:
  Reader(const std::string& bytes, std::size_t begin, std::size_t end, std::string file)
      : bytes_(bytes), pos_(begin), end_(end), file_(std::move(file)) {}

  template <typename T>
  T get() {
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));
    return value;
  }

  std::vector<double> get_doubles(std::size_t expected, const char* what) {
    const auto n = get<std::uint64_t>();
    if (n != expected)
      throw BadInput(fmt::format("{}: corrupt checkpoint: {} has {} values, expected {}", file_,
                                 what, n, expected));
    std::vector<double> v(n);
    std::memcpy(v.data(), take(n * sizeof(double)), n * sizeof(double));
    return v;
  }

  std::string get_string() {
    const auto n = get<std::uint64_t>();
    return std::string(take(n), n);
  }

  bool at_end() const { return pos_ == end_; }

 private:
  const char* take(std::size_t n) {
    if (n > end_ - pos_)
      throw BadInput(fmt::format("{}: corrupt checkpoint: payload too short", file_));
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }

  const std::string& bytes_;
  std::size_t pos_, end_;
  std::string file_;
};

// Throws unless the checkpoint's value of a configuration field is this run's.
template <typename T>
void check_same(const std::string& file, const char* field, T saved, T wanted) {
  if (std::memcmp(&saved, &wanted, sizeof(T)) != 0)
    throw BadInput(fmt::format(
        "{}: checkpoint was written with {} {}, this run has {} {} (use another checkpoint "
        "directory)",
        file, field, saved, field, wanted));
}

std::string errno_text() { return std::strerror(errno); }

void write_all(int fd, const std::string& bytes, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw std::runtime_error(fmt::format("{}: write failed: {}", path.string(), errno_text()));
    done += static_cast<std::size_t>(n);
  }
}

void fsync_or_throw(int fd, const std::filesystem::path& path) {
  while (::fsync(fd) != 0) {
    if (errno == EINTR) continue;
    const std::string err = errno_text();
    ::close(fd);
    throw std::runtime_error(fmt::format("{}: fsync failed: {}", path.string(), err));
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, const std::string& bytes,
                           bool durable) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(fmt::format("{}: cannot create: {}", tmp.string(), errno_text()));
  try {
    write_all(fd, bytes, tmp);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (durable) fsync_or_throw(fd, tmp);
  if (::close(fd) != 0)
    throw std::runtime_error(fmt::format("{}: close failed: {}", tmp.string(), errno_text()));
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error(
        fmt::format("{}: cannot rename to {}: {}", tmp.string(), path.string(), errno_text()));
  if (!durable) return;
  // The rename is durable only once the directory entry is.
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    throw std::runtime_error(
        fmt::format("{}: cannot open directory: {}", dir.string(), errno_text()));
  fsync_or_throw(dfd, dir);
  ::close(dfd);
}

void write_checkpoint(const std::filesystem::path& path, const TrainConfig& config,
                      const TrainState& state) {
  std::string payload;
  put(payload, config.seed);
  put(payload, config.inputs);
  put(payload, config.hidden);
  put(payload, config.batch);
  put(payload, config.samples);
  put(payload, config.learning_rate);
  put(payload, config.momentum);
  put(payload, state.iteration);
  put(payload, state.initial_loss);
  // The engine's full state (312 words and the position), in the standard's
  // textual form, which operator>> restores exactly.
  std::ostringstream rng;
  rng << state.batch_rng;
  put<std::uint64_t>(payload, rng.str().size());
  payload += rng.str();
  put_doubles(payload, state.params);
  put_doubles(payload, state.velocity);

  std::string file(kMagic, sizeof(kMagic));
  put(file, kVersion);
  put<std::uint64_t>(file, payload.size());
  file += payload;
  put(file, fnv1a64(file.data(), file.size()));
  write_file_atomically(path, file, /*durable=*/true);
}

TrainState read_checkpoint(const std::filesystem::path& path, const TrainConfig& config) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open: {}", name, errno_text()));
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read failed", name));
  const std::string bytes = buf.str();

  if (bytes.size() < kHeaderSize + kTrailerSize ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw BadInput(
        fmt::format("{}: not a fairgpu-train checkpoint (bad magic or too short)", name));
  std::uint32_t version;
  std::memcpy(&version, bytes.data() + sizeof(kMagic), sizeof(version));
  if (version != kVersion)
    throw BadInput(fmt::format("{}: checkpoint format version {}, this program reads {}", name,
                               version, kVersion));
  std::uint64_t length;
  std::memcpy(&length, bytes.data() + sizeof(kMagic) + sizeof(version), sizeof(length));
  if (length != bytes.size() - kHeaderSize - kTrailerSize)
    throw BadInput(fmt::format("{}: corrupt checkpoint: {} bytes, header says {} (torn write?)",
                               name, bytes.size(), length + kHeaderSize + kTrailerSize));
  std::uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - kTrailerSize, sizeof(stored));
  if (stored != fnv1a64(bytes.data(), bytes.size() - kTrailerSize))
    throw BadInput(fmt::format("{}: corrupt checkpoint: checksum mismatch", name));

  Reader r(bytes, kHeaderSize, bytes.size() - kTrailerSize, name);
  check_same(name, "--seed", r.get<std::uint64_t>(), config.seed);
  check_same(name, "inputs", r.get<std::uint32_t>(), config.inputs);
  check_same(name, "--hidden", r.get<std::uint32_t>(), config.hidden);
  check_same(name, "--batch", r.get<std::uint32_t>(), config.batch);
  check_same(name, "samples", r.get<std::uint32_t>(), config.samples);
  check_same(name, "--lr", r.get<double>(), config.learning_rate);
  check_same(name, "--momentum", r.get<double>(), config.momentum);

  TrainState state;
  state.iteration = r.get<std::uint64_t>();
  state.initial_loss = r.get<double>();
  std::istringstream rng(r.get_string());
  rng >> state.batch_rng;
  if (rng.fail()) throw BadInput(fmt::format("{}: corrupt checkpoint: bad RNG state", name));
  const std::size_t n = parameter_count(config);
  state.params = r.get_doubles(n, "weights");
  state.velocity = r.get_doubles(n, "velocity");
  if (!r.at_end()) throw BadInput(fmt::format("{}: corrupt checkpoint: trailing bytes", name));
  return state;
}

}  // namespace fairgpu::train
