// Helpers shared by the readers in src/trace (problem, allocation, cluster,
// profiles, traces):
// reading a whole file, strict JSON parsing (repeated keys rejected, syntax
// errors located), line-based tables (CSV / tab-separated) and number cells.
// Every failure is an InputError naming the source ("<path>" or
// "<path>:<line>") and the field, as docs/design.md §8 asks.
#pragma once

#include <cstddef>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/weight.h"
#include "fairgpu/workload.h"

namespace fairgpu::text_input {

// The whole file; InputError(path, "", ...) if it cannot be read.
std::string read_text_file(const std::string& path);

// Parses JSON keeping the file's key order. Repeated keys in one object are an
// error (nlohmann would keep the last silently); syntax errors name the path
// reached and the parser's line and column.
nlohmann::ordered_json parse_json(std::string_view text, const std::string& source);

// "a.b" / "a[3]": field paths in InputError fields.
std::string child(const std::string& path, std::string_view key);
std::string element(const std::string& path, std::size_t i);
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

// Typed access to a parsed JSON document; every failure is an InputError
// naming the source and the field path.
class JsonReader {
 public:
  explicit JsonReader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw InputError(source_, field, problem);
  }

  void expect_object(const nlohmann::ordered_json& j, const std::string& path) const {
    if (!j.is_object())
      fail(path.empty() ? "(top level)" : path,
           std::string("expected an object, got ") + j.type_name());
  }

  void expect_array(const nlohmann::ordered_json& j, const std::string& path, std::string_view what) const {
    if (!j.is_array())
      fail(path, "expected an array of " + std::string(what) + ", got " + j.type_name());
  }

  // Rejects keys outside `allowed`, so typos are not silently ignored.
  void only_keys(const nlohmann::ordered_json& obj, const std::string& path,
                 std::initializer_list<std::string_view> allowed) const {
    for (const auto& [key, value] : obj.items()) {
      bool ok = false;
      for (auto a : allowed) ok = ok || key == a;
      if (ok) continue;
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(child(path, key), "unknown field (expected one of: " + list + ")");
    }
  }

  const nlohmann::ordered_json& required(const nlohmann::ordered_json& obj, const std::string& path, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(child(path, key), "missing required field");
    return *it;
  }

  static const nlohmann::ordered_json* optional(const nlohmann::ordered_json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  double number(const nlohmann::ordered_json& j, const std::string& path) const {
    if (!j.is_number()) fail(path, std::string("expected a number, got ") + j.type_name());
    double v = j.get<double>();
    if (!std::isfinite(v)) fail(path, "must be a finite number");
    return v;
  }

  double non_negative(const nlohmann::ordered_json& j, const std::string& path) const {
    double v = number(j, path);
    if (v < 0) fail(path, "must be >= 0, got " + j.dump());
    return v;
  }

  double positive(const nlohmann::ordered_json& j, const std::string& path) const {
    double v = number(j, path);
    if (v <= 0) fail(path, "must be > 0, got " + j.dump());
    return v;
  }

  // A tenant's or job's weight: within [kMinWeight, kMaxWeight] (fairgpu/weight.h).
  double weight(const nlohmann::ordered_json& j, const std::string& path) const {
    double v = number(j, path);
    if (!weight_in_range(v)) fail(path, weight_range_text() + ", got " + j.dump());
    return v;
  }

  // A non-empty name without control characters (names end up in tables).
  std::string name(const nlohmann::ordered_json& j, const std::string& path) const {
    if (!j.is_string()) fail(path, std::string("expected a string, got ") + j.type_name());
    auto s = j.get<std::string>();
    if (s.empty()) fail(path, "must not be empty");
    for (char c : s)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        fail(path, "must not contain control characters");
    return s;
  }

 private:
  std::string source_;
};

// Splits one line. With quotes, RFC 4180 double-quoted cells are accepted
// (a doubled "" inside is a quote); an unterminated quote returns nullopt.
std::optional<std::vector<std::string>> split_line(std::string_view line, char sep, bool quotes);

// Quotes a CSV cell when it holds a comma, a quote or surrounding spaces.
std::string csv_cell(std::string_view s);

// A line-based table: yields non-blank lines with their 1-based numbers and
// cells. CR before LF is dropped; blank lines are skipped (they carry nothing).
class LineTable {
 public:
  LineTable(std::string path, char sep, bool quotes);

  bool next();  // the next non-blank line; false at the end
  std::size_t line() const { return line_; }
  const std::vector<std::string>& cells() const { return cells_; }
  const std::string& path() const { return path_; }
  std::string where() const { return path_ + ":" + std::to_string(line_); }
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw InputError(where(), field, problem);
  }

 private:
  std::string path_;
  std::string text_;
  char sep_;
  bool quotes_;
  std::size_t pos_ = 0;
  std::size_t line_ = 0;
  std::vector<std::string> cells_;
};

// A header-named table (CSV with a header line): columns are found by name, in
// any order; unknown and repeated column names are errors.
class HeaderTable {
 public:
  // Reads the header. `known` lists every accepted column; `required` those
  // that must be present.
  HeaderTable(std::string path, char sep, const std::vector<std::string>& known,
              const std::vector<std::string>& required);

  bool next();  // next row; checks its cell count
  bool has(std::string_view column) const;
  const std::vector<std::string>& columns() const { return columns_; }
  // The trimmed cell of `column` in the current row ("" if the column is absent).
  std::string_view cell(std::string_view column) const;
  LineTable& table() { return table_; }
  const LineTable& table() const { return table_; }
  std::string where() const { return table_.where(); }
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    table_.fail(field, problem);
  }

  // Typed cells; each names the column on failure.
  double number(std::string_view column) const;        // finite
  double non_negative(std::string_view column) const;  // finite, >= 0
  double positive(std::string_view column) const;      // finite, > 0
  double weight(std::string_view column) const;        // in [kMinWeight, kMaxWeight]
  // A whole number in [lo, hi] (written "4" or "4.0").
  std::int64_t whole(std::string_view column, std::int64_t lo, std::int64_t hi) const;
  std::string name(std::string_view column) const;  // non-empty, no control characters

 private:
  LineTable table_;
  std::vector<std::string> columns_;
};

std::string_view trim(std::string_view s);

// Cell parsers, also used by the header-less Gavel reader; failures throw
// through t.fail(field, ...), naming t's "<path>:<line>".
std::optional<double> to_double(std::string_view s);  // the whole cell as a number (inf, nan too)
double finite_cell(std::string_view cell, const LineTable& t, const std::string& field);
std::int64_t whole_cell(std::string_view cell, const LineTable& t, const std::string& field,
                        std::int64_t lo, std::int64_t hi);
std::string name_cell(std::string_view cell, const LineTable& t, const std::string& field);

// The Workload of `jobs` (in file order): tenants in order of first
// appearance with their weights (1 if absent from `tenant_weight`), jobs
// stably sorted by arrival.
Workload make_workload(std::vector<JobSpec> jobs,
                       const std::map<std::string, double>& tenant_weight = {});

// Uniform double in [0, 1) from one 64-bit draw: the top 53 bits, as in
// Vigna's recommendation. Unlike std::uniform_real_distribution it gives the
// same numbers with every standard library.
inline double unit_uniform(std::uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

}  // namespace fairgpu::text_input
