// tunebench: the front executable. It links no libtorch, so the commands that need no tensors
// (--help, --version, runs, tokenize, plan) start in milliseconds instead of the second that loading
// libtorch's ~300 shared libraries takes. The GUI is tunebench-gui's (no libtorch either until its
// window is up); the terminal demo and every other command are tunebench-full's. The front execs them
// with the same arguments (same process id, signals and exit status, so Ctrl+C, kill and scripts see
// no difference).

#include "app/cli/command.h"
#include "app/cli/commandlist.h"
#include "app/cli/rootapp.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace {

/// `name` (tunebench-full, tunebench-gui) beside this executable (the build tree) or where it is
/// installed (TUNEBENCH_FULL_FROM_BINDIR: lib/tunebench relative to bin).
std::filesystem::path helperExecutable(const char *name)
{
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::filesystem::path dir = ec ? std::filesystem::path(".") : self.parent_path();
    for (const std::filesystem::path &candidate : {dir / name, dir / TUNEBENCH_FULL_FROM_BINDIR / name}) {
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return dir / TUNEBENCH_FULL_FROM_BINDIR / name;
}

[[noreturn]] void execHelper(const char *name, char **argv)
{
    const std::filesystem::path helper = helperExecutable(name);
    ::execv(helper.c_str(), argv);
    std::fprintf(stderr, "tunebench: cannot run %s: %s (the install is incomplete; reinstall tunebench)\n", helper.c_str(),
                 std::strerror(errno));
    std::_Exit(app::cli::ExitFailed);
}

/// A display to open the GUI on (or a Qt platform chosen, e.g. offscreen).
bool displayAvailable()
{
    for (const char *name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) {
        if (const char *value = std::getenv(name); value && *value)
            return true;
    }
    return false;
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
    {"record", app::cli::makeRecordCommand},
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
    // `tunebench` opens the GUI; `tunebench --demo` opens it and starts training the demo. Without a
    // display (or a GUI in the build) both run the demo in the terminal.
    const bool demo = argc == 2 && std::string_view(argv[1]) == "--demo";
#ifdef TUNEBENCH_WITH_GUI
    if ((argc == 1 || demo) && displayAvailable())
        execHelper("tunebench-gui", argv);
#endif
    if (argc == 1 || demo || needsTorch(commandWord(argc, argv)))
        execHelper("tunebench-full", argv);

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
