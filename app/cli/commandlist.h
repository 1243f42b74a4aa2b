#pragma once
// The subcommands of `tunebench`, by name, with the line `--help` shows for each. One table for
// both executables: the front lists every command from it, runs its own (runs, tokenize, plan:
// no libtorch) and hands the others to tunebench-full.

#include <span>
#include <string_view>

namespace app::cli {

struct CommandInfo {
    const char *name;
    const char *summary;
};

/// Every subcommand, in the order --help lists them.
std::span<const CommandInfo> commandList();
/// The summary of `name` (one of commandList()); "" for an unknown name.
const char *commandSummary(std::string_view name);

} // namespace app::cli
