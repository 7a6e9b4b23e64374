// The `fairgpu` Python module's types (issue 31, docs/python.md): the
// read-only views a Python policy gets (State, Job, GangRound, Problem), the
// plans it returns (Assignment, Plan), the option declarations (Option), the
// LP layer (LinearProgram, src/solver/lp.cc) and the module-level runs
// (run.cc). Shared by the extension module (module.cc) and the interpreter
// the program embeds (embed.cc).
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/lp.h"
#include "fairgpu/policy_options.h"
#include "policy/time_sharing.h"
#include "python/py_policy.h"
#include "python/run.h"
#include "python/views.h"

namespace py = pybind11;

namespace fairgpu::python {
namespace {

py::tuple device_tuple(DeviceRef d) { return py::make_tuple(d.node, d.gpu); }

py::list device_list(const std::vector<DeviceRef>& devices) {
  py::list out;
  for (DeviceRef d : devices) out.append(device_tuple(d));
  return out;
}

std::vector<DeviceRef> devices_from(const py::handle& seq) {
  std::vector<DeviceRef> out;
  for (py::handle item : seq) {
    auto pair = item.cast<std::pair<std::uint32_t, std::uint32_t>>();
    out.push_back({pair.first, pair.second});
  }
  return out;
}

const char* state_name(JobState s) {
  switch (s) {
    case JobState::kFuture: return "future";
    case JobState::kQueued: return "queued";
    case JobState::kRunning: return "running";
    case JobState::kFinished: return "finished";
  }
  return "?";
}

// One job of the state, read when a property is read.
struct JobRef {
  std::shared_ptr<StateView> view;
  std::size_t index;
  const Job& get() const { return view->get().jobs[index]; }
};

// A list of job indices owned by the state or a GangRound: indexed and
// iterated in place, so a policy that stops early (fifo at its first job
// that does not fit) pays for what it reads, not for the whole queue.
struct IndexList {
  std::shared_ptr<StateView> view;
  const std::vector<std::size_t>* items;
  py::object owner;  // keeps a GangRound alive
  std::size_t size() const {
    view->get();
    return items->size();
  }
  std::size_t at(std::ptrdiff_t i) const {
    const auto n = static_cast<std::ptrdiff_t>(size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw py::index_error("job list index out of range");
    return (*items)[static_cast<std::size_t>(i)];
  }
};

struct IndexIterator {
  IndexList list;
  std::size_t next = 0;
};

struct GangRoundRef {
  std::shared_ptr<StateView> view;
  std::unique_ptr<placement::GangRound> round;
  placement::GangRound& get() {
    view->get();
    return *round;
  }
};

std::size_t check_job(const SchedulerState& s, std::size_t job) {
  if (job >= s.jobs.size())
    throw py::index_error(fmt::format("no job {} (the state has {})", job, s.jobs.size()));
  return job;
}

std::size_t type_arg(const SchedulerState& s, const py::object& type) {
  if (type.is_none()) return placement::GangRound::kBestType;
  const auto& names = s.model->cluster.gpu_types;
  if (py::isinstance<py::str>(type)) {
    const auto name = type.cast<std::string>();
    for (std::size_t t = 0; t < names.size(); ++t)
      if (names[t] == name) return t;
    throw py::value_error(fmt::format("no GPU type '{}'", name));
  }
  const auto t = type.cast<std::size_t>();
  if (t >= names.size()) throw py::index_error(fmt::format("no GPU type {}", t));
  return t;
}

py::list doubles(const double* v, std::size_t n) {
  py::list out;
  for (std::size_t i = 0; i < n; ++i) out.append(v[i]);
  return out;
}
py::list doubles(const std::vector<double>& v) { return doubles(v.data(), v.size()); }

void bind_views(py::module_& m) {
  py::class_<IndexIterator>(m, "_JobIndexIterator")
      .def("__iter__", [](IndexIterator& it) -> IndexIterator& { return it; })
      .def("__next__", [](IndexIterator& it) {
        if (it.next >= it.list.size()) throw py::stop_iteration();
        return (*it.list.items)[it.next++];
      });
  py::class_<IndexList>(m, "JobIndexList", "job indices, read in place (valid during the call)")
      .def("__len__", &IndexList::size)
      .def("__getitem__", &IndexList::at)
      .def("__iter__", [](const IndexList& l) { return IndexIterator{l, 0}; })
      .def("__bool__", [](const IndexList& l) { return l.size() > 0; });

  py::class_<JobRef>(m, "Job", "one job of the state (read-only, valid during the call)")
      .def_property_readonly("index", [](const JobRef& r) { return r.index; })
      .def_property_readonly("tenant", [](const JobRef& r) {
        return r.view->get().tenants[r.get().tenant].name;
      })
      .def_property_readonly("tenant_index", [](const JobRef& r) { return r.get().tenant; })
      .def_property_readonly("job_type", [](const JobRef& r) {
        return r.view->get().model->profiles.job_types[r.get().job_type].name;
      })
      .def_property_readonly("workers", [](const JobRef& r) { return r.get().workers; })
      .def_property_readonly("weight", [](const JobRef& r) { return r.get().weight; })
      .def_property_readonly("arrival", [](const JobRef& r) { return r.get().arrival; })
      .def_property_readonly("state", [](const JobRef& r) { return state_name(r.get().state); })
      .def_property_readonly("running",
                             [](const JobRef& r) { return r.get().state == JobState::kRunning; })
      .def_property_readonly("work", [](const JobRef& r) { return r.get().work; },
                             "iterations in all")
      .def_property_readonly(
          "done", [](const JobRef& r) { return policy::done_now(r.view->get(), r.get()); },
          "iterations done up to now")
      .def_property_readonly(
          "remaining",
          [](const JobRef& r) { return r.get().work - policy::done_now(r.view->get(), r.get()); },
          "iterations left")
      .def_property_readonly(
          "attained",
          [](const JobRef& r) { return policy::attained_now(r.view->get(), r.get()); },
          "GPU-seconds held up to now (attained service)")
      .def_property_readonly("last_stop", [](const JobRef& r) { return r.get().last_stop; })
      .def_property_readonly("lease_end", [](const JobRef& r) { return r.get().lease_end; })
      .def_property_readonly("lease_ended",
                             [](const JobRef& r) { return r.view->get().lease_ended(r.get()); })
      .def_property_readonly("rate", [](const JobRef& r) { return r.get().rate; },
                             "iterations/s of its current placement")
      .def_property_readonly("ref_rate", [](const JobRef& r) { return r.get().ref_rate; })
      .def_property_readonly("rate_one_node",
                             [](const JobRef& r) { return doubles(r.get().rate_one_node); })
      .def_property_readonly("rate_spread",
                             [](const JobRef& r) { return doubles(r.get().rate_spread); })
      .def_property_readonly("rate_best", [](const JobRef& r) { return doubles(r.get().rate_best); })
      .def_property_readonly("devices", [](const JobRef& r) { return device_list(r.get().devices); })
      .def("__repr__", [](const JobRef& r) {
        const Job& j = r.get();
        return fmt::format("<fairgpu.Job {} tenant={} workers={} {}>", r.index,
                           r.view->get().tenants[j.tenant].name, j.workers, state_name(j.state));
      });

  py::class_<GangRoundRef, std::shared_ptr<GangRoundRef>>(
      m, "GangRound",
      "one scheduling point of a job-by-job policy, as the C++ time-sharing policies use it "
      "(src/placement/gang_round.h): grants whole gangs, placed consolidated on the fastest type "
      "with room")
      .def("decidable",
           [](py::object self) {
             auto& r = self.cast<GangRoundRef&>();
             return IndexList{r.view, &r.get().decidable(), self};
           },
           "queued jobs and running jobs whose lease ended, in arrival order")
      .def("worth_planning", [](GangRoundRef& r) { return r.get().worth_planning(); })
      .def("free_of_type",
           [](GangRoundRef& r, const py::object& t) {
             return r.get().free_of_type(type_arg(r.view->get(), t));
           })
      .def("total_free", [](GangRoundRef& r) { return r.get().total_free(); })
      .def("granted", [](GangRoundRef& r, std::size_t job) {
        return r.get().granted(check_job(r.view->get(), job));
      })
      .def(
          "fits",
          [](GangRoundRef& r, std::size_t job, const py::object& type) {
            const auto& s = r.view->get();
            return r.get().fits(check_job(s, job), type_arg(s, type));
          },
          py::arg("job"), py::arg("type") = py::none())
      .def(
          "grant",
          [](GangRoundRef& r, std::size_t job, double lease_end, const py::object& type) {
            const auto& s = r.view->get();
            return r.get().grant(check_job(s, job), lease_end, type_arg(s, type));
          },
          py::arg("job"), py::arg("lease_end"), py::arg("type") = py::none(),
          "grants the job a lease to lease_end; False (nothing taken) when it does not fit")
      .def("renew_all", [](GangRoundRef& r, double lease_end) { r.get().renew_all(lease_end); })
      .def("plan", [](GangRoundRef& r) { return r.get().plan(); });

  py::class_<StateView, std::shared_ptr<StateView>>(
      m, "State", "the scheduler's state at a scheduling point (read-only, valid during the call)")
      .def_property_readonly("now", [](const StateView& v) { return v.get().now; })
      .def_property_readonly("changed", [](const StateView& v) { return v.get().changed; },
                             "an arrival, completion or throughput change since the last plan")
      .def_property_readonly("gpu_types",
                             [](const StateView& v) { return v.get().model->cluster.gpu_types; })
      .def_property_readonly("capacity", [](const StateView& v) { return v.get().model->capacity; })
      .def_property_readonly("nodes",
                             [](const StateView& v) {
                               py::list out;
                               for (const Node& n : v.get().model->cluster.nodes)
                                 out.append(py::make_tuple(n.name, n.type, n.gpus));
                               return out;
                             },
                             "(name, type index, GPUs) per node")
      .def_property_readonly("tenants",
                             [](const StateView& v) {
                               py::list out;
                               for (const TenantSpec& t : v.get().tenants) out.append(t.name);
                               return out;
                             })
      .def_property_readonly("tenant_weights",
                             [](const StateView& v) {
                               py::list out;
                               for (const TenantSpec& t : v.get().tenants) out.append(t.weight);
                               return out;
                             })
      .def_property_readonly("num_jobs", [](const StateView& v) { return v.get().jobs.size(); })
      .def_property_readonly(
          "active",
          [](const std::shared_ptr<StateView>& v) {
            return IndexList{v, &v->get().active, py::none()};
          },
          "arrived, unfinished jobs, by arrival")
      .def_property_readonly(
          "running",
          [](const std::shared_ptr<StateView>& v) {
            return IndexList{v, &v->get().running, py::none()};
          })
      .def("job",
           [](const std::shared_ptr<StateView>& v, std::size_t i) {
             return JobRef{v, check_job(v->get(), i)};
           })
      .def("active_jobs",
           [](const std::shared_ptr<StateView>& v) {
             py::list out;
             for (std::size_t i : v->get().active) out.append(JobRef{v, i});
             return out;
           })
      .def(
          "free_devices",
          [](const StateView& v) {
            const SchedulerState& s = v.get();
            py::list out;
            const auto& nodes = s.model->cluster.nodes;
            for (std::uint32_t n = 0; n < nodes.size(); ++n)
              for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(nodes[n].gpus); ++g)
                if (s.device_owner[s.flat({n, g})] == -1) out.append(py::make_tuple(n, g));
            return out;
          },
          "(node, gpu) of every free device")
      .def("free_by_type",
           [](const StateView& v) {
             const SchedulerState& s = v.get();
             std::vector<int> out(s.model->cluster.gpu_types.size(), 0);
             const auto& nodes = s.model->cluster.nodes;
             for (std::uint32_t n = 0; n < nodes.size(); ++n)
               for (std::uint32_t g = 0; g < static_cast<std::uint32_t>(nodes[n].gpus); ++g)
                 if (s.device_owner[s.flat({n, g})] == -1) ++out[nodes[n].type];
             return out;
           })
      .def_property_readonly("previous_plan",
                             [](const StateView& v) {
                               v.get();
                               return v.previous ? *v.previous : RoundPlan{};
                             })
      .def(
          "gang_round",
          [](const std::shared_ptr<StateView>& v) {
            auto r = std::make_shared<GangRoundRef>();
            r->view = v;
            r->round = std::make_unique<placement::GangRound>(v->get(), v->gang_options);
            return r;
          },
          "this point's GangRound, with the policy's spread_min and spread_wait");

  py::class_<Assignment>(m, "Assignment")
      .def(py::init([](std::size_t job, const py::object& devices, double lease_end) {
             Assignment a;
             a.job = job;
             a.devices = devices_from(devices);
             a.lease_end = lease_end;
             return a;
           }),
           py::arg("job"), py::arg("devices"), py::arg("lease_end"))
      .def_readonly("job", &Assignment::job)
      .def_property_readonly("devices", [](const Assignment& a) { return device_list(a.devices); })
      .def_readonly("lease_end", &Assignment::lease_end)
      .def("__repr__", [](const Assignment& a) {
        return fmt::format("<fairgpu.Assignment job={} gpus={} until={}>", a.job, a.devices.size(),
                           a.lease_end);
      });
  py::class_<RoundPlan>(m, "Plan", "a round's plan: renewals and (re)starts")
      .def_readonly("run", &RoundPlan::run)
      .def("__len__", [](const RoundPlan& p) { return p.run.size(); });

  py::class_<ProblemView, std::shared_ptr<ProblemView>>(
      m, "Problem",
      "a share problem (entities x GPU types, read-only, valid during shares()); "
      "include/fairgpu/share_problem.h")
      .def_property_readonly("gpu_types", [](const ProblemView& v) { return v.get().gpu_types; })
      .def_property_readonly("capacity", [](const ProblemView& v) { return v.get().capacity; })
      .def_property_readonly("num_entities",
                             [](const ProblemView& v) { return v.get().num_entities(); })
      .def_property_readonly("num_types", [](const ProblemView& v) { return v.get().num_types(); })
      .def_property_readonly("total_capacity",
                             [](const ProblemView& v) { return v.get().total_capacity(); })
      .def_property_readonly("names",
                             [](const ProblemView& v) {
                               py::list out;
                               for (const auto& e : v.get().entities) out.append(e.name);
                               return out;
                             })
      .def_property_readonly("weights",
                             [](const ProblemView& v) {
                               py::list out;
                               for (const auto& e : v.get().entities) out.append(e.weight);
                               return out;
                             })
      .def_property_readonly("speedups",
                             [](const ProblemView& v) {
                               py::list out;
                               for (const auto& e : v.get().entities) out.append(doubles(e.speedup));
                               return out;
                             },
                             "per entity, throughput per GPU of each type relative to type 0")
      .def_property_readonly(
          "demands",
          [](const ProblemView& v) {
            const ShareProblem& p = v.get();
            py::list out;
            for (std::size_t e = 0; e < p.num_entities(); ++e) out.append(p.entity_demand(e));
            return out;
          },
          "per entity, the most GPUs it can use (inf: no cap)");
}

void bind_options(py::module_& m) {
  py::class_<OptionSpec>(m, "Option",
                         "a key a Python policy declares (its `options` list): the kind follows "
                         "the default (bool, number, str with choices, list of numbers)")
      .def(py::init([](std::string key, const py::object& dflt, std::string help,
                       std::optional<double> min, std::optional<double> max, bool min_open,
                       bool max_open, std::vector<std::string> choices) {
             const double lo = min.value_or(-std::numeric_limits<double>::infinity());
             const double hi = max.value_or(std::numeric_limits<double>::infinity());
             if (py::isinstance<py::bool_>(dflt)) return bool_option(key, dflt.cast<bool>(), help);
             if (py::isinstance<py::str>(dflt)) {
               if (choices.empty())
                 throw py::value_error(fmt::format("option {}: a str default needs choices", key));
               return choice_option(key, dflt.cast<std::string>(), help, choices);
             }
             if (py::isinstance<py::list>(dflt) || py::isinstance<py::tuple>(dflt)) {
               std::string text;
               for (py::handle v : dflt)
                 text += (text.empty() ? "" : "/") + fmt::format("{}", v.cast<double>());
               return list_option(key, text, help, lo, min_open, false);
             }
             return number_option(key, dflt.cast<double>(), help, lo, hi, min_open, max_open);
           }),
           py::arg("key"), py::arg("default"), py::arg("help") = "", py::arg("min") = py::none(),
           py::arg("max") = py::none(), py::arg("min_open") = false, py::arg("max_open") = false,
           py::arg("choices") = std::vector<std::string>{})
      .def_readonly("key", &OptionSpec::key)
      .def_readonly("default", &OptionSpec::default_value)
      .def_readonly("help", &OptionSpec::help)
      .def("accepts", [](const OptionSpec& s) { return describe_accepted(s); });
}

void bind_lp(py::module_& m) {
  py::class_<LinearProgram>(m, "LinearProgram",
                            "the LP layer over COIN-OR CLP (src/solver/lp.cc); bounds may be "
                            "+-inf; minimises unless maximize() is called")
      .def(py::init<>())
      .def("maximize", &LinearProgram::maximize)
      .def("minimize", &LinearProgram::minimize)
      .def(
          "add_variable",
          [](LinearProgram& lp, double lower, double upper, double objective) {
            return lp.add_variable(std::max(lower, -kInf), std::min(upper, kInf), objective);
          },
          py::arg("lower") = 0.0, py::arg("upper") = std::numeric_limits<double>::infinity(),
          py::arg("objective") = 0.0, "returns the variable's index")
      .def(
          "add_constraint",
          [](LinearProgram& lp, const std::vector<int>& vars, const std::vector<double>& coefs,
             double lower, double upper) {
            if (vars.size() != coefs.size())
              throw py::value_error("add_constraint: as many coefficients as variables");
            for (int v : vars)
              if (v < 0 || v >= lp.num_variables())
                throw py::index_error(fmt::format("add_constraint: no variable {}", v));
            return lp.add_constraint(std::span<const int>(vars), std::span<const double>(coefs),
                                     std::max(lower, -kInf), std::min(upper, kInf));
          },
          py::arg("vars"), py::arg("coefs"), py::arg("lower") = -std::numeric_limits<double>::infinity(),
          py::arg("upper") = std::numeric_limits<double>::infinity(),
          "lower <= sum coefs[i] * x[vars[i]] <= upper; returns the row's index")
      .def("set_objective", &LinearProgram::set_objective)
      .def("set_variable_bounds",
           [](LinearProgram& lp, int v, double lo, double hi) {
             lp.set_variable_bounds(v, std::max(lo, -kInf), std::min(hi, kInf));
           })
      .def("set_constraint_bounds",
           [](LinearProgram& lp, int r, double lo, double hi) {
             lp.set_constraint_bounds(r, std::max(lo, -kInf), std::min(hi, kInf));
           })
      .def_property_readonly("num_variables", &LinearProgram::num_variables)
      .def_property_readonly("num_constraints", &LinearProgram::num_constraints)
      .def(
          "solve",
          [](LinearProgram& lp) {
            LpStatus status;
            {
              py::gil_scoped_release release;  // CLP runs without the GIL
              status = lp.solve();
            }
            return std::string(to_string(status));
          },
          "solves; returns the status: optimal, infeasible, unbounded or error")
      .def_property_readonly("objective_value", &LinearProgram::objective_value)
      .def("value", [](const LinearProgram& lp, int v) { return lp.value(v); })
      .def_property_readonly("values", [](const LinearProgram& lp) { return lp.values(); })
      .def("dual", [](const LinearProgram& lp, int r) { return lp.dual(r); },
           "the row's dual (shadow price) in the sense of the objective");
}

}  // namespace

void bind_module(py::module_& m) {
  m.doc() =
      "fairgpu: the simulator and policies of a fair GPU-cluster scheduler, with policies "
      "written in Python (docs/python.md)";
  // Never destroyed: they would outlive the interpreter at exit.
  static auto* input_error = new py::exception<InputError>(m, "InputError", PyExc_ValueError);
  static auto* policy_error = new py::exception<PolicyError>(m, "PolicyError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(input_error->ptr(), e.what());
    } catch (const PolicyError& e) {
      PyErr_SetString(policy_error->ptr(), e.what());
    }
  });
  bind_views(m);
  bind_options(m);
  bind_lp(m);
  bind_runs(m);
}

}  // namespace fairgpu::python
