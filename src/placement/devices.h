// Free devices at one scheduling point, and consolidated picks from them
// (docs/design.md §4: as few nodes as possible). Nodes of each type sit in buckets by
// free count, so a best-fit pick costs O(GPUs per node), not O(nodes): the
// simulator places jobs on thousands of GPUs every round. A node's free
// devices are a bit set (one 64-bit word for nodes of up to 64 GPUs), so a
// renewal's take() is a few bit tests, not searches through id lists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fairgpu/scheduler.h"

namespace fairgpu::placement {

class FreeDevices {
 public:
  // Free = no owner, or an owner whose lease has ended (the policy decides
  // about it now; a renewal re-takes its devices with take()).
  explicit FreeDevices(const SchedulerState& state);

  int free_of_type(std::size_t type) const { return free_count_[type]; }
  int total_free() const;
  bool is_free(DeviceRef d) const {
    return words_[first_word_[d.node] + d.gpu / 64] >> (d.gpu % 64) & 1;
  }
  // Takes specific devices (a renewal); false, taking nothing, if any is not free.
  bool take(std::span<const DeviceRef> devices);
  // Gives back devices taken from this set (by take or pick).
  void give_back(const std::vector<DeviceRef>& devices);
  // g devices of one type, consolidated: the fullest node that still fits all
  // g (best fit), else the emptiest nodes first (fewest nodes); within a
  // node its lowest free ids. Empty when !can_hold(type, g).
  std::vector<DeviceRef> pick(std::size_t type, int g);
  // Whether some node of `type` has g free devices.
  bool fits_one_node(std::size_t type, int g) const;
  // Whether pick(type, g) succeeds: g free devices of the type, on one node
  // when the cluster keeps gangs on one node, over nodes with the same count
  // on each when it spreads them evenly.
  bool can_hold(std::size_t type, int g) const {
    if (one_node_) return fits_one_node(type, g);
    if (even_) return fits_one_node(type, g) || even_spread(type, g) > 0;
    return free_count_[type] >= g;
  }
  bool gangs_on_one_node() const { return one_node_; }
  bool gangs_spread_evenly() const { return even_; }

 private:
  void move_bucket(std::uint32_t node, int from, int to);
  // The fewest nodes k (k > 1, dividing g) of `type` that each have g / k
  // free devices; 0 when there are none.
  int even_spread(std::size_t type, int g) const;
  const SchedulerState& s_;
  bool one_node_;  // the cluster's gangs_on_one_node
  bool even_;      // the cluster's gangs_spread_evenly
  // Node n's free devices: bit g of words_[first_word_[n] + g / 64].
  std::vector<std::uint64_t> words_;
  std::vector<std::size_t> first_word_;
  std::vector<int> free_;        // node -> free devices
  std::vector<int> free_count_;  // per type
  // buckets_[type][c] = nodes of `type` with exactly c free devices.
  std::vector<std::vector<std::vector<std::uint32_t>>> buckets_;
  std::vector<std::size_t> pos_;  // node -> position in its bucket
};

}  // namespace fairgpu::placement
