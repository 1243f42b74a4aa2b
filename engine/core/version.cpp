#include "engine/core/version.h"

namespace engine {

const char *version() { return TUNEBENCH_VERSION; }

} // namespace engine
