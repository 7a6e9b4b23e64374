// Reader of throughput profiles in Gavel's format (fairgpu/profile.h), e.g.
// the artifact's simulation_throughputs.json (Narayanan et al., OSDI 2020):
//
//   {"v100": {"('ResNet-18 (batch size 16)', 1)": {"null": 32.35, "('A3C', 1)": [..]}, ...},
//    "v100_unconsolidated": {...}, ...}
//
// The key is Python's repr of (job type, scale factor = workers); "null" is the
// job's isolated throughput (iterations/s of the whole job). Every other key of
// an entry is a co-location measurement, which fairgpu does not model: those
// are ignored. Job types are kept in order of first appearance.
//
// Figures must be finite; a 1-worker figure must be > 0 (it is the job's
// reference speed), a multi-worker one >= 0, because the artifact itself
// records 0 where a job does not run at that size (k80, ResNet-50 (batch size
// 128), 2/4/8 workers); JobTypeProfile::rate reads 0 as "cannot run".
#include <cmath>
#include <string>

#include "fairgpu/input_error.h"
#include "fairgpu/profile.h"
#include "fairgpu/synergy.h"
#include "text_input.h"

namespace fairgpu {

namespace {

using nlohmann::ordered_json;
using text_input::child;
using text_input::trim;

constexpr std::string_view kUnconsolidated = "_unconsolidated";
constexpr int kMaxWorkers = 1 << 20;

struct Key {
  std::string job_type;
  int workers = 0;
};

// "('ResNet-18 (batch size 16)', 1)" -> {"ResNet-18 (batch size 16)", 1};
// Python's repr uses double quotes when the name holds a single quote.
std::optional<Key> parse_key(std::string_view s) {
  s = trim(s);
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  auto comma = s.rfind(',');
  if (comma == std::string_view::npos) return std::nullopt;
  std::string_view name = trim(s.substr(0, comma));
  std::string_view number = trim(s.substr(comma + 1));
  if (name.size() < 3 || (name.front() != '\'' && name.front() != '"') ||
      name.back() != name.front())
    return std::nullopt;
  name = name.substr(1, name.size() - 2);
  for (char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
  if (number.empty() || number.size() > 7) return std::nullopt;
  int workers = 0;
  for (char c : number) {
    if (c < '0' || c > '9') return std::nullopt;
    workers = workers * 10 + (c - '0');
  }
  if (workers < 1 || workers > kMaxWorkers) return std::nullopt;
  return Key{std::string(name), workers};
}

std::string key_text(const std::string& job_type, int workers) {
  return "('" + job_type + "', " + std::to_string(workers) + ")";
}

class ProfileParser {
 public:
  explicit ProfileParser(const std::string& source) : source_(source) {}

  ProfileCatalogue parse(const ordered_json& doc) {
    if (!doc.is_object())
      fail("(top level)", std::string("expected an object of GPU types, got ") + doc.type_name());
    if (doc.empty()) fail("(top level)", "no GPU types");
    for (const auto& [gpu_key, table] : doc.items()) read_gpu_table(gpu_key, table);
    if (catalogue_.job_types.empty()) fail("(top level)", "no job types");
    check_complete();
    catalogue_.source = source_;
    return std::move(catalogue_);
  }

 private:
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw InputError(source_, field, problem);
  }

  JobTypeProfile& profile(const std::string& name) {
    for (auto& p : catalogue_.job_types)
      if (p.name == name) return p;
    catalogue_.job_types.emplace_back();
    catalogue_.job_types.back().name = name;
    return catalogue_.job_types.back();
  }

  void read_gpu_table(const std::string& gpu_key, const ordered_json& table) {
    if (gpu_key.empty()) fail("\"\"", "empty GPU type name");
    for (char c : gpu_key)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        fail(gpu_key, "GPU type name must not contain control characters");
    bool spread = gpu_key.ends_with(kUnconsolidated) && gpu_key.size() > kUnconsolidated.size();
    std::string gpu_type =
        spread ? gpu_key.substr(0, gpu_key.size() - kUnconsolidated.size()) : gpu_key;
    if (!table.is_object())
      fail(gpu_key, std::string("expected an object of job entries, got ") + table.type_name());
    for (const auto& [key, entry] : table.items()) {
      std::string path = child(gpu_key, key);
      auto parsed = parse_key(key);
      if (!parsed)
        fail(path,
             "expected a key like ('ResNet-18 (batch size 16)', 1): job type in quotes, "
             "then the number of workers");
      if (!entry.is_object())
        fail(path, std::string("expected an object with a \"null\" throughput, got ") +
                       entry.type_name());
      std::string null_path = child(path, "null");
      auto it = entry.find("null");
      if (it == entry.end())
        fail(null_path, "missing: the isolated throughput (iterations/s) of this job");
      if (!it->is_number())
        fail(null_path, std::string("expected a number, got ") + it->type_name());
      double v = it->get<double>();
      if (!std::isfinite(v)) fail(null_path, "must be a finite number");
      if (parsed->workers == 1 && !(v > 0))
        fail(null_path, "a 1-worker throughput must be > 0, got " + it->dump());
      if (v < 0) fail(null_path, "must be >= 0 (0: cannot run at this size), got " + it->dump());
      JobTypeProfile& p = profile(parsed->job_type);
      auto& figures = (spread ? p.unconsolidated : p.consolidated)[gpu_type];
      if (!figures.emplace(parsed->workers, v).second)
        fail(path, "a second entry for " + key_text(parsed->job_type, parsed->workers) +
                       " (keys differ only in spacing or quotes)");
    }
  }

  // Every job type needs a 1-worker figure on each type it has figures for
  // (rates are interpolated from it), and spread figures need the
  // consolidated ones of the same type.
  void check_complete() const {
    for (const auto& p : catalogue_.job_types) {
      for (const auto& [type, figures] : p.consolidated)
        if (figures.count(1) == 0)
          fail(child(type, key_text(p.name, 1)),
               "missing: '" + p.name + "' has figures on " + type + " but none for 1 worker");
      for (const auto& [type, figures] : p.unconsolidated)
        if (p.consolidated.count(type) == 0)
          fail(child(std::string(type) + std::string(kUnconsolidated),
                     key_text(p.name, figures.begin()->first)),
               "'" + p.name + "' has spread-over-nodes figures on " + type +
                   " but no consolidated ones (expected a '" + type + "' entry " +
                   key_text(p.name, 1) + ")");
    }
  }

  std::string source_;
  ProfileCatalogue catalogue_;
};

}  // namespace

ProfileCatalogue parse_gavel_profiles(std::string_view json_text, const std::string& source) {
  return ProfileParser(source).parse(text_input::parse_json(json_text, source));
}

ProfileCatalogue read_profiles_file(const std::string& path) {
  const std::string text = text_input::read_text_file(path);
  if (is_synergy_profiles(text)) return parse_synergy_profiles(text, path);  // Synergy's tables
  return parse_gavel_profiles(text, path);
}

}  // namespace fairgpu
