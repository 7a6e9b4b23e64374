// The live manager's request decoding (docs/live-protocol.md): the first byte
// picks the call, the rest is the HTTP body, read as the server reads it
// (src/live/server.cc: not JSON is a 400). '0' POST /v1/jobs (a tenant),
// '1' PUT /v1/tenants (the admin), '2' agent registration, '3' an agent's
// heartbeat for node n1 (registered at start, epoch 1). An accepted call is
// followed by a scheduling point and a tick, which must not throw either.
// Contract: success or ApiError with a 4xx status; never a 5xx, another
// exception, a crash or a sanitizer report.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "fuzz_contract.h"
#include "live/manager.h"

namespace {

using fairgpu::live::ApiError;
using fairgpu::live::Caller;
using fairgpu::live::Manager;
using nlohmann::json;

struct World {
  std::string dir;
  double now = 1000.0;
  std::unique_ptr<Manager> manager;
  Caller tenant, admin, agent, agent2;
  // The agent of the node a body names (n1 or n2, each with its own token);
  // other names go with n1's token (and get a 403).
  const Caller& agent_for(const json& body) const {
    return body.is_object() && body.value("node", json()) == "n2" ? agent2 : agent;
  }

  World() {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : (tmp ? tmp : "/tmp");
    dir = base + "/fairgpu-fuzz-live-" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    fairgpu::live::ServeConfig c;
    c.data_dir = dir + "/data";
    c.checkpoint_dir = dir + "/ckpt";
    c.policy = "oef-coop";
    c.policy_options.round_s = 60;
    c.heartbeat_s = 1;
    c.heartbeat_timeout_s = 5;
    c.admin_token = "admin-token";
    c.tenants = {{"alice", 1.0, "alice-token", ""}, {"bob", 2.0, "bob-token", ""}};
    manager = std::make_unique<Manager>(c, [this] { return now; });
    tenant = manager->authenticate("Bearer alice-token");
    admin = manager->authenticate("Bearer admin-token");
    agent = manager->authenticate(
        "Bearer " + manager->issue_node_token(admin, "n1")["token"].get<std::string>());
    agent2 = manager->authenticate(
        "Bearer " + manager->issue_node_token(admin, "n2")["token"].get<std::string>());
    manager->register_agent(agent, {{"node", "n1"}, {"gpu_type", "k80"}, {"devices", {0, 1}}});
  }
  ~World() {
    manager.reset();
    std::filesystem::remove_all(dir);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static World w;
  if (size == 0) return 0;
  const int call = data[0] % 4;
  const std::string_view body_text = fairgpu::fuzz::text(data + 1, size - 1);
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::exception&) {
    // The server's 400: "(body): not JSON" (parse_error), "(body): ..." (a
    // number too large for a double, out_of_range).
    return 0;
  }
  try {
    switch (call) {
      case 0:
        w.manager->submit(w.tenant, body);
        break;
      case 1:
        w.manager->set_tenant(w.admin, body);
        break;
      case 2:
        w.manager->register_agent(w.agent_for(body), body);
        break;
      default:
        w.manager->heartbeat(w.agent_for(body), body);
        break;
    }
  } catch (const ApiError& e) {
    if (e.status() >= 400 && e.status() < 500) return 0;
    fairgpu::fuzz::broken(e.what());
  } catch (const std::exception& e) {
    fairgpu::fuzz::broken(e.what());
  }
  try {
    w.now += 7.0;
    w.manager->schedule();
    w.manager->tick();
  } catch (const std::exception& e) {
    fairgpu::fuzz::broken(e.what());
  }
  return 0;
}
