#pragma once
// Shared by the libFuzzer targets: the contract every reader of outside input keeps is "a clean
// engine::Error or a result": a crash, a sanitizer report or any other exception is a finding.

#include "engine/core/error.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace fuzz {

inline std::string_view asText(const uint8_t *data, size_t size) { return {reinterpret_cast<const char *>(data), size}; }

/// Runs `call`; engine::Error is the expected way to refuse bad input, anything else aborts so that
/// libFuzzer saves the input (a std::out_of_range or json::type_error reaching a caller is a bug:
/// callers only catch engine::Error).
template <typename Call>
void expectCleanError(Call call)
{
    try {
        call();
    } catch (const engine::Error &) {
    } catch (const std::exception &e) {
        std::fprintf(stderr, "fuzz: an exception other than engine::Error escaped: %s\n", e.what());
        std::abort();
    }
}

/// A folder of this process's own under $TMPDIR (or /tmp), for readers that take a path.
inline const std::filesystem::path &scratchFolder()
{
    static const std::filesystem::path folder = [] {
        const char *tmp = std::getenv("TMPDIR");
        std::filesystem::path path = std::filesystem::path(tmp && *tmp ? tmp : "/tmp") /
                                     ("tunebench-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(path);
        return path;
    }();
    return folder;
}

/// Writes `bytes` to `name` in the scratch folder and returns its path.
inline std::filesystem::path writeScratch(const std::string &name, std::string_view bytes)
{
    const std::filesystem::path path = scratchFolder() / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
}

} // namespace fuzz
