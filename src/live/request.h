// Request checks shared by the live manager's files (manager*.cc): a job's
// terminal states, the roles a call allows, and typed reads of a JSON body
// whose failures are 400s naming the field.
#pragma once

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "fairgpu/weight.h"
#include "live/config.h"
#include "live/manager.h"

namespace fairgpu::live::request {

using nlohmann::json;

inline bool terminal(const std::string& state) {
  return state == "finished" || state == "failed" || state == "cancelled";
}

[[noreturn]] inline void bad(const std::string& field, const std::string& problem) {
  throw ApiError(400, field + ": " + problem);
}

inline std::string need_string(const json& body, const char* key, bool required = true) {
  auto it = body.find(key);
  if (it == body.end()) {
    if (required) bad(key, "missing required field");
    return "";
  }
  if (!it->is_string() || it->get<std::string>().empty()) bad(key, "expected a non-empty string");
  for (char ch : it->get<std::string>())
    if (static_cast<unsigned char>(ch) < 0x20) bad(key, "must not contain control characters");
  return it->get<std::string>();
}

inline std::string need_name(const json& body, const char* key) {
  std::string s = need_string(body, key);
  if (auto p = name_problem(s); !p.empty()) bad(key, "'" + s + "': " + p);
  return s;
}

// A string a process gets in its argv or environment: no NUL byte, which
// would cut it short.
inline void no_nul(const std::string& s, const std::string& field) {
  if (s.find('\0') != std::string::npos) bad(field, "must not contain a NUL byte");
}

inline double need_number(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end()) bad(key, "missing required field");
  if (!it->is_number()) bad(key, std::string("expected a number, got ") + it->type_name());
  double v = it->get<double>();
  if (!std::isfinite(v)) bad(key, "must be finite");
  return v;
}

// An integer in [lo, hi] (JSON numbers that are whole and in range; 2^53
// bounds what a double holds exactly).
inline std::int64_t need_integer(const json& v, const std::string& field, std::int64_t lo,
                                 std::int64_t hi) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      bad(field, fmt::format("expected an integer in {}..{}", lo, hi));
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (v.is_number_integer()) {
    const auto x = v.get<std::int64_t>();
    if (x < lo || x > hi) bad(field, fmt::format("expected an integer in {}..{}", lo, hi));
    return x;
  }
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (std::isfinite(x) && x == std::floor(x) && x >= static_cast<double>(lo) &&
        x <= static_cast<double>(hi))
      return static_cast<std::int64_t>(x);
  }
  bad(field, fmt::format("expected an integer in {}..{}", lo, hi));
}

inline void require(const Caller& c, std::initializer_list<Caller::Role> roles) {
  if (c.role == Caller::Role::kNone) throw ApiError(401, "missing or unknown bearer token");
  for (Caller::Role r : roles)
    if (c.role == r) return;
  throw ApiError(403, "this token may not do that");
}

}  // namespace fairgpu::live::request
