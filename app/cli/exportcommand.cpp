// `tunebench export --run RUN (--peft DIR | --merged DIR)`: what a run trained, in the formats Python loads.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"

#include "engine/core/error.h"
#include "engine/core/settings.h"
#include "engine/train/export.h"
#include "engine/store/runfolder.h"
#include "engine/train/trainer.h"

#include <cstdio>

namespace app::cli {
namespace {

class ExportCommand : public Command {
public:
    ExportCommand(CLI::App &app, const GlobalOptions &globals) : m_globals(globals)
    {
        m_command = app.add_subcommand("export", commandSummary("export"));
        m_command->add_option("--run", m_run, "Run id, or the run's output folder")->required();
        auto *peft = m_command->add_option("--peft", m_peft,
                                           "Write a PEFT adapter folder (adapter_config.json + adapter_model.safetensors)");
        auto *merged = m_command->add_option("--merged", m_merged,
                                             "Write the model with the adapter merged (save_pretrained layout)");
        peft->excludes(merged);
        m_command->footer("Exactly one of --peft DIR and --merged DIR; DIR must not exist.\n"
                          "Load in Python: PeftModel.from_pretrained(base, DIR) or AutoModelForCausalLM.from_pretrained(DIR).");
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        if (m_peft.empty() == m_merged.empty()) {
            std::fprintf(stderr, "tunebench: export needs exactly one of --peft DIR and --merged DIR\n");
            return ExitUsage;
        }
        try {
            std::string store = m_globals.storePath;
            if (store.empty())
                store = engine::loadSettings().effectiveStorePath().string();
            const auto folder = engine::store::resolveRunFolder(m_run, store);
            const bool peft = !m_peft.empty();
            const auto result = engine::train::exportRun(folder, peft ? engine::train::ExportKind::Peft : engine::train::ExportKind::Merged,
                                                         peft ? m_peft : m_merged);
            std::printf("%s: %s\nfrom:   %s\n", peft ? "adapter" : "merged model", result.folder.c_str(), result.source.c_str());
            return ExitOk;
        } catch (const engine::Error &e) {
            std::fprintf(stderr, "tunebench: %s\n", e.what());
            return ExitFailed;
        }
    }

private:
    const GlobalOptions &m_globals;
    CLI::App *m_command = nullptr;
    std::string m_run;
    std::string m_peft;
    std::string m_merged;
};

} // namespace

std::unique_ptr<Command> makeExportCommand(CLI::App &app, const GlobalOptions &globals)
{
    return std::make_unique<ExportCommand>(app, globals);
}

} // namespace app::cli
