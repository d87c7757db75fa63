// hone fmt FILE [-i] [--check]: canonical formatting.
#include "cli/Commands.h"

#include "dsl/Formatter.h"
#include "dsl/Frontend.h"
#include "support/FileUtil.h"

#include <fmt/format.h>

#include <iostream>

namespace hone::cli {

void addFmtCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string file;
    bool inPlace = false;
    bool check = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("fmt", "Print a policy in canonical form");
  cmd->add_option("file", opts->file, "Policy file")->required();
  cmd->add_flag("-i,--in-place", opts->inPlace, "Rewrite the file instead of printing");
  cmd->add_flag("--check", opts->check,
                "Exit 1, naming the file on stderr, if it is not in canonical form; silent when it is");
  cmd->callback([opts, &action] {
    action = [opts] {
      auto file = readSource(opts->file);
      if (!file)
        return int(kRejected);
      auto checked = dsl::checkSource(std::move(*file));
      if (!checked.ok()) {
        printDiagnostics(checked);
        std::cerr << fmt::format("hone: {} has errors; not formatted\n", opts->file);
        return int(kRejected);
      }
      std::string formatted = dsl::format(checked.program);
      bool same = formatted == checked.file->text();
      if (opts->check) {
        if (!same)
          std::cerr << fmt::format("{}: not in canonical form (run hone fmt -i)\n", opts->file);
        return same ? int(kOk) : int(kRejected);
      }
      if (!opts->inPlace) {
        std::cout << formatted;
        return int(kOk);
      }
      if (same)
        return int(kOk);
      std::string error;
      if (!support::writeFileAtomically(opts->file, formatted, &error)) {
        std::cerr << "hone: " << error << "\n";
        return int(kRejected);
      }
      return int(kOk);
    };
  });
}

} // namespace hone::cli
