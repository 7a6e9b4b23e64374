// The accept loop and worker pool in front of one cpp-httplib server (issue
// 30, H3). httplib 0.11's own loop gives every accepted connection a worker
// for as long as the peer keeps sending a byte per read timeout, with no
// deadline and no limit per peer: 130 connections dribbling header lines
// held all 128 workers and nothing was answered. A Listener accepts itself
// and bounds what one connection and one peer may hold:
//   - a deadline for each request: its headers and body (and, over TLS, the
//     handshake) must arrive within request_timeout_s of the connection's
//     start or of the previous answer, else the connection is shut down;
//   - at most max_connections_per_peer connections (queued or served) per
//     peer address; more are refused at once;
//   - at most `queue` connections waiting for one of `workers` workers. The
//     queue is fair between addresses: they take turns for workers, and a
//     full queue gives a place to a newcomer by refusing a connection of
//     the address that holds the most (if more than the newcomer's), so that
//     one holding few is never kept out by one holding many.
//     Refusals are at once (503 over plain http, closed over TLS).
// `fairgpu serve` runs one Listener for the API and, with "agent_listen",
// one of its own for the agents, so that heartbeats never wait behind
// clients.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "live/config.h"

namespace httplib {
class Server;
}

namespace fairgpu::live {

class Listener {
 public:
  // `server`: bound already (bind_to_port), routes set; outlives the
  // Listener. `name`: for log lines ("api", "agents").
  Listener(httplib::Server& server, const HttpLimits& limits, std::string name, bool tls);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Accepts and serves until stop(); blocking. Returns at once after stop().
  void run();
  // Closes the listening socket; run() returns once the connections it
  // serves have ended (each within its deadline). Any thread, any time.
  void stop();

  // Called by a route's handler on the worker serving it: the request has
  // been read whole (headers and body), so its deadline no longer applies
  // while the handler runs. The returned guard restarts the clock when the
  // handler returns (the answer's writing and the next request on the
  // connection count against it). No effect off a Listener's worker.
  class Handling {
   public:
    Handling();
    ~Handling();
    Handling(const Handling&) = delete;
    Handling& operator=(const Handling&) = delete;
    // The deadline passed first and the connection was cut: no answer can
    // get through, so the handler should do nothing it would have to report.
    bool cut() const { return cut_; }

   private:
    bool cut_ = false;
  };
  // Restarts the current request's clock (an answer httplib made itself).
  static void answered();

 public:
  struct Connection;  // one accepted connection (http_front.cc)

 private:
  void work();
  void watch();
  void serve(const std::shared_ptr<Connection>& c);
  void refuse(int fd, const std::string& why);
  void release(const std::shared_ptr<Connection>& c);
  void drop(const std::string& peer);  // one connection of `peer` less; under mutex_

  httplib::Server& server_;
  const HttpLimits limits_;
  const std::string name_;
  const bool tls_;
  int listen_fd_;

  std::mutex mutex_;
  std::condition_variable work_cv_, watch_cv_;
  bool stopping_ = false;
  std::deque<std::shared_ptr<Connection>> queue_;
  std::vector<std::shared_ptr<Connection>> serving_;
  std::map<std::string, int> per_peer_;             // queued or served, per address
  std::map<std::string, std::uint64_t> last_turn_;  // turns_ when last given a worker
  std::uint64_t turns_ = 0;
  std::uint64_t refused_ = 0, cut_ = 0;  // since the last log line
  std::vector<std::thread> workers_;
  std::thread watchdog_;
};

}  // namespace fairgpu::live
