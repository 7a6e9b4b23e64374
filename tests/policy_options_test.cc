// Per-policy options (policy_options.h): `NAME:key=value` specifiers, keys
// checked against each policy's declarations, aliases and their precedence,
// and the serve config's "policy" string.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "fairgpu/input_error.h"
#include "fairgpu/policy_options.h"
#include "fairgpu/scheduler.h"
#ifdef FAIRGPU_HAVE_LIVE
#include "live/config.h"
#endif

namespace fairgpu {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(PolicySpecifier, SplitsNameAndKeyValuesKeepingTheFullName) {
  PolicySpecifier s = parse_policy_specifier("allox:alpha=0.2");
  EXPECT_EQ(s.full, "allox:alpha=0.2");
  EXPECT_EQ(s.name, "allox");
  ASSERT_EQ(s.values.size(), 1u);
  EXPECT_EQ(s.values[0], (std::pair<std::string, std::string>{"alpha", "0.2"}));
  s = parse_policy_specifier("tiresias:thresholds=600/7200:promote=4");
  EXPECT_EQ(s.name, "tiresias");
  ASSERT_EQ(s.values.size(), 2u);
  EXPECT_EQ(s.values[0].second, "600/7200");
  EXPECT_EQ(s.values[1].first, "promote");
  s = parse_policy_specifier("themis");
  EXPECT_EQ(s.name, "themis");
  EXPECT_TRUE(s.values.empty());
}

// A Python policy's name is py:FILE:CLASS (policy_plugin.h), its keys after.
TEST(PolicySpecifier, PythonPolicyNamesSpanFileAndClass) {
  PolicySpecifier s = parse_policy_specifier("py:dir/fifo.py:Fifo:lease=60:backfill=on");
  EXPECT_EQ(s.name, "py:dir/fifo.py:Fifo");
  ASSERT_EQ(s.values.size(), 2u);
  EXPECT_EQ(s.values[0], (std::pair<std::string, std::string>{"lease", "60"}));
  EXPECT_EQ(parse_policy_specifier("py:f.py:C").name, "py:f.py:C");
  for (const char* bad : {"py:f.py", "py::C", "py:f.py:"})
    EXPECT_NE(error_of([&] { parse_policy_specifier(bad); }).find("expected py:FILE:CLASS"),
              std::string::npos)
        << bad;
  // The test binary has no Python plugin: one line saying how to get one.
  EXPECT_NE(error_of([] { make_round_policy("py:f.py:C", {}); })
                .find("Python policies need a fairgpu built with Python"),
            std::string::npos);
}

TEST(PolicySpecifier, MalformedOnesAreOneLineErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "no policy name"},
      {":alpha=1", "no policy name"},
      {"allox:alpha", "'alpha' is not key=value"},
      {"allox:", "'' is not key=value"},
      {"allox:=1", "has no key"},
      {"allox:alpha=0.2:alpha=0.3", "key 'alpha' is given twice"},
  };
  for (const auto& [text, problem] : cases) {
    std::string e = error_of([&text = text] { parse_policy_specifier(text); });
    EXPECT_NE(e.find("options: policy: '" + text + "'"), std::string::npos) << text << ": " << e;
    EXPECT_NE(e.find(problem), std::string::npos) << text << ": " << e;
  }
}

TEST(PolicySpecifier, FolderNamesAreFilesystemSafe) {
  EXPECT_EQ(policy_folder_name("allox"), "allox");
  EXPECT_EQ(policy_folder_name("allox:alpha=0.2"), "allox_alpha-0.2");
  EXPECT_EQ(policy_folder_name("tiresias:thresholds=600/7200"), "tiresias_thresholds-600_7200");
  EXPECT_EQ(policy_folder_name("x:k=a b\\c*"), "x_k-a_b_c_");
}

PolicyOptions example() {
  return PolicyOptions("demo",
                       {number_option("alpha", 1.0, "a fraction", 0.0, 1.0, true),
                        list_option("cuts", "3600", "ascending cuts", 0.0, true, true),
                        choice_option("mode", "quota", "which", {"quota", "demand"}),
                        bool_option("on", false, "a switch")},
                       "demo:alpha=0.5");
}

TEST(PolicyOptions, DefaultsAndTypedValues) {
  PolicyOptions o = example();
  EXPECT_EQ(o.policy(), "demo");
  EXPECT_EQ(o.full_name(), "demo:alpha=0.5");
  EXPECT_EQ(o.number("alpha"), 1.0);
  EXPECT_EQ(o.numbers("cuts"), std::vector<double>{3600.0});
  EXPECT_EQ(o.choice("mode"), "quota");
  EXPECT_FALSE(o.flag("on"));
  o.set("alpha", "0.25");
  o.set("cuts", "600/7200.5");
  o.set("mode", "demand");
  o.set("on", "on");
  EXPECT_EQ(o.number("alpha"), 0.25);
  EXPECT_EQ(o.numbers("cuts"), (std::vector<double>{600.0, 7200.5}));
  EXPECT_EQ(o.choice("mode"), "demand");
  EXPECT_TRUE(o.flag("on"));
  o.set("on", "false");
  EXPECT_FALSE(o.flag("on"));
  // Reading an undeclared key or the wrong kind is a policy bug.
  EXPECT_THROW(o.number("beta"), std::logic_error);
  EXPECT_THROW(o.number("mode"), std::logic_error);
}

TEST(PolicyOptions, BadKeysAndValuesNameThePolicyAndKey) {
  struct Case {
    std::string key, value, problem;
  };
  const std::vector<Case> cases = {
      {"beta", "1", "unknown key (keys: alpha, cuts, mode, on)"},
      {"alpha", "abc", "must be a number in (0, 1], got 'abc'"},
      {"alpha", "", "got ''"},
      {"alpha", "nan", "got 'nan'"},
      {"alpha", "inf", "got 'inf'"},
      {"alpha", "0", "got '0'"},
      {"alpha", "1.5", "got '1.5'"},
      {"alpha", "0.5x", "got '0.5x'"},
      {"alpha", " 0.5", "got ' 0.5'"},
      {"cuts", "7200/600", "strictly ascending"},
      {"cuts", "600/600", "strictly ascending"},
      {"cuts", "600,7200", "got '600,7200'"},
      {"cuts", "600//7200", "got '600//7200'"},
      {"cuts", "-5", "numbers > 0"},
      {"mode", "bogus", "must be one of quota | demand, got 'bogus'"},
      {"on", "yes", "must be on or off, got 'yes'"},
  };
  for (const auto& c : cases) {
    PolicyOptions o = example();
    std::string e = error_of([&] { o.set(c.key, c.value); });
    EXPECT_EQ(e.rfind("policy demo: " + c.key + ": ", 0), 0u) << c.key << "=" << c.value << ": " << e;
    EXPECT_NE(e.find(c.problem), std::string::npos) << c.key << "=" << c.value << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(PolicyOptions, ABadDeclarationIsABug) {
  EXPECT_THROW(PolicyOptions("demo", {bool_option("x", false, ""), bool_option("x", true, "")}),
               std::logic_error);
  EXPECT_THROW(PolicyOptions("demo", {number_option("x", 2.0, "", 0.0, 1.0)}), std::logic_error);
}

// ---- make_round_policy ----------------------------------------------------

TEST(RoundPolicySpecifier, KeysReachThePolicyWithSpecifierOverAliasOverDefault) {
  RoundPolicyOptions none;
  EXPECT_EQ(make_round_policy("oef-coop", none)->interval(), 300.0);
  EXPECT_EQ(make_round_policy("gavel", none)->interval(), 300.0);
  EXPECT_EQ(make_round_policy("ftf", none)->interval(), 360.0);
  EXPECT_EQ(make_round_policy("themis", none)->interval(), 10.0);
  auto p = make_round_policy("oef-coop:round=600:level=job", none);
  EXPECT_EQ(p->interval(), 600.0);
  EXPECT_EQ(p->level(), "job");
  EXPECT_EQ(p->name(), "oef-coop:round=600:level=job");

  RoundPolicyOptions alias;
  alias.round_s = 120;
  alias.level = "job";
  EXPECT_EQ(make_round_policy("oef-coop", alias)->interval(), 120.0);
  EXPECT_EQ(make_round_policy("oef-coop", alias)->level(), "job");
  EXPECT_EQ(make_round_policy("themis", alias)->interval(), 120.0);
  EXPECT_EQ(make_round_policy("oef-coop:round=600:level=tenant", alias)->interval(), 600.0);
  EXPECT_EQ(make_round_policy("oef-coop:round=600:level=tenant", alias)->level(), "tenant");
  // A later setting wins, the specifier over all of them.
  alias.set("round", "30");
  EXPECT_EQ(make_round_policy("themis", alias)->interval(), 30.0);
  EXPECT_EQ(make_round_policy("themis:round=40", alias)->interval(), 40.0);
}

TEST(RoundPolicySpecifier, AliasesApplyOnlyWhereTheKeyIsDeclared) {
  RoundPolicyOptions o;
  o.set("lease", "600");    // time-sharing policies only
  o.set("demands", "on");   // share policies only
  o.set("alpha", "0.5", "allox");
  EXPECT_NO_THROW(make_round_policy("oef-coop", o));
  EXPECT_NO_THROW(make_round_policy("themis", o));
  EXPECT_NO_THROW(make_round_policy("allox", o));
  // Keys of another policy in a specifier are errors.
  EXPECT_EQ(error_of([] { make_round_policy("oef-coop:lease=600", {}); }),
            "policy oef-coop: lease: unknown key (keys: level, round, demands, quantum, move, "
            "spread_min, spread_wait, spread_idle, affine, keep_finishing, keep_restarts, midround, "
            "midround_min, resolve, resolve_stranded)");
  EXPECT_EQ(error_of([] { make_round_policy("themis:alpha=0.5", {}); }),
            "policy themis: alpha: unknown key (keys: level, round, lease, spread_min, spread_wait, "
            "filter)");
  // A setting for a named policy is checked even when another runs.
  RoundPolicyOptions bad;
  bad.set("filter", "2", "themis");
  EXPECT_EQ(error_of([&] { make_round_policy("oef-coop", bad); }),
            "policy themis: filter: must be a number in (0, 1], got '2'");
  // Time-sharing policies decide job by job.
  RoundPolicyOptions tenant;
  tenant.level = "tenant";
  EXPECT_EQ(error_of([&] { make_round_policy("astraea", tenant); }),
            "policy astraea: level: must be one of job, got 'tenant'");
  EXPECT_NE(error_of([] { make_round_policy("nope:x=1", {}); }).find("unknown policy 'nope'"),
            std::string::npos);
}

TEST(RoundPolicySpecifier, EveryPolicyDeclaresValidKeys) {
  // Each catalogue entry builds with its defaults and with every default
  // given explicitly (the declarations parse their own defaults).
  for (const auto& info : round_policy_catalogue()) {
    SCOPED_TRACE(info.name);
    std::string full = info.name;
    for (const auto& k : info.keys) full += ":" + k.key + "=" + k.default_value;
    EXPECT_NO_THROW(make_round_policy(info.name, {}));
    auto p = make_round_policy(full, {});
    EXPECT_EQ(p->name(), full);
    EXPECT_EQ(p->interval(), make_round_policy(info.name, {})->interval());
  }
}

// ---- the serve config -----------------------------------------------------
#ifdef FAIRGPU_HAVE_LIVE  // not in the simulator-only build

std::string serve_error(const std::string& extra) {
  const std::string text =
      R"({"admin_token": "admin-0000", "agent_token": "agent-0000",
          "tenants": [{"name": "a", "token": "token-a-00"}])" +
      extra + "}";
  return error_of([&] { live::parse_serve_config(text, "serve.json"); });
}

TEST(ServeConfigPolicy, TakesASpecifierAndNamesABadKey) {
  const std::string text =
      R"({"admin_token": "admin-0000", "agent_token": "agent-0000",
          "tenants": [{"name": "a", "token": "token-a-00"}],
          "policy": "allox:alpha=0.2"})";
  live::ServeConfig c = live::parse_serve_config(text, "serve.json");
  EXPECT_EQ(c.policy, "allox:alpha=0.2");
  EXPECT_EQ(make_round_policy(c.policy, c.policy_options)->name(), "allox:alpha=0.2");
  EXPECT_EQ(serve_error(R"(, "policy": "allox:alpha=0.2")"), "accepted");
  EXPECT_EQ(serve_error(R"(, "policy": "allox:alpah=0.2")"),
            "serve.json: policy: policy allox: alpah: unknown key (keys: level, round, lease, "
            "spread_min, spread_wait, alpha)");
  EXPECT_EQ(serve_error(R"(, "policy": "allox:alpha=2")"),
            "serve.json: policy: policy allox: alpha: must be a number in (0, 1], got '2'");
  EXPECT_EQ(serve_error(R"(, "policy": "allox:alpha")"),
            "serve.json: policy: 'allox:alpha': 'alpha' is not key=value "
            "(NAME:key=value[:key=value...])");
  // policy_options stays an alias, checked by the policy it names.
  EXPECT_EQ(serve_error(R"(, "policy": "themis", "policy_options": {"themis_filter": 0.5})"),
            "accepted");
  EXPECT_EQ(serve_error(R"(, "policy": "oef-coop", "policy_options": {"themis_filter": 2})"),
            "serve.json: policy_options: policy themis: filter: must be a number in (0, 1], "
            "got '2'");
  EXPECT_EQ(serve_error(R"(, "policy": "tiresias", "policy_options": {"tiresias_thresholds": [600, 7200]})"),
            "accepted");
  EXPECT_EQ(serve_error(R"(, "policy": "tiresias", "policy_options": {"tiresias_thresholds": [7200, 600]})"),
            "serve.json: policy_options: policy tiresias: thresholds: must be numbers > 0, "
            "strictly ascending, separated by '/', got '7200/600'");
}

#endif  // FAIRGPU_HAVE_LIVE

}  // namespace
}  // namespace fairgpu
