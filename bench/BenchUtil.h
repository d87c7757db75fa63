// Shared by the benchmarks: the apps with an expert mapper in examples/mappers (globbed, sorted).
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace hone::bench {

inline std::vector<std::string> exampleApps() {
  std::vector<std::string> out;
  for (const auto &entry : std::filesystem::directory_iterator(std::string(HONE_SOURCE_DIR) + "/examples/mappers"))
    if (entry.path().extension() == ".map")
      out.push_back(entry.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace hone::bench
