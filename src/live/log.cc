// The live manager's log over spdlog (see log.h).
#include "live/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>

namespace fairgpu::live::log {
namespace {

std::atomic<bool> g_json{false};

// The recent events (recent()): bounded, behind their own mutex.
std::mutex g_recent_mu;
std::deque<nlohmann::json> g_recent;

const char* level_name(Level level) {
  switch (level) {
    case Level::kTrace:
      return "trace";
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      break;
  }
  return "error";
}

void remember(Level level, std::string_view event, Fields fields) {
  nlohmann::json f = nlohmann::json::object();
  for (const auto& [key, value] : fields) f[key] = value;
  const double t =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json entry = {
      {"time", t}, {"level", level_name(level)}, {"event", event}, {"fields", std::move(f)}};
  std::lock_guard lock(g_recent_mu);
  g_recent.push_back(std::move(entry));
  if (g_recent.size() > kRecentEvents) g_recent.pop_front();
}

std::shared_ptr<spdlog::logger> make_logger() {
  auto logger = std::make_shared<spdlog::logger>("fairgpu",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_level(spdlog::level::warn);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %-5l %v", spdlog::pattern_time_type::utc);
  return logger;
}

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = make_logger();
  return *instance;
}

// A text field's value: bare when it has no blank, quote or '=', else JSON-quoted.
std::string text_value(const nlohmann::json& v) {
  if (!v.is_string()) return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const auto& s = v.get_ref<const std::string&>();
  bool bare = !s.empty();
  for (char c : s)
    bare = bare && static_cast<unsigned char>(c) > ' ' && c != '"' && c != '=' && c != 0x7f;
  return bare ? s : v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

spdlog::level::level_enum spdlog_level(Level level) {
  switch (level) {
    case Level::kTrace:
      return spdlog::level::trace;
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarn:
      return spdlog::level::warn;
    case Level::kError:
      break;
  }
  return spdlog::level::err;
}

}  // namespace

std::string configure(const std::string& level, const std::string& format) {
  const spdlog::level::level_enum l = spdlog::level::from_str(level);
  // from_str answers "off" for a name it does not know.
  if (l == spdlog::level::off && level != "off")
    return "--log-level: unknown level '" + level + "' (trace, debug, info, warn, error, off)";
  if (format != "text" && format != "json")
    return "--log-format: unknown format '" + format + "' (text, json)";
  g_json = format == "json";
  logger().set_level(l);
  logger().set_pattern(g_json ? R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l",%v})"
                              : "%Y-%m-%dT%H:%M:%S.%eZ %-5l %v",
                       spdlog::pattern_time_type::utc);
  logger().flush_on(spdlog::level::trace);  // every line at once (a crash loses none)
  return "";
}

bool enabled(Level level) { return logger().should_log(spdlog_level(level)); }

nlohmann::json recent() {
  std::lock_guard lock(g_recent_mu);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : g_recent) out.push_back(e);
  return out;
}

void write(Level level, std::string_view event, Fields fields) {
  if (level >= Level::kInfo) remember(level, event, fields);
  if (!enabled(level)) return;
  std::string line;
  if (g_json) {  // the pattern's {"time", "level", %v} closes the object
    line = "\"event\":" +
           nlohmann::json(event).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (const auto& [key, value] : fields)
      line += "," + nlohmann::json(key).dump() + ":" +
              value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    line = std::string(event);
    for (const auto& [key, value] : fields)
      line += " " + std::string(key) + "=" + text_value(value);
  }
  logger().log(spdlog_level(level), line);
}

}  // namespace fairgpu::live::log

namespace fairgpu::live::log {

void message(Level level, const std::string& text, Fields json_fields) {
  event_message(level, "message", text, {json_fields.begin(), json_fields.end()});
}

void event_message(Level level, std::string_view event, const std::string& text,
                   const std::vector<std::pair<const char*, nlohmann::json>>& fields) {
  if (!enabled(level)) return;
  if (!g_json) {
    logger().log(spdlog_level(level), text);
    return;
  }
  std::string line = "\"event\":" + nlohmann::json(event).dump(
                                        -1, ' ', false, nlohmann::json::error_handler_t::replace);
  for (const auto& [key, value] : fields)
    line += "," + nlohmann::json(key).dump() + ":" +
            value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += ",\"msg\":" +
          nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  logger().log(spdlog_level(level), line);
}

}  // namespace fairgpu::live::log
