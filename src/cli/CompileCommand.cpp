// hone compile FILE [-o mapper.cc] [--class NAME] [--emit=cpp|ast]: a policy
// as a C++ Legion mapper, with hone_mapper_support.h written beside it.
#include "cli/Commands.h"

#include "dsl/Frontend.h"
#include "legion/Compiler.h"
#include "support/FileUtil.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace hone::cli {
namespace {

bool writeFile(const std::filesystem::path &path, std::string_view text) {
  std::string error;
  if (!support::writeFileAtomically(path.string(), text, &error)) {
    std::cerr << "hone: " << error << "\n";
    return false;
  }
  return true;
}

} // namespace

void addCompileCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string file;
    std::string output;
    std::string className;
    std::string registerFunction = "register_mappers";
    std::string emit = "cpp";
    bool loggingWrapper = false;
    bool noSupportHeader = false;
    int shardingIdBase = 7000;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("compile", "Compile a policy to a C++ Legion mapper");
  cmd->add_option("file", opts->file, "Policy file")->required();
  cmd->add_option("-o,--output", opts->output, "Output .cc (default: print to stdout)");
  cmd->add_option("--class", opts->className, "Mapper class name (default: from the file name, e.g. CircuitMapper)");
  cmd->add_option("--register-function", opts->registerFunction, "Name of the registration entry point")
      ->capture_default_str();
  cmd->add_option("--emit", opts->emit, "What to produce: cpp or ast")->check(CLI::IsMember({"cpp", "ast"}));
  cmd->add_flag("--logging-wrapper", opts->loggingWrapper, "Wrap the mapper in Legion's LoggingWrapper by default");
  cmd->add_option("--sharding-id-base", opts->shardingIdBase, "First sharding functor ID")->capture_default_str();
  cmd->add_flag("--no-support-header", opts->noSupportHeader, "Do not write hone_mapper_support.h beside -o");
  cmd->callback([opts, &action] {
    action = [opts]() -> int {
      auto file = readSource(opts->file);
      if (!file)
        return kRejected;
      auto checked = dsl::checkSource(std::move(*file));
      printDiagnostics(checked);
      if (!checked.ok()) {
        std::cerr << fmt::format("hone: {} has errors; not compiled\n", opts->file);
        return kRejected;
      }
      if (opts->emit == "ast") {
        std::cout << dsl::dumpAst(checked.program);
        return kOk;
      }
      std::filesystem::path source(opts->file);
      legion::CompileOptions co;
      co.className = opts->className.empty() ? legion::defaultClassName(source.stem().string()) : opts->className;
      co.registerFunction = opts->registerFunction;
      co.sourceName = source.filename().string();
      co.loggingWrapper = opts->loggingWrapper;
      co.shardingIdBase = opts->shardingIdBase;
      for (const auto &[what, name] : {std::pair{"--class", co.className}, {"--register-function", co.registerFunction}})
        if (!legion::isValidIdentifier(name)) {
          std::cerr << fmt::format("hone: {} '{}' is not a valid C++ identifier\n", what, name);
          return kUsage;
        }
      std::string cpp = legion::compileToCpp(checked.program, co);
      if (opts->output.empty()) {
        std::cout << cpp;
        return kOk;
      }
      std::filesystem::path out(opts->output);
      if (!writeFile(out, cpp))
        return kRejected;
      if (!opts->noSupportHeader) {
        auto header = out.parent_path() / "hone_mapper_support.h";
        if (!writeFile(header, legion::supportHeaderText()))
          return kRejected;
      }
      std::cerr << fmt::format("hone: wrote {}{}\n", out.string(),
                               opts->noSupportHeader ? "" : " and hone_mapper_support.h beside it");
      return kOk;
    };
  });
}

} // namespace hone::cli
