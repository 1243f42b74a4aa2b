// tunebench-full: every headless subcommand, libtorch linked, and the demo in the terminal with no
// arguments. `tunebench` (front.cpp) runs the commands that need no libtorch itself, execs
// tunebench-gui for the GUI and this for the rest.

#include "app/cli/command.h"
#include "app/cli/rootapp.h"

#include "engine/core/settings.h"
#include "engine/core/systeminfo.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace {

/// The blas_core_type setting (`tunebench doctor --use-blas-core`): OpenBLAS reads OPENBLAS_CORETYPE
/// only when it loads, before main, so the process starts again with it set. An environment that
/// already sets it wins. A settings file that cannot be read is left to the command to report.
void applyBlasCoreSetting(char **argv)
{
    if (std::getenv("OPENBLAS_CORETYPE"))
        return;
    std::string core;
    try {
        core = engine::loadSettings().blasCoreType;
    } catch (...) {
        return;
    }
    if (core.empty())
        return;
    setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    execv("/proc/self/exe", argv);
    // exec failed: carry on with the kernels OpenBLAS chose (doctor shows which).
}

} // namespace

int main(int argc, char **argv)
{
    applyBlasCoreSetting(argv);

    CLI::App app;
    app::cli::GlobalOptions globals;
    app::cli::configureRootApp(app, globals);

    std::vector<std::unique_ptr<app::cli::Command>> commands;
    commands.push_back(app::cli::makeTrainCommand(app, globals));
    commands.push_back(app::cli::makeRunsCommand(app, globals));
    commands.push_back(app::cli::makeTokenizeCommand(app, globals));
    commands.push_back(app::cli::makeScoreCommand(app, globals));
    commands.push_back(app::cli::makeGenerateCommand(app, globals));
    commands.push_back(app::cli::makeDoctorCommand(app, globals));
    commands.push_back(app::cli::makePlanCommand(app, globals));
    commands.push_back(app::cli::makeInspectCommand(app, globals));
    commands.push_back(app::cli::makeRecordCommand(app, globals));
    commands.push_back(app::cli::makeExportCommand(app, globals));
    commands.push_back(app::cli::makeLaunchCommand(app, globals));

    if (argc == 1 || (argc == 2 && std::string_view(argv[1]) == "--demo")) {
        // The front found no display (or the build has no GUI): the demo in the terminal.
#ifdef TUNEBENCH_WITH_GUI
        const char *why = "no display found";
#else
        const char *why = "this build has no GUI";
#endif
        std::fprintf(stderr, "tunebench: %s; running the demo in the terminal (run `tunebench --help` for the commands)\n",
                     why);
        static char trainWord[] = "train";
        static char demoWord[] = "--demo";
        static char *demoArgv[] = {argv[0], trainWord, demoWord, nullptr};
        argc = 3;
        argv = demoArgv;
    }

    return app::cli::parseAndRun(app, commands, argc, argv);
}
