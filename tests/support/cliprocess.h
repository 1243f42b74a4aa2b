#pragma once
// Running the `tunebench` binary as a user would, one child process per command, with stdout and
// stderr captured to files. DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM are unset in the child, so
// it stays headless.

#include <filesystem>
#include <string>
#include <vector>

#include <sys/types.h>

namespace testing_support {

struct ProcessResult {
    int exitCode = -1; ///< the exit status, or 128 + signal when killed
    std::string out;
    std::string err;
};

/// A started child: its pid and where its output goes.
struct ChildProcess {
    pid_t pid = -1;
    std::filesystem::path outFile;
    std::filesystem::path errFile;
};

/// Starts `binary args...` with output captured to `captureDir`/`tag`.out|.err.
ChildProcess spawnProcess(const std::string &binary, const std::vector<std::string> &args,
                          const std::filesystem::path &captureDir, const std::string &tag);

/// Waits for the child and reads what it printed.
ProcessResult finishProcess(const ChildProcess &child);

/// spawnProcess then finishProcess.
ProcessResult runProcess(const std::string &binary, const std::vector<std::string> &args,
                         const std::filesystem::path &captureDir, const std::string &tag = "cmd");

} // namespace testing_support
