// tunebench: the front executable. It links no libtorch, so the commands that need no tensors
// (--help, --version, runs, tokenize, plan) start in milliseconds instead of the second that loading
// libtorch's ~300 shared libraries takes. The GUI, the terminal demo and every other command are
// tunebench-full's: the front execs it with the same arguments (same process id, signals and exit
// status, so Ctrl+C, kill and scripts see no difference).

#include "app/cli/command.h"
#include "app/cli/commandlist.h"
#include "app/cli/rootapp.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace {

/// tunebench-full beside this executable (the build tree) or where it is installed
/// (TUNEBENCH_FULL_FROM_BINDIR: lib/tunebench relative to bin).
std::filesystem::path fullExecutable()
{
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path dir = ec ? std::filesystem::path(".") : self.parent_path();
    for (const std::filesystem::path &candidate :
         {dir / "tunebench-full", dir / TUNEBENCH_FULL_FROM_BINDIR / "tunebench-full"}) {
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return dir / TUNEBENCH_FULL_FROM_BINDIR / "tunebench-full";
}

[[noreturn]] void execFull(char **argv)
{
    const std::filesystem::path full = fullExecutable();
    ::execv(full.c_str(), argv);
    std::fprintf(stderr, "tunebench: cannot run %s: %s (the install is incomplete; reinstall tunebench)\n", full.c_str(),
                 std::strerror(errno));
    std::_Exit(app::cli::ExitFailed);
}

/// The subcommand named on the command line: the first word that is not an option, skipping the
/// value of --db. "" when there is none (`tunebench --help`, `tunebench --version`).
std::string_view commandWord(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--db") {
            ++i;
            continue;
        }
        if (arg.starts_with("-"))
            continue;
        return arg;
    }
    return {};
}

/// The commands the front runs itself; every other one is tunebench-full's.
struct FrontCommand {
    const char *name;
    std::unique_ptr<app::cli::Command> (*make)(CLI::App &, const app::cli::GlobalOptions &);
};
constexpr FrontCommand kFrontCommands[] = {
    {"runs", app::cli::makeRunsCommand},
    {"tokenize", app::cli::makeTokenizeCommand},
    {"plan", app::cli::makePlanCommand},
};

const FrontCommand *frontCommand(std::string_view name)
{
    for (const FrontCommand &command : kFrontCommands) {
        if (name == command.name)
            return &command;
    }
    return nullptr;
}

/// A known command the front does not run. An unknown word stays here: CLI11 below names it.
bool needsTorch(std::string_view name)
{
    return *app::cli::commandSummary(name) != '\0' && !frontCommand(name);
}

} // namespace

int main(int argc, char **argv)
{
    const bool demo = argc == 2 && std::string_view(argv[1]) == "--demo";
    if (argc == 1 || demo || needsTorch(commandWord(argc, argv)))
        execFull(argv);

    CLI::App app;
    app::cli::GlobalOptions globals;
    app::cli::configureRootApp(app, globals);
    std::vector<std::unique_ptr<app::cli::Command>> commands;
    for (const app::cli::CommandInfo &command : app::cli::commandList()) {
        if (const FrontCommand *own = frontCommand(command.name))
            commands.push_back(own->make(app, globals));
        else
            app.add_subcommand(command.name, command.summary); // listed by --help; run by tunebench-full
    }
    return app::cli::parseAndRun(app, commands, argc, argv);
}
