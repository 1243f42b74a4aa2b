#pragma once

namespace engine {

/// The tunebench version, e.g. "0.1.0".
const char *version();

} // namespace engine
