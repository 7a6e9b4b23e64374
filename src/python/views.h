// What a Python policy sees during one call: read-only views of the
// SchedulerState (schedule) or the ShareProblem (shares). A view points into
// the C++ object and is valid only during the call that made it; reading it
// afterwards (a view kept by the policy) raises RuntimeError rather than
// reading freed memory.
#pragma once

#include <memory>
#include <stdexcept>
#include <vector>

#include "fairgpu/scheduler.h"
#include "fairgpu/share_problem.h"
#include "placement/gang_round.h"

namespace fairgpu::python {

struct StateView {
  const SchedulerState* state = nullptr;  // null once the call returned
  const RoundPlan* previous = nullptr;    // the policy's last plan
  placement::GangRoundOptions gang_options;  // the policy's spread_min, spread_wait

  const SchedulerState& get() const {
    if (!state) throw std::runtime_error("a state view is valid only during schedule()");
    return *state;
  }
};

struct ProblemView {
  const ShareProblem* problem = nullptr;
  const ShareProblem& get() const {
    if (!problem) throw std::runtime_error("a problem view is valid only during shares()");
    return *problem;
  }
};

// Marks a view invalid when the call ends, however it ends.
template <class View>
struct InvalidateOnExit {
  std::shared_ptr<View>& view;
  ~InvalidateOnExit() {
    if constexpr (std::is_same_v<View, StateView>)
      view->state = nullptr;
    else
      view->problem = nullptr;
  }
};

}  // namespace fairgpu::python
