#pragma once
// The top level of `tunebench`'s command line, shared by both executables (the front and
// tunebench-full), so that --help, --version, --db and the error format are the same in each.

#include "app/cli/command.h"

#include <memory>
#include <vector>

namespace app::cli {

/// The description, --version, --db (into globals.storePath) and the failure message.
void configureRootApp(CLI::App &app, GlobalOptions &globals);

/// Parses argv (one subcommand required) and runs the command chosen; returns the exit code
/// (CLI11's for a usage error, after printing it).
int parseAndRun(CLI::App &app, const std::vector<std::unique_ptr<Command>> &commands, int argc, char **argv);

} // namespace app::cli
