// TaskThread (core/task_thread.h): the thread the simulator settles rounds on
// and the share policy gathers its placer's view on. Tasks run one at a time
// in the order given, a task's exception reaches its future, the thread runs
// what is still queued before it ends, and WaitOnExit waits for a task.
#include "core/task_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace fairgpu {
namespace {

TEST(TaskThread, RunsTasksInOrderAndHandsOnTheirExceptions) {
  std::vector<int> order;  // written by the task thread only, read after get()
  std::future<void> last;
  {
    TaskThread worker;
    const auto main_thread = std::this_thread::get_id();
    std::future<void> where =
        worker.submit([&] { EXPECT_NE(std::this_thread::get_id(), main_thread); });
    for (int i = 0; i < 100; ++i) last = worker.submit([&order, i] { order.push_back(i); });
    std::future<void> failing = worker.submit([] { throw std::runtime_error("task failed"); });
    std::future<void> after = worker.submit([&order] { order.push_back(100); });
    where.get();
    EXPECT_THROW(failing.get(), std::runtime_error);
    after.get();  // the thread goes on after a task's exception
    ASSERT_EQ(order.size(), 101u);
    for (int i = 0; i <= 100; ++i) EXPECT_EQ(order[static_cast<std::size_t>(i)], i);
    // Queued when the thread ends: still run.
    worker.submit([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
    last = worker.submit([&order] { order.push_back(101); });
  }
  EXPECT_EQ(last.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(order.size(), 102u);
}

TEST(TaskThread, WaitOnExitWaitsForTheTaskOnAnException) {
  TaskThread worker;
  std::atomic<bool> finished{false};
  try {
    std::future<void> task;
    WaitOnExit wait(task);
    task = worker.submit([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      finished = true;
    });
    throw std::runtime_error("planning failed");
  } catch (const std::runtime_error&) {
    EXPECT_TRUE(finished);  // the task ended before the scope it reads did
  }
}

}  // namespace
}  // namespace fairgpu
