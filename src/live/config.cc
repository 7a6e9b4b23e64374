// Reading `fairgpu serve`'s JSON configuration (see config.h).
#include "live/config.h"

#include <cmath>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/stat.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "trace/text_input.h"

namespace fairgpu::live {

using text_input::child;
using text_input::element;

std::string name_problem(const std::string& s) {
  if (s.empty()) return "must not be empty";
  if (s.size() > 64) return "longer than 64 characters";
  if (s == "." || s == "..") return "must not be '.' or '..'";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (!(std::isalnum(c) || c == '-' || c == '_' || c == '.'))
      return "only letters, digits, '-', '_' and '.' are allowed";
  }
  return "";
}

std::string config_relative_path(const std::string& base_dir, const std::string& path) {
  if (base_dir.empty() || path.empty() || path.front() == '/') return path;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

std::string read_token_file(const std::string& path, const std::string& source,
                            const std::string& field) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw InputError(source, field, "cannot read " + path);
  if ((st.st_mode & 077) != 0)
    throw InputError(
        source, field,
        fmt::format("{} is readable by others (mode {:o}): chmod 600 it", path, st.st_mode & 0777));
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token)) throw InputError(source, field, "cannot read " + path);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t'))
    token.pop_back();
  if (token.empty())
    throw InputError(source, field, path + ": empty: expected the token on line 1");
  for (char ch : token)
    if (static_cast<unsigned char>(ch) <= ' ' || static_cast<unsigned char>(ch) >= 0x7f)
      throw InputError(source, field, path + ": the token holds a space or control character");
  return token;
}

bool same_secret(std::string_view presented, std::string_view secret) {
  // Equal-length digests compared with CRYPTO_memcmp, which reads every byte
  // whatever it finds: the time depends on nothing secret.
  auto digest = [](std::string_view text, unsigned char* out) {
    unsigned int length = 0;
    return EVP_Digest(text.data(), text.size(), out, &length, EVP_sha256(), nullptr) == 1 &&
           length == 32;
  };
  unsigned char a[EVP_MAX_MD_SIZE] = {}, b[EVP_MAX_MD_SIZE] = {};
  const bool hashed = digest(presented, a) && digest(secret, b);
  return hashed && CRYPTO_memcmp(a, b, 32) == 0 && !secret.empty();
}

namespace {

// The most each quota may say: a typo of a few digits is refused rather
// than taken as "unlimited in practice".
struct QuotaKey {
  const char* key;
  std::int64_t TenantQuotas::*field;
  std::int64_t most;
};
constexpr QuotaKey kQuotaKeys[] = {
    {"max_jobs_queued", &TenantQuotas::max_jobs_queued, 1'000'000},
    {"max_jobs_active", &TenantQuotas::max_jobs_active, 1'000'000},
    {"max_gpus_per_job", &TenantQuotas::max_gpus_per_job, 4096},  // submit's workers limit
    {"max_gpus_running", &TenantQuotas::max_gpus_running, 1'000'000},
    {"max_checkpoint_bytes", &TenantQuotas::max_checkpoint_bytes, std::int64_t{1} << 60},  // 1 EiB
};

// `quotas` at `path` over `base`: the keys given replace base's.
TenantQuotas read_quotas(const text_input::JsonReader& r, const nlohmann::ordered_json& quotas,
                         const std::string& path, TenantQuotas base) {
  r.expect_object(quotas, path);
  r.only_keys(quotas, path,
              {"max_jobs_queued", "max_jobs_active", "max_gpus_per_job", "max_gpus_running",
               "max_checkpoint_bytes"});
  for (const QuotaKey& q : kQuotaKeys) {
    const auto* v = r.optional(quotas, q.key);
    if (!v) continue;
    // Integers only: 2.5 jobs or "10" is a mistake, not a rounding.
    // (JSON's non-negative integers read as unsigned, negative ones as signed.)
    const bool in_range =
        v->is_number_unsigned()
            ? v->get<std::uint64_t>() <= static_cast<std::uint64_t>(q.most)
            : v->is_number_integer() && v->get<std::int64_t>() >= 0 && v->get<std::int64_t>() <= q.most;
    if (!in_range)
      r.fail(child(path, q.key),
             fmt::format("expected an integer in 0..{} (0: unlimited), got {}", q.most, v->dump()));
    base.*q.field = v->get<std::int64_t>();
  }
  return base;
}

}  // namespace

ServeConfig parse_serve_config(std::string_view json_text, const std::string& source,
                               const std::string& base_dir) {
  const auto doc = text_input::parse_json(json_text, source);
  text_input::JsonReader r(source);
  r.expect_object(doc, "");
  r.only_keys(doc, "",
              {"listen",
               "data_dir",
               "checkpoint_dir",
               "policy",
               "policy_options",
               "round_s",
               "heartbeat_s",
               "heartbeat_timeout_s",
               "grace_s",
               "kill_after_s",
               "max_retries",
               "node_fault_limit",
               "job_retention_s",
               "profile_iterations",
               "profile_timeout_s",
               "profiles",
               "restart_overhead_s",
               "admin_token",
               "admin_token_file",
               "admin_token_env",
               "agent_token",
               "tenants",
               "quotas",
               "tls",
               "metrics_open",
               "metrics_token",
               "metrics_token_file",
               "metrics_token_env",
               "http",
               "backend",
               "slurm"});
  ServeConfig c;
  c.source = source;
  auto token = [&](const char* key) {
    std::string t = r.name(r.required(doc, "", key), key);
    if (t.size() < 8) r.fail(key, "must be at least 8 characters");
    return t;
  };
  // A token given inline (KEY), in a file (KEY_file) or in an environment
  // variable (KEY_env): exactly one of them, or none when !required.
  auto secret = [&](const nlohmann::ordered_json& obj, const std::string& path,
                    const std::string& key, bool required) {
    const std::string file_key = key + "_file", env_key = key + "_env";
    const auto* inline_value = r.optional(obj, key.c_str());
    const auto* file = r.optional(obj, file_key.c_str());
    const auto* env = r.optional(obj, env_key.c_str());
    const int given = (inline_value != nullptr) + (file != nullptr) + (env != nullptr);
    if (given > 1)
      r.fail(child(path, key), fmt::format("give one of {}, {} and {}", key, file_key, env_key));
    std::string t;
    std::string field = child(path, key);
    if (inline_value) {
      t = r.name(*inline_value, field);
    } else if (file) {
      field = child(path, file_key);
      t = read_token_file(config_relative_path(base_dir, r.name(*file, field)), source, field);
    } else if (env) {
      field = child(path, env_key);
      const std::string var = r.name(*env, field);
      const char* value = std::getenv(var.c_str());
      if (!value || !*value) r.fail(field, "the environment variable " + var + " is not set");
      t = value;
    } else if (required) {
      r.fail(field, fmt::format("missing required field (or {} or {})", file_key, env_key));
    } else {
      return t;
    }
    if (t.size() < 8) r.fail(field, "must be at least 8 characters");
    return t;
  };
  // HOST:PORT at `field` into host and port.
  auto listen_address = [&](const nlohmann::ordered_json& v, const std::string& field,
                            std::string& host, int& port) {
    std::string s = r.name(v, field);
    auto colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0) r.fail(field, "expected HOST:PORT, got " + s);
    host = s.substr(0, colon);
    try {
      std::size_t used = 0;
      port = std::stoi(s.substr(colon + 1), &used);
      if (used != s.size() - colon - 1) throw std::invalid_argument("junk");
    } catch (const std::exception&) {
      r.fail(field, "bad port in " + s);
    }
    if (port < 0 || port > 65535) r.fail(field, "port must be 0..65535");
  };
  if (auto* v = r.optional(doc, "listen")) listen_address(*v, "listen", c.host, c.port);
  if (auto* v = r.optional(doc, "http")) {
    const std::string p = "http";
    r.expect_object(*v, p);
    r.only_keys(*v, p,
                {"request_timeout_s", "max_connections_per_peer", "workers", "queue",
                 "agent_listen", "agent_workers"});
    if (auto* x = r.optional(*v, "request_timeout_s"))
      c.http.request_timeout_s = r.positive(*x, child(p, "request_timeout_s"));
    for (auto [key, out, most] : {std::tuple{"max_connections_per_peer",
                                             &c.http.max_connections_per_peer, 100000},
                                  std::tuple{"workers", &c.http.workers, 4096},
                                  std::tuple{"queue", &c.http.queue, 100000},
                                  std::tuple{"agent_workers", &c.agent_workers, 4096}}) {
      const auto* x = r.optional(*v, key);
      if (!x) continue;
      if (!x->is_number_integer() || x->get<long long>() < 1 || x->get<long long>() > most)
        r.fail(child(p, key), fmt::format("expected an integer in 1..{}, got {}", most, x->dump()));
      *out = x->get<int>();
    }
    if (auto* x = r.optional(*v, "agent_listen"))
      listen_address(*x, child(p, "agent_listen"), c.agent_host, c.agent_port);
  }
  if (auto* v = r.optional(doc, "data_dir")) c.data_dir = r.name(*v, "data_dir");
  c.data_dir = config_relative_path(base_dir, c.data_dir);
  c.checkpoint_dir = c.data_dir + "/checkpoints";
  if (auto* v = r.optional(doc, "checkpoint_dir"))
    c.checkpoint_dir = config_relative_path(base_dir, r.name(*v, "checkpoint_dir"));
  // "NAME" or "NAME:key=value[:key=value...]" (policy_options.h).
  if (auto* v = r.optional(doc, "policy")) c.policy = r.name(*v, "policy");
  // A Python policy's file, like the other paths here, from the config's
  // folder: "py:FILE:CLASS[:key=value...]" (docs/python.md).
  if (c.policy.rfind("py:", 0) == 0) {
    const std::size_t end = c.policy.find(':', 3);
    if (end != std::string::npos)
      c.policy = "py:" + config_relative_path(base_dir, c.policy.substr(3, end - 3)) +
                 c.policy.substr(end);
  }
  if (auto* v = r.optional(doc, "round_s")) c.policy_options.round_s = r.positive(*v, "round_s");
  if (auto* v = r.optional(doc, "policy_options")) {
    const std::string p = "policy_options";
    r.expect_object(*v, p);
    r.only_keys(*v, p,
                {"level", "lease_s", "tenant_demands", "themis_filter", "allox_alpha",
                 "tiresias_thresholds", "tiresias_promote", "astraea_fair_share"});
    // Aliases of policy keys, as the command line's flags (the policy's own
    // key=value wins); values are checked by the policy.
    RoundPolicyOptions& o = c.policy_options;
    auto number = [&](const char* key) {
      return fmt::format("{}", r.positive(*r.optional(*v, key), child(p, key)));
    };
    if (auto* x = r.optional(*v, "level")) o.level = r.name(*x, child(p, "level"));
    if (r.optional(*v, "lease_s")) o.set("lease", number("lease_s"));
    if (auto* x = r.optional(*v, "tenant_demands")) {
      if (!x->is_boolean()) r.fail(child(p, "tenant_demands"), "expected true or false");
      o.set("demands", x->get<bool>() ? "on" : "off");
    }
    if (r.optional(*v, "themis_filter")) o.set("filter", number("themis_filter"), "themis");
    if (r.optional(*v, "allox_alpha")) o.set("alpha", number("allox_alpha"), "allox");
    if (auto* x = r.optional(*v, "tiresias_thresholds")) {
      const std::string f = child(p, "tiresias_thresholds");
      r.expect_array(*x, f, "ascending GPU-second thresholds");
      std::string list;
      for (std::size_t i = 0; i < x->size(); ++i)
        list += fmt::format("{}{}", i ? "/" : "", r.positive((*x)[i], element(f, i)));
      o.set("thresholds", list, "tiresias");
    }
    if (r.optional(*v, "tiresias_promote"))
      o.set("promote", number("tiresias_promote"), "tiresias");
    if (auto* x = r.optional(*v, "astraea_fair_share"))
      o.set("fair-share", r.name(*x, child(p, "astraea_fair_share")), "astraea");
  }
  for (auto [key, out] :
       {std::pair{"heartbeat_s", &c.heartbeat_s},
        std::pair{"heartbeat_timeout_s", &c.heartbeat_timeout_s}, std::pair{"grace_s", &c.grace_s},
        std::pair{"kill_after_s", &c.kill_after_s},
        std::pair{"profile_iterations", &c.profile_iterations},
        std::pair{"profile_timeout_s", &c.profile_timeout_s}})
    if (auto* v = r.optional(doc, key)) *out = r.positive(*v, key);
  if (auto* v = r.optional(doc, "restart_overhead_s"))
    c.restart_overhead_s = r.non_negative(*v, "restart_overhead_s");
  if (c.heartbeat_timeout_s < 2 * c.heartbeat_s)
    r.fail("heartbeat_timeout_s", "must be at least twice heartbeat_s");
  try {  // the policy and its options, named in this file's terms
    make_round_policy(c.policy, c.policy_options);
  } catch (const InputError& e) {
    // A key's error names the policy and key: "policy themis: filter: ...".
    const bool key_error = e.source().rfind("policy ", 0) == 0;
    const bool in_specifier = c.policy.find(":" + e.field() + "=") != std::string::npos;
    if (!key_error) r.fail(e.field() == "policy" ? "policy" : "policy_options", e.problem());
    r.fail(in_specifier ? "policy" : "policy_options",
           fmt::format("{}: {}: {}", e.source(), e.field(), e.problem()));
  }
  if (auto* v = r.optional(doc, "max_retries")) {
    if (!v->is_number_integer() || v->get<long long>() < 0 || v->get<long long>() > 1000)
      r.fail("max_retries", "expected an integer in 0..1000");
    c.max_retries = v->get<int>();
  }
  if (auto* v = r.optional(doc, "node_fault_limit")) {
    if (!v->is_number_integer() || v->get<long long>() < 0 || v->get<long long>() > 1000)
      r.fail("node_fault_limit", "expected an integer in 0..1000 (0: never drain)");
    c.node_fault_limit = v->get<int>();
  }
  if (auto* v = r.optional(doc, "job_retention_s")) {
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0)
      r.fail("job_retention_s", "expected seconds >= 0");
    c.job_retention_s = v->get<double>();
  }
  if (auto* v = r.optional(doc, "profiles"))
    c.profiles_file = config_relative_path(base_dir, r.name(*v, "profiles"));
  if (auto* v = r.optional(doc, "backend")) {
    c.backend = r.name(*v, "backend");
    if (c.backend != "agents" && c.backend != "slurm")
      r.fail("backend", "expected agents or slurm, got '" + c.backend + "'");
  }
  if (auto* v = r.optional(doc, "slurm")) {
    if (c.backend != "slurm") r.fail("slurm", "only with \"backend\": \"slurm\"");
    r.expect_object(*v, "slurm");
    r.only_keys(
        *v, "slurm",
        {"partition", "conf", "poll_s", "timeout_s", "sbatch", "scontrol", "squeue", "scancel"});
    SlurmBackendConfig& b = c.slurm;
    b.partition = r.name(r.required(*v, "slurm", "partition"), "slurm.partition");
    if (auto* x = r.optional(*v, "conf"))
      b.conf = config_relative_path(base_dir, r.name(*x, "slurm.conf"));
    if (auto* x = r.optional(*v, "poll_s")) b.poll_s = r.positive(*x, "slurm.poll_s");
    if (auto* x = r.optional(*v, "timeout_s")) b.timeout_s = r.positive(*x, "slurm.timeout_s");
    for (auto [key, out] : {std::pair{"sbatch", &b.sbatch}, std::pair{"scontrol", &b.scontrol},
                            std::pair{"squeue", &b.squeue}, std::pair{"scancel", &b.scancel}})
      if (auto* x = r.optional(*v, key)) *out = r.name(*x, std::string("slurm.") + key);
  } else if (c.backend == "slurm") {
    r.fail("slurm", "missing required field (backend slurm needs {\"partition\": ...})");
  }
  c.admin_token = secret(doc, "", "admin_token", true);
  if (auto* v = r.optional(doc, "tls")) {
    r.expect_object(*v, "tls");
    r.only_keys(*v, "tls", {"cert", "key"});
    c.tls_cert = config_relative_path(base_dir, r.name(r.required(*v, "tls", "cert"), "tls.cert"));
    c.tls_key = config_relative_path(base_dir, r.name(r.required(*v, "tls", "key"), "tls.key"));
    // The private key is a secret like the tokens: the owner's alone.
    struct stat st {};
    if (stat(c.tls_key.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
      r.fail("tls.key", fmt::format("{} is readable by others (mode {:o}): chmod 600 it", c.tls_key,
                                    st.st_mode & 0777));
  }
  if (auto* v = r.optional(doc, "metrics_open")) {
    if (!v->is_boolean()) r.fail("metrics_open", "expected true or false");
    c.metrics_open = v->get<bool>();
  }
  c.metrics_token = secret(doc, "", "metrics_token", false);
  std::set<std::string> names, tokens = {c.admin_token};
  if (!c.metrics_token.empty() && !tokens.insert(c.metrics_token).second)
    r.fail("metrics_token", "repeats another token");
  // Deprecated: agents authenticate with per-node tokens that the admin
  // issues (POST /v1/nodes/NAME/token). Still a valid key, so that old
  // configs load, but read for its form only: it authenticates nobody.
  if (r.optional(doc, "agent_token")) token("agent_token");
  if (auto* v = r.optional(doc, "quotas")) c.quotas = read_quotas(r, *v, "quotas", {});
  const auto& tenants = r.required(doc, "", "tenants");
  r.expect_array(tenants, "tenants", "tenants");
  if (tenants.empty()) r.fail("tenants", "must name at least one tenant");
  for (std::size_t i = 0; i < tenants.size(); ++i) {
    const std::string p = element("tenants", i);
    r.expect_object(tenants[i], p);
    r.only_keys(tenants[i], p,
                {"name", "weight", "token", "token_file", "token_env", "unix_user", "account",
                  "quotas"});
    TenantConfig t;
    t.name = r.name(r.required(tenants[i], p, "name"), child(p, "name"));
    if (auto problem = name_problem(t.name); !problem.empty())
      r.fail(child(p, "name"), "'" + t.name + "': " + problem);
    if (auto* u = r.optional(tenants[i], "unix_user")) {
      t.unix_user = r.name(*u, child(p, "unix_user"));
      if (auto problem = name_problem(t.unix_user); !problem.empty())
        r.fail(child(p, "unix_user"), "'" + t.unix_user + "': " + problem);
    }
    if (auto* a = r.optional(tenants[i], "account")) {
      t.account = r.name(*a, child(p, "account"));
      if (auto problem = name_problem(t.account); !problem.empty())
        r.fail(child(p, "account"), "'" + t.account + "': " + problem);
    }
    if (auto* w = r.optional(tenants[i], "weight")) t.weight = r.weight(*w, child(p, "weight"));
    t.quotas = c.quotas;
    if (auto* q = r.optional(tenants[i], "quotas"))
      t.quotas = read_quotas(r, *q, child(p, "quotas"), c.quotas);
    t.token = secret(tenants[i], p, "token", true);
    if (!names.insert(t.name).second) r.fail(child(p, "name"), "repeats tenant '" + t.name + "'");
    if (!tokens.insert(t.token).second) r.fail(child(p, "token"), "repeats another token");
    c.tenants.push_back(std::move(t));
  }
  return c;
}

ServeConfig read_serve_config(const std::string& path) {
  std::error_code ec;
  const auto folder = std::filesystem::absolute(path, ec).parent_path();
  return parse_serve_config(text_input::read_text_file(path), path, ec ? "" : folder.string());
}

}  // namespace fairgpu::live
