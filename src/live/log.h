// The live manager's and agent's log (issue 18): one line per event on
// stderr through spdlog, with a UTC timestamp and a level, as text
// ("2026-11-24T13:05:18.123Z info  submit job=j-000001 tenant=alice") or as
// one JSON object per line ({"time", "level", "event", fields...}).
//
// spdlog stays behind this header (its own library target in CMake), so
// that its compile flags do not reach the rest of fairgpu.
//
// Until configure() is called (the `serve` and `agent` commands call it),
// only warnings and errors are written, as text: a program or test that
// embeds the manager is not flooded with its info lines.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fairgpu::live::log {

// "trace" | "debug" | "info" | "warn" | "error" | "off", and "text" | "json".
// Returns "" when both are known, else "--log-level: why" or
// "--log-format: why" (and changes nothing).
std::string configure(const std::string& level, const std::string& format);

enum class Level { kTrace, kDebug, kInfo, kWarn, kError };

using Fields = std::initializer_list<std::pair<const char*, nlohmann::json>>;

// One line: the event's name and its fields (strings as they are, other
// values as JSON), in order. Thread-safe.
void write(Level level, std::string_view event, Fields fields = {});
bool enabled(Level level);
// A line of free text (the agent's): as it is in text, else
// {"event": "message", "msg": text, fields...}.
void message(Level level, const std::string& text, Fields json_fields = {});
// A line of free text that is also an event (the agent's): as it is in
// text, else {"event": event, fields..., "msg": text}. Not kept by recent().
void event_message(Level level, std::string_view event, const std::string& text,
                   const std::vector<std::pair<const char*, nlohmann::json>>& fields);

// The last kRecentEvents events at info level or above, oldest first, kept
// whatever the configured level (the status page's "recent events"): each
// {"time": seconds since the epoch, "level", "event", "fields": {...}}.
// Free-text messages are not kept.
constexpr std::size_t kRecentEvents = 100;
nlohmann::json recent();

inline void debug(std::string_view event, Fields fields = {}) {
  write(Level::kDebug, event, fields);
}
inline void info(std::string_view event, Fields fields = {}) { write(Level::kInfo, event, fields); }
inline void warn(std::string_view event, Fields fields = {}) { write(Level::kWarn, event, fields); }

}  // namespace fairgpu::live::log
