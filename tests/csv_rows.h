// Reading fairgpu's CSV outputs back in tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fairgpu::testing_support {

// Rows of a CSV as column -> cell (RFC 4180 quotes dropped; doubled quotes
// inside a quoted cell are not undone, so read only columns without them).
inline std::vector<std::map<std::string, std::string>> csv_rows(const std::string& text) {
  std::vector<std::map<std::string, std::string>> rows;
  std::stringstream in(text);
  std::string line;
  std::vector<std::string> header;
  auto split = [](const std::string& l) {
    std::vector<std::string> cells(1);
    bool quoted = false;
    for (char c : l) {
      if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        cells.emplace_back();
      else
        cells.back() += c;
    }
    return cells;
  };
  if (!std::getline(in, line)) return rows;
  header = split(line);
  while (std::getline(in, line)) {
    auto cells = split(line);
    EXPECT_EQ(cells.size(), header.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < cells.size() && i < header.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

}  // namespace fairgpu::testing_support
