// hone: the command-line driver. A thin layer over the libraries: parse the
// command line, run one subcommand, map its outcome to an exit code.
#include "cli/Commands.h"

#include <iostream>

#ifndef HONE_VERSION
#define HONE_VERSION "unknown"
#endif

int main(int argc, char **argv) {
  using namespace hone::cli;
  try {
    CLI::App app{"hone: makes parallel programs faster -- tune Legion mappers and compute kernels", "hone"};
    app.set_version_flag("--version", std::string("hone ") + HONE_VERSION);
    app.require_subcommand(1);
    app.footer("Exit codes: 0 success, 1 input rejected (diagnostics printed), 2 usage error, 3 internal error.\n"
               "Run 'hone COMMAND --help' for a command's options; docs/USER_GUIDE.md has them all.");
    registerDomains();
    Action action;
    addCheckCommand(app, action);
    addCompileCommand(app, action);
    addFmtCommand(app, action);
    addEvalCommand(app, action);
    addSimulateCommand(app, action);
    addDumpCommand(app, action);
    addTuneCommand(app, action);
    addResumeCommand(app, action);
    addRunsCommand(app, action);
    addShowCommand(app, action);
    addExportCommand(app, action);
    addSpaceCommand(app, action);
    addLlmCheckCommand(app, action);
    addKernelCommand(app, action);
    addPathsCommand(app, action);
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion &e) {
      return app.exit(e);
    } catch (const CLI::ParseError &e) {
      app.exit(e);
      return kUsage;
    }
    return action ? action() : int(kUsage);
  } catch (const std::exception &e) {
    std::cerr << "hone: internal error: " << e.what() << "\n";
    return kInternal;
  }
}
