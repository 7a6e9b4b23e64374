// Readers of the share-problem JSON and of allocation files (see
// fairgpu/allocation_io.h for the formats). Every check reports the path of
// the offending field, so one line on stderr is enough to fix the input.
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "fairgpu/allocation_io.h"
#include "fairgpu/policy.h"
#include "trace/text_input.h"

namespace fairgpu {

namespace {

using json = nlohmann::ordered_json;

// Escapes control characters so the message stays on one line.
std::string one_line(std::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    } else {
      out += c;
    }
  }
  return out;
}

std::string make_message(const std::string& source, const std::string& field,
                         const std::string& problem) {
  std::string m = one_line(source) + ": ";
  if (!field.empty()) m += one_line(field) + ": ";
  return m + one_line(problem);
}

// The share policies' LPs carry capacities, demands and speed ratios in their
// coefficients, and CLP solves to tolerances around 1e-7 (and asserts on an
// objective coefficient above 1e25): a speedup of 1e300 or a capacity of
// 1e-300 once ended in "LP error" (exit 1) or an abort. Like weights
// (fairgpu/weight.h) these are bounded where they are read, so such a value is
// an input error naming its field (exit 2). The bounds leave room for any
// real cluster: up to a million devices of a type, speeds within a factor
// 1e4 of the first GPU type (or 0: cannot run there).
constexpr double kMinAmount = 1e-3, kMaxAmount = 1e6;  // capacity (or 0), demand
constexpr double kMinSpeed = 1e-4, kMaxSpeed = 1e4;    // relative to the first GPU type (or 0)

using text_input::child;
using text_input::element;
using text_input::join;
using text_input::parse_json;

// Typed access to a parsed document with errors that name the field.
class Reader : public text_input::JsonReader {
 public:
  using JsonReader::JsonReader;

  // k non-negative finite numbers (devices per GPU type).
  std::vector<double> amounts(const json& j, const std::string& path, std::size_t k) const {
    expect_array(j, path, std::to_string(k) + " numbers (one per GPU type)");
    if (j.size() != k)
      fail(path, "expected " + std::to_string(k) + " values (one per GPU type), got " +
                     std::to_string(j.size()));
    std::vector<double> v(k);
    for (std::size_t i = 0; i < k; ++i) v[i] = non_negative(j[i], element(path, i));
    return v;
  }
};

// ---- problem ---------------------------------------------------------------

class ProblemParser {
 public:
  explicit ProblemParser(const std::string& source) : r_(source) {}

  ShareProblem parse(const json& doc) {
    r_.expect_object(doc, "");
    r_.only_keys(doc, "", {"gpu_types", "capacity", "tenants"});
    read_gpu_types(r_.required(doc, "", "gpu_types"));
    read_capacity(r_.required(doc, "", "capacity"));
    const json& tenants = r_.required(doc, "", "tenants");
    r_.expect_array(tenants, "tenants", "tenant objects");
    if (tenants.empty()) r_.fail("tenants", "must list at least one tenant");
    std::set<std::string> names;
    for (std::size_t t = 0; t < tenants.size(); ++t) read_tenant(tenants[t], t, names);
    return std::move(p_);
  }

 private:
  void read_gpu_types(const json& j) {
    r_.expect_array(j, "gpu_types", "GPU type names");
    if (j.empty()) r_.fail("gpu_types", "must list at least one GPU type");
    for (std::size_t i = 0; i < j.size(); ++i) {
      std::string path = element("gpu_types", i);
      std::string name = r_.name(j[i], path);
      for (const auto& seen : p_.gpu_types)
        if (seen == name) r_.fail(path, "duplicate GPU type '" + name + "'");
      p_.gpu_types.push_back(std::move(name));
    }
  }

  void read_capacity(const json& j) {
    r_.expect_object(j, "capacity");
    for (const auto& [key, value] : j.items()) {
      bool known = false;
      for (const auto& g : p_.gpu_types) known = known || g == key;
      if (!known)
        r_.fail(child("capacity", key), "unknown GPU type (gpu_types: " + join(p_.gpu_types) + ")");
    }
    for (const auto& g : p_.gpu_types) {
      std::string path = child("capacity", g);
      auto it = j.find(g);
      if (it == j.end()) r_.fail(path, "missing (every GPU type needs a capacity)");
      const double c = r_.non_negative(*it, path);
      if (c != 0 && !(c >= kMinAmount && c <= kMaxAmount))
        r_.fail(path, "must be 0 or in [0.001, 1000000], got " + it->dump());
      p_.capacity.push_back(c);
    }
    if (!(p_.total_capacity() > 0)) r_.fail("capacity", "total capacity is 0; no GPU to share");
  }

  // A speedup or throughput vector, normalised to the first (slowest) type.
  // A given `speedup` whose first element is not 1 is normalised the same
  // way: it is read as relative speeds, whatever unit the user chose.
  std::vector<double> read_speed(const json& obj, const std::string& path) {
    const json* speedup = Reader::optional(obj, "speedup");
    std::string field = child(path, speedup ? "speedup" : "throughput");
    const json& j = speedup ? *speedup : *Reader::optional(obj, "throughput");
    std::vector<double> v = r_.amounts(j, field, p_.num_types());
    if (!(v[0] > 0))
      r_.fail(element(field, 0),
              "must be > 0: speeds are normalised to the first GPU type (" + p_.gpu_types[0] + ")");
    double base = v[0];
    for (std::size_t i = 0; i < v.size(); ++i) {
      v[i] /= base;
      if (v[i] != 0 && !(v[i] >= kMinSpeed && v[i] <= kMaxSpeed))
        r_.fail(element(field, i), "must be 0 or within a factor 10000 of " + element(field, 0) +
                                       " (speeds are relative to the first GPU type)");
    }
    return v;
  }

  // Exactly one of `options` must be present in obj.
  void exactly_one(const json& obj, const std::string& path,
                   std::initializer_list<const char*> options) {
    std::vector<std::string> given, all;
    for (const char* o : options) {
      all.emplace_back(o);
      if (obj.contains(o)) given.emplace_back(o);
    }
    if (given.empty()) r_.fail(path, "missing field: give one of " + join(all));
    if (given.size() > 1)
      r_.fail(path, "give only one of " + join(all) + " (got " + join(given) + ")");
  }

  void read_tenant(const json& j, std::size_t t, std::set<std::string>& names) {
    std::string path = element("tenants", t);
    r_.expect_object(j, path);
    r_.only_keys(j, path, {"name", "weight", "demand", "speedup", "throughput", "job_types"});
    std::string name_path = child(path, "name");
    std::string name = r_.name(r_.required(j, path, "name"), name_path);
    // Entities of job types are named "tenant/job_type"; a '/' in a tenant
    // name would make those names ambiguous.
    if (name.find('/') != std::string::npos) r_.fail(name_path, "must not contain '/'");
    if (!names.insert(name).second) r_.fail(name_path, "duplicate tenant name '" + name + "'");
    double weight = 1.0;
    if (const json* w = Reader::optional(j, "weight"))
      weight = r_.weight(*w, child(path, "weight"));
    double demand = kNoDemand;
    if (const json* d = Reader::optional(j, "demand"))
      demand = r_.positive(*d, child(path, "demand"));
    if (const json* d = Reader::optional(j, "demand");
        d && !(demand >= kMinAmount && demand <= kMaxAmount))
      r_.fail(child(path, "demand"), "must be in [0.001, 1000000], got " + d->dump());
    exactly_one(j, path, {"speedup", "throughput", "job_types"});
    const json* job_types = Reader::optional(j, "job_types");
    if (!job_types) {
      p_.add_tenant(std::move(name), read_speed(j, path), weight, demand);
      return;
    }
    std::string jt_path = child(path, "job_types");
    r_.expect_array(*job_types, jt_path, "job type objects");
    if (job_types->empty()) r_.fail(jt_path, "must list at least one job type");
    std::vector<std::pair<std::string, std::vector<double>>> types;
    for (std::size_t i = 0; i < job_types->size(); ++i) {
      const json& jt = (*job_types)[i];
      std::string jpath = element(jt_path, i);
      r_.expect_object(jt, jpath);
      r_.only_keys(jt, jpath, {"name", "speedup", "throughput"});
      std::string jname = r_.name(r_.required(jt, jpath, "name"), child(jpath, "name"));
      for (const auto& [seen, speed] : types)
        if (seen == jname) r_.fail(child(jpath, "name"), "duplicate job type '" + jname + "'");
      exactly_one(jt, jpath, {"speedup", "throughput"});
      types.emplace_back(std::move(jname), read_speed(jt, jpath));
    }
    p_.add_tenant_job_types(std::move(name), std::move(types), weight, demand);
  }

  Reader r_;
  ShareProblem p_;
};

// ---- allocation ------------------------------------------------------------

class AllocationParser {
 public:
  AllocationParser(const ShareProblem& p, const std::string& source)
      : p_(p), r_(source), x_(p.num_entities(), p.num_types()) {}

  AllocationInput parse(const json& doc) {
    r_.expect_object(doc, "");
    // The keys of `fairgpu allocate --json` output plus the plain matrix form.
    r_.only_keys(doc, "",
                 {"policy", "gpu_types", "tenants", "allocation", "total_throughput",
                  "solve_seconds", "audit"});
    AllocationInput out;
    if (const json* g = Reader::optional(doc, "gpu_types")) check_gpu_types(*g);
    if (const json* pol = Reader::optional(doc, "policy")) out.policy = read_policy(*pol);
    const json* tenants = Reader::optional(doc, "tenants");
    const json* matrix = Reader::optional(doc, "allocation");
    if (tenants && matrix) r_.fail("", "give either tenants or allocation, not both");
    if (!tenants && !matrix)
      r_.fail("allocation",
              "missing (or give tenants, as printed by "
              "`fairgpu allocate --json`)");
    std::string field = tenants ? "tenants" : "allocation";
    if (tenants)
      read_tenants(*tenants);
    else
      read_matrix(*matrix);
    if (std::string bad = check_feasible(p_, x_); !bad.empty()) r_.fail(field, bad);
    out.x = std::move(x_);
    return out;
  }

 private:
  void check_gpu_types(const json& j) {
    bool same = j.is_array() && j.size() == p_.num_types();
    for (std::size_t i = 0; same && i < j.size(); ++i)
      same = j[i].is_string() && j[i].get<std::string>() == p_.gpu_types[i];
    if (!same)
      r_.fail("gpu_types", "does not match the problem's gpu_types [" + join(p_.gpu_types) + "]");
  }

  std::string read_policy(const json& j) {
    std::string name = r_.name(j, "policy");
    if (!PolicyRegistry::builtin().find(name))
      r_.fail("policy", "unknown policy '" + name +
                            "' (valid: " + join(PolicyRegistry::builtin().names()) + ")");
    return name;
  }

  void set_row(std::size_t e, const std::vector<double>& v) {
    for (std::size_t j = 0; j < v.size(); ++j) x_(e, j) = v[j];
  }

  void read_matrix(const json& j) {
    std::size_t n = p_.num_entities();
    r_.expect_array(j, "allocation", "rows, one per tenant or job type");
    if (j.size() != n)
      r_.fail("allocation", "expected " + std::to_string(n) +
                                " rows (one per tenant, or per job type of a tenant with job "
                                "types), got " +
                                std::to_string(j.size()));
    for (std::size_t e = 0; e < n; ++e)
      set_row(e, r_.amounts(j[e], element("allocation", e), p_.num_types()));
  }

  void read_tenants(const json& j) {
    r_.expect_array(j, "tenants", "tenant objects");
    std::vector<bool> seen(p_.tenants.size(), false);
    for (std::size_t i = 0; i < j.size(); ++i) {
      std::string path = element("tenants", i);
      r_.expect_object(j[i], path);
      r_.only_keys(j[i], path, {"name", "allocation", "throughput", "job_types"});
      std::string name = r_.name(r_.required(j[i], path, "name"), child(path, "name"));
      std::size_t t = 0;
      while (t < p_.tenants.size() && p_.tenants[t].name != name) ++t;
      if (t == p_.tenants.size())
        r_.fail(child(path, "name"), "unknown tenant '" + name + "' (not in the problem)");
      if (seen[t]) r_.fail(child(path, "name"), "duplicate tenant '" + name + "'");
      seen[t] = true;
      read_tenant(j[i], path, p_.tenants[t]);
    }
    for (std::size_t t = 0; t < seen.size(); ++t)
      if (!seen[t]) r_.fail("tenants", "tenant '" + p_.tenants[t].name + "' is missing");
  }

  void read_tenant(const json& j, const std::string& path, const ShareTenant& tenant) {
    std::size_t k = p_.num_types();
    const json* total = Reader::optional(j, "allocation");
    const json* job_types = Reader::optional(j, "job_types");
    bool has_job_types = !p_.entities[tenant.entities.front()].job_type.empty();
    if (!has_job_types) {
      if (job_types && !(job_types->is_array() && job_types->empty()))
        r_.fail(child(path, "job_types"), "tenant '" + tenant.name + "' has no job types");
      if (!total) r_.fail(child(path, "allocation"), "missing required field");
      set_row(tenant.entities.front(), r_.amounts(*total, child(path, "allocation"), k));
      return;
    }
    // A tenant with job types is read per job type; its own allocation, if
    // given, must be their sum, so an edit to only one of them is caught.
    std::string jt_path = child(path, "job_types");
    if (!job_types) r_.fail(jt_path, "missing: tenant '" + tenant.name + "' has job types");
    r_.expect_array(*job_types, jt_path, "job type objects");
    std::vector<double> sum(k, 0.0);
    std::vector<bool> seen(tenant.entities.size(), false);
    for (std::size_t i = 0; i < job_types->size(); ++i) {
      const json& jt = (*job_types)[i];
      std::string jpath = element(jt_path, i);
      r_.expect_object(jt, jpath);
      r_.only_keys(jt, jpath, {"name", "allocation", "throughput"});
      std::string name = r_.name(r_.required(jt, jpath, "name"), child(jpath, "name"));
      std::size_t slot = 0;
      while (slot < tenant.entities.size() && p_.entities[tenant.entities[slot]].job_type != name)
        ++slot;
      if (slot == tenant.entities.size())
        r_.fail(child(jpath, "name"), "unknown job type '" + name + "' of " + tenant.name);
      if (seen[slot]) r_.fail(child(jpath, "name"), "duplicate job type '" + name + "'");
      seen[slot] = true;
      auto row = r_.amounts(r_.required(jt, jpath, "allocation"), child(jpath, "allocation"), k);
      for (std::size_t c = 0; c < k; ++c) sum[c] += row[c];
      set_row(tenant.entities[slot], row);
    }
    for (std::size_t s = 0; s < seen.size(); ++s)
      if (!seen[s])
        r_.fail(jt_path, "job type '" + p_.entities[tenant.entities[s]].job_type + "' is missing");
    if (total) {
      auto given = r_.amounts(*total, child(path, "allocation"), k);
      for (std::size_t c = 0; c < k; ++c)
        if (std::abs(given[c] - sum[c]) > 1e-6 * (1 + std::abs(sum[c])))
          r_.fail(element(child(path, "allocation"), c),
                  "is not the sum of the job types' allocations (" + json(sum[c]).dump() + ")");
    }
  }

  const ShareProblem& p_;
  Reader r_;
  Matrix x_;
};

constexpr std::string_view kDefaultProblem = R"({
  "gpu_types": ["k80", "p100", "v100"],
  "capacity": {"k80": 4, "p100": 4, "v100": 4},
  "tenants": [
    {"name": "alice", "weight": 1, "speedup": [1, 2.2, 3.1]},
    {"name": "bob", "weight": 2, "demand": 6,
     "job_types": [{"name": "lstm", "speedup": [1, 1.5, 1.8]},
                   {"name": "vgg", "speedup": [1, 3.0, 4.0]}]}
  ]
}
)";

}  // namespace

InputError::InputError(std::string source, std::string field, std::string problem)
    : std::runtime_error(make_message(source, field, problem)),
      source_(std::move(source)),
      field_(std::move(field)),
      problem_(std::move(problem)) {}

ShareProblem parse_share_problem(std::string_view json_text, const std::string& source) {
  return ProblemParser(source).parse(parse_json(json_text, source));
}

ShareProblem read_share_problem(const std::string& path) {
  return parse_share_problem(text_input::read_text_file(path), path);
}

std::string_view default_problem_json() { return kDefaultProblem; }

ShareProblem default_share_problem() {
  return parse_share_problem(kDefaultProblem, "<built-in example>");
}

AllocationInput parse_allocation(const ShareProblem& p, std::string_view json_text,
                                 const std::string& source) {
  return AllocationParser(p, source).parse(parse_json(json_text, source));
}

AllocationInput read_allocation(const ShareProblem& p, const std::string& path) {
  return parse_allocation(p, text_input::read_text_file(path), path);
}

}  // namespace fairgpu
