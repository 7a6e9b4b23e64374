// examples/pytorch/train.py on its own (issue 18; under serve and agents it
// is tested in live_e2e_test.cc): a 2-process gang on this machine (gloo)
// where only rank 1 gets SIGUSR1 still stops as one, both ranks at the same
// step, rank 0 checkpointing there, both exiting 0 (a rank leaving alone
// would strand its peer in a collective); and bad input is one line, exit 2.
// Skipped without Debian's python3-torch (scripts/setup.sh installs it).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>

#include "run_binary.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

namespace fs = std::filesystem;
using testing_support::quote;
using testing_support::slurp;

const std::string kPython = "/usr/bin/python3";
const std::string kScript = std::string(FAIRGPU_SOURCE_DIR) + "/examples/pytorch/train.py";

bool have_torch() {
  static const bool have =
      std::system((quote(kPython) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
  return have;
}

// A TCP port free on 127.0.0.1 now (the kernel's pick for port 0). A port
// computed from the pid fell in the ephemeral range, where a connection of a
// test running beside this one held it (EADDRINUSE at the rendezvous).
std::string free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return "";
  }
  ::close(fd);
  return std::to_string(ntohs(addr.sin_port));
}

class PyTorchJob : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_torch())
      GTEST_SKIP() << "python3-torch is not installed (scripts/setup.sh installs it)";
    dir_ = fs::temp_directory_path() /
           ("fairgpu-torch-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure() && !dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(PyTorchJob, AGangSignalledOnOneRankStopsEveryRankAtTheSameStep) {
  // Two processes of one gang, as fairgpu starts a gang's parts on two nodes;
  // rank 0 alone writes progress. SIGUSR1 goes to rank 1 only.
  const std::string port = free_port();
  ASSERT_NE(port, "");
  const std::string run = quote(kPython) + " " + quote(kScript) +
                          " --iterations 100000 --steps-per-s 200 --checkpoint-dir ckpt";
  const std::string script =
      "cd " + quote(dir_.string()) + " && export MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port +
      " WORLD_SIZE=2 LOCAL_WORLD_SIZE=1\n"
      "RANK=0 " +
      run +
      " --progress-file progress >r0.log 2>&1 & p0=$!\n"
      "RANK=1 " +
      run +
      " >r1.log 2>&1 & p1=$!\n"
      // A hang fails, not stalls. The watchdog keeps no hold on the test's
      // output: its sleep outlives the kill below, and ctest waited for it
      // (every run of this test took 91 s under ctest, a few seconds alone).
      "(sleep 90; kill -9 $p0 $p1) >/dev/null 2>&1 & watchdog=$!\n"
      "for i in $(seq 600); do [ \"$(cat progress 2>/dev/null || echo 0)\" -ge 50 ] && break; "
      "sleep 0.1; done\n"
      "kill -USR1 $p1\n"
      "wait $p0; e0=$?; wait $p1; e1=$?; echo \"$e0 $e1\" >codes\n"
      "kill $watchdog 2>/dev/null; true\n";
  ASSERT_EQ(std::system(("bash -c " + quote(script)).c_str()), 0);
  const std::string r0 = slurp(dir_ / "r0.log"), r1 = slurp(dir_ / "r1.log");
  EXPECT_EQ(slurp(dir_ / "codes"), "0 0\n") << r0 << r1;
  const std::regex stop0(R"(rank 0 stopped by signal at step (\d+), checkpointed)");
  const std::regex stop1(R"(rank 1 stopped by signal at step (\d+))");
  std::smatch m0, m1;
  ASSERT_TRUE(std::regex_search(r0, m0, stop0)) << r0;
  ASSERT_TRUE(std::regex_search(r1, m1, stop1)) << r1;
  EXPECT_EQ(m0[1], m1[1]);
  EXPECT_GE(std::stoi(m0[1]), 50);
  EXPECT_EQ(slurp(dir_ / "progress"), m0[1].str() + "\n");
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / "checkpoint.pt"));
}

TEST_F(PyTorchJob, BadInputIsOneLineAndExitTwo) {
  auto run = [&](const std::string& env, const std::string& args) {
    const std::string cmd = "cd " + quote(dir_.string()) + " && " + env + " " + quote(kPython) +
                            " " + quote(kScript) + " " + args + " >out 2>err";
    const int raw = std::system(cmd.c_str());
    return std::pair{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(dir_ / "err")};
  };
  auto [status, err] = run("", "--iterations 0");
  EXPECT_EQ(status, 2);
  EXPECT_EQ(err, "train.py: --iterations: must be at least 1, got 0\n");
  std::tie(status, err) = run("WORLD_SIZE=2 RANK=2", "--iterations 5");
  EXPECT_EQ(status, 2);
  EXPECT_EQ(err, "train.py: RANK 2 + LOCAL_WORLD_SIZE 1 exceeds WORLD_SIZE 2\n");
  std::tie(status, err) = run("WORLD_SIZE=3 RANK=0", "--iterations 5 --batch 64");
  EXPECT_EQ(status, 2);
  EXPECT_EQ(err,
            "train.py: --batch 64: must be a multiple of WORLD_SIZE 3 (each rank takes an equal "
            "share)\n");
  // A checkpoint of another configuration is refused, not trained on.
  std::tie(status, err) = run("", "--iterations 5 --seed 1 --checkpoint-dir c");
  ASSERT_EQ(status, 0) << err;
  std::tie(status, err) = run("", "--iterations 5 --seed 2 --checkpoint-dir c");
  EXPECT_EQ(status, 2);
  EXPECT_NE(err.find("written under another configuration"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace
}  // namespace fairgpu
