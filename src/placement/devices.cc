#include "placement/devices.h"

#include <algorithm>
#include <functional>

namespace fairgpu::placement {

FreeDevices::FreeDevices(const SchedulerState& s) : s_(s) {
  const auto& nodes = s.model->cluster.nodes;
  const std::size_t k = s.model->cluster.num_types();
  free_ids_.resize(s.device_owner.size());
  first_.resize(nodes.size());
  free_.assign(nodes.size(), 0);
  free_count_.assign(k, 0);
  int max_gpus = 0;
  for (const Node& n : nodes) max_gpus = std::max(max_gpus, n.gpus);
  buckets_.assign(k, std::vector<std::vector<std::uint32_t>>(static_cast<std::size_t>(max_gpus) + 1));
  pos_.assign(nodes.size(), 0);
  for (std::uint32_t n = 0; n < nodes.size(); ++n) {
    first_[n] = s.model->node_first_device[n];
    std::uint32_t* ids = free_ids(n);
    for (int g = nodes[n].gpus - 1; g >= 0; --g) {
      std::int64_t owner = s.device_owner[first_[n] + static_cast<std::size_t>(g)];
      if (owner == -1 || (owner >= 0 && s.lease_ended(s.jobs[static_cast<std::size_t>(owner)])))
        ids[free_[n]++] = static_cast<std::uint32_t>(g);
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

bool FreeDevices::is_free(DeviceRef d) const {
  const std::uint32_t* ids = free_ids(d.node);
  return std::find(ids, ids + free_[d.node], d.gpu) != ids + free_[d.node];
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

bool FreeDevices::take(const std::vector<DeviceRef>& devices) {
  for (DeviceRef d : devices)
    if (!is_free(d)) return false;
  for (DeviceRef d : devices) {
    std::uint32_t* ids = free_ids(d.node);
    int& count = free_[d.node];
    std::uint32_t* at = std::find(ids, ids + count, d.gpu);
    std::copy(at + 1, ids + count, at);
    --count;
    move_bucket(d.node, count + 1, count);
    --free_count_[s_.model->cluster.nodes[d.node].type];
  }
  return true;
}

void FreeDevices::give_back(const std::vector<DeviceRef>& devices) {
  for (DeviceRef d : devices) {
    std::uint32_t* ids = free_ids(d.node);
    int& count = free_[d.node];
    std::uint32_t* at = std::upper_bound(ids, ids + count, d.gpu, std::greater<>());  // desc
    std::copy_backward(at, ids + count, ids + count + 1);
    *at = d.gpu;
    ++count;
    move_bucket(d.node, count - 1, count);
    ++free_count_[s_.model->cluster.nodes[d.node].type];
  }
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
  auto& b = buckets_[type];
  auto take_from = [&](std::uint32_t node, int n) {
    const std::uint32_t* ids = free_ids(node);
    int& count = free_[node];
    const int before = count;
    for (int i = 0; i < n; ++i) out.push_back({node, ids[--count]});  // lowest ids sit last
    move_bucket(node, before, count);
    free_count_[type] -= n;
  };
  // Best fit on one node. Within a bucket the last node: O(1), and
  // deterministic because the buckets evolve the same way on the same inputs.
  for (std::size_t c = static_cast<std::size_t>(g); c < b.size(); ++c) {
    if (b[c].empty()) continue;
    take_from(b[c].back(), g);
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
