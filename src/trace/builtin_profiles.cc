// The built-in throughput catalogue (fairgpu/profile.h: builtin_profiles()).
//
// Source of every figure: Gavel (Narayanan et al., OSDI 2020) artifact,
// simulation_throughputs.json, isolated ('null') throughputs, in iterations/s
// of the whole job, for scale factors (workers) 1, 2, 4 and 8 on k80, p100 and
// v100, plus the "<type>_unconsolidated" entries (workers spread over nodes)
// where the artifact measured more than one worker. The figures are copied
// here so that `fairgpu simulate` works without the artifact; a profile file
// (--profiles) in the same format replaces them. Eight of the artifact's 26
// job types are kept: one batch size per model family (two for Transformer),
// which covers image classification, translation, language modelling,
// recommendation, reinforcement learning and image-to-image translation.
#include <array>

#include "fairgpu/profile.h"

namespace fairgpu {

namespace {

constexpr double kNA = -1.0;  // not measured

// One GPU type of one job type: iterations/s at 1, 2, 4 and 8 workers.
struct Row {
  const char* job_type;
  const char* gpu_type;
  bool unconsolidated;
  std::array<double, 4> it_per_s;  // workers 1, 2, 4, 8; kNA if absent
};

// clang-format off
constexpr Row kRows[] = {
    {"ResNet-18 (batch size 64)", "k80", false,
     {7.052080666695425, 12.495482346599234, 21.625568416059814, 42.64410449114462}},
    {"ResNet-18 (batch size 64)", "k80", true,
     {7.052080666695425, 13.992639127677469, 25.06513647995657, 45.614881822807476}},
    {"ResNet-18 (batch size 64)", "p100", false,
     {22.30494387033663, 41.4822445592434, 74.99057006200313, 120.03699011475503}},
    {"ResNet-18 (batch size 64)", "p100", true,
     {22.30494387033663, 25.51190796942008, 40.20664390584142, 67.76833426372711}},
    {"ResNet-18 (batch size 64)", "v100", false,
     {24.093231895382736, 74.13589143268821, 95.58814453205626, 255.82913926317391}},
    {"ResNet-18 (batch size 64)", "v100", true,
     {24.093231895382736, 31.480249474532947, 38.310553138543824, 63.15389344591445}},

    {"ResNet-50 (batch size 64)", "k80", false,
     {0.6190282202246573, 1.2636370655757299, 2.4122290974193286, 4.568730189823378}},
    {"ResNet-50 (batch size 64)", "p100", false,
     {2.6194694075770055, 5.515986118186492, 10.36465731519379, 18.221203053711378}},
    {"ResNet-50 (batch size 64)", "p100", true,
     {2.6194694075770055, 5.605964633039514, 10.5641333165412, 18.903561107896458}},
    {"ResNet-50 (batch size 64)", "v100", false,
     {4.394774823323071, 7.922054367597505, 9.451949566394442, 17.303172756892167}},
    {"ResNet-50 (batch size 64)", "v100", true,
     {4.394774823323071, 6.865936825179568, 11.136430014818272, 19.757330902241037}},

    {"Transformer (batch size 64)", "k80", false,
     {1.7522265657120206, 3.0630786746251895, 5.030983562889494, 8.97621997981465}},
    {"Transformer (batch size 64)", "k80", true,
     {1.7522265657120206, 2.726588607798238, 4.5067422320429165, 8.233982696754108}},
    {"Transformer (batch size 64)", "p100", false,
     {5.091830907900463, 7.886748284628143, 13.313004543426457, 19.942981926164425}},
    {"Transformer (batch size 64)", "p100", true,
     {5.091830907900463, 5.5045991133143, 9.006861907718129, 15.177760399511316}},
    {"Transformer (batch size 64)", "v100", false,
     {8.61775899193302, 15.876496488983058, 19.65962221663049, 49.650700211670745}},
    {"Transformer (batch size 64)", "v100", true,
     {8.61775899193302, 7.005137811237574, 10.570291051568956, 17.010354252487097}},

    {"Transformer (batch size 128)", "k80", false,
     {0.9815827061299781, 1.6574724675832473, 2.8653897227567016, 5.25701364575837}},
    {"Transformer (batch size 128)", "k80", true,
     {0.9815827061299781, 1.56572727338235, 2.8526490444021095, 5.177948344422811}},
    {"Transformer (batch size 128)", "p100", false,
     {3.0735350560514787, 5.087428857861381, 8.774055121555529, 13.683972901970593}},
    {"Transformer (batch size 128)", "p100", true,
     {3.0735350560514787, 3.7161866049260612, 5.878341806869093, 10.269592342352071}},
    {"Transformer (batch size 128)", "v100", false,
     {5.44610521981264, 10.069238394742342, 14.17451716526748, 30.88352104398441}},
    {"Transformer (batch size 128)", "v100", true,
     {5.44610521981264, 5.048927648904929, 7.783568157137881, 13.029708539692692}},

    {"LM (batch size 20)", "k80", false,
     {17.142289692304086, 23.773289373427588, 35.70344542111913, 61.44923706594953}},
    {"LM (batch size 20)", "k80", true,
     {17.142289692304086, 16.92609900839572, 29.98804795319048, 58.070420448108024}},
    {"LM (batch size 20)", "p100", false,
     {58.17267240669826, 62.33209834747592, 93.81478290324394, 116.64882298424683}},
    {"LM (batch size 20)", "p100", true,
     {58.17267240669826, 32.86043372584382, 40.938539794540844, 65.83232467185971}},
    {"LM (batch size 20)", "v100", false,
     {64.74245099960703, 132.17413449742747, 110.99685986392635, 497.2952582330656}},
    {"LM (batch size 20)", "v100", true,
     {64.74245099960703, 30.43655149451939, 33.39848640549825, 58.88800403527842}},

    // The artifact has single-worker figures only for these three.
    {"Recommendation (batch size 2048)", "k80", false, {10.441219687328084, kNA, kNA, kNA}},
    {"Recommendation (batch size 2048)", "p100", false, {16.59663998583255, kNA, kNA, kNA}},
    {"Recommendation (batch size 2048)", "v100", false, {7.469632060833725, kNA, kNA, kNA}},

    {"A3C", "k80", false, {3.4387678290723933, kNA, kNA, kNA}},
    {"A3C", "p100", false, {5.681346110543853, kNA, kNA, kNA}},
    {"A3C", "v100", false, {7.175767179667988, kNA, kNA, kNA}},

    {"CycleGAN", "k80", false, {0.5047705689725351, kNA, kNA, kNA}},
    {"CycleGAN", "p100", false, {2.4026681703106223, kNA, kNA, kNA}},
    {"CycleGAN", "v100", false, {4.426088263367452, kNA, kNA, kNA}},
};
// clang-format on

constexpr int kWorkers[] = {1, 2, 4, 8};

ProfileCatalogue build() {
  ProfileCatalogue c;
  c.source = "built-in";
  for (const Row& row : kRows) {
    JobTypeProfile* p = nullptr;
    for (auto& existing : c.job_types)
      if (existing.name == row.job_type) p = &existing;
    if (!p) {
      c.job_types.emplace_back();
      p = &c.job_types.back();
      p->name = row.job_type;
    }
    auto& table = (row.unconsolidated ? p->unconsolidated : p->consolidated)[row.gpu_type];
    for (std::size_t i = 0; i < row.it_per_s.size(); ++i)
      if (row.it_per_s[i] != kNA) table[kWorkers[i]] = row.it_per_s[i];
  }
  return c;
}

}  // namespace

const ProfileCatalogue& builtin_profiles() {
  static const ProfileCatalogue catalogue = build();
  return catalogue;
}

}  // namespace fairgpu
