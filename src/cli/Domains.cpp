// The one place that names every domain and every executor other than the
// local one: registers them (and the domains' agents) at start-up.
#include "cli/Commands.h"

#include "cluster/Slurm.h"
#include "kernel/KernelDomain.h"
#include "mapping/MappingDomain.h"
#include "tune/Domain.h"

namespace hone::cli {

void registerDomains() {
  tune::Registry &r = tune::Registry::instance();
  mapping::registerMappingDomain(r);
  kernel::registerKernelDomain(r);
  cluster::registerSlurmExecutor();
}

} // namespace hone::cli
