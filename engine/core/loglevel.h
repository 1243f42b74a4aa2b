#pragma once

namespace engine {

/// Severity of a log line or run event.
enum class LogLevel { Debug, Info, Warning, Error };

inline const char *logLevelName(LogLevel level)
{
    switch (level) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warning: return "warning";
    case LogLevel::Error: return "error";
    }
    return "info";
}

} // namespace engine
