// The status page's HTML (see status_page.h).
#include "live/status_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <string>
#include <vector>

namespace fairgpu::live {
namespace {

using nlohmann::json;

// A value of the data as text: strings as they are, numbers compact,
// null and missing as "".
std::string text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  if (v.is_number_float()) return fmt::format("{:g}", v.get<double>());
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string esc(const json& v) { return html_escape(text(v)); }

json field(const json& o, const char* key) {
  return o.is_object() && o.contains(key) ? o[key] : json(nullptr);
}

std::string utc(double t) {
  if (!std::isfinite(t)) return "";
  const std::time_t s = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

std::string ago(double seconds) {
  if (!std::isfinite(seconds)) return "";
  seconds = std::max(0.0, seconds);
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  if (seconds < 7200) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

double number(const json& v, double otherwise = 0.0) {
  return v.is_number() ? v.get<double>() : otherwise;
}

// Eight colours told apart in print and by most colour-blind readers
// (Okabe-Ito); a ninth tenant reuses the first with another dash.
constexpr const char* kColours[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7",
                                    "#56b4e9", "#d55e00", "#f0e442", "#000000"};

constexpr const char* kStyle = R"(
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
h2 { font-size: 1.15em; margin-top: 1.6em; }
p.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.4em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: left;
         vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.state-ready, .state-running { color: #1a7f37; }
.state-drained, .state-profiling, .state-queued { color: #9a6700; }
.state-lost, .level-warn, .level-error { color: #cf222e; }
.muted { color: #777; }
svg.plot { border: 1px solid #ddd; background: #fff; }
svg.plot text { font: 11px system-ui, sans-serif; fill: #333; }
)";

std::string nodes_table(const json& nodes) {
  if (!nodes.is_array() || nodes.empty()) return "<p class=\"muted\">No node has registered.</p>\n";
  std::string out =
      "<table class=\"nodes\">\n<tr><th>node</th><th>GPU type</th><th>state</th><th>GPUs "
      "busy</th><th>last heard</th><th>jobs</th></tr>\n";
  for (const json& n : nodes) {
    const std::string state = text(field(n, "state"));
    std::string jobs;
    std::vector<std::string> seen;
    for (const json& h : field(n, "holders").is_array() ? field(n, "holders") : json::array()) {
      const std::string job = text(field(h, "job"));
      if (std::find(seen.begin(), seen.end(), job) != seen.end()) continue;
      seen.push_back(job);
      jobs += (jobs.empty() ? "" : ", ") + html_escape(job) + " <span class=\"muted\">(" +
              esc(field(h, "tenant")) + ")</span>";
    }
    std::string state_cell =
        "<span class=\"state-" + html_escape(state) + "\">" + html_escape(state) + "</span>";
    if (!field(n, "reason").is_null())
      state_cell += " <span class=\"muted\">" + esc(field(n, "reason")) + "</span>";
    const json devices = field(n, "devices");
    out += fmt::format(
        "<tr class=\"node\" data-node=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td "
        "class=\"num\">{} / {}</td><td class=\"num\">{} ago</td><td>{}</td></tr>\n",
        esc(field(n, "name")), esc(field(n, "name")), esc(field(n, "gpu_type")), state_cell,
        esc(field(n, "devices_busy")), devices.is_array() ? devices.size() : 0,
        ago(number(field(n, "last_heartbeat_s_ago"))), jobs);
  }
  return out + "</table>\n";
}

std::string jobs_table(const json& jobs, const json& not_shown, double now) {
  if (!jobs.is_array() || jobs.empty()) return "<p class=\"muted\">No job waits or runs.</p>\n";
  std::string out =
      "<table class=\"queue\">\n<tr><th>job</th><th>name</th><th>tenant</th><th>type</th>"
      "<th>GPUs</th><th>state</th><th>submitted</th><th>where / why it waits</th></tr>\n";
  for (const json& j : jobs) {
    const std::string state = text(field(j, "state"));
    std::string where;
    const json pending = field(j, "pending");
    if (pending.is_object())
      where = "<b>" + esc(field(pending, "reason")) + "</b>: " + esc(field(pending, "detail"));
    else if (!field(j, "node").is_null())
      where = "on " + esc(field(j, "node")) + " (" + esc(field(j, "gpu_type")) + ")";
    out += fmt::format(
        "<tr class=\"job\" data-job=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td "
        "class=\"num\">{}</td><td><span class=\"state-{}\">{}</span></td><td class=\"num\">{} "
        "ago</td><td>{}</td></tr>\n",
        esc(field(j, "id")), esc(field(j, "id")), esc(field(j, "name")), esc(field(j, "tenant")),
        esc(field(j, "job_type")), esc(field(j, "workers")), html_escape(state), html_escape(state),
        ago(now - number(field(j, "submitted_at"), now)), where);
  }
  out += "</table>\n";
  if (number(not_shown) > 0)
    out += fmt::format("<p class=\"muted\">and {} more (fairgpu jobs lists them all)</p>\n",
                       esc(not_shown));
  return out;
}

// The share chart: per tenant its share of the ready GPUs (solid) and the
// share its weight entitles it to (dashed), over the history's span.
std::string share_chart(const json& history, const std::vector<std::string>& tenants, double now) {
  if (!history.is_array() || history.empty())
    return "<p class=\"muted\">No scheduling point yet: the share history starts with the "
           "first.</p>\n";
  constexpr double kW = 760, kH = 280, kLeft = 48, kRight = 150, kTop = 12, kBottom = 34;
  const double t0 = number(field(history.front(), "t")), t1 = std::max(now, t0 + 1);
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto x = [&](double t) { return kLeft + (t - t0) / (t1 - t0) * pw; };
  auto y = [&](double share) { return kTop + (1.0 - std::clamp(share, 0.0, 1.0)) * ph; };
  std::string out = fmt::format(
      "<svg class=\"plot\" id=\"shares\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"GPU share per tenant "
      "against its weight\">\n",
      kW, kH);
  for (double v : {0.0, 0.25, 0.5, 0.75, 1.0})
    out += fmt::format(
        "<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#e5e5e5\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
        kLeft, kLeft + pw, y(v), kLeft - 6, y(v) + 4, v);
  out += fmt::format(
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"start\">{}</text>"
      "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"end\">{} (now)</text>\n",
      kLeft, kH - 10, html_escape(utc(t0)), kLeft + pw, kH - 10, html_escape(utc(t1)));
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    const std::string& tenant = tenants[i];
    const char* colour = kColours[i % std::size(kColours)];
    std::string held, entitled;
    int points = 0;
    for (const json& s : history) {
      const json v = field(field(s, "tenants"), tenant.c_str());
      if (!v.is_array() || v.size() != 2) continue;
      const double sx = x(number(field(s, "t")));
      held += fmt::format("{:.1f},{:.1f} ", sx, y(number(v[0])));
      entitled += fmt::format("{:.1f},{:.1f} ", sx, y(number(v[1])));
      ++points;
    }
    if (!points) continue;
    const std::string name = html_escape(tenant);
    const std::string dash = i < std::size(kColours) ? "" : " stroke-dasharray=\"1 3\"";
    out += fmt::format(
        "<polyline class=\"series\" data-series=\"{0}\" data-points=\"{1}\" points=\"{2}\" "
        "fill=\"none\" stroke=\"{3}\" stroke-width=\"2\"{4}/>\n"
        "<polyline class=\"entitled\" data-series=\"{0}\" data-points=\"{1}\" points=\"{5}\" "
        "fill=\"none\" stroke=\"{3}\" stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>\n"
        "<text class=\"legend\" data-series=\"{0}\" x=\"{6}\" y=\"{7}\" fill=\"{3}\">{0}</text>\n",
        name, points, held, colour, dash, entitled, kLeft + pw + 12,
        kTop + 14 + 18.0 * static_cast<double>(i));
  }
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"muted\">solid: held</text>"
      "<text x=\"{}\" y=\"{}\" class=\"muted\">dashed: weight's</text>\n",
      kLeft + pw + 12, kH - 40, kLeft + pw + 12, kH - 24);
  return out + "</svg>\n";
}

std::string tenants_table(const json& tenants, const json& history) {
  if (!tenants.is_array() || tenants.empty()) return "";
  // The weight's share now: the last sample's entitled figure.
  const json last =
      history.is_array() && !history.empty() ? field(history.back(), "tenants") : json::object();
  std::string out =
      "<table class=\"tenants\">\n<tr><th>tenant</th><th>weight</th><th>jobs</th><th>GPUs "
      "held</th><th>share</th><th>weight's share</th></tr>\n";
  for (const json& t : tenants) {
    const std::string name = text(field(t, "name"));
    const json v = field(last, name.c_str());
    out += fmt::format(
        "<tr class=\"tenant\"><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{:.2f}</td><td class=\"num\">{}</td></tr>\n",
        html_escape(name), esc(field(t, "weight")), esc(field(t, "jobs_active")),
        esc(field(t, "gpus_held")), number(field(t, "share")),
        v.is_array() && v.size() == 2 ? fmt::format("{:.2f}", number(v[1])) : "");
  }
  return out + "</table>\n";
}

std::string events_table(const json& events) {
  if (!events.is_array() || events.empty()) return "<p class=\"muted\">No event yet.</p>\n";
  std::string out =
      "<table class=\"events\">\n<tr><th>time</th><th>level</th><th>event</th><th>"
      "details</th></tr>\n";
  // Newest first.
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    const json& e = *it;
    std::string details;
    const json fields = field(e, "fields");
    if (fields.is_object())
      for (const auto& [key, value] : fields.items())
        details += (details.empty() ? "" : " ") + html_escape(key) + "=" + esc(value);
    const std::string level = text(field(e, "level"));
    out += fmt::format(
        "<tr class=\"event\"><td>{}</td><td class=\"level-{}\">{}</td><td>{}</td><td>{}</td>"
        "</tr>\n",
        html_escape(utc(number(field(e, "time"), NAN))), html_escape(level), html_escape(level),
        esc(field(e, "event")), details);
  }
  return out + "</table>\n";
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_status_page(const json& data) {
  const double now = number(field(data, "now"));
  std::vector<std::string> tenant_names;
  for (const json& t : field(data, "tenants").is_array() ? data["tenants"] : json::array())
    tenant_names.push_back(text(field(t, "name")));
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Reloaded every 30 s; a browser sends the same credentials again.
      "<meta http-equiv=\"refresh\" content=\"30\">\n"
      "<title>fairgpu status</title>\n<style>" +
      std::string(kStyle) + "</style>\n</head>\n<body>\n<h1>fairgpu status</h1>\n";
  out += fmt::format(
      "<p class=\"meta\">fairgpu {} &middot; policy {} &middot; scheduling point {} every {} s "
      "&middot; {}</p>\n",
      esc(field(data, "version")), esc(field(data, "policy")), esc(field(data, "round")),
      esc(field(data, "round_s")), html_escape(utc(now)));
  out += "<h2>Nodes</h2>\n" + nodes_table(field(data, "nodes"));
  out += "<h2>Queue</h2>\n" + jobs_table(field(data, "jobs"), field(data, "jobs_not_shown"), now);
  out += "<h2>Tenants: GPU share against weight</h2>\n" +
         tenants_table(field(data, "tenants"), field(data, "share_history")) +
         share_chart(field(data, "share_history"), tenant_names, now);
  out += "<h2>Recent events</h2>\n" + events_table(field(data, "events"));
  return out + "</body>\n</html>\n";
}

}  // namespace fairgpu::live
