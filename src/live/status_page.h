// The status page's HTML (issue 32, item 8): server-rendered, self-contained
// (inline CSS and SVG, no script, no resource from anywhere), every string
// from the cluster HTML-escaped. Kept apart from the Manager so that it can
// be tested on its own data.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace fairgpu::live {

// `data`: cluster()'s answer for the admin ("round", "policy", "round_s",
// "nodes") with "version", "now" (seconds since the epoch), "tenants"
// (tenants()'s list), "jobs" (job objects, with "pending"),
// "jobs_not_shown", "share_history" ([{"t", "tenants": {name: [held,
// entitled]}}]) and "events" (log::recent()). Missing keys show as empty.
std::string render_status_page(const nlohmann::json& data);

// Text as HTML: & < > " ' escaped (element text and attribute values).
std::string html_escape(const std::string& text);

}  // namespace fairgpu::live
