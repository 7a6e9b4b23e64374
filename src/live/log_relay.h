// Tenants' own logs through the server (issue 32, item 7): a job's output
// is on the node its run ran on, under the agent's state dir
// (runs/<lease>/log), and the agents only ever call the server. So a read
// is relayed over the heartbeat: GET /v1/jobs/{id}/log asks the node's
// agent in its next heartbeat answer ("log_requests"), the agent brings the
// bytes in the heartbeat after ("logs", base64), and the waiting request is
// answered (docs/live-protocol.md).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>

namespace fairgpu::live {

class LogRelay {
 public:
  static constexpr std::int64_t kMaxChunk = 64 * 1024;  // bytes per request
  // Requests per heartbeat answer: the agent's next heartbeat carries at
  // most this many chunks (about 1.4 MB in base64, under the 8 MiB body cap).
  static constexpr std::size_t kMaxPerHeartbeat = 16;

  struct Chunk {
    std::string data;       // the bytes, at most kMaxChunk
    std::int64_t size = 0;  // the whole log's size now
    bool found = false;     // the agent has the run's log
  };
  // The bytes of the log of `lease` on `node` from `offset`, once the node's
  // agent brings them; nullopt when it has not within timeout_s.
  std::optional<Chunk> fetch(const std::string& node, std::int64_t lease, std::int64_t offset,
                             double timeout_s);
  // A heartbeat of `node`: what its agent is asked for now (an array of
  // {"lease", "offset", "max"}; each asked once) ...
  nlohmann::json requests_for(const std::string& node);
  // ... and what it brought ("logs": [{"lease", "offset", "data" (base64),
  // "size", "found"}]). Entries nobody asked for, or malformed, are dropped.
  void deliver(const std::string& node, const nlohmann::json& logs);

  static std::string base64(const std::string& bytes);
  // nullopt when `text` is not base64.
  static std::optional<std::string> unbase64(const std::string& text);

 private:
  using Key = std::tuple<std::string, std::int64_t, std::int64_t>;  // node, lease, offset
  struct Want {
    int waiters = 0;
    bool asked = false;
    std::optional<Chunk> got;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Want> wants_;
};

}  // namespace fairgpu::live
