#include "app/cli/rootapp.h"

#include "engine/core/version.h"

namespace app::cli {

void configureRootApp(CLI::App &app, GlobalOptions &globals)
{
    app.description("tunebench: fine-tune and debug transformer language models.\n"
                    "Run without arguments for the desktop GUI (or, with no display, the demo in the terminal).");
    app.set_version_flag("--version", engine::versionLine());
    app.fallthrough();
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast); // a repeated flag: the last wins
    app.failure_message([](const CLI::App *, const CLI::Error &e) {
        return std::string("tunebench: ") + e.what() + " (see --help)\n";
    });
    app.add_option("--db", globals.storePath, "Run database (default: the setting, else ~/.local/share/tunebench/runs.sqlite3)");
}

int parseAndRun(CLI::App &app, const std::vector<std::unique_ptr<Command>> &commands, int argc, char **argv)
{
    try {
        app.require_subcommand(1);
        app.parse(argc, argv);
    } catch (const CLI::ParseError &e) {
        return app.exit(e);
    }
    for (const auto &command : commands) {
        if (command->subcommand()->parsed())
            return command->run();
    }
    return ExitUsage;
}

} // namespace app::cli
