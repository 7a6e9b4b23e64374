// The log relay over heartbeats (issue 32, item 7): a read waits for the
// node's agent, is asked once, takes only what was asked of that node, and
// the bytes survive base64 exactly.
#include "live/log_relay.h"

#include <gtest/gtest.h>

#include <future>
#include <string>
#include <thread>

#include "polling.h"

namespace fairgpu::live {
namespace {

using nlohmann::json;

TEST(LogRelay, Base64KeepsEveryByte) {
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  for (std::size_t n : {0u, 1u, 2u, 3u, 4u, 255u, 256u}) {
    const std::string part = bytes.substr(0, n);
    EXPECT_EQ(LogRelay::unbase64(LogRelay::base64(part)), part) << n;
  }
  EXPECT_FALSE(LogRelay::unbase64("abc"));
  EXPECT_FALSE(LogRelay::unbase64("ab!d"));
}

TEST(LogRelay, AReadIsAskedOnceOfItsNodeAndAnsweredWithWhatItBrings) {
  LogRelay relay;
  auto read = std::async(std::launch::async, [&] { return relay.fetch("n1", 7, 100, 30); });
  json asked;
  ASSERT_TRUE(testing_support::wait_for(
      [&] {
        asked = relay.requests_for("n1");
        return !asked.empty();
      },
      10));
  EXPECT_EQ(asked, json::parse(R"([{"lease": 7, "offset": 100, "max": 65536}])"));
  EXPECT_TRUE(relay.requests_for("n1").empty());  // asked once
  EXPECT_TRUE(relay.requests_for("n2").empty());  // not another node's
  // Another node's answer, one nobody asked for and a malformed one: dropped.
  relay.deliver("n2", json::parse(R"([{"lease": 7, "offset": 100, "data": "eA==", "size": 1,
                                       "found": true}])"));
  relay.deliver("n1", json::parse(R"([{"lease": 8, "offset": 100, "data": "eA==", "size": 1,
                                       "found": true}, {"lease": 7}])"));
  EXPECT_EQ(read.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  relay.deliver("n1", json::array({{{"lease", 7},
                                    {"offset", 100},
                                    {"data", LogRelay::base64("hello\n")},
                                    {"size", 106},
                                    {"found", true}}}));
  const auto got = read.get();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->data, "hello\n");
  EXPECT_EQ(got->size, 106);
  EXPECT_TRUE(got->found);
  // Nobody waits: nothing is asked.
  EXPECT_TRUE(relay.requests_for("n1").empty());
  EXPECT_FALSE(relay.fetch("n1", 9, 0, 0.05));  // no answer in time
}

}  // namespace
}  // namespace fairgpu::live
