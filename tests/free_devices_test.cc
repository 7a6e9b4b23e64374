// FreeDevices (placement/devices.h): which devices a plan may use at a
// scheduling point, and its consolidated picks, on a toy cluster with a node
// of more than 64 GPUs (its free set spans two words of the bit set).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "fairgpu/scheduler.h"
#include "placement/devices.h"
#include "toy_model.h"

namespace fairgpu {
namespace {

using placement::FreeDevices;
using namespace toy;

std::vector<DeviceRef> on(std::uint32_t node, std::vector<std::uint32_t> gpus) {
  std::vector<DeviceRef> out;
  for (std::uint32_t g : gpus) out.push_back({node, g});
  return out;
}

TEST(FreeDevices, OwnersLeasesAndConsolidatedPicks) {
  // Node 0: 70 slow GPUs; node 1: 4 slow; node 2: 8 fast.
  Workload w = workload({job("j0", "t", "a", 1, 0, 100), job("j1", "t", "a", 1, 0, 100)});
  ClusterModel m =
      bind_model(toy_cluster({{"slow", 70}, {"slow", 4}, {"fast", 8}}), toy_profiles(), w, 10.0);
  SchedulerState s = make_scheduler_state(m, w);
  s.now = 600;
  // j0 holds node 0's GPU 0 with its lease running; j1 holds GPU 65 with its
  // lease ended now (the policy decides about it: free); GPU 1 is reserved.
  s.jobs[0].lease_end = 900;
  s.jobs[1].lease_end = 600;
  s.device_owner[s.flat({0, 0})] = 0;
  s.device_owner[s.flat({0, 65})] = 1;
  s.device_owner[s.flat({0, 1})] = kDeviceReserved;
  const std::size_t slow = 0, fast = 1;
  ASSERT_EQ(m.cluster.gpu_types[slow], "slow");

  FreeDevices free(s);
  EXPECT_EQ(free.free_of_type(slow), 72);
  EXPECT_EQ(free.free_of_type(fast), 8);
  EXPECT_EQ(free.total_free(), 80);
  EXPECT_FALSE(free.is_free({0, 0}));
  EXPECT_FALSE(free.is_free({0, 1}));
  EXPECT_TRUE(free.is_free({0, 65}));
  EXPECT_TRUE(free.is_free({0, 69}));

  // A renewal takes all its devices or none.
  EXPECT_FALSE(free.take(on(0, {64, 0})));
  EXPECT_TRUE(free.is_free({0, 64}));
  EXPECT_EQ(free.free_of_type(slow), 72);

  // Best fit: the fullest node that holds the whole gang, its lowest ids.
  EXPECT_EQ(free.pick(slow, 3), on(1, {0, 1, 2}));
  std::vector<std::uint32_t> lowest(60);
  std::iota(lowest.begin(), lowest.end(), 2u);  // 2..61: GPU 0 is held, 1 reserved
  EXPECT_EQ(free.pick(slow, 60), on(0, lowest));
  // Across the word boundary of node 0's set (ids 62..69 left there).
  EXPECT_EQ(free.pick(slow, 6), on(0, {62, 63, 64, 65, 66, 67}));
  EXPECT_EQ(free.free_of_type(slow), 3);  // node 0: 68, 69; node 1: 3
  EXPECT_TRUE(free.take(on(0, {69})));
  EXPECT_FALSE(free.is_free({0, 69}));
  free.give_back(on(0, {64, 69}));
  EXPECT_TRUE(free.is_free({0, 64}));
  EXPECT_EQ(free.free_of_type(slow), 4);
  // One GPU: the node with exactly one free (node 1) before node 0's three.
  EXPECT_EQ(free.pick(slow, 1), on(1, {3}));
  free.give_back(on(1, {3}));
  // Spread when no node holds the gang: the nodes with most free first.
  EXPECT_FALSE(free.fits_one_node(slow, 4));
  std::vector<DeviceRef> spread = on(0, {64, 68, 69});
  spread.push_back({1, 3});
  EXPECT_EQ(free.pick(slow, 4), spread);
  EXPECT_TRUE(free.pick(slow, 1).empty());
  EXPECT_TRUE(free.fits_one_node(fast, 8));
  EXPECT_EQ(free.pick(fast, 8), on(2, {0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(free.total_free(), 0);
}

// take() and give_back() move a node between its free-count buckets once per
// run of its devices: best-fit picks and fits_one_node() must then see each
// node at its true free count, also when one call's devices alternate nodes.
TEST(FreeDevices, RunsOfDevicesMoveTheirNodeByTheirCount) {
  // Nodes 0 and 1: 8 slow GPUs each; node 2: 8 fast.
  Workload w = workload({job("j0", "t", "a", 1, 0, 100)});
  ClusterModel m =
      bind_model(toy_cluster({{"slow", 8}, {"slow", 8}, {"fast", 8}}), toy_profiles(), w, 10.0);
  SchedulerState s = make_scheduler_state(m, w);
  const std::size_t slow = 0, fast = 1;
  ASSERT_EQ(m.cluster.gpu_types[slow], "slow");
  FreeDevices free(s);

  ASSERT_TRUE(free.take(on(0, {1, 2, 3})));
  ASSERT_TRUE(free.take(on(1, {5, 6, 7})));
  EXPECT_EQ(free.free_of_type(slow), 10);
  EXPECT_TRUE(free.fits_one_node(slow, 5));
  EXPECT_FALSE(free.fits_one_node(slow, 6));  // 5 free on each slow node
  // Best fit among equals: node 1 entered bucket 5 last.
  EXPECT_EQ(free.pick(slow, 5), on(1, {0, 1, 2, 3, 4}));
  EXPECT_EQ(free.pick(slow, 4), on(0, {0, 4, 5, 6}));

  // One call, its devices alternating between nodes: three runs.
  std::vector<DeviceRef> mixed = on(2, {0, 1});
  mixed.push_back({0, 7});
  mixed.push_back({2, 2});
  ASSERT_TRUE(free.take(mixed));
  EXPECT_EQ(free.free_of_type(fast), 5);
  EXPECT_EQ(free.free_of_type(slow), 0);
  EXPECT_TRUE(free.fits_one_node(fast, 5));
  EXPECT_FALSE(free.fits_one_node(fast, 6));

  // Given back (mixed's GPU 7 of node 0 with it): node 0 whole again.
  free.give_back(on(0, {0, 1, 2, 3, 4, 5, 6}));
  EXPECT_FALSE(free.fits_one_node(slow, 8));
  EXPECT_TRUE(free.fits_one_node(slow, 7));
  free.give_back(mixed);
  EXPECT_TRUE(free.fits_one_node(slow, 8));
  EXPECT_EQ(free.free_of_type(fast), 8);
  EXPECT_EQ(free.pick(fast, 8), on(2, {0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(free.pick(slow, 6), on(0, {0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(free.total_free(), 2 + 0 + 0);  // node 0: 6, 7
}

TEST(FreeDevices, WhereGangsKeepToOneNodeAPickNeverSpreads) {
  // Nodes 0 and 1: 4 slow GPUs each; node 2: 4 fast.
  Workload w = workload({job("j0", "t", "a", 1, 0, 100)});
  Cluster c = toy_cluster({{"slow", 4}, {"slow", 4}, {"fast", 4}});
  for (bool one_node : {false, true}) {
    c.gangs_on_one_node = one_node;
    ClusterModel m = bind_model(c, toy_profiles(), w, 10.0);
    SchedulerState s = make_scheduler_state(m, w);
    const std::size_t slow = 0;
    FreeDevices free(s);
    EXPECT_EQ(free.gangs_on_one_node(), one_node);
    ASSERT_TRUE(free.take(on(0, {0})));
    ASSERT_TRUE(free.take(on(1, {0})));
    EXPECT_EQ(free.free_of_type(slow), 6);
    EXPECT_TRUE(free.can_hold(slow, 3));
    EXPECT_EQ(free.can_hold(slow, 4), !one_node);  // 3 free on each slow node
    if (one_node) {
      EXPECT_TRUE(free.pick(slow, 4).empty());
      EXPECT_EQ(free.free_of_type(slow), 6);  // nothing taken
    } else {
      EXPECT_EQ(free.pick(slow, 4), std::vector<DeviceRef>({{1, 1}, {1, 2}, {1, 3}, {0, 1}}));
    }
  }
}

// Where the backend gives a job one GPU count per node (Slurm's --gres), a
// gang no node holds whole is spread with the same count on each of the
// fewest nodes, the ones with the fewest free devices that still hold it.
TEST(FreeDevices, WhereGangsSpreadEvenlyEachNodeGivesTheSameCount) {
  // Nodes 0-3: 4 slow GPUs each.
  Workload w = workload({job("j0", "t", "a", 1, 0, 100)});
  Cluster c = toy_cluster({{"slow", 4}, {"slow", 4}, {"slow", 4}, {"slow", 4}});
  c.gangs_spread_evenly = true;
  ClusterModel m = bind_model(c, toy_profiles(), w, 10.0);
  SchedulerState s = make_scheduler_state(m, w);
  const std::size_t slow = 0;
  FreeDevices free(s);
  EXPECT_TRUE(free.gangs_spread_evenly());
  // Free: 1, 3, 2, 2.
  ASSERT_TRUE(free.take(on(0, {0, 1, 2})));
  ASSERT_TRUE(free.take(on(1, {0})));
  ASSERT_TRUE(free.take(on(2, {0, 1})));
  ASSERT_TRUE(free.take(on(3, {0, 1})));
  // 4: two nodes of 2, the two with exactly 2 free (not 3 + 1).
  EXPECT_TRUE(free.can_hold(slow, 4));
  EXPECT_EQ(free.pick(slow, 4), std::vector<DeviceRef>({{3, 2}, {3, 3}, {2, 2}, {2, 3}}));
  // Free: 1, 3, 0, 0. Three GPUs fit on node 1 whole; two nodes of one
  // each fit 2; 4 fits neither whole nor evenly (3 + 1 would).
  EXPECT_TRUE(free.can_hold(slow, 2));
  EXPECT_FALSE(free.can_hold(slow, 4));
  EXPECT_TRUE(free.pick(slow, 4).empty());
  EXPECT_EQ(free.free_of_type(slow), 4);  // nothing taken
  ASSERT_TRUE(free.take(on(1, {1})));     // free: 1, 2
  EXPECT_EQ(free.pick(slow, 2), on(1, {2, 3}));  // whole on one node first
  ASSERT_TRUE(free.take(on(1, {0})) == false);   // already taken
  free.give_back(on(1, {2, 3}));                 // free: 1, 2 again
  free.give_back(on(2, {2}));                    // free: 1, 2, 1
  // 3: one from each (the 1-free nodes first; 2 + 1 would not do).
  std::vector<DeviceRef> three = free.pick(slow, 3);
  std::sort(three.begin(), three.end(),
            [](DeviceRef a, DeviceRef b) { return a.node < b.node; });
  EXPECT_EQ(three, std::vector<DeviceRef>({{0, 3}, {1, 2}, {2, 2}}));
}

}  // namespace
}  // namespace fairgpu
