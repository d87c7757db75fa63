// hone: the command-line driver. A thin layer over the libraries: parse the
// command line, run one subcommand, map its outcome to an exit code.
#include "cli/Commands.h"

#include "support/StringUtil.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <sstream>

#ifndef HONE_VERSION
#define HONE_VERSION "unknown"
#endif

namespace {

/// The long option names of `cmd` ("--iterations"), for did-you-mean.
std::vector<std::string> optionNames(const CLI::App &cmd) {
  std::vector<std::string> out;
  for (const CLI::Option *o : cmd.get_options())
    for (const auto &l : o->get_lnames())
      out.push_back("--" + l);
  return out;
}

/// CLI11's message with hone's prefix, and a did-you-mean for each option it did not expect.
std::string usageError(const CLI::App &app, const std::string &command, const CLI::ParseError &e) {
  std::string message = e.what();
  const CLI::App *cmd = nullptr;
  for (const CLI::App *c : app.get_subcommands(std::function<bool(const CLI::App *)>(nullptr)))
    if (!command.empty() && c->get_name() == command)
      cmd = c;
  std::vector<std::string> names = optionNames(cmd ? *cmd : app);
  std::vector<std::string> hints;
  std::istringstream words(message);
  for (std::string w; words >> w;) {
    while (!w.empty() && (w.back() == ',' || w.back() == '.'))
      w.pop_back();
    if (w.rfind("--", 0) != 0)
      continue;
    std::string name = w.substr(0, w.find('='));
    if (std::find(names.begin(), names.end(), name) != names.end())
      continue;
    if (auto close = hone::support::closestMatch(name, names))
      hints.push_back("did you mean '" + *close + "' for '" + name + "'?");
  }
  std::string out = "hone: " + message;
  for (const auto &h : hints)
    out += "\nhone: " + h;
  out += "\nRun 'hone " + (cmd ? command + " " : std::string()) + "--help' for the options.";
  return out;
}

} // namespace

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
    addSweepCommand(app, action);
    addRunsCommand(app, action);
    addShowCommand(app, action);
    addExportCommand(app, action);
    addReportCommand(app, action);
    addPlotCommand(app, action);
    addServeCommand(app, action);
    addLegionProfCommand(app, action);
    addMachineCommand(app, action);
    addModelCommand(app, action);
    addSpaceCommand(app, action);
    addLlmCheckCommand(app, action);
    addKernelCommand(app, action);
    addPathsCommand(app, action);
    addDescribeCommand(app, action);
    // `hone help [COMMAND]`, and a misspelt command named as such (CLI11 would only say that one is required).
    std::vector<std::string> args(argv + 1, argv + argc);
    std::vector<std::string> commands;
    for (const CLI::App *c : app.get_subcommands(std::function<bool(CLI::App *)>(nullptr)))
      if (!c->get_name().empty())
        commands.push_back(c->get_name());
    if (!args.empty() && args[0] == "help") {
      if (args.size() > 1 && std::find(commands.begin(), commands.end(), args[1]) != commands.end()) {
        std::cout << app.get_subcommand(args[1])->help();
        return kOk;
      }
      std::cout << app.help();
      return args.size() > 1 ? int(kUsage) : int(kOk);
    }
    if (!args.empty() && !args[0].empty() && args[0][0] != '-' &&
        std::find(commands.begin(), commands.end(), args[0]) == commands.end()) {
      auto close = hone::support::closestMatch(args[0], commands);
      std::cerr << "hone: unknown command '" << args[0] << "'"
                << (close ? "; did you mean '" + *close + "'?" : std::string()) << "\n"
                << "Run 'hone --help' (or 'hone help') for the commands.\n";
      return kUsage;
    }
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp &e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp &e) {
      return app.exit(e);
    } catch (const CLI::CallForVersion &e) {
      return app.exit(e);
    } catch (const CLI::ParseError &e) {
      std::cerr << usageError(app, args.empty() ? std::string() : args[0], e) << "\n";
      return kUsage;
    }
    return action ? action() : int(kUsage);
  } catch (const std::exception &e) {
    std::cerr << "hone: internal error: " << e.what() << "\n";
    return kInternal;
  }
}
