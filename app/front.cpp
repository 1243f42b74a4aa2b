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

bool needsTorch(std::string_view name)
{
    for (const app::cli::CommandInfo &command : app::cli::commandList()) {
        if (name == command.name)
            return command.needsTorch;
    }
    return false; // an unknown word: CLI11 below names it
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
        const std::string_view name = command.name;
        if (name == "runs")
            commands.push_back(app::cli::makeRunsCommand(app, globals));
        else if (name == "tokenize")
            commands.push_back(app::cli::makeTokenizeCommand(app, globals));
        else if (name == "plan")
            commands.push_back(app::cli::makePlanCommand(app, globals));
        else
            app.add_subcommand(command.name, command.summary); // listed by --help; run by tunebench-full
    }
    return app::cli::parseAndRun(app, commands, argc, argv);
}
