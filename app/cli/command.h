#pragma once
// The headless subcommands of `tunebench`. Each registers its options on a CLI11 subcommand and
// runs when chosen. None of them creates a QApplication.

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace app::cli {

/// Options shared by every subcommand.
struct GlobalOptions {
    std::string storePath; ///< --db: the run database; empty = the setting, else the XDG default
};

/// One subcommand: its CLI11 node and what it does.
class Command {
public:
    virtual ~Command() = default;
    virtual CLI::App *subcommand() const = 0;
    /// Runs the parsed command; returns the process exit code.
    virtual int run() = 0;
};

std::unique_ptr<Command> makeTrainCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeRunsCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeTokenizeCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeScoreCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeGenerateCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeDoctorCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makePlanCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeInspectCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeExportCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeLaunchCommand(CLI::App &app, const GlobalOptions &globals);
std::unique_ptr<Command> makeRecordCommand(CLI::App &app, const GlobalOptions &globals);

/// Exit codes of the CLI.
enum ExitCode : int { ExitOk = 0, ExitFailed = 1, ExitUsage = 2, ExitCancelled = 130 };

} // namespace app::cli
