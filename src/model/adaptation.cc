// Batch-size schedules of Accordion and GNS jobs (fairgpu/adaptation.h). The
// rules are the ones the Shockwave artifact applies to its traces
// (specs/shockwave.md §1.2); the GNS epochs below are that artifact's table,
// transcribed as data.
#include "fairgpu/adaptation.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <cstdlib>

namespace fairgpu {
namespace {

// What the artifact knows of each model (spec §1.2): its dataset's samples
// per epoch, Accordion's large batch size (0: never adapts) and GNS's cap on
// the batch size.
struct ModelTraits {
  const char* model;
  double samples;
  int accordion_max, gns_cap;
};
constexpr std::array<ModelTraits, 5> kModels = {{{"ResNet-18", 50000.0, 256, 256},
                                                 {"ResNet-50", 100000.0, 128, 128},
                                                 {"Transformer", 10000.0, 0, 128},
                                                 {"LM", 59675.0, 80, 80},
                                                 {"Recommendation", 117907.0, 8192, 8192}}};

const ModelTraits* traits(std::string_view model) {
  for (const ModelTraits& t : kModels)
    if (model == t.model) return &t;
  return nullptr;
}

int accordion_max(std::string_view model) {
  const ModelTraits* t = traits(model);
  return t ? t->accordion_max : 0;
}

int gns_cap(std::string_view model) {
  const ModelTraits* t = traits(model);
  return t ? t->gns_cap : 0;
}

bool accordion_critical(std::string_view model, int bs0, int e) {
  if (model == "ResNet-18") {
    const int first = bs0 == 256 ? 20 : 10;
    return e < first || (e >= 150 && e < 160) || (e >= 250 && e < 260);
  }
  if (model == "ResNet-50") return e < 600 && e % 30 < 10;
  if (model == "LM") return e < 10;
  if (model == "Recommendation") {
    const int first = bs0 <= 1024 ? 30 : bs0 == 2048 ? 40 : 10;
    return e < first || (e >= 60 && e < 70) || (e >= 80 && e < 90);
  }
  return true;
}

// GNS: the epochs where the batch size becomes x2, x4, x8, x16 of bs0 (the
// first is also the minimum epoch count: a job with no more epochs than that
// stays static).
struct GnsRow {
  const char* model;
  int bs0, workers;
  std::array<int, 4> starts;  // 0: no further doubling
};
constexpr std::array<GnsRow, 33> kGnsTable = {{
    {"ResNet-18", 16, 1, {31, 41, 51, 71}},
    {"ResNet-18", 32, 1, {21, 31, 51, 0}},
    {"ResNet-18", 64, 1, {11, 31, 0, 0}},
    {"ResNet-18", 128, 1, {11, 0, 0, 0}},
    {"ResNet-18", 16, 2, {21, 31, 91, 111}},
    {"ResNet-18", 32, 2, {11, 21, 41, 0}},
    {"ResNet-18", 64, 2, {21, 41, 0, 0}},
    {"ResNet-18", 128, 2, {41, 0, 0, 0}},
    {"ResNet-18", 16, 4, {11, 21, 81, 91}},
    {"ResNet-18", 32, 4, {21, 31, 61, 0}},
    {"ResNet-18", 64, 4, {11, 61, 0, 0}},
    {"ResNet-18", 128, 4, {11, 0, 0, 0}},
    {"ResNet-50", 64, 1, {101, 0, 0, 0}},
    {"ResNet-50", 32, 2, {101, 111, 0, 0}},
    {"ResNet-50", 64, 2, {81, 0, 0, 0}},
    {"ResNet-50", 32, 4, {131, 221, 0, 0}},
    {"ResNet-50", 64, 4, {191, 0, 0, 0}},
    {"LM", 5, 1, {31, 41, 61, 71}},
    {"LM", 10, 1, {11, 21, 41, 0}},
    {"LM", 20, 1, {11, 41, 0, 0}},
    {"LM", 40, 1, {11, 0, 0, 0}},
    {"LM", 5, 2, {31, 51, 61, 71}},
    {"LM", 10, 2, {11, 31, 41, 0}},
    {"LM", 20, 2, {31, 41, 0, 0}},
    {"LM", 40, 2, {11, 0, 0, 0}},
    {"LM", 5, 4, {11, 31, 71, 91}},
    {"LM", 10, 4, {11, 31, 61, 0}},
    {"LM", 20, 4, {11, 61, 0, 0}},
    {"LM", 40, 4, {61, 0, 0, 0}},
    {"Recommendation", 512, 1, {21, 41, 71, 91}},
    {"Recommendation", 1024, 1, {21, 51, 91, 0}},
    {"Recommendation", 2048, 1, {21, 41, 0, 0}},
    {"Recommendation", 4096, 1, {41, 0, 0, 0}},
}};

std::vector<int> gns_schedule(std::string_view model, int bs0, int workers, int epochs) {
  std::vector<int> bs(static_cast<std::size_t>(epochs), bs0);
  const GnsRow* row = nullptr;
  for (const GnsRow& r : kGnsTable)
    if (model == r.model && bs0 == r.bs0 && workers == r.workers) row = &r;
  if (!row || epochs <= row->starts[0]) return bs;
  int factor = 1;
  for (std::size_t s = 0; s < row->starts.size() && row->starts[s] > 0; ++s) {
    factor *= 2;
    const int from = row->starts[s];
    const int to =
        s + 1 < row->starts.size() && row->starts[s + 1] > 0 ? row->starts[s + 1] : epochs;
    // The first segment may reach the last epoch; later ones stop before it.
    const int end = std::min(to, s == 0 ? epochs : epochs - 1);
    for (int e = from; e < end; ++e) bs[static_cast<std::size_t>(e)] = bs0 * factor;
  }
  const int cap = gns_cap(model);
  for (int& b : bs) b = std::min(b, cap);
  return bs;
}

}  // namespace

std::optional<AdaptationMode> parse_adaptation_mode(std::string_view text) {
  if (text == "static") return AdaptationMode::kStatic;
  if (text == "accordion") return AdaptationMode::kAccordion;
  if (text == "gns") return AdaptationMode::kGns;
  return std::nullopt;
}

const char* to_string(AdaptationMode mode) {
  switch (mode) {
    case AdaptationMode::kAccordion:
      return "accordion";
    case AdaptationMode::kGns:
      return "gns";
    case AdaptationMode::kStatic:
      break;
  }
  return "static";
}

std::optional<ModelBatch> split_job_type(std::string_view job_type) {
  constexpr std::string_view kMark = " (batch size ";
  const auto at = job_type.find(kMark);
  if (at == std::string_view::npos || job_type.empty() || job_type.back() != ')') return {};
  const std::string digits(
      job_type.substr(at + kMark.size(), job_type.size() - 1 - at - kMark.size()));
  if (digits.empty() || digits.size() > 9 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return {};
  const int bs = std::atoi(digits.c_str());
  if (bs <= 0) return {};
  return ModelBatch{std::string(job_type.substr(0, at)), bs};
}

std::string batch_job_type(std::string_view model, int batch_size) {
  return fmt::format("{} (batch size {})", model, batch_size);
}

std::optional<double> dataset_samples(std::string_view model) {
  const ModelTraits* t = traits(model);
  if (!t) return std::nullopt;
  return t->samples;
}

std::string adaptive_models() {
  std::string out;
  for (const ModelTraits& t : kModels) out += (out.empty() ? "" : ", ") + std::string(t.model);
  return out;
}

int epochs_of(double total_steps, double samples, int bs0) {
  const double per_epoch = std::ceil(samples / bs0);
  const double epochs = std::ceil(total_steps / per_epoch - 1e-9);
  // Saturated, not cast out of range: callers refuse counts this large.
  return epochs < std::numeric_limits<int>::max() ? static_cast<int>(epochs)
                                                   : std::numeric_limits<int>::max();
}

std::vector<int> adaptation_schedule(AdaptationMode mode, std::string_view model, int bs0,
                                     int workers, int epochs) {
  std::vector<int> bs(static_cast<std::size_t>(std::max(epochs, 0)), bs0);
  if (mode == AdaptationMode::kGns) return gns_schedule(model, bs0, workers, epochs);
  if (mode != AdaptationMode::kAccordion) return bs;
  const int large = accordion_max(model);
  if (large == 0) return bs;
  for (int e = 0; e < epochs; ++e)
    if (!accordion_critical(model, bs0, e) && e > 0.3 * epochs)
      bs[static_cast<std::size_t>(e)] = large;
  return bs;
}

std::vector<BatchRegime> to_regimes(const std::vector<int>& per_epoch) {
  std::vector<BatchRegime> out;
  for (int b : per_epoch) {
    if (out.empty() || out.back().batch_size != b)
      out.push_back({b, 1});
    else
      ++out.back().epochs;
  }
  return out;
}

int next_configuration(AdaptationMode mode, std::string_view model, int bs0, int current) {
  if (mode == AdaptationMode::kAccordion)
    return current == bs0 ? std::max(accordion_max(model), bs0) : bs0;
  if (mode == AdaptationMode::kGns) return std::max(std::min(current * 2, gns_cap(model)), current);
  return current;
}

int default_max_regimes(AdaptationMode mode, std::string_view model, int bs0) {
  if (mode == AdaptationMode::kAccordion) return accordion_max(model) > bs0 ? 3 : 1;
  if (mode == AdaptationMode::kGns) {
    const int cap = gns_cap(model);
    int k = 1;
    for (int bs = bs0; bs < cap; bs *= 2) ++k;
    return k;
  }
  return 1;
}

}  // namespace fairgpu
