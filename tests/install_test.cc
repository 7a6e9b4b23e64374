// Packaging (issue 18): `cmake --install` lays out the programs, README, docs,
// examples, systemd units and default config where CMakeLists.txt says, and
// nothing else; the installed programs run; the units name only flags the
// installed `fairgpu` accepts; `cpack -G DEB` builds a .deb whose file list,
// dependencies and postinst `dpkg-deb` shows.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "fairgpu/provenance.h"
#include "live/config.h"
#include "run_binary.h"
#include "test_paths.h"

namespace fairgpu {
namespace {

namespace fs = std::filesystem;
using testing_support::quote;
using testing_support::slurp;

const fs::path kSource = FAIRGPU_SOURCE_DIR;

// Runs a shell command; its stdout and stderr together, and its status.
std::pair<int, std::string> shell(const std::string& cmd, const fs::path& out) {
  const int raw = std::system((cmd + " >" + quote(out.string()) + " 2>&1").c_str());
  return {WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out)};
}

class Install : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fairgpu-install-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

bool executable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0; }

// Every file under `root`, relative to it.
std::set<std::string> files_under(const fs::path& root) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out.insert(fs::relative(e.path(), root).string());
  return out;
}

// The Python module's file in the build tree (none without FAIRGPU_PYTHON).
std::set<std::string> python_module() {
  std::set<std::string> out;
  const fs::path dir = fs::path(FAIRGPU_BUILD_DIR) / "python";
  if (fs::is_directory(dir))
    for (const auto& f : files_under(dir))
      if (f.rfind("fairgpu.", 0) == 0 && f.ends_with(".so")) out.insert(f);
  return out;
}

// The man pages in the build tree (none without help2man).
std::set<std::string> man_pages() {
  std::set<std::string> out;
  const fs::path dir = fs::path(FAIRGPU_BUILD_DIR) / "man";
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".1") out.insert(e.path().filename().string());
  return out;
}

// What the install must hold: the programs, README, every file of docs/ and
// examples/ (the README demo's store and Python caches aside), the units and
// the default config.
std::set<std::string> expected_files() {
  std::set<std::string> want = {"bin/fairgpu",
                                "bin/fairgpu-train",
                                "share/doc/fairgpu/README.md",
                                "lib/systemd/system/fairgpu-serve.service",
                                "lib/systemd/system/fairgpu-agent.service",
                                "share/fairgpu/serve.json",
                                "share/fairgpu/fairgpu-agent.default"};
  for (const char* folder : {"docs", "examples"})
    for (const auto& f : files_under(kSource / folder))
      if (f.rfind("fairgpu-data/", 0) != 0 && f.find("__pycache__") == std::string::npos) {
        // The PyTorch job where a minimal image keeps it (not under doc/).
        if (f.rfind("pytorch/", 0) == 0)
          want.insert("share/fairgpu/examples/" + f);
        else
          want.insert("share/doc/fairgpu/" + std::string(folder) + "/" + f);
      }
  // The man pages, when built (help2man): fairgpu.1 and fairgpu-SUB.1.
  for (const auto& f : man_pages()) want.insert("share/man/man1/" + f);
  // The Python module, when built (FAIRGPU_PYTHON), into the Debian
  // interpreter's path.
  for (const auto& f : python_module())
    want.insert("lib/python3/dist-packages/" + f);
  return want;
}

TEST_F(Install, TreeHasTheProgramsDocsExamplesUnitsAndConfigAndNothingElse) {
  const fs::path prefix = dir_ / "prefix";
  auto [status, out] = shell(quote(FAIRGPU_CMAKE) + " --install " + quote(FAIRGPU_BUILD_DIR) +
                                 " --prefix " + quote(prefix.string()),
                             dir_ / "install.log");
  ASSERT_EQ(status, 0) << out;
  const std::set<std::string> want = expected_files();
  EXPECT_TRUE(want.count("share/doc/fairgpu/docs/job-protocol.md"));
  EXPECT_TRUE(want.count("share/fairgpu/examples/pytorch/train.py"));
  EXPECT_EQ(files_under(prefix), want);
  // A page for the program and one per subcommand, made from their help.
  if (!man_pages().empty()) {
    for (const char* page : {"fairgpu.1", "fairgpu-serve.1", "fairgpu-agent.1", "fairgpu-jobs.1"})
      EXPECT_TRUE(want.count("share/man/man1/" + std::string(page))) << page;
    const std::string serve = slurp(prefix / "share/man/man1/fairgpu-serve.1");
    EXPECT_NE(serve.find("\\-\\-config"), std::string::npos) << serve;  // an option of serve's
    EXPECT_NE(serve.find(".TH FAIRGPU-SERVE \"1\""), std::string::npos) << serve;
  }

  // The programs run from there; scripts stay executable.
  for (const char* p :
       {"bin/fairgpu", "bin/fairgpu-train", "share/fairgpu/examples/pytorch/train.py"})
    EXPECT_TRUE(executable(prefix / p)) << p;
  auto [v_status, version] =
      shell(quote((prefix / "bin/fairgpu").string()) + " --version", dir_ / "version.log");
  EXPECT_EQ(v_status, 0);
  EXPECT_EQ(version, "fairgpu " + fairgpu_version() + "\n");
  // The installed module imports (the Debian python3 it was built for).
  if (!python_module().empty()) {
    auto [py_status, py_out] =
        shell("PYTHONPATH=" + quote((prefix / "lib/python3/dist-packages").string()) +
                  " /usr/bin/python3 -c 'import fairgpu; print(fairgpu.__file__)'",
              dir_ / "python.log");
    EXPECT_EQ(py_status, 0) << py_out;
    EXPECT_NE(py_out.find(prefix.string()), std::string::npos) << py_out;
  }

  // The default config is a valid one, storing where the serve unit's
  // StateDirectory is.
  const live::ServeConfig config =
      live::read_serve_config((prefix / "share/fairgpu/serve.json").string());
  EXPECT_EQ(config.data_dir, "/var/lib/fairgpu");
  EXPECT_EQ(config.checkpoint_dir, "/var/lib/fairgpu-agent/checkpoints");
  const std::string serve_unit = slurp(prefix / "lib/systemd/system/fairgpu-serve.service");
  EXPECT_NE(serve_unit.find("StateDirectory=fairgpu\n"), std::string::npos);
  EXPECT_NE(serve_unit.find("ExecStart=/usr/bin/fairgpu serve --config /etc/fairgpu/serve.json\n"),
            std::string::npos);

  // Every --flag a unit passes is one the installed program's subcommand has.
  for (const auto& [unit, command] :
       {std::pair{"fairgpu-serve.service", "serve"}, std::pair{"fairgpu-agent.service", "agent"}}) {
    const std::string text = slurp(prefix / "lib/systemd/system" / unit);
    const auto start = text.find("ExecStart=");
    ASSERT_NE(start, std::string::npos) << unit;
    std::string exec = text.substr(start, text.find("\n\n", start) - start);
    exec = exec.substr(0, exec.find("\n#"));
    auto [h_status, help] = shell(
        quote((prefix / "bin/fairgpu").string()) + " " + command + " --help", dir_ / "help.log");
    EXPECT_EQ(h_status, 0) << help;
    const std::regex flag(R"((--[a-z][a-z-]+))");
    int flags = 0;
    for (std::sregex_iterator it(exec.begin(), exec.end(), flag), end; it != end; ++it, ++flags)
      EXPECT_NE(help.find((*it)[1].str()), std::string::npos) << unit << ": " << (*it)[1];
    EXPECT_GE(flags, 1) << exec;
  }
}

// systemd's own check of the units: no unknown key, no value it cannot parse
// (it warns and goes on, so the test wants no output at all), the program
// executable (pointed at the installed one, as the package's /usr/bin).
TEST_F(Install, SystemdAcceptsTheUnits) {
  if (std::system("command -v systemd-analyze >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "systemd-analyze is not installed";
  const fs::path prefix = dir_ / "prefix";
  ASSERT_EQ(shell(quote(FAIRGPU_CMAKE) + " --install " + quote(FAIRGPU_BUILD_DIR) + " --prefix " +
                      quote(prefix.string()),
                  dir_ / "install.log")
                .first,
            0);
  std::string units;
  for (const char* unit : {"fairgpu-serve.service", "fairgpu-agent.service"}) {
    std::string text = slurp(prefix / "lib/systemd/system" / unit);
    for (std::size_t at; (at = text.find("/usr/bin/fairgpu ")) != std::string::npos;)
      text.replace(at, 16, (prefix / "bin/fairgpu").string());
    std::ofstream(dir_ / unit) << text;
    units += " " + quote((dir_ / unit).string());
  }
  auto [status, out] = shell("systemd-analyze verify --man=no" + units, dir_ / "verify.log");
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "");
}

TEST_F(Install, DebPackageListsTheInstalledFilesUnderUsr) {
  if (std::system("command -v dpkg-deb >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "dpkg-deb is not installed";
  auto [status, out] = shell(quote(FAIRGPU_CPACK) + " --config " +
                                 quote(std::string(FAIRGPU_BUILD_DIR) + "/CPackConfig.cmake") +
                                 " -G DEB -B " + quote((dir_ / "pkg").string()),
                             dir_ / "cpack.log");
  ASSERT_EQ(status, 0) << out;
  fs::path deb;
  for (const auto& e : fs::directory_iterator(dir_ / "pkg"))
    if (e.path().extension() == ".deb") deb = e.path();
  ASSERT_FALSE(deb.empty()) << out;

  auto [c_status, listing] = shell("dpkg-deb -c " + quote(deb.string()), dir_ / "list");
  ASSERT_EQ(c_status, 0) << listing;
  std::set<std::string> listed;
  const std::regex entry(R"(^-\S+ \S+ +\d+ \S+ \S+ \./(\S+)$)");
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, entry)) listed.insert(m[1]);
  }
  std::set<std::string> want;
  for (const auto& f : expected_files()) want.insert("usr/" + f);
  EXPECT_EQ(listed, want) << listing;
  EXPECT_NE(listing.find("-rwxr-xr-x root/root"), std::string::npos) << listing;

  auto [f_status, fields] =
      shell("dpkg-deb -f " + quote(deb.string()) + " Package Version Depends", dir_ / "fields");
  ASSERT_EQ(f_status, 0) << fields;
  EXPECT_NE(fields.find("Package: fairgpu\n"), std::string::npos) << fields;
  // dpkg-shlibdeps found the libraries the program links, and adduser.
  for (const char* dep : {"adduser", "libsqlite3-0", "libssl3", "libc6"})
    EXPECT_NE(fields.find(dep), std::string::npos) << dep << " in " << fields;

  auto [e_status, e_out] =
      shell("dpkg-deb -e " + quote(deb.string()) + " " + quote((dir_ / "control").string()),
            dir_ / "extract");
  ASSERT_EQ(e_status, 0) << e_out;
  for (const char* script : {"postinst", "postrm"}) {
    EXPECT_TRUE(executable(dir_ / "control" / script)) << script;
    EXPECT_EQ(shell("sh -n " + quote((dir_ / "control" / script).string()), dir_ / "sh").first, 0)
        << script;
  }
}

}  // namespace
}  // namespace fairgpu
