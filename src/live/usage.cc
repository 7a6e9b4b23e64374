// Accounting arithmetic (see usage.h).
#include "live/usage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <tuple>

#include "fairgpu/input_error.h"

namespace fairgpu::live {

double clipped_seconds(double start, double stop, double since, double until, double now) {
  if (stop < 0) stop = now;
  return std::max(0.0, std::min(stop, until) - std::max(start, since));
}

namespace {

// Reads exactly `n` digits at `pos`; -1 when they are not there.
int digits(std::string_view s, std::size_t& pos, std::size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const char c = s[pos + k];
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    v = v * 10 + (c - '0');
  }
  pos += n;
  return v;
}

}  // namespace

double parse_time(std::string_view text, const std::string& field) {
  auto bad = [&]() -> double {
    throw InputError(field, "",
                     fmt::format("'{}': expected unix seconds or an ISO-8601 time such as "
                                 "2026-11-27T03:00:00Z",
                                 text));
  };
  if (text.empty()) return bad();
  if (text.find_first_not_of("0123456789.") == std::string_view::npos) {
    const std::string s(text);
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      return bad();
    }
    if (used != s.size() || !std::isfinite(v)) return bad();
    return v;
  }
  std::size_t pos = 0;
  std::tm tm{};
  const int year = digits(text, pos, 4);
  if (year < 1970 || pos >= text.size() || text[pos++] != '-') return bad();
  const int month = digits(text, pos, 2);
  if (month < 1 || month > 12 || pos >= text.size() || text[pos++] != '-') return bad();
  const int day = digits(text, pos, 2);
  if (day < 1 || day > 31) return bad();
  int hour = 0, minute = 0;
  double second = 0;
  double offset = 0;  // seconds east of UTC
  if (pos < text.size()) {
    if (text[pos] != 'T' && text[pos] != 't' && text[pos] != ' ') return bad();
    ++pos;
    hour = digits(text, pos, 2);
    if (hour < 0 || hour > 23 || pos >= text.size() || text[pos++] != ':') return bad();
    minute = digits(text, pos, 2);
    if (minute < 0 || minute > 59) return bad();
    if (pos < text.size() && text[pos] == ':') {
      ++pos;
      const int whole = digits(text, pos, 2);
      if (whole < 0 || whole > 60) return bad();
      second = whole;
      if (pos < text.size() && text[pos] == '.') {
        double scale = 0.1;
        ++pos;
        if (pos >= text.size() || !std::isdigit(static_cast<unsigned char>(text[pos]))) return bad();
        while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
          second += (text[pos++] - '0') * scale;
          scale /= 10;
        }
      }
    }
    if (pos < text.size()) {
      const char z = text[pos++];
      if (z == 'Z' || z == 'z') {
        if (pos != text.size()) return bad();
      } else if (z == '+' || z == '-') {
        const int oh = digits(text, pos, 2);
        if (oh < 0 || oh > 23) return bad();
        if (pos < text.size() && text[pos] == ':') ++pos;
        const int om = digits(text, pos, 2);
        if (om < 0 || om > 59 || pos != text.size()) return bad();
        offset = (z == '+' ? 1 : -1) * (oh * 3600.0 + om * 60.0);
      } else {
        return bad();
      }
    }
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  const std::time_t t = timegm(&tm);
  std::tm back{};
  gmtime_r(&t, &back);
  if (back.tm_mday != day) return bad();  // 2026-02-30
  return static_cast<double>(t) + second - offset;
}

std::vector<UsageRow> usage(const std::vector<StoredRun>& runs, double since, double until,
                            double now, bool per_job) {
  std::map<std::tuple<std::string, std::string, std::string>, UsageRow> by;
  for (const StoredRun& r : runs) {
    const double s = clipped_seconds(r.start, r.stop, since, until, now);
    if (s <= 0) continue;
    const std::string key = per_job ? r.job : r.tenant;
    UsageRow& row = by[{key, per_job ? r.tenant : "", r.gpu_type}];
    row.tenant = r.tenant;
    if (per_job) row.job = r.job;
    row.gpu_type = r.gpu_type;
    row.gpu_seconds += s * static_cast<double>(r.devices.size());
    ++row.runs;
  }
  std::vector<UsageRow> out;
  for (auto& [key, row] : by) out.push_back(std::move(row));
  return out;
}

}  // namespace fairgpu::live
