// hone check FILE...: diagnostics only.
#include "cli/Commands.h"

#include "dsl/Frontend.h"
#include "model/App.h"
#include "model/Catalog.h"
#include "sim/AppCheck.h"
#include "support/Diagnostics.h"
#include "support/FileUtil.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

namespace hone::cli {

void addCheckCommand(CLI::App &app, Action &action) {
  struct Options {
    std::vector<std::string> files;
    std::string format = "text";
    bool fix = false;
    std::string app;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("check", "Check mapper policies and report every error and warning");
  cmd->add_option("files", opts->files, "Policy files (.map)")->required();
  cmd->add_option("--diagnostics", opts->format, "Diagnostic format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--fix", opts->fix,
                "Apply the fix-its of errors in place (the original is kept as FILE.orig), then check again");
  cmd->add_option("--app", opts->app,
                  "Also check task and region names against an application model (a name in models/apps or a "
                  ".toml path)");
  cmd->callback([opts, &action] {
    action = [opts] {
      std::optional<model::AppModel> appModel;
      if (!opts->app.empty()) {
        auto path = model::findModel("apps", opts->app);
        auto loaded = path ? model::loadApp(*path) : support::Expected<model::AppModel>(path.error());
        if (!loaded) {
          std::cerr << "hone: --app: " << loaded.error().message << "\n";
          return static_cast<int>(kUsage);
        }
        appModel = std::move(*loaded);
      }
      int status = kOk;
      auto all = nlohmann::json::array();
      for (const auto &path : opts->files) {
        auto file = readSource(path);
        if (!file) {
          status = kRejected;
          continue;
        }
        auto checked = dsl::checkSource(std::move(*file));
        if (opts->fix && !checked.ok()) {
          size_t applied = 0;
          std::string fixed = support::applyFixIts(*checked.file, checked.diags->diagnostics(), &applied);
          std::string error;
          // The original is kept beside the file; an earlier backup is never replaced.
          std::string backup = path + ".orig";
          std::error_code ec;
          for (int n = 1; std::filesystem::symlink_status(backup, ec).type() != std::filesystem::file_type::not_found;
               ++n)
            backup = fmt::format("{}.orig.{}", path, n);
          if (applied > 0 && support::writeFileAtomically(backup, checked.file->text(), &error) &&
              support::writeFileAtomically(path, fixed, &error)) {
            std::cerr << fmt::format("hone: applied {} fix-it{} to {} (the original is {})\n", applied,
                                     applied == 1 ? "" : "s", path, backup);
            checked = dsl::checkSource(support::SourceFile(path, fixed));
          } else if (applied > 0) {
            std::cerr << "hone: " << error << "\n";
          }
        }
        if (appModel && checked.ok()) {
          sim::checkAgainstApp(checked.program, *appModel, *checked.diags);
          checked.diags->sortByLocation();
        }
        if (!checked.ok())
          status = kRejected;
        if (opts->format == "json") {
          for (auto &d : support::toJson(*checked.file, checked.diags->diagnostics()))
            all.push_back(std::move(d));
        } else {
          printDiagnostics(checked);
          if (checked.ok())
            std::cout << fmt::format("{}: ok{}\n", path,
                                     checked.diags->warningCount()
                                         ? fmt::format(" ({} warning{})", checked.diags->warningCount(),
                                                       checked.diags->warningCount() == 1 ? "" : "s")
                                         : "");
        }
      }
      if (opts->format == "json")
        std::cout << all.dump(2) << "\n";
      return status;
    };
  });
}

} // namespace hone::cli
