#pragma once
// Writing files so that a crash never leaves a half-written one: write a temporary file beside the
// target, flush it to disk, then rename it over the target.

#include <filesystem>
#include <string_view>

namespace engine {

/// Writes bytes to path atomically. Creates missing parent folders. Throws Error(Io) naming the path.
void writeFileAtomically(const std::filesystem::path &path, std::string_view bytes);

/// Reads a whole file. Throws Error(Io) naming the path when it cannot be read.
std::string readFile(const std::filesystem::path &path);

} // namespace engine
