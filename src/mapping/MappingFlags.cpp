// The mapping domain's flags of `hone tune`: the app model that chooses the domain (--app), the
// machine and size, the model's noise, and the command evaluator's settings. The command line
// knows none of them: the domain adds them (tune::Domain::addTuneFlags) and reads them back.
#include "mapping/MappingDomain.h"

#include <CLI/CLI.hpp>

#include <algorithm>

namespace hone::mapping {

namespace {

class MappingFlags final : public tune::DomainFlags {
public:
  MappingFlags(CLI::App &cmd, const tune::CommonFlags &common) : common_(common) {
    MappingOptions &m = options_;
    const char *group = "Mapping (--app; docs/USER_GUIDE.md)";
    app_ = cmd.add_option("--app", m.app, "Application model: a name in models/apps or a .toml path")->group(group);
    add(cmd.add_option("--machine", m.machine, "Machine model")->capture_default_str()->group(group));
    add(cmd.add_option("--size", m.size, "Problem size (default: the app's)")->group(group));
    add(cmd.add_option("--noise", m.noise, "Log-normal measurement noise of the model (sigma)")
            ->check(CLI::Range(0.0, 1.0))
            ->group(group));
    add(cmd.add_option("--evaluator", m.evaluator, "model (default) or command (real builds and runs)")
            ->capture_default_str()
            ->group(group));
    commandOnly(
        cmd.add_option("--build", m.command.build, "Command evaluator: build command ({policy} {cpp} {dir} {hash})"),
        group);
    commandOnly(cmd.add_option("--run", m.command.run, "Command evaluator: run command ({policy} {cpp} {dir} {hash})"),
                group);
    commandOnly(cmd.add_option("--metric", m.command.metric, "Command evaluator: regex; group 1 is the metric"), group);
    commandOnly(cmd.add_flag("--higher-is-better", m.command.higherIsBetter,
                             "Command evaluator: the metric is a throughput (default: a time)"),
                group);
    add(cmd.add_option("--timeout", m.command.timeoutS, "Command evaluator: seconds per command")
            ->capture_default_str()
            ->group(group));
    commandOnly(cmd.add_option("--repeats", m.command.repeats,
                               "Command evaluator: runs per candidate (the metric is their median)")
                    ->capture_default_str()
                    ->check(CLI::Range(1, 1000)),
                group);
    commandOnly(cmd.add_option("--memory-mb", memoryMb_, "Command evaluator: address-space limit per command (MiB)"),
                group);
    add(cmd.add_option("--surrogate", m.surrogate,
                       "Command evaluator: 'model' searches the performance model and runs only what it predicts best")
            ->check(CLI::IsMember({"model"}))
            ->group(group));
    add(cmd.add_option("--surrogate-simulations", m.surrogateSimulations,
                       "Command evaluator with --surrogate: model evaluations per real one")
            ->capture_default_str()
            ->check(CLI::Range(1, 1000000))
            ->group(group));
  }

  bool chosen() const override { return app_->count() > 0; }

  nlohmann::json options() const override {
    MappingOptions m = options_;
    m.command.workdir = common_.workdir;
    m.command.memoryLimitBytes = static_cast<size_t>(memoryMb_ * 1024 * 1024);
    return m.toJson();
  }

  std::vector<std::string> unread(bool chosen) const override {
    std::vector<std::string> out;
    for (const CLI::Option *o : flags_)
      if (o->count() > 0) {
        if (!chosen)
          out.push_back(o->get_name() + " has no effect without --app");
        else if (options_.evaluator != "command" && isCommandOnly(o))
          out.push_back(o->get_name() + " has no effect without --evaluator command");
      }
    return out;
  }

private:
  void add(CLI::Option *o) { flags_.push_back(o); }
  void commandOnly(CLI::Option *o, const char *group) {
    o->group(group);
    add(o);
    commandOnly_.push_back(o);
  }
  bool isCommandOnly(const CLI::Option *o) const {
    return std::find(commandOnly_.begin(), commandOnly_.end(), o) != commandOnly_.end();
  }

  const tune::CommonFlags &common_;
  MappingOptions options_;
  double memoryMb_ = 0;
  CLI::Option *app_ = nullptr;
  std::vector<const CLI::Option *> flags_, commandOnly_; // every flag but --app; those only --evaluator command reads
};

} // namespace

std::unique_ptr<tune::DomainFlags> addMappingTuneFlags(CLI::App &cmd, const tune::CommonFlags &common) {
  return std::make_unique<MappingFlags>(cmd, common);
}

} // namespace hone::mapping
