// `tunebench train`: trains a model on a text corpus headless, with a progress bar.

#include "app/cli/command.h"
#include "app/cli/commandlist.h"
#include "app/cli/interruptwatcher.h"
#include "app/cli/progressbar.h"

#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/core/settings.h"
#include "engine/core/threads.h"
#include "engine/dist/distenv.h"
#include "engine/store/runfolder.h"
#include "engine/store/runstore.h"
#include "engine/train/settingschema.h"
#include "engine/train/trainer.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace app::cli {
namespace {

class TerminalObserver : public engine::train::TrainingObserver {
public:
    explicit TerminalObserver(ProgressBar &bar) : m_bar(bar) {}
    void onLog(engine::LogLevel level, const std::string &text) override
    {
        const bool important = level == engine::LogLevel::Warning || level == engine::LogLevel::Error;
        m_bar.printLine(std::string(important ? "tunebench: " + std::string(engine::logLevelName(level)) + ": " : "tunebench: ") + text);
    }
    void onStep(const engine::train::StepMetrics &metrics) override { m_bar.update(metrics); }

private:
    ProgressBar &m_bar;
};

/// A rank other than 0 of a data-parallel job: rank 0 shows the progress; this one only what goes wrong.
class RankObserver : public engine::train::TrainingObserver {
public:
    explicit RankObserver(int rank) : m_prefix("tunebench: rank " + std::to_string(rank) + ": ") {}
    void onLog(engine::LogLevel level, const std::string &text) override
    {
        if (level == engine::LogLevel::Warning || level == engine::LogLevel::Error)
            std::fprintf(stderr, "%s%s: %s\n", m_prefix.c_str(), std::string(engine::logLevelName(level)).c_str(), text.c_str());
    }

private:
    std::string m_prefix;
};

class TrainCommand : public Command {
public:
    TrainCommand(CLI::App &app, const GlobalOptions &globals) : m_globals(globals)
    {
        using engine::train::SettingKind;
        m_command = app.add_subcommand("train", commandSummary("train"));
        m_command->footer("Without --model, trains the built-in demo model (LLaMA architecture, ~2 M parameters),\n"
                          "freshly initialised. Without --data, uses the bundled demo corpus (Moby-Dick).\n"
                          "Ctrl+C stops after the current step and keeps the run; --resume RUN continues it with\n"
                          "its stored settings (only --steps, checkpoint, evaluation, sample and thread flags may\n"
                          "change then).");
        // One option per setting, from the settings' declaration (engine/train/settingschema.h). The
        // values are read as text and parsed by the setting itself, so that the command line, the stored
        // JSON and the Train page agree on every rule.
        const engine::train::TrainingParams defaults;
        for (const engine::train::SettingSpec &spec : engine::train::trainingSettings()) {
            if (spec.flag.empty())
                continue;
            std::string help = spec.help;
            if (spec.resumable)
                help += " [may change with --resume]";
            CLI::Option *option = nullptr;
            if (spec.kind == SettingKind::Switch && spec.choices.empty()) {
                // const: CLI11 would take a mutable string as the flag's result variable.
                option = m_command->add_flag(spec.flag, std::as_const(help));
            } else {
                option = m_command->add_option(spec.flag, m_texts[spec.key], help);
                const std::string shown = spec.special && spec.valueOf(defaults) == nlohmann::json(spec.special->value)
                    ? spec.special->text
                    : spec.text(defaults);
                if (!shown.empty() && spec.key != "threads")
                    option->default_str(shown);
                if (!spec.choices.empty() && spec.kind != SettingKind::Text) {
                    std::vector<std::string> values;
                    for (const auto &choice : spec.choices)
                        values.push_back(choice.value);
                    option->check(CLI::IsMember(values));
                }
            }
            if (spec.key == "model")
                option->check(CLI::ExistingPath);
            else if (spec.key == "eval_data")
                option->check(CLI::ExistingFile);
            m_options.emplace_back(&spec, option);
        }
        m_command->add_option("--resume", m_resume,
                              "Continue run RUN (an id, or its folder or one of its checkpoints) from its newest "
                              "checkpoint with its stored settings; flags marked [may change with --resume] may "
                              "change, e.g. --steps to train further");
        m_command->add_flag("--demo", m_demo,
                            "The demo: LoRA fine-tuning of the bundled base model (pretrained on Moby-Dick) on a Jargon "
                            "File slice, eval loss every 25 steps, a sample before and after (flags given win)");
        m_command->add_flag("--preview", m_preview,
                            "Show what would be trained on (format, counts, truncation, the first rows) and exit");
        m_command->add_flag("--quiet,-q", m_quiet, "Print only the summary");
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        engine::train::TrainingParams params;
        try {
            params = m_resume.empty() ? newRunSettings() : resumedSettings();
        } catch (const engine::Error &e) {
            std::fprintf(stderr, "tunebench: %s\n", e.what());
            return ExitFailed;
        }

        if (m_preview)
            return preview(params);
        const int rank = params.distributed.rank;
        ProgressBar bar(stderr);
        TerminalObserver verbose(bar);
        engine::train::TrainingObserver silent;
        RankObserver secondary(rank);
        engine::JobControl control;
        InterruptWatcher watcher(control, [] {
            const char message[] = "\ntunebench: stopping after this step (Ctrl+C again to quit at once)\n";
            std::fwrite(message, 1, sizeof message - 1, stderr);
        });
        engine::train::TrainingObserver &observer = rank > 0 ? secondary
            : m_quiet                                         ? silent
                                                              : static_cast<engine::train::TrainingObserver &>(verbose);
        const engine::train::TrainingOutcome outcome = engine::train::runTraining(params, control, observer);
        bar.finish();
        if (rank > 0) // rank 0 reports the run
            return reportRank(outcome, rank);
        return report(outcome);
    }

private:
    /// A flag given on the command line, as its setting reads it.
    void applyGiven(const engine::train::SettingSpec &spec, const CLI::Option *option, engine::train::TrainingParams &p) const
    {
        if (spec.kind == engine::train::SettingKind::Switch && spec.choices.empty())
            spec.setJson(p, nlohmann::json(!spec.negatedFlag));
        else
            spec.setText(p, m_texts.at(spec.key));
    }

    /// What this machine and this process decide: the store, the ranks, the threads (unless kept).
    void applyEnvironment(engine::train::TrainingParams &p, bool keepThreads) const
    {
        const engine::Settings settings = engine::loadSettings();
        p.storePath = m_globals.storePath.empty() ? settings.effectiveStorePath().string() : m_globals.storePath;
        p.distributed = engine::dist::distributedEnvFromProcess();
        if (!keepThreads) {
            p.threads = settings.threads;
            // Ranks sharing a machine share its cores (torchrun leaves one thread each; this splits them).
            if (settings.threads == 0 && p.distributed.localWorldSize > 1)
                p.threads = std::max(1, engine::hardwareThreads() / p.distributed.localWorldSize);
        }
    }

    /// Whether a flag given with a resume leaves the setting as the run has it (paths compared as files).
    static bool sameValue(const engine::train::SettingSpec &spec, const engine::train::TrainingParams &run,
                          const engine::train::TrainingParams &given)
    {
        if (spec.valueOf(given) == spec.valueOf(run))
            return true;
        if (spec.kind != engine::train::SettingKind::Path)
            return false;
        std::error_code ec;
        const std::string a = spec.text(run), b = spec.text(given);
        return !a.empty() && !b.empty() && std::filesystem::equivalent(a, b, ec);
    }

    bool given(const char *key) const
    {
        for (const auto &[spec, option] : m_options) {
            if (spec->key == key)
                return option->count() > 0;
        }
        return false;
    }

    /// A new run: the defaults, the demo's settings when asked, then every flag given.
    engine::train::TrainingParams newRunSettings() const
    {
        engine::train::TrainingParams p;
        if (m_demo)
            applyDemo(p);
        for (const auto &[spec, option] : m_options) {
            if (option->count() > 0)
                applyGiven(*spec, option, p);
        }
        applyEnvironment(p, given("threads"));
        return p;
    }

    /// `--resume RUN`: the settings the run's newest checkpoint was written with; a flag given alongside
    /// may change what a resume can change, and is refused by name when it would change anything else.
    engine::train::TrainingParams resumedSettings() const
    {
        const std::string storePath = m_globals.storePath.empty() ? engine::loadSettings().effectiveStorePath().string()
                                                                  : m_globals.storePath;
        const engine::store::ResumeState state = engine::store::readResumeState(m_resume, storePath);
        engine::train::TrainingParams p;
        engine::train::readSettingsJson(state.training, engine::train::SettingScope::All, p);
        const std::string run = state.runId > 0 ? "run " + std::to_string(state.runId) : state.folder.string();
        // What the run is: its name and folder are its own (the same --name or --output, as a script that
        // repeats its flags gives them, is fine).
        std::string runName;
        if (state.runId > 0) {
            engine::store::RunStore store = engine::store::RunStore::open(state.storePath.empty() ? storePath : state.storePath);
            if (const auto record = store.run(state.runId))
                runName = record->name;
        }
        p.runName = runName;
        p.outputDir = state.folder.string();
        for (const auto &[spec, option] : m_options) {
            if (option->count() == 0)
                continue;
            engine::train::TrainingParams changed = p;
            applyGiven(*spec, option, changed);
            if (spec->resumable || sameValue(*spec, p, changed))
                continue;
            const std::string now = spec->text(p).empty() ? std::string("none") : spec->text(p);
            throw engine::invalidSetting(spec->key, spec->flag + " cannot change when resuming " + run + " (it has "
                                                        + now + "): a resume continues the same training; start a new "
                                                          "run for other settings");
        }
        for (const auto &[spec, option] : m_options) {
            if (option->count() > 0 && spec->resumable)
                applyGiven(*spec, option, p);
        }
        // --demo adds nothing to a resume: the stored settings are the demo's when the run was one. The
        // threads are the run's too (a bit-for-bit continuation needs the same), unless given.
        applyEnvironment(p, /*keepThreads=*/true);
        p.resumeFrom = state.checkpoint.string();
        return p;
    }

    /// The demo's settings (flags given afterwards win).
    static void applyDemo(engine::train::TrainingParams &p)
    {
        p.modelPath = engine::demoBaseModelPath().string();
        p.dataPath = engine::demoFineTuneCorpusPath().string();
        p.method = engine::train::TrainingMethod::Lora;
        p.lora.setTargetsFromText("q_proj,k_proj,v_proj,o_proj");
        p.lora.r = 16;
        p.lora.alpha = 32;
        p.steps = 200;
        p.learningRate = 3e-3;
        p.valFraction = 0.05;
        p.evalEvery = 25;
        p.samplePrompt = "A hacker is";
        p.runName = "demo: LoRA of the Moby-Dick base on the Jargon File";
    }

    int preview(const engine::train::TrainingParams &params)
    {
        engine::JobControl control;
        engine::train::TrainingObserver silent;
        try {
            const auto p = engine::train::previewData(params, control, silent);
            std::fputs(engine::train::describePreview(p, params).c_str(), stdout);
            return ExitOk;
        } catch (const engine::Error &e) {
            std::fprintf(stderr, "tunebench: %s\n", e.what());
            return ExitFailed;
        }
    }

    static int reportRank(const engine::train::TrainingOutcome &outcome, int rank)
    {
        if (outcome.status == engine::JobStatus::Failed) {
            std::fprintf(stderr, "tunebench: rank %d: %s: %s\n", rank, std::string(engine::errorKindName(outcome.error->kind)).c_str(),
                         outcome.error->message.c_str());
            return ExitFailed;
        }
        return outcome.status == engine::JobStatus::Succeeded ? ExitOk : ExitCancelled;
    }

    static int report(const engine::train::TrainingOutcome &outcome)
    {
        if (outcome.status == engine::JobStatus::Failed) {
            std::fprintf(stderr, "tunebench: %s: %s\n", std::string(engine::errorKindName(outcome.error->kind)).c_str(),
                         outcome.error->message.c_str());
            if (outcome.runId > 0)
                std::fprintf(stderr, "tunebench: run %lld is marked failed in %s\n",
                             static_cast<long long>(outcome.runId), outcome.storePath.c_str());
            return ExitFailed;
        }
        if (outcome.runId == 0) {
            std::printf("cancelled before training started; no run was recorded\n");
            return ExitCancelled;
        }
        std::printf("run %lld %s: %lld steps, loss %.4f -> %.4f%s\n", static_cast<long long>(outcome.runId),
                    engine::jobStatusName(outcome.status), static_cast<long long>(outcome.stepsCompleted),
                    outcome.firstLoss, outcome.lastLoss,
                    outcome.resumedFromStep > 0 ? (" (resumed at step " + std::to_string(outcome.resumedFromStep) + ")").c_str() : "");
        if (outcome.lastEvalLoss > 0)
            std::printf("eval loss:    %.4f (perplexity %.2f)\n", outcome.lastEvalLoss, std::exp(outcome.lastEvalLoss));
        std::printf("run database: %s\n", outcome.storePath.c_str());
        if (!outcome.lossPlotPath.empty())
            std::printf("loss curve:   %s\n", outcome.lossPlotPath.c_str());
        if (!outcome.lastCheckpoint.empty())
            std::printf("checkpoint:   %s  (continue with: tunebench train --resume %lld)\n",
                        outcome.lastCheckpoint.c_str(), static_cast<long long>(outcome.runId));
        if (!outcome.adapterPath.empty())
            std::printf("adapter:      %s  (PEFT; try: tunebench generate --model <base> --adapter %s)\n",
                        outcome.adapterPath.c_str(), outcome.adapterPath.c_str());
        if (!outcome.modelPath.empty())
            std::printf("model:        %s  (try: tunebench generate --model %s --prompt \"Call me\")\n",
                        outcome.modelPath.c_str(), outcome.modelPath.c_str());
        return outcome.status == engine::JobStatus::Succeeded ? ExitOk : ExitCancelled;
    }

    const GlobalOptions &m_globals;
    CLI::App *m_command = nullptr;
    std::vector<std::pair<const engine::train::SettingSpec *, CLI::Option *>> m_options; ///< one per setting flag
    std::map<std::string, std::string> m_texts; ///< each valued flag's text, by setting key
    std::string m_resume;
    bool m_preview = false;
    bool m_demo = false;
    bool m_quiet = false;
};

} // namespace

std::unique_ptr<Command> makeTrainCommand(CLI::App &app, const GlobalOptions &globals)
{
    return std::make_unique<TrainCommand>(app, globals);
}

} // namespace app::cli
