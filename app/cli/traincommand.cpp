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
#include "engine/model/deviceplacement.h"
#include "engine/train/runfolder.h"
#include "engine/train/trainer.h"

#include <cmath>
#include <cstdio>
#include <string>

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
        m_command = app.add_subcommand("train", commandSummary("train"));
        m_command->footer("Without --model, trains the built-in demo model (LLaMA architecture, ~2 M parameters),\n"
                          "freshly initialised. Without --data, uses the bundled demo corpus (Moby-Dick).\n"
                          "Ctrl+C stops after the current step and keeps the run.");
        auto &p = m_params;
        m_command->add_option("--model", p.modelPath, "Model folder with config.json, or a config.json file")
            ->check(CLI::ExistingPath);
        m_command->add_option("--data", p.dataPath,
                              "Training data: a UTF-8 text corpus, or JSONL with text / prompt+completion / messages / "
                              "input_ids (default: the bundled demo corpus)");
        m_command->add_option("--tokenizer", p.tokenizerPath,
                              "tokenizer.json, tokenizer.model or a folder with one (default: the model folder's, tokenizer.json first; "
                              "else a SentencePiece tokenizer trained on the corpus)");
        m_command->add_option("--steps", p.steps, "Optimizer steps")->capture_default_str();
        m_command->add_option("--lr", p.learningRate, "Peak learning rate")->capture_default_str();
        m_command->add_option("--warmup", p.warmupSteps, "Linear warmup steps (default: 10 % of the steps)");
        m_command->add_option("--min-lr-ratio", p.minLearningRateRatio, "Cosine decay ends at this fraction of the peak")
            ->capture_default_str();
        m_command->add_option("--batch-size", p.batchSize, "Sequences per step")->capture_default_str();
        m_command->add_option("--seq-len", p.sequenceLength, "Tokens per sequence")->capture_default_str();
        m_command->add_option("--weight-decay", p.weightDecay, "AdamW weight decay")->capture_default_str();
        m_command->add_option("--grad-clip", p.gradClipNorm, "Clip the gradient norm to this (0 = off)")->capture_default_str();
        m_command->add_option("--threads", m_threads, "CPU threads (default: the setting, else all cores)");
        m_command->add_option("--device", p.device, "Device to train on: cpu, cuda or cuda:N")->capture_default_str();
        m_command->add_option("--device-map", m_deviceMap,
                              "Accelerate device map JSON (e.g. from `tunebench plan --output`): load the model's "
                              "weights onto cpu / disk / cuda:N per module and train across them; auto = plan "
                              "this run on this machine's GPUs and RAM");
        m_command->add_option("--seed", p.seed, "Random seed")->capture_default_str();
        m_command->add_option("--name", p.runName, "Run name (default: model and corpus names)");
        m_command->add_option("--output", p.outputDir, "Folder for the run's files (default: runs/<id> beside the run database)");
        m_command->add_flag("!--no-save", p.saveModel, "Do not save the trained model or adapter");

        m_command->add_option("--method", m_method, "full (every weight) or lora (adapters on a frozen base)")
            ->check(CLI::IsMember({"full", "lora"}))->capture_default_str();
        m_command->add_option("--lora-r", p.lora.r, "LoRA rank")->capture_default_str();
        m_command->add_option("--lora-alpha", p.lora.alpha, "LoRA alpha (scale alpha / r)")->capture_default_str();
        m_command->add_option("--lora-dropout", p.lora.dropout, "Dropout on the LoRA input")->capture_default_str();
        m_command->add_option("--lora-targets", m_loraTargets,
                              "Modules to adapt: names (q_proj,v_proj; PEFT's list matching) or a regex over the full "
                              "module name")->capture_default_str();
        m_command->add_flag("--rslora", p.lora.rslora, "Scale alpha / sqrt(r) (rank-stabilised LoRA)");
        m_command->add_option("--modules-to-save", m_modulesToSave,
                              "Modules trained in full and saved in the adapter, e.g. lm_head (PEFT modules_to_save)");
        m_command->add_option("--optimizer", m_optimizer, "adamw or sgd (with --momentum)")
            ->check(CLI::IsMember({"adamw", "sgd"}))->capture_default_str();
        m_command->add_option("--momentum", p.momentum, "SGD momentum, in [0, 1)")->capture_default_str();
        m_command->add_option("--schedule", m_schedule, "Learning rate after warmup: constant, linear or cosine")
            ->check(CLI::IsMember({"constant", "linear", "cosine"}))->capture_default_str();
        m_command->add_option("--epochs", p.epochs, "Passes over the data (sets the steps; 0 = use --steps)");
        m_command->add_option("--grad-accum", p.gradAccumulation, "Micro-batches per optimizer step")->capture_default_str();
        m_command->add_option("--precision", m_precision,
                              "fp32, bf16 (autocast, CPU or CUDA) or fp16 (autocast with loss scaling, CUDA); "
                              "weights and optimizer state stay fp32")
            ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))->capture_default_str();
        m_command->add_flag("--checkpointing", p.gradientCheckpointing,
                            "Recompute each decoder layer's activations in backward (less memory, more compute)");
        m_command->add_option("--eval-data", p.evalDataPath, "A second corpus for eval loss and perplexity")
            ->check(CLI::ExistingFile);
        m_command->add_option("--val-fraction", p.valFraction, "Hold out this fraction of the data for eval");
        m_command->add_option("--eval-every", p.evalEvery, "Evaluate every N steps (and at the end)");
        m_command->add_option("--eval-batches", p.evalBatches, "Batches per evaluation (0 = the whole eval set)")
            ->capture_default_str();
        m_command->add_option("--save-every", p.saveEvery, "Write a checkpoint every N steps (one is also written at stop)");
        m_command->add_option("--keep", p.keepCheckpoints, "Keep the last K checkpoints (0 = all)")->capture_default_str();
        m_command->add_option("--resume", m_resume,
                              "Continue run RUN (an id, or its output folder) from its newest checkpoint, with the "
                              "same settings; --steps may be raised");
        m_command->add_option("--sample", p.samplePrompt, "Generate a greedy sample of this prompt before and after training");
        m_command->add_option("--sample-tokens", p.sampleTokens, "New tokens of that sample")->capture_default_str();
        m_command->add_flag("--demo", m_demo,
                            "The demo: LoRA fine-tuning of the bundled base model (pretrained on Moby-Dick) on a Jargon "
                            "File slice, eval loss every 25 steps, a sample before and after (flags given win)");
        m_command->add_flag("--preview", m_preview,
                            "Show what would be trained on (format, counts, truncation, the first rows) and exit");
        m_command->add_option("--bad-lines", m_badLines, "A malformed JSONL line stops the run or is skipped and counted")
            ->check(CLI::IsMember({"stop", "skip"}))->capture_default_str();
        m_command->add_option("--on-nan", m_onNan, "A non-finite loss or gradient stops the run or skips the step")
            ->check(CLI::IsMember({"stop", "skip"}))->capture_default_str();
        m_command->add_option("--guard", m_guard,
                              "The inspector's guard on every step: an in-place write that would break backward stops "
                              "the run before backward and keeps the step for `tunebench inspect`")
            ->check(CLI::IsMember({"on", "off"}))->capture_default_str();
        m_command->add_flag("--quiet,-q", m_quiet, "Print only the summary");
        m_command->add_option("--dist-timeout", p.distributedTimeoutSeconds,
                              "Data parallel (RANK/WORLD_SIZE from torchrun, srun or `tunebench launch`): seconds a rank "
                              "waits for the others before the job fails")
            ->capture_default_str();
        m_command->add_option("--ddp-bucket-mb", p.bucketMegabytes,
                              "Data parallel: gradient bucket size in MB, each summed as soon as backward filled it "
                              "(DDP's bucket_cap_mb); 0 = sum all after backward")
            ->capture_default_str();
    }

    CLI::App *subcommand() const override { return m_command; }

    int run() override
    {
        if (m_demo)
            applyDemo();
        engine::train::TrainingParams params = m_params;
        params.storePath = m_globals.storePath;
        try {
            params.distributed = engine::dist::distributedEnvFromProcess();
            const engine::Settings settings = engine::loadSettings();
            params.threads = m_threads >= 0 ? m_threads : settings.threads;
            // Ranks sharing a machine share its cores (torchrun leaves one thread each; this splits them).
            if (m_threads < 0 && settings.threads == 0 && params.distributed.localWorldSize > 1)
                params.threads = std::max(1, engine::hardwareThreads() / params.distributed.localWorldSize);
            if (params.storePath.empty())
                params.storePath = settings.effectiveStorePath().string();
            if (m_deviceMap == "auto")
                params.autoDeviceMap = true;
            else if (!m_deviceMap.empty())
                params.devicePlacement = engine::model::DevicePlacement::fromFile(m_deviceMap).entries;
            params.method = m_method == "lora" ? engine::train::TrainingMethod::Lora : engine::train::TrainingMethod::Full;
            params.lora.setTargetsFromText(m_loraTargets);
            params.lora.modulesToSave.clear();
            if (!m_modulesToSave.empty()) {
                engine::model::LoraSettings names;
                names.setTargetsFromText(m_modulesToSave);
                params.lora.modulesToSave = names.targets;
            }
            params.optimizer = m_optimizer == "sgd" ? engine::train::OptimizerKind::Sgd : engine::train::OptimizerKind::AdamW;
            params.schedule = m_schedule == "constant" ? engine::train::ScheduleKind::Constant
                : m_schedule == "linear"                ? engine::train::ScheduleKind::Linear
                                                        : engine::train::ScheduleKind::Cosine;
            params.precision = m_precision == "bf16" ? engine::train::Precision::Bf16
                : m_precision == "fp16"                 ? engine::train::Precision::Fp16
                                                        : engine::train::Precision::Fp32;
            params.nonFinite = m_onNan == "skip" ? engine::train::NonFinitePolicy::Skip : engine::train::NonFinitePolicy::Stop;
            params.skipBadLines = m_badLines == "skip";
            params.inspectGuard = m_guard == "on";
            if (!m_resume.empty())
                params.resumeFrom = engine::train::resolveRunFolder(m_resume, params.storePath).string();
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
    /// The demo's settings, except where the command line gave a value.
    void applyDemo()
    {
        auto unset = [&](const char *flag) { return m_command->get_option(flag)->count() == 0; };
        auto &p = m_params;
        if (unset("--model"))
            p.modelPath = engine::demoBaseModelPath().string();
        if (unset("--data"))
            p.dataPath = engine::demoFineTuneCorpusPath().string();
        if (unset("--method"))
            m_method = "lora";
        if (unset("--lora-targets"))
            m_loraTargets = "q_proj,k_proj,v_proj,o_proj";
        if (unset("--lora-r"))
            p.lora.r = 16;
        if (unset("--lora-alpha"))
            p.lora.alpha = 32;
        if (unset("--steps"))
            p.steps = 200;
        if (unset("--lr"))
            p.learningRate = 3e-3;
        if (unset("--val-fraction") && unset("--eval-data"))
            p.valFraction = 0.05;
        if (unset("--eval-every"))
            p.evalEvery = 25;
        if (unset("--sample"))
            p.samplePrompt = "A hacker is";
        if (unset("--name"))
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
            std::printf("checkpoint:   %s  (continue with: tunebench train --resume %lld ...)\n",
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
    engine::train::TrainingParams m_params;
    int m_threads = -1;
    std::string m_deviceMap;
    std::string m_method = "full";
    std::string m_loraTargets = "q_proj,v_proj";
    std::string m_modulesToSave;
    std::string m_optimizer = "adamw";
    std::string m_schedule = "cosine";
    std::string m_onNan = "stop";
    std::string m_guard = "on";
    std::string m_precision = "fp32";
    std::string m_resume;
    std::string m_badLines = "stop";
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
