// hone paths [--json]: where this hone finds its data (models, rules, prompts,
// the transformation catalogue, examples) and which overrides are set.
#include "cli/Commands.h"

#include "support/DataPaths.h"

#include <fmt/format.h>

#include <cstdlib>
#include <iostream>

namespace hone::cli {

void addPathsCommand(CLI::App &app, Action &action) {
  auto json = std::make_shared<bool>(false);
  auto *cmd = app.add_subcommand("paths", "Where hone finds its models, rules, prompts, catalogue and examples");
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->callback([json, &action] {
    action = [json]() -> int {
      const std::vector<std::pair<std::string, std::string>> kinds = {
          {"models", "HONE_MODELS"},         {"rules", "HONE_RULES"},       {"prompts", "HONE_PROMPTS"},
          {"catalogue", "HONE_CATALOGUE"},   {"examples/mappers", "HONE_EXAMPLES"}, {"examples/kernels", ""}};
      nlohmann::json out{{"executable_dir", support::executableDir()}};
      for (const auto &[kind, var] : kinds) {
        const char *env = var.empty() ? nullptr : std::getenv(var.c_str());
        nlohmann::json k{{"used", support::dataDir(kind)}, {"candidates", nlohmann::json::array()}};
        if (env && *env)
          k["override"] = {{"variable", var}, {"value", env}};
        for (const auto &c : support::dataDirCandidates(kind))
          k["candidates"].push_back({{"origin", c.origin}, {"path", c.path}, {"exists", c.exists}});
        out[kind] = k;
        if (!*json)
          std::cout << fmt::format("{:<17} {}{}\n", kind, support::dataDir(kind),
                                   env && *env ? fmt::format("  (overridden: {}={})", var, env) : "");
      }
      if (*json)
        std::cout << out.dump(2) << "\n";
      return kOk;
    };
  });
}

} // namespace hone::cli
