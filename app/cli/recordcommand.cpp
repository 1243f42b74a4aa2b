// `tunebench record`: runs a user's Python program under tunebench's recorder (the Python package
// tunebench_record, shipped in the resources' python/ folder). When backward fails with PyTorch's
// in-place error or a NaN/Inf first appears, the recorder writes a trace and runs `tunebench inspect
// --trace FILE` on it, so the diagnosis is the engine's. The program's own output, exception and exit
// status pass through: this command replaces itself with the Python process. No libtorch here.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"

#include "engine/core/paths.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace app::cli {
namespace {

namespace fs = std::filesystem;

/// The folder that holds the tunebench_record package: the installed resources' python/, or the
/// checkout's in a build tree.
fs::path pythonPackageFolder() { return engine::resourcesDir() / "python"; }

/// This executable, for the recorder to call back (`tunebench inspect --trace`).
std::string selfExecutable(const char *argv0)
{
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(argv0) : self.string();
}

class RecordCommand : public Command {
public:
    explicit RecordCommand(CLI::App &app)
    {
        m_command = app.add_subcommand("record", commandSummary("record"));
        m_command->footer("Runs SCRIPT with ARGS under the recorder. When backward fails with PyTorch's in-place\n"
                          "error, or a NaN/Inf first appears, it writes a trace (docs/trace-format.md) and prints\n"
                          "the diagnosis: the op, module and line of your code that did it, and how to fix it.\n"
                          "Without the binary: PYTHONPATH=$(tunebench record --print-python-path) python3 -m\n"
                          "tunebench_record SCRIPT; in a notebook: import tunebench_record; tunebench_record.enable().\n"
                          "The exit status is the program's.");
        m_command->add_option("--python", m_python, "The Python interpreter to run (one with torch >= 1.13)")
            ->capture_default_str();
        m_command->add_option("--trace", m_trace, "Where to write the trace (default: a file in $TMPDIR, printed)");
        m_command->add_flag("--json", m_json, "Print the diagnosis as the JSON object of `tunebench inspect --json`");
        m_command->add_flag("--no-nan-check", m_noNanCheck, "Do not look for the first NaN/Inf (only in-place errors)");
        m_command->add_option("--max-record-mib", m_maxRecordMib, "Memory bound of the recorded window in MiB")
            ->check(CLI::PositiveNumber);
        m_command->add_flag("--print-python-path", m_printPath,
                            "Print the folder holding the tunebench_record package (for PYTHONPATH) and exit");
        m_command->add_option("script", m_script, "The Python program to run");
        m_command->prefix_command(); // what follows SCRIPT is the program's, even words starting with '-'
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        const fs::path package = pythonPackageFolder();
        if (m_printPath) {
            std::printf("%s\n", package.string().c_str());
            return ExitOk;
        }
        if (m_script.empty()) {
            std::fprintf(stderr, "tunebench: record needs a script: tunebench record [options] SCRIPT [ARGS...]\n");
            return ExitUsage;
        }
        std::error_code ec;
        if (!fs::is_regular_file(m_script, ec)) {
            std::fprintf(stderr, "tunebench: no such script: %s\n", m_script.c_str());
            return ExitFailed;
        }
        if (!fs::is_directory(package / "tunebench_record", ec)) {
            std::fprintf(stderr, "tunebench: the recorder is missing: %s has no tunebench_record package; reinstall "
                                 "tunebench\n", package.string().c_str());
            return ExitFailed;
        }

        std::vector<std::string> words = {m_python, "-m", "tunebench_record"};
        if (!m_trace.empty())
            words.insert(words.end(), {"--trace", m_trace});
        if (m_noNanCheck)
            words.push_back("--no-nan-check");
        if (m_maxRecordMib > 0)
            words.insert(words.end(), {"--max-record-mib", std::to_string(m_maxRecordMib)});
        words.push_back(m_script);
        for (const std::string &arg : m_command->remaining())
            words.push_back(arg);

        const char *existing = std::getenv("PYTHONPATH");
        const std::string pythonPath = package.string() + (existing && *existing ? ":" + std::string(existing) : "");
        ::setenv("PYTHONPATH", pythonPath.c_str(), 1);
        ::setenv("TUNEBENCH_CLI", selfExecutable("tunebench").c_str(), 1);
        if (m_json)
            ::setenv("TUNEBENCH_RECORD_JSON", "1", 1);
        std::fflush(nullptr);

        std::vector<char *> argv;
        for (std::string &word : words)
            argv.push_back(word.data());
        argv.push_back(nullptr);
        ::execvp(argv[0], argv.data());
        const int error = errno;
        std::fprintf(stderr, "tunebench: cannot run %s: %s (give the interpreter with --python EXE)\n", m_python.c_str(),
                     std::strerror(error));
        return ExitFailed;
    }

private:
    CLI::App *m_command = nullptr;
    std::string m_python = "python3";
    std::string m_trace;
    std::string m_script;
    int m_maxRecordMib = 0;
    bool m_json = false;
    bool m_noNanCheck = false;
    bool m_printPath = false;
};

} // namespace

std::unique_ptr<Command> makeRecordCommand(CLI::App &app, const GlobalOptions &)
{
    return std::make_unique<RecordCommand>(app);
}

} // namespace app::cli
