// The `py` plugin (py_policy.h): Python classes as round or share policies.
#include "python/py_policy.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/policy.h"
#include "fairgpu/policy_plugin.h"
#include "policy/round_policies.h"
#include "policy/time_sharing.h"
#include "python/views.h"

namespace py = pybind11;

namespace fairgpu::python {
namespace {

void (*g_start_interpreter)() = nullptr;

void ensure_interpreter(const std::string& full) {
  if (Py_IsInitialized()) return;
  if (!g_start_interpreter)
    throw InputError("policy " + full, "", "no Python interpreter in this program");
  g_start_interpreter();
}

// `py:FILE:CLASS[:key=value...]`, split.
struct PySpec {
  std::string full, name, path, cls;  // name: py:FILE:CLASS
  std::vector<std::pair<std::string, std::string>> values;
};

PySpec parse(std::string_view text) {
  const PolicySpecifier spec = parse_policy_specifier(text);  // name: py:FILE:CLASS
  PySpec out;
  out.full = spec.full;
  out.name = spec.name;
  const std::string_view name = spec.name;
  const std::size_t colon = name.rfind(':');
  out.path = std::string(name.substr(3, colon - 3));
  out.cls = std::string(name.substr(colon + 1));
  out.values = spec.values;
  return out;
}

// The innermost frame of a traceback: "file.py:12".
std::string where(const py::object& tb) {
  if (tb.is_none()) return {};
  py::object frame = tb;
  while (!frame.attr("tb_next").is_none()) frame = frame.attr("tb_next");
  const auto file = frame.attr("tb_frame").attr("f_code").attr("co_filename").cast<std::string>();
  return fmt::format("{}:{}", std::filesystem::path(file).filename().string(),
                     frame.attr("tb_lineno").cast<int>());
}

// Loaded files, by absolute path: one module per file however many policies
// name it (a compare of two classes of one file loads it once), loaded again
// when the file changed (serve's reload on SIGHUP picks up an edited policy).
struct LoadedFile {
  py::object module;
  std::filesystem::file_time_type mtime;
  std::uintmax_t size = 0;
};
std::map<std::string, LoadedFile>& modules() {
  static auto* all = new std::map<std::string, LoadedFile>();  // outlives nothing at exit
  return *all;
}
std::size_t g_loads = 0;  // module names stay unique across reloads

py::object load_module(const PySpec& spec) {
  const std::string source = "policy " + spec.full;
  std::error_code ec;
  const auto abs = std::filesystem::absolute(spec.path, ec);
  if (ec || !std::filesystem::is_regular_file(abs, ec))
    throw InputError(source, "file", fmt::format("cannot read '{}'", spec.path));
  auto& cache = modules();
  const auto mtime = std::filesystem::last_write_time(abs, ec);
  const auto size = std::filesystem::file_size(abs, ec);
  if (auto it = cache.find(abs.string());
      it != cache.end() && it->second.mtime == mtime && it->second.size == size)
    return it->second.module;
  try {
    // The module's types are registered when it is imported: a policy file
    // that does not import fairgpu itself still gets its views and plans.
    py::module_::import("fairgpu");
    py::module_ sys = py::module_::import("sys");
    // Its folder on the path, so a policy file can import its neighbours.
    py::list path = sys.attr("path");
    const std::string dir = abs.parent_path().string();
    if (!path.contains(dir)) path.insert(0, dir);
    py::module_ util = py::module_::import("importlib.util");
    const std::string name = "fairgpu_policy_" + std::to_string(g_loads++);
    py::object s = util.attr("spec_from_file_location")(name, abs.string());
    if (s.is_none())
      throw InputError(source, "file", fmt::format("'{}' is not a Python file (.py)", spec.path));
    py::object mod = util.attr("module_from_spec")(s);
    sys.attr("modules")[py::str(name)] = mod;
    s.attr("loader").attr("exec_module")(mod);
    cache[abs.string()] = LoadedFile{mod, mtime, size};
    return mod;
  } catch (py::error_already_set& e) {
    throw InputError(source, "file", fmt::format("'{}' does not load: {}", spec.path, describe(e)));
  }
}

enum class Kind { kRound, kShare };

struct Loaded {
  PySpec spec;
  py::object cls;
  Kind kind = Kind::kRound;
  PolicyOptions options;
};

// The class's own keys, from its `options` list of fairgpu.Option.
std::vector<OptionSpec> declared_keys(const py::object& cls, const std::string& source) {
  std::vector<OptionSpec> out;
  if (!py::hasattr(cls, "options")) return out;
  try {
    for (py::handle item : cls.attr("options")) out.push_back(item.cast<OptionSpec>());
  } catch (py::error_already_set& e) {
    throw InputError(source, "options", describe(e));
  } catch (const py::cast_error&) {
    throw InputError(source, "options", "must be a list of fairgpu.Option");
  }
  return out;
}

// With the GIL held (Loaded holds Python objects).
Loaded load(std::string_view specifier, const RoundPolicyOptions& round_options) {
  Loaded l{parse(specifier), {}, Kind::kRound, PolicyOptions("", {})};
  const std::string source = "policy " + l.spec.full;
  py::object mod = load_module(l.spec);
  if (!py::hasattr(mod, l.spec.cls.c_str()))
    throw InputError(source, "class", fmt::format("no class '{}' in '{}'", l.spec.cls, l.spec.path));
  l.cls = mod.attr(l.spec.cls.c_str());
  const bool round = py::hasattr(l.cls, "schedule"), share = py::hasattr(l.cls, "shares");
  if (round == share)
    throw InputError(source, "class",
                     fmt::format("'{}' must define exactly one of schedule(state) (a round policy) "
                                 "or shares(problem) (a share policy)",
                                 l.spec.cls));
  l.kind = round ? Kind::kRound : Kind::kShare;
  // The base keys of its kind, then its own (one of the same name replaces
  // the base key: a policy may change the default round).
  std::vector<OptionSpec> keys =
      round ? policy::time_sharing_keys() : policy::ShareRoundPolicyKeys("");
  for (OptionSpec& k : declared_keys(l.cls, source)) {
    auto same = std::find_if(keys.begin(), keys.end(), [&](const auto& b) { return b.key == k.key; });
    if (same != keys.end())
      *same = std::move(k);
    else
      keys.push_back(std::move(k));
  }
  // Each default must be a value its own declaration accepts.
  for (const OptionSpec& k : keys) {
    try {
      PolicyOptions(l.spec.name, {k});  // checks the default
    } catch (const std::logic_error&) {
      throw InputError(source, k.key, fmt::format("the class's default '{}' is not a {}",
                                                  k.default_value, describe_accepted(k)));
    }
  }
  l.options = PolicyOptions(l.spec.name, keys, l.spec.full);
  apply_round_policy_options(round_options, l.options);
  for (const auto& [key, value] : l.spec.values) l.options.set(key, value);
  return l;
}

// self.options: the values, typed by kind.
py::dict option_values(const PolicyOptions& o) {
  py::dict out;
  for (const OptionSpec& s : o.specs()) {
    switch (s.kind) {
      case OptionSpec::Kind::kNumber: out[py::str(s.key)] = o.number(s.key); break;
      case OptionSpec::Kind::kList: out[py::str(s.key)] = o.numbers(s.key); break;
      case OptionSpec::Kind::kChoice: out[py::str(s.key)] = o.choice(s.key); break;
      case OptionSpec::Kind::kBool: out[py::str(s.key)] = o.flag(s.key); break;
    }
  }
  return out;
}

// An instance with self.options set before __init__ runs.
py::object instantiate(const Loaded& l) {
  try {
    py::object obj = l.cls.attr("__new__")(l.cls);
    obj.attr("options") = option_values(l.options);
    obj.attr("__init__")();
    return obj;
  } catch (py::error_already_set& e) {
    throw InputError("policy " + l.spec.full, "class",
                     fmt::format("{}() raised {}", l.spec.cls, describe(e)));
  }
}

// Drops a Python reference with the GIL held, from whichever thread.
struct GilObject {
  py::object obj;
  GilObject(py::object o) : obj(std::move(o)) {}
  ~GilObject() {
    py::gil_scoped_acquire gil;
    obj = py::object();
  }
};

std::string failure(const std::string& policy, const char* call, double now,
                    const std::string& what) {
  // 10 digits: serve's times are Unix times.
  return fmt::format("policy {}: {} at t={:.10g} s {}", policy, call, now, what);
}

// The plan `schedule` returned; `built` when the policy assembled it itself
// (a list of Assignment) rather than from a GangRound.
RoundPlan to_plan(const py::object& result, bool& built) {
  built = false;
  if (result.is_none()) return {};
  if (py::isinstance<RoundPlan>(result)) return result.cast<RoundPlan>();
  built = true;
  RoundPlan plan;
  for (py::handle item : result) plan.run.push_back(item.cast<Assignment>());
  return plan;
}

class PyRoundPolicy final : public RoundPolicy {
 public:
  PyRoundPolicy(const Loaded& l, py::object obj)
      : name_(l.spec.full),
        interval_(l.options.number("round")),
        gang_options_{l.options.number("spread_min"), l.options.number("spread_wait")},
        obj_(std::move(obj)) {}

  std::string_view name() const override { return name_; }
  double interval() const override { return interval_; }

  RoundPlan plan(const SchedulerState& s) override {
    RoundPlan plan;
    bool built = false;
    {
      py::gil_scoped_acquire gil;
      auto view = std::make_shared<StateView>(StateView{&s, &previous_, gang_options_});
      InvalidateOnExit<StateView> invalidate{view};
      try {
        py::object result = obj_.obj.attr("schedule")(view);
        plan = to_plan(result, built);
      } catch (py::error_already_set& e) {
        throw PolicyError(failure(name_, "schedule()", s.now, "raised " + describe(e)));
      } catch (const py::cast_error&) {
        throw PolicyError(failure(name_, "schedule()", s.now,
                                  "returned neither None, a Plan nor a list of Assignment"));
      }
    }
    // A plan the policy put together itself is checked here, for an error
    // that names it; a GangRound's is placed as the C++ policies' are (the
    // simulator checks every plan again: checking twice cost 10% of a
    // 20,000-job fifo run).
    if (built) {
      try {
        validate_plan(plan, s);
      } catch (const std::logic_error& e) {
        throw PolicyError(failure(name_, "schedule()", s.now, std::string("returned ") + e.what()));
      }
    }
    previous_ = plan;
    return plan;
  }

 private:
  std::string name_;
  double interval_;
  placement::GangRoundOptions gang_options_;
  GilObject obj_;
  RoundPlan previous_;
};

// The simulated time of the share round policy's current plan(), for errors.
struct Clock {
  double now = 0.0;
};

class PySharePolicy final : public SharePolicy {
 public:
  PySharePolicy(std::string name, py::object obj, std::shared_ptr<Clock> clock)
      : name_(std::move(name)), obj_(std::move(obj)), clock_(std::move(clock)) {}
  std::string_view name() const override { return name_; }

  Matrix allocate(const ShareProblem& p) const override {
    py::gil_scoped_acquire gil;
    auto view = std::make_shared<ProblemView>(ProblemView{&p});
    InvalidateOnExit<ProblemView> invalidate{view};
    auto fail = [&](const std::string& what) {
      return PolicyError(failure(name_, "shares()", clock_->now, what));
    };
    Matrix x(p.num_entities(), p.num_types());
    try {
      py::object result = obj_.obj.attr("shares")(view);
      std::size_t r = 0;
      for (py::handle row : result) {
        if (r >= x.rows()) break;
        std::size_t c = 0;
        for (py::handle v : row) {
          if (c >= x.cols()) throw fail(fmt::format("returned a row {} longer than {} GPU types", r, x.cols()));
          x(r, c++) = v.cast<double>();
        }
        if (c != x.cols())
          throw fail(fmt::format("returned row {} with {} values for {} GPU types", r, c, x.cols()));
        ++r;
      }
      if (r != x.rows() || py::len(result) != x.rows())
        throw fail(fmt::format("returned {} rows for {} entities", py::len(result), x.rows()));
    } catch (py::error_already_set& e) {
      throw fail("raised " + describe(e));
    } catch (const py::cast_error&) {
      throw fail("returned something other than rows of numbers (entities x GPU types)");
    }
    for (std::size_t r = 0; r < x.rows(); ++r)
      for (std::size_t c = 0; c < x.cols(); ++c)
        if (!std::isfinite(x(r, c)) || x(r, c) < -1e-9)
          throw fail(fmt::format("returned {} for entity {}, type {} (must be finite and >= 0)",
                                 x(r, c), r, c));
    return x;
  }

 private:
  std::string name_;
  GilObject obj_;
  std::shared_ptr<Clock> clock_;
};

// The share round policy of a Python share policy, noting each plan's time
// for the share policy's errors.
class PyShareRoundPolicy final : public RoundPolicy {
 public:
  PyShareRoundPolicy(std::unique_ptr<RoundPolicy> inner, std::shared_ptr<Clock> clock)
      : inner_(std::move(inner)), clock_(std::move(clock)) {}
  std::string_view name() const override { return inner_->name(); }
  std::string_view level() const override { return inner_->level(); }
  double interval() const override { return inner_->interval(); }
  bool reads_progress() const override { return inner_->reads_progress(); }
  RoundPlan plan(const SchedulerState& s) override {
    clock_->now = s.now;
    return inner_->plan(s);
  }
  std::vector<Assignment> midround(const SchedulerState& s, const std::vector<DeviceRef>& free,
                                   double round_end) override {
    return inner_->midround(s, free, round_end);
  }
  bool starts_midround() const override { return inner_->starts_midround(); }

 private:
  std::unique_ptr<RoundPolicy> inner_;
  std::shared_ptr<Clock> clock_;
};

std::unique_ptr<RoundPolicy> make(std::string_view specifier, const RoundPolicyOptions& options) {
  ensure_interpreter(std::string(specifier));
  py::gil_scoped_acquire gil;
  Loaded l = load(specifier, options);
  py::object obj = instantiate(l);
  if (l.kind == Kind::kRound) return std::make_unique<PyRoundPolicy>(l, std::move(obj));
  auto clock = std::make_shared<Clock>();
  auto share = std::make_unique<PySharePolicy>(l.spec.full, std::move(obj), clock);
  return std::make_unique<PyShareRoundPolicy>(policy::NewShareRoundPolicy(std::move(share), l.options),
                                              clock);
}

}  // namespace

std::vector<RoundPolicyInfo> python_policies_in(const std::string& file) {
  const std::string prefix = "py:" + file + ":";
  ensure_interpreter(prefix);
  py::gil_scoped_acquire gil;
  PySpec spec;
  spec.full = spec.name = file;  // errors name the file
  spec.path = file;
  py::object mod = load_module(spec);
  py::module_ inspect = py::module_::import("inspect");
  std::vector<RoundPolicyInfo> out;
  for (auto [key, value] : py::reinterpret_borrow<py::dict>(mod.attr("__dict__"))) {
    const auto name = key.cast<std::string>();
    if (name.empty() || name[0] == '_' || !inspect.attr("isclass")(value).cast<bool>()) continue;
    // Its own classes, not those it imports.
    if (!value.attr("__module__").equal(mod.attr("__name__"))) continue;
    const bool round = py::hasattr(value, "schedule"), share = py::hasattr(value, "shares");
    if (round == share) continue;
    RoundPolicyInfo info;
    info.name = prefix + name;
    info.share = share;
    // The docstring's first paragraph, on one line: the class's, else the
    // file's (the examples document the file).
    py::object doc = inspect.attr("getdoc")(value);
    if (doc.is_none()) doc = inspect.attr("getdoc")(mod);
    if (!doc.is_none()) {
      const auto text = doc.cast<std::string>();
      const std::string para = text.substr(0, text.find("\n\n"));
      for (char c : para) info.description += c == '\n' ? ' ' : c;
    }
    info.keys = load(info.name, {}).options.specs();
    out.push_back(std::move(info));
  }
  if (out.empty())
    throw InputError("policy file " + file, "",
                     "defines no policy class (one with schedule(state) or shares(problem))");
  return out;
}

std::string describe(py::error_already_set& e) {
  const std::string type = e.type().attr("__name__").cast<std::string>();
  std::string message = py::str(e.value()).cast<std::string>();
  // A SyntaxError's place is its own, not its traceback's.
  if (e.matches(PyExc_SyntaxError)) {
    py::object v = e.value();
    if (py::hasattr(v, "msg") && py::hasattr(v, "lineno") && !v.attr("lineno").is_none())
      return fmt::format("SyntaxError: {} (line {})", py::str(v.attr("msg")).cast<std::string>(),
                         v.attr("lineno").cast<int>());
  }
  const std::string at = where(e.trace());
  std::string out = message.empty() ? type : type + ": " + message;
  if (!at.empty()) out += " (" + at + ")";
  return out;
}

void set_interpreter_starter(void (*start)()) { g_start_interpreter = start; }

void register_python_policies() {
  register_round_policy_plugin(
      {"py", make, [](std::string_view specifier, const RoundPolicyOptions& options) {
         ensure_interpreter(std::string(specifier));
         py::gil_scoped_acquire gil;
         return load(specifier, options).options;
       }});
}

}  // namespace fairgpu::python
