// `hone tune`'s domain flags: every registered domain adds its own to the command (Domain::addTuneFlags),
// and once the command line is parsed the domain the user chose (by its chooser flag: --app, --kernel)
// gives the run its name and options. The command line itself names no domain and no domain's option,
// so a domain registered anywhere (tests/tune/TuneTest.cpp registers one) is on the command line too.
#pragma once

#include "support/Expected.h"
#include "tune/Config.h"
#include "tune/Domain.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace hone::tune {

class TuneFlags {
public:
  /// Adds --workdir and every domain of `registry` with its flags to `cmd`, in registration order.
  TuneFlags(CLI::App &cmd, const Registry &registry);
  TuneFlags(const TuneFlags &) = delete;
  TuneFlags &operator=(const TuneFlags &) = delete;

  /// After `cmd` is parsed: the chosen domain's name and options into `config`, and a warning for each
  /// flag given that nothing reads into `warnings`. An error, naming the choosers, when no domain or more
  /// than one was chosen.
  support::Expected<bool> apply(TuneConfig &config, std::vector<std::string> &warnings) const;

private:
  CommonFlags common_; // the domains' flags read it after parsing: at a fixed address
  std::vector<std::pair<const Domain *, std::unique_ptr<DomainFlags>>> domains_;
};

} // namespace hone::tune
