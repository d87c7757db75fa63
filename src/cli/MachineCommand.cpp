// hone machine detect [-o FILE]: a machine model of this host (cores, caches, NUMA, memory, and
// bandwidths measured with STREAM-like kernels), for the model of real runs on it.
#include "cli/Commands.h"

#include "model/Detect.h"
#include "model/Machine.h"
#include "support/FileUtil.h"

#include <fmt/format.h>

#include <iostream>

namespace hone::cli {

void addMachineCommand(CLI::App &app, Action &action) {
  struct Options {
    std::string out;
    std::string name = "host";
    int cpus = 0;
    double sysmemGb = 0;
    double arrayMb = 0;
    bool noMeasure = false;
  };
  auto opts = std::make_shared<Options>();
  auto *machine = app.add_subcommand("machine", "Machine models of real hosts");
  machine->require_subcommand(1);
  auto *cmd = machine->add_subcommand(
      "detect", "Write a machine model of this host: cores, caches, NUMA, memory, measured bandwidths and flop rate");
  cmd->add_option("-o,--output", opts->out, "Where to write the TOML (default: stdout)");
  cmd->add_option("--name", opts->name, "The model's name")->capture_default_str();
  cmd->add_option("--cpus", opts->cpus, "CPU processors per node in the model (default: every core; match -ll:cpu)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--sysmem-gb", opts->sysmemGb, "System memory in the model (default: physical; match -ll:csize)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--array-mb", opts->arrayMb, "Size of each bandwidth-kernel array (default: 4 x the last-level "
                                               "cache, at least 64 MiB)")
      ->check(CLI::Range(1.0, 65536.0));
  cmd->add_flag("--no-measure", opts->noMeasure, "Only what the OS reports; bandwidths and flop rate as assumed");
  cmd->callback([opts, &action] {
    action = [opts] {
      model::DetectOptions d;
      d.measure = !opts->noMeasure;
      d.arrayMb = opts->arrayMb;
      model::HostFacts facts = model::detectHost(d);
      std::string text = model::machineToml(facts, opts->name, opts->cpus, opts->sysmemGb);
      // What hone writes, hone must read back.
      auto parsed = model::parseMachine(opts->out.empty() ? "<detected>" : opts->out, text);
      if (!parsed) {
        std::cerr << "hone: internal error: the detected machine model does not load: " << parsed.error().message
                  << "\n";
        return int(kInternal);
      }
      if (opts->out.empty()) {
        std::cout << text;
        return int(kOk);
      }
      std::string error;
      if (!support::writeFileAtomically(opts->out, text, &error)) {
        std::cerr << "hone: " << error << "\n";
        return int(kRejected);
      }
      std::cerr << fmt::format("hone: wrote {} ({})\n", opts->out, parsed->describe());
      return int(kOk);
    };
  });
}

} // namespace hone::cli
