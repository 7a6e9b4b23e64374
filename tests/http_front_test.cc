// `fairgpu serve` under slow clients (issue 30, H3): many connections that
// dribble a request a byte at a time held every httplib worker, so nothing
// was answered and the agents' heartbeats timed out. Here a real slowloris
// (sockets from many loopback addresses, each sending a header line every
// 0.3 s, reconnecting when cut) runs against the API port while an
// authenticated request must still be answered and a real agent, on the
// agents' own port (http.agent_listen), must keep its node ready; over plain
// http and over TLS. Bounds are generous: nothing here measures speed.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "fairgpu/input_error.h"
#include "live/config.h"
#include "live_daemon.h"
#include "polling.h"
#include "run_binary.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

using nlohmann::json;
using testing_support::quote;
using testing_support::run_binary;
using testing_support::RunResult;
using testing_support::since;
using testing_support::slurp;
using testing_support::wait_for;
namespace fs = std::filesystem;

// A TCP connection to 127.0.0.1:port from the loopback address `from`
// (127.0.0.0/8 is all this machine's); -1 on failure.
int connect_from(const std::string& from, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, from.c_str(), &local.sin_addr);
  sockaddr_in server{};
  server.sin_family = AF_INET;
  server.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &server.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof server) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether the server has closed `fd` (EOF or an error), without waiting.
bool closed_by_server(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char buf[512];
  return ::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0 || (p.revents & (POLLHUP | POLLERR));
}

// Slow clients: `per_address` sockets from each of `addresses`, each sending
// the start of a request and then a byte sequence every 0.3 s, never ending
// it; a socket the server closes is opened again at once.
class Slowloris {
 public:
  Slowloris(int port, std::vector<std::string> addresses, int per_address, bool tls)
      : port_(port), tls_(tls) {
    for (const auto& a : addresses)
      for (int i = 0; i < per_address; ++i) sockets_.push_back({a, -1});
    thread_ = std::thread([this] { run(); });
  }
  ~Slowloris() {
    stop_ = true;
    thread_.join();
    for (auto& s : sockets_)
      if (s.fd >= 0) ::close(s.fd);
  }
  int most_open() const { return most_open_; }
  int cut() const { return cut_; }  // connections the server ended

 private:
  struct Socket {
    std::string from;
    int fd;
  };
  // Plain http: a request line and header lines. TLS: a handshake record
  // that announces 512 bytes and sends them one at a time.
  std::string opening() const {
    return tls_ ? std::string("\x16\x03\x01\x02\x00\x01", 6)
                : "GET /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  }
  std::string dribble() const { return tls_ ? std::string(1, '\0') : "X-a: b\r\n"; }

  void run() {
    while (!stop_) {
      int open = 0;
      for (auto& s : sockets_) {
        if (s.fd >= 0 && closed_by_server(s.fd)) {
          ::close(s.fd);
          s.fd = -1;
          ++cut_;
        }
        if (s.fd < 0) {
          s.fd = connect_from(s.from, port_);
          if (s.fd >= 0) {
            const std::string o = opening();
            ::send(s.fd, o.data(), o.size(), MSG_NOSIGNAL);
          }
        } else {
          const std::string d = dribble();
          if (::send(s.fd, d.data(), d.size(), MSG_NOSIGNAL) < 0) {
            ::close(s.fd);
            s.fd = -1;
            ++cut_;
          }
        }
        open += s.fd >= 0;
      }
      most_open_ = std::max(most_open_.load(), open);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  }

  int port_;
  bool tls_;
  std::vector<Socket> sockets_;
  std::atomic<bool> stop_{false};
  std::atomic<int> most_open_{0}, cut_{0};
  std::thread thread_;
};

class SlowClients : public testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fairgpu-slow-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fs::permissions(dir_, fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
    fs::create_directories(dir_ / "scratch");
    config_ = {{"listen", "127.0.0.1:0"},
               {"data_dir", (dir_ / "data").string()},
               {"policy", "fifo"},
               {"round_s", 0.5},
               {"heartbeat_s", 0.2},
               {"heartbeat_timeout_s", 3},
               {"admin_token", "admin-token"},
               // Small numbers, so that a few hundred sockets are an attack.
               {"http",
                {{"request_timeout_s", 1},
                 {"max_connections_per_peer", 8},
                 {"workers", 16},
                 {"queue", 32},
                 {"agent_listen", "127.0.0.1:0"},
                 {"agent_workers", 4}}},
               {"tenants", {{{"name", "alice"}, {"token", "alice-token"}}}}};
  }
  void TearDown() override {
    agent_.reset();
    server_.reset();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void make_certificate() {
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
        "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -keyout " +
        quote((dir_ / "server.key").string()) + " -out " + quote((dir_ / "server.pem").string()) +
        " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    fs::permissions(dir_ / "server.key", fs::perms::owner_read | fs::perms::owner_write);
    config_["tls"] = {{"cert", (dir_ / "server.pem").string()},
                      {"key", (dir_ / "server.key").string()}};
    scheme_ = "https";
  }

  // The server, and an agent on the agents' port with one GPU, ready.
  void start() {
    std::ofstream(dir_ / "serve.json") << config_.dump(2);
    server_ =
        std::make_unique<Daemon>(std::vector<std::string>{FAIRGPU_BINARY, "serve", "--config",
                                                          (dir_ / "serve.json").string(),
                                                          "--port-file", (dir_ / "port").string()},
                                 dir_ / "server.log");
    ASSERT_TRUE(wait_for([&] { return fs::exists(dir_ / "port"); }, 10)) << server_->text();
    std::ifstream in(dir_ / "port");
    in >> port_ >> agent_port_;
    ASSERT_GT(agent_port_, 0) << slurp(dir_ / "port");
    std::vector<std::string> tls_args;
    if (scheme_ == "https") tls_args = {"--ca", (dir_ / "server.pem").string()};
    std::vector<std::string> args = {"node-token", "n1",      "--server",
                                     url(port_),   "--token", "admin-token"};
    args.insert(args.end(), tls_args.begin(), tls_args.end());
    RunResult r = run_binary(args, dir_ / "scratch", {}, 30);
    ASSERT_EQ(r.status, 0) << r.err;
    std::ofstream(dir_ / "n1.token") << r.out;
    fs::permissions(dir_ / "n1.token", fs::perms::owner_read | fs::perms::owner_write);
    std::vector<std::string> agent = {FAIRGPU_BINARY, "agent",
                                      "--server",     url(agent_port_),
                                      "--node",       "n1",
                                      "--gpus",       "slow:1",
                                      "--token-file", (dir_ / "n1.token").string(),
                                      "--state-dir",  (dir_ / "agent").string()};
    agent.insert(agent.end(), tls_args.begin(), tls_args.end());
    agent_ = std::make_unique<Daemon>(agent, dir_ / "agent.log");
    ASSERT_TRUE(wait_for([&] { return node_state() == "ready"; }, 20)) << agent_->text();
  }

  std::string url(int port) const { return fmt::format("{}://127.0.0.1:{}", scheme_, port); }

  // GET path with the admin token from 127.0.0.1; the answer's JSON, or
  // null when none came within `timeout_s`.
  json admin_get(const std::string& path, double timeout_s = 10) {
    httplib::Client c(url(port_));
    c.enable_server_certificate_verification(false);
    c.set_connection_timeout(static_cast<time_t>(timeout_s));
    c.set_read_timeout(static_cast<time_t>(timeout_s));
    auto res = c.Get(path.c_str(), {{"Authorization", "Bearer admin-token"}});
    if (!res || res->status != 200) return nullptr;
    return json::parse(res->body, nullptr, false);
  }
  std::string node_state() {
    json c = admin_get("/v1/cluster");
    if (!c.is_object()) return "";
    for (const auto& n : c.value("nodes", json::array()))
      if (n.value("name", "") == "n1") return n.value("state", "");
    return "";
  }

  // The attack: 20 addresses x 8 sockets on the API port (16 workers, a
  // queue of 32), while the admin asks for the cluster and the agent
  // heartbeats on its own port.
  void check_answers_under_attack() {
    Slowloris attack(port_, addresses(2, 20), 8, scheme_ == "https");
    // Until the attackers hold at least every worker and the queue.
    ASSERT_TRUE(wait_for([&] { return attack.most_open() >= 48; }, 20));
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto asked = std::chrono::steady_clock::now();
    json cluster = admin_get("/v1/cluster", 25);
    const double waited = since(asked);
    ASSERT_TRUE(cluster.is_object()) << "no answer within 25 s under the attack\n"
                                     << server_->text();
    // Expected in about a request deadline (1 s); the bound is generous.
    EXPECT_LT(waited, 15);
    // Past the heartbeat timeout (3 s) under attack, the node never lost.
    const auto start = std::chrono::steady_clock::now();
    while (since(start) < 4) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      EXPECT_FALSE(server_->text().find("node_lost") != std::string::npos) << server_->text();
    }
    json after = admin_get("/v1/cluster", 25);
    ASSERT_TRUE(after.is_object());
    for (const auto& n : after["nodes"]) {
      EXPECT_EQ(n.value("state", ""), "ready") << n.dump();
      EXPECT_LT(n.value("last_heartbeat_s_ago", 99.0), 3.0) << n.dump();
    }
    // The attack was real and the deadline ended its connections.
    EXPECT_GE(attack.most_open(), 48);
    EXPECT_GT(attack.cut(), 0);
  }

  static std::vector<std::string> addresses(int first, int count) {
    std::vector<std::string> out;
    for (int i = 0; i < count; ++i) out.push_back(fmt::format("127.0.0.{}", first + i));
    return out;
  }

  fs::path dir_;
  json config_;
  std::string scheme_ = "http";
  int port_ = 0, agent_port_ = 0;
  std::unique_ptr<Daemon> server_, agent_;
};

TEST_F(SlowClients, AnsweredAndHeartbeatsKeptUnderASlowloris) {
  start();
  check_answers_under_attack();
}

TEST_F(SlowClients, AnsweredAndHeartbeatsKeptUnderASlowlorisOverTls) {
  make_certificate();
  start();
  check_answers_under_attack();
}

// One address may hold max_connections_per_peer connections (8 here); the
// ninth and later are refused at once with a reason, and the address's own
// connections do not keep others out.
TEST_F(SlowClients, OneAddressHoldsAtMostItsShare) {
  start();
  std::vector<int> fds;
  for (int i = 0; i < 12; ++i) {
    fds.push_back(connect_from("127.0.0.99", port_));
    ASSERT_GE(fds.back(), 0);
  }
  int refused = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    // The held ones are cut at their deadline (1 s): wait less than that.
    if (::poll(&p, 1, 500) <= 0) continue;
    char buf[512] = {};
    const auto n = ::recv(fd, buf, sizeof buf - 1, 0);
    if (n > 0 &&
        std::string(buf).find("too many connections from this address") != std::string::npos)
      ++refused;
  }
  EXPECT_EQ(refused, 4) << server_->text();
  for (int fd : fds) ::close(fd);
}

// The "http" object: defaults, and one line naming the field for a bad value.
TEST(HttpConfig, DefaultsAndOneLineErrors) {
  const std::string head = R"({"admin_token": "admin-0000", "tenants": [{"name": "a", )"
                           R"("token": "token-a-00"}])";
  const live::ServeConfig d = live::parse_serve_config(head + "}", "serve.json");
  EXPECT_EQ(d.http.request_timeout_s, 10);
  EXPECT_EQ(d.http.max_connections_per_peer, 32);
  EXPECT_EQ(d.http.workers, 128);
  EXPECT_EQ(d.http.queue, 256);
  EXPECT_EQ(d.agent_port, -1);
  const live::ServeConfig c = live::parse_serve_config(
      head + R"(, "http": {"agent_listen": "0.0.0.0:8471", "agent_workers": 8, "queue": 5}})",
      "serve.json");
  EXPECT_EQ(c.agent_host, "0.0.0.0");
  EXPECT_EQ(c.agent_port, 8471);
  EXPECT_EQ(c.agent_workers, 8);
  EXPECT_EQ(c.http.queue, 5);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"("workers": 0)", "http.workers"},
      {R"("queue": 2.5)", "http.queue"},
      {R"("max_connections_per_peer": "8")", "http.max_connections_per_peer"},
      {R"("request_timeout_s": 0)", "http.request_timeout_s"},
      {R"("agent_listen": "8471")", "http.agent_listen"},
      {R"("agent_listen": "h:70000")", "http.agent_listen"},
      {R"("deadline": 1)", "http"},
  };
  for (const auto& [body, field] : bad) {
    try {
      live::parse_serve_config(head + R"(, "http": {)" + body + "}}", "serve.json");
      ADD_FAILURE() << body << ": accepted";
    } catch (const InputError& e) {
      EXPECT_EQ(e.field().rfind(field, 0), 0u) << body << ": " << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fairgpu
