// Request checks shared by the live manager's files (manager*.cc): a job's
// terminal states, the roles a call allows, and typed reads of a JSON body
// whose failures are 400s naming the field.
#pragma once

#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>

#include "fairgpu/weight.h"
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

inline double need_number(const json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end()) bad(key, "missing required field");
  if (!it->is_number()) bad(key, std::string("expected a number, got ") + it->type_name());
  double v = it->get<double>();
  if (!std::isfinite(v)) bad(key, "must be finite");
  return v;
}

inline void require(const Caller& c, std::initializer_list<Caller::Role> roles) {
  if (c.role == Caller::Role::kNone) throw ApiError(401, "missing or unknown bearer token");
  for (Caller::Role r : roles)
    if (c.role == r) return;
  throw ApiError(403, "this token may not do that");
}

}  // namespace fairgpu::live::request
