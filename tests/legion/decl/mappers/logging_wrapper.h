// Test-only declaration of Legion's LoggingWrapper (see ../legion.h).
#ifndef HONE_TEST_LOGGING_WRAPPER_DECL_H
#define HONE_TEST_LOGGING_WRAPPER_DECL_H
#include "mappers/default_mapper.h"
namespace Legion {
namespace Mapping {
// (Really a ForwardingMapper; declared here over DefaultMapper so it is concrete.)
class LoggingWrapper : public DefaultMapper {
public:
  LoggingWrapper(Mapper *mapper, void *logger = NULL);
};
} // namespace Mapping
} // namespace Legion
#endif
