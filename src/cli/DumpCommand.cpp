// hone dump --emit=tokens|ast FILE: the front end's intermediate forms.
#include "cli/Commands.h"

#include "dsl/Ast.h"
#include "dsl/Frontend.h"
#include "dsl/Lexer.h"

#include <iostream>

namespace hone::cli {

void addDumpCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string file;
    std::string emit = "ast";
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("dump", "Print the tokens or the AST of a policy");
  cmd->add_option("file", opts->file, "Policy file")->required();
  cmd->add_option("--emit", opts->emit, "What to print: tokens or ast")->check(CLI::IsMember({"tokens", "ast"}));
  cmd->callback([opts, &action] {
    action = [opts] {
      auto file = readSource(opts->file);
      if (!file)
        return int(kRejected);
      if (opts->emit == "tokens") {
        support::DiagnosticEngine diags(*file);
        std::cout << dsl::dumpTokens(dsl::lex(*file, diags));
        std::cerr << support::renderText(*file, diags.diagnostics());
        return diags.hasErrors() ? int(kRejected) : int(kOk);
      }
      auto checked = dsl::checkSource(std::move(*file));
      std::cout << dsl::dumpAst(checked.program);
      printDiagnostics(checked);
      return checked.ok() ? int(kOk) : int(kRejected);
    };
  });
}

} // namespace hone::cli
