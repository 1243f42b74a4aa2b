#pragma once
// What this build is: tunebench's version and the libtorch it was built against. No libtorch
// needed at run time (the front executable prints --version without loading it).

#include <string>

namespace engine {

/// The tunebench version, e.g. "0.1.0".
const char *version();

/// True when this build links a CUDA libtorch (decided when tunebench was configured).
bool torchHasCuda();

/// "tunebench 0.1.0, libtorch 1.13.0 (CPU-only)" for --version.
std::string versionLine();

} // namespace engine
