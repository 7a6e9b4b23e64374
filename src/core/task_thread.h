// One thread kept for a component's per-round side work (the simulator's
// settling, the OEF placer's gathering): tasks run one at a time in the order
// given, each reporting through its future. Starting a thread per task cost
// ~25,000 thread starts on a 1M-job run (three a round).
//
// A task's future does not wait when destroyed (unlike std::async's), so a
// caller whose tasks read its locals waits for them on every way out
// (WaitOnExit).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

namespace fairgpu {

class TaskThread {
 public:
  TaskThread() : worker_([this] { run(); }) {}
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;
  // Runs the tasks still queued, then ends the thread.
  ~TaskThread() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_one();
    worker_.join();
  }

  std::future<void> submit(std::function<void()> task) {
    std::packaged_task<void()> job(std::move(task));
    std::future<void> result = job.get_future();
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(job));
    }
    ready_.notify_one();
    return result;
  }

 private:
  void run() {
    for (;;) {
      std::packaged_task<void()> job;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !queue_.empty() || done_; });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job();  // an exception goes to the task's future
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<void()>> queue_;
  bool done_ = false;
  std::thread worker_;  // last: starts once the members above exist
};

// Waits for a task when it goes out of scope, an exception included.
class WaitOnExit {
 public:
  explicit WaitOnExit(std::future<void>& task) : task_(task) {}
  WaitOnExit(const WaitOnExit&) = delete;
  WaitOnExit& operator=(const WaitOnExit&) = delete;
  ~WaitOnExit() {
    if (task_.valid()) task_.wait();
  }

 private:
  std::future<void>& task_;
};

}  // namespace fairgpu
