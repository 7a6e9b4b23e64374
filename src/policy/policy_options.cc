// Per-policy options: declarations, `NAME:key=value` specifiers and checked
// values (see policy_options.h).
#include "fairgpu/policy_options.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "fairgpu/input_error.h"

namespace fairgpu {
namespace {

std::string format_number(double x) { return fmt::format("{}", x); }

// A finite decimal number filling the whole text.
bool parse_number(std::string_view text, double& out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text.front()))) return false;
  std::string s(text);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    std::size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

bool in_range(const OptionSpec& s, double x) {
  if (s.min_open ? !(x > s.min) : !(x >= s.min)) return false;
  if (s.max_open ? !(x < s.max) : !(x <= s.max)) return false;
  return true;
}

std::string describe_range(const OptionSpec& s) {
  const bool low = std::isfinite(s.min), high = std::isfinite(s.max);
  if (low && high)
    return fmt::format("in {}{}, {}{}", s.min_open ? '(' : '[', format_number(s.min),
                       format_number(s.max), s.max_open ? ')' : ']');
  if (low) return fmt::format("{} {}", s.min_open ? ">" : ">=", format_number(s.min));
  if (high) return fmt::format("{} {}", s.max_open ? "<" : "<=", format_number(s.max));
  return "";
}

bool parse_bool(std::string_view text, bool& out) {
  if (text == "on" || text == "true") return out = true, true;
  if (text == "off" || text == "false") return out = false, true;
  return false;
}

// An empty string when `value` is valid for `spec`, else what is wrong.
std::string problem_with(const OptionSpec& spec, std::string_view value) {
  const std::string bad =
      fmt::format("must be {}, got '{}'", describe_accepted(spec), std::string(value));
  switch (spec.kind) {
    case OptionSpec::Kind::kNumber: {
      double x = 0.0;
      return parse_number(value, x) && in_range(spec, x) ? "" : bad;
    }
    case OptionSpec::Kind::kList: {
      double last = -std::numeric_limits<double>::infinity();
      for (std::string_view item : split(value, '/')) {
        double x = 0.0;
        if (!parse_number(item, x) || !in_range(spec, x) || (spec.ascending && !(x > last)))
          return bad;
        last = x;
      }
      return "";
    }
    case OptionSpec::Kind::kChoice:
      for (const auto& c : spec.choices)
        if (value == c) return "";
      return bad;
    case OptionSpec::Kind::kBool: {
      bool b = false;
      return parse_bool(value, b) ? "" : bad;
    }
  }
  return bad;
}

}  // namespace

OptionSpec number_option(std::string key, double default_value, std::string help, double min,
                         double max, bool min_open, bool max_open) {
  OptionSpec s;
  s.key = std::move(key);
  s.kind = OptionSpec::Kind::kNumber;
  s.default_value = format_number(default_value);
  s.help = std::move(help);
  s.min = min;
  s.max = max;
  s.min_open = min_open;
  s.max_open = max_open;
  return s;
}

OptionSpec list_option(std::string key, std::string default_value, std::string help, double min,
                       bool min_open, bool ascending) {
  OptionSpec s;
  s.key = std::move(key);
  s.kind = OptionSpec::Kind::kList;
  s.default_value = std::move(default_value);
  s.help = std::move(help);
  s.min = min;
  s.min_open = min_open;
  s.ascending = ascending;
  return s;
}

OptionSpec choice_option(std::string key, std::string default_value, std::string help,
                         std::vector<std::string> choices) {
  OptionSpec s;
  s.key = std::move(key);
  s.kind = OptionSpec::Kind::kChoice;
  s.default_value = std::move(default_value);
  s.help = std::move(help);
  s.choices = std::move(choices);
  return s;
}

OptionSpec bool_option(std::string key, bool default_value, std::string help) {
  OptionSpec s;
  s.key = std::move(key);
  s.kind = OptionSpec::Kind::kBool;
  s.default_value = default_value ? "on" : "off";
  s.help = std::move(help);
  return s;
}

std::string describe_accepted(const OptionSpec& spec) {
  switch (spec.kind) {
    case OptionSpec::Kind::kNumber: {
      std::string range = describe_range(spec);
      return range.empty() ? "a finite number" : "a number " + range;
    }
    case OptionSpec::Kind::kList: {
      std::string range = describe_range(spec);
      return fmt::format("numbers{}{} separated by '/'", range.empty() ? "" : " " + range,
                         spec.ascending ? ", strictly ascending," : "");
    }
    case OptionSpec::Kind::kChoice: {
      std::string words;
      for (const auto& c : spec.choices) words += (words.empty() ? "" : " | ") + c;
      return "one of " + words;
    }
    case OptionSpec::Kind::kBool:
      return "on or off";
  }
  return "";
}

PolicySpecifier parse_policy_specifier(std::string_view text) {
  auto fail = [&](const std::string& problem) {
    throw InputError("options", "policy", fmt::format("'{}': {}", std::string(text), problem));
  };
  PolicySpecifier out;
  out.full = std::string(text);
  std::vector<std::string_view> items = split(text, ':');
  out.name = std::string(items.front());
  if (out.name.empty()) fail("no policy name before the first ':'");
  // A Python policy's registered name is `py:FILE:CLASS` (policy_plugin.h),
  // its keys after.
  std::size_t first_value = 1;
  if (out.name == "py") {
    if (items.size() < 3 || items[1].empty() || items[2].empty())
      fail("expected py:FILE:CLASS[:key=value...]");
    out.name = fmt::format("py:{}:{}", items[1], items[2]);
    first_value = 3;
  }
  for (std::size_t i = first_value; i < items.size(); ++i) {
    std::string_view item = items[i];
    std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      fail(fmt::format("'{}' is not key=value (NAME:key=value[:key=value...])",
                       std::string(item)));
    std::string key(item.substr(0, eq));
    if (key.empty()) fail(fmt::format("'{}' has no key before '='", std::string(item)));
    for (const auto& [k, v] : out.values)
      if (k == key) fail(fmt::format("key '{}' is given twice", key));
    out.values.emplace_back(std::move(key), std::string(item.substr(eq + 1)));
  }
  return out;
}

std::string policy_folder_name(std::string_view full) {
  std::string out;
  for (char c : full) {
    if (c == ':') {
      out += '_';
    } else if (c == '=') {
      out += '-';
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '+' ||
               c == '-') {
      out += c;
    } else {
      out += '_';
    }
  }
  return out;
}

PolicyOptions::PolicyOptions(std::string policy, std::vector<OptionSpec> specs,
                             std::string full_name)
    : policy_(std::move(policy)),
      full_name_(full_name.empty() ? policy_ : std::move(full_name)),
      specs_(std::move(specs)) {
  for (std::size_t i = 0; i < specs_.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (specs_[i].key == specs_[j].key)
        throw std::logic_error(fmt::format("{} declares key '{}' twice", policy_, specs_[i].key));
    if (!problem_with(specs_[i], specs_[i].default_value).empty())
      throw std::logic_error(
          fmt::format("{}: default of '{}' is not valid", policy_, specs_[i].key));
    values_.push_back(specs_[i].default_value);
  }
}

const OptionSpec* PolicyOptions::find(std::string_view key) const {
  for (const auto& s : specs_)
    if (s.key == key) return &s;
  return nullptr;
}

void PolicyOptions::set(std::string_view key, std::string_view value) {
  const OptionSpec* s = find(key);
  const std::string source = "policy " + policy_;
  if (!s) {
    std::string keys;
    for (const auto& k : specs_) keys += (keys.empty() ? "" : ", ") + k.key;
    throw InputError(source, std::string(key),
                     keys.empty() ? "unknown key (this policy has no keys)"
                                  : fmt::format("unknown key (keys: {})", keys));
  }
  std::string problem = problem_with(*s, value);
  if (!problem.empty()) throw InputError(source, s->key, problem);
  values_[static_cast<std::size_t>(s - specs_.data())] = std::string(value);
}

const std::string& PolicyOptions::text(std::string_view key) const {
  const OptionSpec* s = find(key);
  if (!s)
    throw std::logic_error(fmt::format("{} reads undeclared key '{}'", policy_, std::string(key)));
  return values_[static_cast<std::size_t>(s - specs_.data())];
}

const OptionSpec& PolicyOptions::spec(std::string_view key, OptionSpec::Kind kind) const {
  const OptionSpec* s = find(key);
  if (!s || s->kind != kind)
    throw std::logic_error(
        fmt::format("{} reads key '{}' as a kind it is not declared as", policy_, std::string(key)));
  return *s;
}

double PolicyOptions::number(std::string_view key) const {
  spec(key, OptionSpec::Kind::kNumber);
  double x = 0.0;
  parse_number(text(key), x);
  return x;
}

std::vector<double> PolicyOptions::numbers(std::string_view key) const {
  spec(key, OptionSpec::Kind::kList);
  std::vector<double> out;
  for (std::string_view item : split(text(key), '/')) {
    double x = 0.0;
    parse_number(item, x);
    out.push_back(x);
  }
  return out;
}

const std::string& PolicyOptions::choice(std::string_view key) const {
  spec(key, OptionSpec::Kind::kChoice);
  return text(key);
}

bool PolicyOptions::flag(std::string_view key) const {
  spec(key, OptionSpec::Kind::kBool);
  bool b = false;
  parse_bool(text(key), b);
  return b;
}

}  // namespace fairgpu
