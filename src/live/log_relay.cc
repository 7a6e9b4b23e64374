// The log relay over heartbeats (see log_relay.h).
#include "live/log_relay.h"

#include <openssl/evp.h>

#include <chrono>
#include <vector>

#include "live/log.h"

namespace fairgpu::live {

using nlohmann::json;

std::optional<LogRelay::Chunk> LogRelay::fetch(const std::string& node, std::int64_t lease,
                                               std::int64_t offset, double timeout_s) {
  std::unique_lock lock(mu_);
  const Key key{node, lease, offset};
  Want& want = wants_[key];
  ++want.waiters;
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
               [&] { return wants_.at(key).got.has_value(); });
  Want& w = wants_.at(key);
  std::optional<Chunk> out = w.got;
  if (--w.waiters == 0) wants_.erase(key);
  return out;
}

json LogRelay::requests_for(const std::string& node) {
  std::lock_guard lock(mu_);
  json out = json::array();
  for (auto& [key, want] : wants_) {
    if (out.size() >= kMaxPerHeartbeat) break;  // the rest in the next answer
    if (std::get<0>(key) != node || want.asked || want.got) continue;
    want.asked = true;
    out.push_back({{"lease", std::get<1>(key)}, {"offset", std::get<2>(key)}, {"max", kMaxChunk}});
  }
  return out;
}

void LogRelay::deliver(const std::string& node, const json& logs) {
  if (!logs.is_array()) return;
  std::lock_guard lock(mu_);
  bool any = false;
  for (const json& entry : logs) {
    try {
      const Key key{node, entry.at("lease").get<std::int64_t>(),
                    entry.at("offset").get<std::int64_t>()};
      auto it = wants_.find(key);
      if (it == wants_.end() || it->second.got) continue;  // not asked (or answered)
      Chunk c;
      c.found = entry.at("found").get<bool>();
      c.size = entry.at("size").get<std::int64_t>();
      const std::optional<std::string> data = unbase64(entry.at("data").get<std::string>());
      if (!data || static_cast<std::int64_t>(data->size()) > kMaxChunk || c.size < 0)
        throw std::runtime_error("data: not base64 of at most 64 KiB");
      c.data = *data;
      it->second.got = std::move(c);
      any = true;
    } catch (const std::exception& e) {
      log::warn("heartbeat_log_ignored", {{"node", node}, {"problem", e.what()}});
    }
  }
  if (any) cv_.notify_all();
}

std::string LogRelay::base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::optional<std::string> LogRelay::unbase64(const std::string& text) {
  if (text.size() % 4 != 0) return std::nullopt;
  if (text.empty()) return std::string();
  std::string out(3 * text.size() / 4, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding's bytes as zeros.
  std::size_t len = static_cast<std::size_t>(n);
  if (text.back() == '=') --len;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --len;
  out.resize(len);
  return out;
}

}  // namespace fairgpu::live
