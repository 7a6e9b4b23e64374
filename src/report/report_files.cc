// report.html and figures/ written into a results folder (see
// fairgpu/html_report.h). PDFs come from Debian's rsvg-convert (librsvg2-bin)
// when it is installed: a figure is then one file a paper can include, with
// no browser in between. Without it the SVGs are still written and one note
// says why the PDFs are not.
#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "fairgpu/html_report.h"

extern char** environ;

namespace fairgpu {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

// `name` in a folder of PATH, or "".
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');) {
    const fs::path p = fs::path(d) / name;
    if (!d.empty() && access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// Converts each figures/<id>.svg to <id>.pdf, a few at once; a conversion
// that fails leaves no PDF and a note.
std::string convert_to_pdf(const fs::path& figures, const std::vector<std::string>& svgs) {
  const std::string tool = on_path("rsvg-convert");
  if (tool.empty())
    return "note: figures/*.pdf not written: no rsvg-convert on PATH (Debian package "
           "librsvg2-bin); the SVGs are\n";
  struct Job {
    pid_t pid;
    fs::path pdf;
  };
  std::string notes;
  std::vector<Job> running;
  auto wait_one = [&] {
    int status = 0;
    const pid_t pid = waitpid(running.front().pid, &status, 0);
    const Job job = running.front();
    running.erase(running.begin());
    if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::error_code ec;
      fs::remove(job.pdf, ec);
      notes += fmt::format("note: rsvg-convert failed on {}: no PDF\n",
                           job.pdf.filename().replace_extension(".svg").string());
    }
  };
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  // Cairo stamps a PDF with its creation time unless SOURCE_DATE_EPOCH says
  // otherwise: fixed (unless set), so two runs write the same bytes.
  std::vector<char*> env;
  bool dated = false;
  for (char** e = environ; *e; ++e) {
    env.push_back(*e);
    dated |= std::string_view(*e).starts_with("SOURCE_DATE_EPOCH=");
  }
  std::string epoch = "SOURCE_DATE_EPOCH=0";
  if (!dated) env.push_back(epoch.data());
  env.push_back(nullptr);
  for (const std::string& name : svgs) {
    if (running.size() >= 4) wait_one();
    const fs::path svg = figures / name, pdf = fs::path(svg).replace_extension(".pdf");
    std::vector<std::string> args = {tool, "-f", "pdf", "-o", pdf.string(), svg.string()};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, tool.c_str(), &actions, nullptr, argv.data(), env.data()) != 0) {
      notes += fmt::format("note: cannot run {}: no PDF of {}\n", tool, name);
      continue;
    }
    running.push_back({pid, pdf});
  }
  while (!running.empty()) wait_one();
  posix_spawn_file_actions_destroy(&actions);
  return notes;
}

}  // namespace

std::string write_report(const std::string& dir, const ReportOptions& options) {
  const Report report = build_report(dir, options);  // everything read before a write
  const fs::path figures = fs::path(dir) / "figures";
  std::error_code ec;
  fs::create_directories(figures, ec);
  if (ec)
    throw std::runtime_error(fmt::format("cannot create {}: {}", figures.string(), ec.message()));
  // An earlier report's figures (of runs no longer in the folder) would pass
  // for this one's.
  for (const auto& entry : fs::directory_iterator(figures, ec)) {
    const std::string ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".svg" || ext == ".pdf")) fs::remove(entry.path(), ec);
  }
  std::vector<std::string> names;
  for (const auto& [name, svg] : report.figures) {
    write_file(figures / name, svg);
    names.push_back(name);
  }
  write_file(fs::path(dir) / "report.html", report.html);
  return options.pdf ? convert_to_pdf(figures, names) : "";
}

}  // namespace fairgpu
