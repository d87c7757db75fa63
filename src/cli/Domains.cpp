// The one place that names every domain: registers them (and their agents)
// with tune's registry at start-up.
#include "cli/Commands.h"

#include "kernel/KernelDomain.h"
#include "mapping/MappingDomain.h"
#include "tune/Domain.h"

namespace hone::cli {

void registerDomains() {
  tune::Registry &r = tune::Registry::instance();
  mapping::registerMappingDomain(r);
  kernel::registerKernelDomain(r);
}

} // namespace hone::cli
