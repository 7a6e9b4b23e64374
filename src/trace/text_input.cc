// Shared reading helpers of src/trace (see text_input.h): file reading, strict
// JSON, line tables and number cells, used by every reader so each fairgpu
// input rejects the same mistakes with the same messages.
#include "text_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_set>

namespace fairgpu::text_input {

using nlohmann::ordered_json;

std::string read_text_file(const std::string& path) {
  if (path.empty()) throw InputError("\"\"", "", "empty file name");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "", "is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "read error");
  return text.str();
}

std::string child(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string element(const std::string& path, std::size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

ordered_json parse_json(std::string_view text, const std::string& source) {
  struct Frame {
    bool array = false;
    std::size_t index = 0;  // arrays: elements completed so far
    std::string key;        // objects: the key being read
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  auto path = [&stack] {
    std::string p;
    for (const auto& f : stack) {
      if (f.array)
        p = element(p, f.index);
      else if (!f.key.empty())
        p = child(p, f.key);
    }
    return p;
  };
  auto element_done = [&stack] {
    if (!stack.empty() && stack.back().array) ++stack.back().index;
  };
  ordered_json::parser_callback_t callback = [&](int, ordered_json::parse_event_t event,
                                                 ordered_json& parsed) {
    switch (event) {
      case ordered_json::parse_event_t::object_start:
        stack.emplace_back();
        break;
      case ordered_json::parse_event_t::array_start:
        stack.emplace_back();
        stack.back().array = true;
        break;
      case ordered_json::parse_event_t::key: {
        auto& top = stack.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second)
          throw InputError(source, path(), "key appears twice in the same object");
        break;
      }
      case ordered_json::parse_event_t::object_end:
      case ordered_json::parse_event_t::array_end:
        stack.pop_back();
        element_done();
        break;
      case ordered_json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  };
  try {
    return ordered_json::parse(text.begin(), text.end(), callback);
  } catch (const ordered_json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 4, column 40:
    // syntax error ..." -> "syntax error ... (line 4, column 40)". A number
    // too large for a double (1e999) is out_of_range.406, no position.
    std::string msg = e.what();
    if (auto p = msg.find("] "); p != std::string::npos) msg.erase(0, p + 2);
    static constexpr std::string_view kAt = "parse error at ";
    if (msg.starts_with(kAt)) {
      msg.erase(0, kAt.size());
      if (auto p = msg.find(": "); p != std::string::npos)
        msg = msg.substr(p + 2) + " (" + msg.substr(0, p) + ")";
    }
    throw InputError(source, path(), msg);
  }
}

std::optional<std::vector<std::string>> split_line(std::string_view line, char sep, bool quotes) {
  std::vector<std::string> cells;
  std::string cell;
  std::size_t i = 0;
  while (true) {
    cell.clear();
    // A quoted cell may have spaces around its quotes.
    std::size_t start = i;
    while (start < line.size() && line[start] == ' ') ++start;
    if (quotes && start < line.size() && line[start] == '"') {
      std::size_t j = start + 1;
      while (true) {
        if (j >= line.size()) return std::nullopt;
        if (line[j] == '"') {
          if (j + 1 < line.size() && line[j + 1] == '"') {
            cell += '"';
            j += 2;
            continue;
          }
          ++j;
          break;
        }
        cell += line[j++];
      }
      while (j < line.size() && line[j] == ' ') ++j;
      if (j < line.size() && line[j] != sep) return std::nullopt;  // text after the quote
      i = j;
    } else {
      std::size_t j = line.find(sep, i);
      if (j == std::string_view::npos) j = line.size();
      cell.assign(line.substr(i, j - i));
      i = j;
    }
    cells.push_back(cell);
    if (i >= line.size()) break;
    ++i;  // the separator
  }
  return cells;
}

std::string csv_cell(std::string_view s) {
  bool quote = s.find_first_of(",\"") != std::string_view::npos ||
               (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

LineTable::LineTable(std::string path, char sep, bool quotes)
    : path_(std::move(path)), text_(read_text_file(path_)), sep_(sep), quotes_(quotes) {
  // A UTF-8 byte order mark would otherwise become part of the first column.
  if (text_.starts_with("\xEF\xBB\xBF")) pos_ = 3;
}

bool LineTable::next() {
  while (pos_ < text_.size()) {
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string::npos) end = text_.size();
    std::string_view line(text_.data() + pos_, end - pos_);
    pos_ = end + 1;
    ++line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty()) continue;
    auto cells = split_line(line, sep_, quotes_);
    if (!cells) fail("", "unterminated or misplaced double quote");
    cells_ = std::move(*cells);
    return true;
  }
  return false;
}

std::optional<double> to_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);  // from_chars rejects a leading '+'
  double v = 0.0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (end != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves v untouched on overflow and underflow; strtod tells
    // them apart (HUGE_VAL, rejected by the callers as not finite, or ~0).
    return std::strtod(std::string(s).c_str(), nullptr);
  }
  if (ec != std::errc()) return std::nullopt;
  return v;
}

double finite_cell(std::string_view cell, const LineTable& t, const std::string& field) {
  cell = trim(cell);
  if (cell.empty()) t.fail(field, "missing value");
  auto v = to_double(cell);
  if (!v) t.fail(field, "'" + std::string(cell) + "' is not a number");
  if (!std::isfinite(*v)) t.fail(field, "must be a finite number, got '" + std::string(cell) + "'");
  return *v;
}

std::int64_t whole_cell(std::string_view cell, const LineTable& t, const std::string& field,
                        std::int64_t lo, std::int64_t hi) {
  double v = finite_cell(cell, t, field);
  std::string shown(trim(cell));
  if (v != std::floor(v)) t.fail(field, "must be a whole number, got '" + shown + "'");
  if (v < static_cast<double>(lo)) t.fail(field, fmt::format("must be >= {}, got '{}'", lo, shown));
  if (v > static_cast<double>(hi)) t.fail(field, fmt::format("must be <= {}, got '{}'", hi, shown));
  return static_cast<std::int64_t>(v);
}

std::string name_cell(std::string_view cell, const LineTable& t, const std::string& field) {
  cell = trim(cell);
  if (cell.empty()) t.fail(field, "missing value");
  for (char c : cell)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      t.fail(field, "must not contain control characters");
  return std::string(cell);
}

HeaderTable::HeaderTable(std::string path, char sep, const std::vector<std::string>& known,
                         const std::vector<std::string>& required)
    : table_(std::move(path), sep, true) {
  if (!table_.next()) throw InputError(table_.path(), "", "empty file (expected a header line)");
  bool any_known = false;
  for (const auto& cell : table_.cells())
    for (const auto& k : known) any_known = any_known || trim(cell) == k;
  if (!any_known)
    table_.fail("header", "missing header line: the first line must name the columns (among: " +
                              join(known) + ")");
  for (std::size_t i = 0; i < table_.cells().size(); ++i) {
    std::string col(trim(table_.cells()[i]));
    std::string field = "column " + std::to_string(i + 1);
    if (col.empty()) table_.fail(field, "empty column name in the header");
    bool ok = false;
    for (const auto& k : known) ok = ok || k == col;
    if (!ok) table_.fail(col, "unknown column (known columns: " + join(known) + ")");
    for (const auto& seen : columns_)
      if (seen == col) table_.fail(col, "column appears twice in the header");
    columns_.push_back(std::move(col));
  }
  for (const auto& r : required)
    if (!has(r)) table_.fail(r, "missing column (the header has: " + join(columns_) + ")");
}

bool HeaderTable::next() {
  if (!table_.next()) return false;
  if (table_.cells().size() != columns_.size())
    table_.fail("", "expected " + std::to_string(columns_.size()) + " comma-separated values (" +
                        join(columns_, ",") + "), got " + std::to_string(table_.cells().size()));
  return true;
}

bool HeaderTable::has(std::string_view column) const {
  for (const auto& c : columns_)
    if (c == column) return true;
  return false;
}

std::string_view HeaderTable::cell(std::string_view column) const {
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i] == column) return trim(table_.cells()[i]);
  return {};
}

double HeaderTable::number(std::string_view column) const {
  return finite_cell(cell(column), table_, std::string(column));
}

double HeaderTable::non_negative(std::string_view column) const {
  double v = number(column);
  if (v < 0) fail(std::string(column), "must be >= 0, got '" + std::string(cell(column)) + "'");
  return v;
}

double HeaderTable::positive(std::string_view column) const {
  double v = number(column);
  if (!(v > 0)) fail(std::string(column), "must be > 0, got '" + std::string(cell(column)) + "'");
  return v;
}

double HeaderTable::weight(std::string_view column) const {
  double v = number(column);
  if (!weight_in_range(v))
    fail(std::string(column), weight_range_text() + ", got '" + std::string(cell(column)) + "'");
  return v;
}

std::int64_t HeaderTable::whole(std::string_view column, std::int64_t lo, std::int64_t hi) const {
  return whole_cell(cell(column), table_, std::string(column), lo, hi);
}

std::string HeaderTable::name(std::string_view column) const {
  return name_cell(cell(column), table_, std::string(column));
}

Workload make_workload(std::vector<JobSpec> jobs,
                       const std::map<std::string, double>& tenant_weight) {
  Workload w;
  {
    std::unordered_set<std::string_view> seen;  // views into `jobs`, not yet moved
    for (const JobSpec& j : jobs) {
      if (!seen.insert(j.tenant).second) continue;
      auto it = tenant_weight.find(j.tenant);
      w.tenants.push_back(TenantSpec{j.tenant, it == tenant_weight.end() ? 1.0 : it->second});
    }
  }
  // Generated traces and most files come in arrival order already: the sort
  // (which moves every job) is skipped for them.
  auto by_arrival = [](const JobSpec& a, const JobSpec& b) { return a.arrival_s < b.arrival_s; };
  if (!std::is_sorted(jobs.begin(), jobs.end(), by_arrival))
    std::stable_sort(jobs.begin(), jobs.end(), by_arrival);
  w.jobs = std::move(jobs);
  return w;
}

}  // namespace fairgpu::text_input
