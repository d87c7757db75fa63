// hone legion-prof LOG... [--json]: what a real Legion run's profiler logs say, in hone's terms.
#include "cli/Commands.h"

#include "legion/ProfLog.h"
#include "support/StringUtil.h"

#include <iostream>

namespace hone::cli {

void addLegionProfCommand(CLI::App &app, Action &action) {
  struct Options {
    std::vector<std::string> logs;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("legion-prof", "Read a real Legion run's profiler logs (-lg:prof): tasks, "
                                                "processors, copies, overheads and the bottlenecks AutoGuide sees");
  cmd->add_option("logs", opts->logs, "The run's Legion Prof logs (one per node; gzip or plain)")->required();
  cmd->add_flag("--json", opts->json, "Print the profile as JSON (the form hone simulate --json prints)");
  cmd->callback([opts, &action] {
    action = [opts] {
      std::vector<std::string> warnings;
      auto prof = legion::readLegionProfile(opts->logs, &warnings);
      if (!prof) {
        std::cerr << "hone: " << support::printable(prof.error().message) << "\n"; // it may quote the log
        return int(kRejected);
      }
      for (const auto &w : warnings)
        std::cerr << "hone: warning: " << support::printable(w) << "\n";
      if (opts->json)
        std::cout << legion::toProfileJson(*prof).dump(2) << "\n";
      else {
        std::cout << support::printable(legion::summarize(*prof), true); // task and processor names from the log
        for (const auto &b : legion::toProfileJson(*prof)["bottlenecks"])
          std::cout << "bottleneck (" << b["kind"].get<std::string>() << "): "
                    << support::printable(b["detail"].get<std::string>()) << "\n";
      }
      return int(kOk);
    };
  });
}

} // namespace hone::cli
