// Dynamic adaptation (Shockwave, NSDI'23 §2, §5, §8.1; specs/shockwave.md
// §1.2): a job may change its batch size at epoch boundaries, Accordion
// (two batch sizes, large outside critical regimes) or GNS (doubling at fixed
// epochs). Work is then counted in epochs: a change keeps the epochs done, and
// each regime runs at the profile's rate for (model, batch size, gang, GPU
// type), in epochs/s = iterations/s x batch size / samples per epoch.
//
// One per-epoch schedule drives execution, prediction and metrics (the
// authors' simulator and their profile disagree, spec §1.3; fairgpu does not).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fairgpu {

// A run of consecutive epochs at one batch size.
struct BatchRegime {
  int batch_size = 0;
  int epochs = 0;
  friend bool operator==(const BatchRegime&, const BatchRegime&) = default;
};

enum class AdaptationMode { kStatic, kAccordion, kGns };
// "static" | "accordion" | "gns"; nullopt for anything else.
std::optional<AdaptationMode> parse_adaptation_mode(std::string_view text);
const char* to_string(AdaptationMode mode);

// "ResNet-18 (batch size 32)" -> {"ResNet-18", 32}; nullopt when the name
// carries no batch size.
struct ModelBatch {
  std::string model;
  int batch_size = 0;
};
std::optional<ModelBatch> split_job_type(std::string_view job_type);
std::string batch_job_type(std::string_view model, int batch_size);

// Samples per epoch of the model's dataset (spec §1.2 table: CIFAR-10 50,000,
// ImageNet subset 100,000, Multi30k 10,000, Wikitext-2 59,675, ML-20M
// 117,907); nullopt for a model Shockwave does not know.
std::optional<double> dataset_samples(std::string_view model);
// The models above, comma-separated, for messages.
std::string adaptive_models();

// Epochs of a job of `total_steps` iterations at batch size bs0:
// ceil(total_steps / ceil(samples / bs0)) (spec §1.2).
int epochs_of(double total_steps, double samples, int bs0);

// Per-epoch batch sizes (size `epochs`), spec §1.2:
//  - Accordion: max batch size {LM 80, ResNet-18 256, ResNet-50 128,
//    Recommendation 8192} in epoch e iff e is outside the model's critical
//    regimes and e > 0.3 E; Transformer (and unknown models) never adapt.
//  - GNS: the authors' table per (model, bs0, gang) of the epochs where the
//    batch size goes to x2, x4, x8, x16, capped per model; the last epoch
//    falls back to bs0 when it lies past the first doubling segment (the
//    authors' loop quirk, kept so the workload matches theirs);
//    combinations not in the table stay static.
std::vector<int> adaptation_schedule(AdaptationMode mode, std::string_view model, int bs0,
                                     int workers, int epochs);
// Consecutive equal entries merged.
std::vector<BatchRegime> to_regimes(const std::vector<int>& per_epoch);

// The configuration after `current` for a mode (Shockwave §5: the
// configurations are deterministic, only the durations are random):
// Accordion alternates bs0 and the model's maximum; GNS doubles up to the
// model's cap; static stays.
int next_configuration(AdaptationMode mode, std::string_view model, int bs0, int current);
// Default maximum number of regimes K (spec §2.3) when no profiled schedule
// gives it: Accordion 3, GNS log2(cap / bs0) + 1, static 1.
int default_max_regimes(AdaptationMode mode, std::string_view model, int bs0);

}  // namespace fairgpu
