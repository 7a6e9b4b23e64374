#include "placement/devices.h"

#include <algorithm>
#include <bit>

namespace fairgpu::placement {

FreeDevices::FreeDevices(const SchedulerState& s)
    : s_(s),
      one_node_(s.model->cluster.gangs_on_one_node),
      even_(s.model->cluster.gangs_spread_evenly) {
  const auto& nodes = s.model->cluster.nodes;
  const std::size_t k = s.model->cluster.num_types();
  first_word_.resize(nodes.size() + 1);
  std::size_t words = 0;
  int max_gpus = 0;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    first_word_[n] = words;
    words += (static_cast<std::size_t>(nodes[n].gpus) + 63) / 64;
    max_gpus = std::max(max_gpus, nodes[n].gpus);
  }
  first_word_[nodes.size()] = words;
  words_.assign(words, 0);
  free_.assign(nodes.size(), 0);
  free_count_.assign(k, 0);
  buckets_.assign(k,
                  std::vector<std::vector<std::uint32_t>>(static_cast<std::size_t>(max_gpus) + 1));
  pos_.assign(nodes.size(), 0);
  // A job's devices sit next to each other: its lease is looked up once per
  // run of its devices, not once per device.
  std::int64_t last_owner = -1;
  bool last_ended = false;
  for (std::uint32_t n = 0; n < nodes.size(); ++n) {
    const std::size_t first = s.model->node_first_device[n];
    for (int g = 0; g < nodes[n].gpus; ++g) {
      const std::size_t flat = first + static_cast<std::size_t>(g);
      constexpr std::size_t kAhead = 64;  // devices: about eight jobs' worth
      if (flat + kAhead < s.device_owner.size() && s.device_owner[flat + kAhead] >= 0)
        __builtin_prefetch(
            &s.jobs[static_cast<std::size_t>(s.device_owner[flat + kAhead])].lease_end);
      const std::int64_t owner = s.device_owner[flat];
      if (owner >= 0 && owner != last_owner) {
        last_owner = owner;
        last_ended = s.lease_ended(s.jobs[static_cast<std::size_t>(owner)]);
      }
      if (owner == -1 || (owner >= 0 && last_ended)) {
        words_[first_word_[n] + static_cast<std::size_t>(g) / 64] |= std::uint64_t{1} << (g % 64);
        ++free_[n];
      }
    }
    auto& bucket = buckets_[nodes[n].type][static_cast<std::size_t>(free_[n])];
    pos_[n] = bucket.size();
    bucket.push_back(n);
    free_count_[nodes[n].type] += free_[n];
  }
}

int FreeDevices::total_free() const {
  int total = 0;
  for (int c : free_count_) total += c;
  return total;
}

void FreeDevices::move_bucket(std::uint32_t node, int from, int to) {
  auto& b = buckets_[s_.model->cluster.nodes[node].type];
  auto& src = b[static_cast<std::size_t>(from)];
  std::size_t p = pos_[node];
  src[p] = src.back();
  pos_[src[p]] = p;
  src.pop_back();
  auto& dst = b[static_cast<std::size_t>(to)];
  pos_[node] = dst.size();
  dst.push_back(node);
}

// take() and give_back() move a node between buckets once per run of its
// devices: moving it c -> c-1 -> c-2 leaves every bucket as one move c -> c-2
// does (it is at the back of c-1 in between), so picks stay the same.
bool FreeDevices::take(std::span<const DeviceRef> devices) {
  for (DeviceRef d : devices)
    if (!is_free(d)) return false;
  for (std::size_t r = 0; r < devices.size();) {
    const std::uint32_t node = devices[r].node;
    int& count = free_[node];
    const int before = count;
    for (; r < devices.size() && devices[r].node == node; ++r, --count) {
      const DeviceRef d = devices[r];
      words_[first_word_[node] + d.gpu / 64] &= ~(std::uint64_t{1} << (d.gpu % 64));
    }
    move_bucket(node, before, count);
    free_count_[s_.model->cluster.nodes[node].type] -= before - count;
  }
  return true;
}

void FreeDevices::give_back(const std::vector<DeviceRef>& devices) {
  for (std::size_t r = 0; r < devices.size();) {
    const std::uint32_t node = devices[r].node;
    int& count = free_[node];
    const int before = count;
    for (; r < devices.size() && devices[r].node == node; ++r, ++count) {
      const DeviceRef d = devices[r];
      words_[first_word_[node] + d.gpu / 64] |= std::uint64_t{1} << (d.gpu % 64);
    }
    move_bucket(node, before, count);
    free_count_[s_.model->cluster.nodes[node].type] += count - before;
  }
}

int FreeDevices::even_spread(std::size_t type, int g) const {
  const auto& b = buckets_[type];
  for (int k = 2; k <= g; ++k) {
    if (g % k != 0) continue;
    std::size_t nodes = 0;  // with at least g / k free
    for (std::size_t c = static_cast<std::size_t>(g / k); c < b.size(); ++c) nodes += b[c].size();
    if (nodes >= static_cast<std::size_t>(k)) return k;
  }
  return 0;
}

bool FreeDevices::fits_one_node(std::size_t type, int g) const {
  const auto& b = buckets_[type];
  for (std::size_t c = static_cast<std::size_t>(std::max(g, 1)); c < b.size(); ++c)
    if (!b[c].empty()) return true;
  return false;
}

std::vector<DeviceRef> FreeDevices::pick(std::size_t type, int g) {
  std::vector<DeviceRef> out;
  if (g <= 0 || free_count_[type] < g) return out;
  out.reserve(static_cast<std::size_t>(g));
  auto& b = buckets_[type];
  auto take_from = [&](std::uint32_t node, int n) {  // its n lowest free ids
    int& count = free_[node];
    const int before = count;
    for (std::size_t w = first_word_[node]; n > 0; ++w) {
      std::uint64_t& word = words_[w];
      for (; n > 0 && word != 0; --n) {
        const int bit = std::countr_zero(word);
        word &= word - 1;
        out.push_back({node, static_cast<std::uint32_t>((w - first_word_[node]) * 64 +
                                                        static_cast<std::size_t>(bit))});
        --count;
      }
    }
    move_bucket(node, before, count);
    free_count_[type] -= before - count;
  };
  // Best fit on one node. Within a bucket the last node: O(1), and
  // deterministic because the buckets evolve the same way on the same inputs.
  for (std::size_t c = static_cast<std::size_t>(g); c < b.size(); ++c) {
    if (b[c].empty()) continue;
    take_from(b[c].back(), g);
    return out;
  }
  if (one_node_) return out;
  if (even_) {
    // The same count on each of the fewest nodes: best fit again, the
    // nodes with the fewest free devices that still hold g / k each.
    const int k = even_spread(type, g);
    if (k == 0) return out;
    const int per = g / k;
    const auto want = static_cast<std::size_t>(g);
    for (auto c = static_cast<std::size_t>(per); c < b.size() && out.size() < want; ++c)
      while (!b[c].empty() && out.size() < want) take_from(b[c].back(), per);
    return out;
  }
  // Spread: emptiest nodes first, so the job touches as few nodes as possible.
  int need = g;
  for (std::size_t c = b.size() - 1; c > 0 && need > 0; --c) {
    while (!b[c].empty() && need > 0) {
      std::uint32_t node = b[c].back();
      int n = std::min(need, static_cast<int>(c));
      take_from(node, n);
      need -= n;
    }
  }
  return out;
}

}  // namespace fairgpu::placement
