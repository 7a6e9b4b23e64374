// Per-policy options (docs/design.md §3): a policy is named `NAME` or
// `NAME:key=value[:key=value...]` (`allox:alpha=0.2`, `themis:filter=0.5`),
// the full string being the name its results are reported under, so variants
// of one policy sit side by side in one comparison. Each policy declares its
// keys (kind, default, help) in its own file; PolicyOptions holds one
// policy's values and checks every value against its declaration. A bad key
// or value is an InputError "policy NAME: KEY: problem" (one line, exit 2).
//
// Values are text, parsed by the key's kind:
//   number  a finite decimal number within the key's range      alpha=0.2
//   list    numbers separated by '/', e.g. ascending thresholds  thresholds=3600/7200
//   choice  one of the key's words                               fair-share=demand
//   bool    on | off (also true | false)                         demands=on
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fairgpu {

struct OptionSpec {
  enum class Kind { kNumber, kList, kChoice, kBool };
  std::string key;
  Kind kind = Kind::kNumber;
  std::string default_value;  // as a user would write it
  std::string help;           // one line
  // kNumber and every number of a kList: within [min, max]; an open end
  // excludes its bound.
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_open = false, max_open = false;
  bool ascending = false;            // kList: strictly ascending
  std::vector<std::string> choices;  // kChoice
};

// Declarations, for the policies' files.
OptionSpec number_option(std::string key, double default_value, std::string help, double min,
                         double max, bool min_open = false, bool max_open = false);
OptionSpec list_option(std::string key, std::string default_value, std::string help, double min,
                       bool min_open, bool ascending);
OptionSpec choice_option(std::string key, std::string default_value, std::string help,
                         std::vector<std::string> choices);
OptionSpec bool_option(std::string key, bool default_value, std::string help);

// "number in (0, 1]", "one of quota | demand", ...: what a key accepts.
std::string describe_accepted(const OptionSpec& spec);

// `NAME` or `NAME:key=value[:key=value...]`, split but not checked against
// any policy's keys. Throws InputError ("options", "policy") for an empty
// name, an item that is not key=value, an empty key or a key given twice.
struct PolicySpecifier {
  std::string full;  // as given: the name results are reported under
  std::string name;  // the policy's registered name
  std::vector<std::pair<std::string, std::string>> values;  // in the order given
};
PolicySpecifier parse_policy_specifier(std::string_view text);

// A full name as a folder name: ':' -> '_', '=' -> '-', and any other
// character but letters, digits, '.', '_', '+' and '-' -> '_'
// ("allox:alpha=0.2" -> "allox_alpha-0.2").
std::string policy_folder_name(std::string_view full);

// One policy's option values: its declared keys, each at its default until
// set. `policy` (the registered name) names the policy in errors;
// `full_name` is the specifier it runs under (default: `policy`).
class PolicyOptions {
 public:
  PolicyOptions(std::string policy, std::vector<OptionSpec> specs, std::string full_name = {});

  // Throws InputError("policy <policy>", key, ...) for an undeclared key or a
  // value its kind does not accept.
  void set(std::string_view key, std::string_view value);
  bool declares(std::string_view key) const { return find(key) != nullptr; }

  const std::string& policy() const { return policy_; }
  const std::string& full_name() const { return full_name_; }
  const std::vector<OptionSpec>& specs() const { return specs_; }
  const std::string& text(std::string_view key) const;  // the value as set (or default)

  // Typed values; asking for an undeclared key or the wrong kind is a
  // std::logic_error (a policy bug).
  double number(std::string_view key) const;
  std::vector<double> numbers(std::string_view key) const;
  const std::string& choice(std::string_view key) const;
  bool flag(std::string_view key) const;

 private:
  const OptionSpec* find(std::string_view key) const;
  const OptionSpec& spec(std::string_view key, OptionSpec::Kind kind) const;

  std::string policy_, full_name_;
  std::vector<OptionSpec> specs_;
  std::vector<std::string> values_;  // parallel to specs_
};

}  // namespace fairgpu
