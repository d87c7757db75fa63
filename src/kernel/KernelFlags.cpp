// The kernel domain's flags of `hone tune`: the project that chooses the domain (--kernel), and
// how its variants are profiled and the best is compared. The command line knows none of them: the
// domain adds them (tune::Domain::addTuneFlags) and reads them back.
#include "kernel/KernelDomain.h"

#include <CLI/CLI.hpp>

namespace hone::kernel {

namespace {

class KernelFlags final : public tune::DomainFlags {
public:
  KernelFlags(CLI::App &cmd, const tune::CommonFlags &common) : common_(common) {
    KernelOptions &k = options_;
    const char *group = "Kernels (--kernel; docs/KERNELS.md)";
    project_ =
        cmd.add_option("--kernel", k.project, "Kernel project: a folder with hone.toml (hone kernel init makes one)")
            ->group(group);
    flags_.push_back(
        cmd.add_flag("--no-profile", noProfile_, "Do not profile new bests (the guided agent reads profiles)")
            ->group(group));
    flags_.push_back(cmd.add_option("--final-rounds", k.finalRounds,
                                    "Interleaved rounds timing the best beside the unmodified program and its -O3 "
                                    "-march=native build when it is written (0: none)")
                         ->check(CLI::Range(0, 100))
                         ->group(group));
    flags_.push_back(cmd.add_flag("--no-source-transforms", noSourceTransforms_,
                                  "No knobs of hone's own source transformations (only the manifest's)")
                         ->group(group));
    flags_.push_back(cmd.add_option("--ncu", k.ncuReport, "An Nsight Compute CSV report (ncu --csv) for the diagnosis")
                         ->group(group));
  }

  bool chosen() const override { return project_->count() > 0; }

  nlohmann::json options() const override {
    KernelOptions k = options_;
    k.profile = !noProfile_;
    k.sourceTransforms = !noSourceTransforms_;
    k.workdir = common_.workdir;
    return k.toJson();
  }

  std::vector<std::string> unread(bool chosen) const override {
    std::vector<std::string> out;
    if (!chosen)
      for (const CLI::Option *o : flags_)
        if (o->count() > 0)
          out.push_back(o->get_name() + " has no effect without --kernel");
    return out;
  }

private:
  const tune::CommonFlags &common_;
  KernelOptions options_;
  bool noProfile_ = false, noSourceTransforms_ = false;
  CLI::Option *project_ = nullptr;
  std::vector<const CLI::Option *> flags_; // every flag but --kernel
};

} // namespace

std::unique_ptr<tune::DomainFlags> addKernelTuneFlags(CLI::App &cmd, const tune::CommonFlags &common) {
  return std::make_unique<KernelFlags>(cmd, common);
}

} // namespace hone::kernel
