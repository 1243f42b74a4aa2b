#pragma once
// How tunebench writes byte sizes and durations for people: one formatter for the CLI, the GUI and
// the engine's messages, so that a value reads the same everywhere.
//
//   engine::formatBytes(1536);           // "1.50 KiB"
//   engine::formatBytes(1536, 1);        // "1.5 KiB"   (the GUI's compact form)
//   engine::formatDuration(3725);        // "1:02:05"
//   engine::formatDuration(-1);          // "–"         (unknown: not yet measured)

#include <cstdint>
#include <string>

namespace engine {

/// Binary units (B, KiB, MiB, GiB, TiB, PiB, EiB) with `decimals` digits after the point; below 1 KiB the
/// whole number of bytes ("980 B"). A value never reads 1024 of a unit: it moves to the next unit
/// where rounding would give that ("1.0 GiB", not "1024.0 MiB"). Negative sizes keep their sign.
std::string formatBytes(int64_t bytes, int decimals = 2);

/// "M:SS" under an hour, "H:MM:SS" from an hour on (seconds rounded). A duration that is unknown
/// (negative, NaN or infinite) reads "–" (an en dash).
std::string formatDuration(double seconds);

} // namespace engine
