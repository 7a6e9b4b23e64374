// fairgpu-train's model and optimiser (issue 5): data generation, forward and
// backward pass of the tanh MLP, SGD with momentum. See mlp.h.
#include "train/mlp.h"

#include <cmath>

namespace fairgpu::train {
namespace {

// Number of hidden units of the teacher network that labels the data.
constexpr std::uint32_t kTeacherUnits = 8;
// Standard deviation of the label noise: the best reachable loss is about its
// square (0.01).
constexpr double kLabelNoise = 0.1;

// Independent random streams derived from the seed. std::seed_seq keeps only
// 32 bits per value, so the 64-bit seed goes in as two halves.
std::mt19937_64 stream(std::uint64_t seed, std::uint32_t which) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    which};
  return std::mt19937_64(seq);
}

constexpr std::uint32_t kDataStream = 1;
constexpr std::uint32_t kInitStream = 2;
constexpr std::uint32_t kBatchStream = 3;

// Offsets of the parts of the flat parameter vector.
struct Layout {
  std::size_t inputs, hidden;
  std::size_t w1() const { return 0; }
  std::size_t b1() const { return hidden * inputs; }
  std::size_t w2() const { return b1() + hidden; }
  std::size_t b2() const { return w2() + hidden; }
  std::size_t size() const { return b2() + 1; }
};

Layout layout(const TrainConfig& config) { return {config.inputs, config.hidden}; }

// Hidden activations and output of the net for one sample.
double forward(const Layout& l, const double* p, const double* x, double* h) {
  double out = p[l.b2()];
  for (std::size_t j = 0; j < l.hidden; ++j) {
    const double* w = p + l.w1() + j * l.inputs;
    double z = p[l.b1() + j];
    for (std::size_t i = 0; i < l.inputs; ++i) z += w[i] * x[i];
    h[j] = std::tanh(z);
    out += p[l.w2() + j] * h[j];
  }
  return out;
}

}  // namespace

std::size_t parameter_count(const TrainConfig& config) { return layout(config).size(); }

Dataset make_dataset(const TrainConfig& config) {
  std::mt19937_64 rng = stream(config.seed, kDataStream);
  std::normal_distribution<double> normal(0.0, 1.0);
  const std::size_t d = config.inputs;
  std::vector<double> teacher_v(kTeacherUnits * d), teacher_a(kTeacherUnits);
  for (double& v : teacher_v) v = normal(rng) / std::sqrt(static_cast<double>(d));
  for (double& a : teacher_a) a = normal(rng);

  Dataset data;
  data.inputs = config.inputs;
  data.x.resize(static_cast<std::size_t>(config.samples) * d);
  data.y.resize(config.samples);
  for (std::size_t s = 0; s < config.samples; ++s) {
    double* x = data.x.data() + s * d;
    for (std::size_t i = 0; i < d; ++i) x[i] = normal(rng);
    double y = 0;
    for (std::size_t k = 0; k < kTeacherUnits; ++k) {
      double z = 0;
      for (std::size_t i = 0; i < d; ++i) z += teacher_v[k * d + i] * x[i];
      y += teacher_a[k] * std::tanh(z);
    }
    data.y[s] = y + kLabelNoise * normal(rng);
  }
  return data;
}

TrainState initial_state(const TrainConfig& config, const Dataset& data) {
  const Layout l = layout(config);
  TrainState state;
  state.params.assign(l.size(), 0.0);
  state.velocity.assign(l.size(), 0.0);
  // Scaled Gaussian initialisation (LeCun): unit-variance pre-activations.
  std::mt19937_64 rng = stream(config.seed, kInitStream);
  std::normal_distribution<double> normal(0.0, 1.0);
  const double s1 = 1.0 / std::sqrt(static_cast<double>(l.inputs));
  const double s2 = 1.0 / std::sqrt(static_cast<double>(l.hidden));
  for (std::size_t k = 0; k < l.hidden * l.inputs; ++k) state.params[l.w1() + k] = normal(rng) * s1;
  for (std::size_t j = 0; j < l.hidden; ++j) state.params[l.w2() + j] = normal(rng) * s2;
  state.batch_rng = stream(config.seed, kBatchStream);
  state.initial_loss = dataset_loss(config, data, state.params);
  return state;
}

void sgd_step(const TrainConfig& config, const Dataset& data, TrainState& state) {
  const Layout l = layout(config);
  std::vector<double> grad(l.size(), 0.0), h(l.hidden);
  const double* p = state.params.data();
  const double scale = 2.0 / static_cast<double>(config.batch);  // d(mean squared error)/d(out)
  for (std::uint32_t b = 0; b < config.batch; ++b) {
    // The raw engine output, not a std:: distribution: nothing but the
    // engine (which the checkpoint saves) carries state between steps.
    const std::size_t s = static_cast<std::size_t>(state.batch_rng() % data.size());
    const double* x = data.x.data() + s * l.inputs;
    const double g = scale * (forward(l, p, x, h.data()) - data.y[s]);
    grad[l.b2()] += g;
    for (std::size_t j = 0; j < l.hidden; ++j) {
      grad[l.w2() + j] += g * h[j];
      const double dz = g * p[l.w2() + j] * (1.0 - h[j] * h[j]);
      grad[l.b1() + j] += dz;
      double* gw = grad.data() + l.w1() + j * l.inputs;
      for (std::size_t i = 0; i < l.inputs; ++i) gw[i] += dz * x[i];
    }
  }
  for (std::size_t k = 0; k < l.size(); ++k) {
    state.velocity[k] = config.momentum * state.velocity[k] + grad[k];
    state.params[k] -= config.learning_rate * state.velocity[k];
  }
  ++state.iteration;
}

double dataset_loss(const TrainConfig& config, const Dataset& data,
                    const std::vector<double>& params) {
  const Layout l = layout(config);
  std::vector<double> h(l.hidden);
  double sum = 0;
  for (std::size_t s = 0; s < data.size(); ++s) {
    const double err =
        forward(l, params.data(), data.x.data() + s * l.inputs, h.data()) - data.y[s];
    sum += err * err;
  }
  return sum / static_cast<double>(data.size());
}

std::uint64_t fnv1a64(const void* data, std::size_t size, std::uint64_t hash) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3;
  }
  return hash;
}

std::uint64_t weights_checksum(const std::vector<double>& params) {
  return fnv1a64(params.data(), params.size() * sizeof(double));
}

}  // namespace fairgpu::train
