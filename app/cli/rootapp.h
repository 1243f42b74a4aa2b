#pragma once
// The top level of `tunebench`'s command line, shared by both executables (the front and
// tunebench-full), so that --help, --version, --db and the error format are the same in each.

#include "app/cli/command.h"

namespace app::cli {

/// The description, --version, --db (into globals.storePath) and the failure message.
void configureRootApp(CLI::App &app, GlobalOptions &globals);

} // namespace app::cli
