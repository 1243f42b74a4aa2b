#include "engine/train/trainer.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/core/settings.h"
#include "engine/core/threads.h"
#include "engine/core/torchdevice.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/deviceplacement.h"
#include "engine/model/dispatch.h"
#include "engine/model/llamamodel.h"
#include "engine/model/pretrained.h"
#include "engine/report/lossplot.h"
#include "engine/store/runstore.h"
#include "engine/tokenize/sentencepiecetokenizer.h"
#include "engine/train/lrschedule.h"
#include "engine/train/textcorpus.h"
#include "engine/train/tokenizersource.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>

namespace engine::train {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string formatDouble(double value, int precision = 4)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    return buffer;
}

/// Everything resolved and checked before a run is created, so bad input never leaves a run behind.
struct PreparedJob {
    std::filesystem::path storePath;
    std::filesystem::path corpusPath;
    model::LlamaConfig config;
    std::string modelName;
    torch::Tensor sequences; ///< [N, seq_len + 1] int64
    int64_t corpusTokens = 0;
    std::string tokenizerPath;
    std::filesystem::path weightsFolder; ///< set when the model folder holds weights to start from
    torch::Device device{torch::kCPU};   ///< checked before the run exists
};

std::string defaultRunName(const PreparedJob &job)
{
    const std::string corpus = job.corpusPath.stem().string();
    return job.modelName + " on " + corpus;
}

/// Resolves paths, model config, tokenizer and the packed corpus. Throws engine::Error.
/// Returns std::nullopt when cancelled meanwhile.
std::optional<PreparedJob> prepare(const TrainingParams &params, JobControl &control, TrainingObserver &observer)
{
    PreparedJob job;
    job.device = torchDevice(params.device, "setting device");
    job.storePath = params.storePath.empty() ? loadSettings().effectiveStorePath() : std::filesystem::path(params.storePath);
    job.corpusPath = params.dataPath.empty() ? demoCorpusPath() : std::filesystem::path(params.dataPath);

    if (params.modelPath.empty()) {
        job.config = model::demoConfig();
        job.modelName = "demo-llama";
    } else {
        job.config = model::LlamaConfig::fromFile(params.modelPath);
        std::filesystem::path p(params.modelPath);
        job.modelName = (p.filename() == "config.json" ? p.parent_path().filename() : p.filename()).string();
        if (job.modelName.empty())
            job.modelName = "llama";
        if (std::filesystem::is_directory(p) && model::holdsWeights(p))
            job.weightsFolder = p;
    }
    if (!params.devicePlacement.empty() && job.weightsFolder.empty()) {
        throw invalidInput("a device map needs a model folder with weights to load onto its devices (--model DIR); "
                           "the built-in demo model and a bare config.json start from random weights");
    }
    if (params.sequenceLength > job.config.maxPositionEmbeddings) {
        throw invalidInput("setting sequence length = " + std::to_string(params.sequenceLength)
                           + " exceeds the model's max_position_embeddings = "
                           + std::to_string(job.config.maxPositionEmbeddings));
    }

    const std::string text = readCorpusText(job.corpusPath);
    observer.onLog(LogLevel::Info, "corpus " + job.corpusPath.string() + ": " + std::to_string(text.size()) + " bytes");

    TokenizerChoice tokenizer = resolveTokenizer(params, job.config, job.corpusPath, text, observer);
    job.tokenizerPath = tokenizer.path.string();
    if (control.cancelRequested())
        return std::nullopt;

    const int eos = tokenizer.tokenizer.eosId();
    std::vector<int32_t> ids = tokenizeCorpus(text, tokenizer.tokenizer, eos, control);
    if (control.cancelRequested())
        return std::nullopt;
    job.corpusTokens = static_cast<int64_t>(ids.size());
    const int64_t window = params.sequenceLength + 1;
    const int64_t count = job.corpusTokens / window;
    if (count < 1) {
        throw invalidInput("corpus " + job.corpusPath.string() + " is too short: it has "
                           + std::to_string(job.corpusTokens) + " tokens, and one training sequence needs "
                           + std::to_string(window) + " (sequence length + 1)");
    }
    job.sequences = torch::from_blob(ids.data(), {count, window}, torch::kInt32).to(torch::kInt64);
    observer.onLog(LogLevel::Info, std::to_string(job.corpusTokens) + " tokens, " + std::to_string(count)
                                       + " sequences of " + std::to_string(params.sequenceLength) + " tokens");
    return job;
}

/// AdamW with decoupled weight decay on matrices only (not on norms), as Hugging Face's Trainer does.
std::unique_ptr<torch::optim::AdamW> makeOptimizer(model::LlamaForCausalLM &model, const TrainingParams &params)
{
    std::vector<torch::Tensor> decay;
    std::vector<torch::Tensor> noDecay;
    for (const auto &parameter : model->parameters()) {
        if (!parameter.requires_grad())
            continue;
        (parameter.dim() >= 2 ? decay : noDecay).push_back(parameter);
    }
    std::vector<torch::optim::OptimizerParamGroup> groups;
    auto options = [&](double weightDecay) {
        return std::make_unique<torch::optim::AdamWOptions>(
            torch::optim::AdamWOptions(params.learningRate).betas({0.9, 0.95}).eps(1e-8).weight_decay(weightDecay));
    };
    groups.emplace_back(decay, options(params.weightDecay));
    groups.emplace_back(noDecay, options(0.0));
    return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(params.learningRate));
}

/// The global L2 norm of the gradients, and clipping to `clipNorm` when it is > 0. Parameters may
/// live on several devices (a dispatched model): each device's squared norm is summed where its
/// gradients are, the sums are combined on the CPU, and each gradient is scaled on its own device.
/// (torch's clip_grad_norm_ stacks the per-parameter norms into one tensor, which fails across devices.)
double gradientNorm(const std::vector<torch::Tensor> &parameters, double clipNorm)
{
    std::vector<torch::Tensor> perDevice;
    std::vector<torch::Device> devices;
    for (const auto &p : parameters) {
        if (!p.grad().defined())
            continue;
        const torch::Tensor squares = p.grad().detach().norm().to(torch::kFloat64).pow(2); // norm as torch: per tensor
        size_t slot = 0;
        while (slot < devices.size() && devices[slot] != p.device())
            ++slot;
        if (slot == devices.size()) {
            devices.push_back(p.device());
            perDevice.push_back(squares);
        } else {
            perDevice[slot] = perDevice[slot] + squares;
        }
    }
    double sum = 0;
    for (const auto &part : perDevice)
        sum += part.item<double>();
    const double norm = std::sqrt(sum);
    const double scale = clipNorm / (norm + 1e-6); // as torch.nn.utils.clip_grad_norm_
    if (clipNorm > 0 && scale < 1) {
        torch::NoGradGuard noGrad;
        for (const auto &p : parameters) {
            if (p.grad().defined())
                p.grad().mul_(scale);
        }
    }
    return norm;
}

/// Buffers metric samples and commits them in one transaction at most every flushInterval.
class MetricsWriter {
public:
    MetricsWriter(store::RunStore &store, int64_t run) : m_store(store), m_run(run) {}
    MetricsWriter(const MetricsWriter &) = delete;
    MetricsWriter &operator=(const MetricsWriter &) = delete;
    /// Commits what is pending, also when a step failed, so the store keeps every finished step.
    ~MetricsWriter()
    {
        try {
            flush();
        } catch (...) {
        }
    }

    void add(const StepMetrics &m)
    {
        m_pending.push_back({"train/loss", m.step, m.wallSeconds, m.loss});
        m_pending.push_back({"train/learning_rate", m.step, m.wallSeconds, m.learningRate});
        m_pending.push_back({"train/grad_norm", m.step, m.wallSeconds, m.gradNorm});
        m_pending.push_back({"train/tokens_per_second", m.step, m.wallSeconds, m.tokensPerSecond});
        if (secondsSince(m_lastFlush) >= kFlushIntervalSeconds)
            flush();
    }

    void flush()
    {
        if (!m_pending.empty())
            m_store.appendMetrics(m_run, m_pending);
        m_pending.clear();
        m_lastFlush = Clock::now();
    }

private:
    static constexpr double kFlushIntervalSeconds = 0.25;
    store::RunStore &m_store;
    int64_t m_run;
    std::vector<store::MetricSample> m_pending;
    Clock::time_point m_lastFlush = Clock::now();
};

struct LoopResult {
    std::optional<model::LlamaForCausalLM> model;
    JobStatus status = JobStatus::Succeeded;
    int64_t steps = 0;
    double firstLoss = 0;
    double lastLoss = 0;
    std::vector<report::CurvePoint> curve;
};

LoopResult trainLoop(const TrainingParams &params, const PreparedJob &job, JobControl &control,
                     TrainingObserver &observer, store::RunStore &store, int64_t runId)
{
    torch::manual_seed(params.seed);
    model::LlamaForCausalLM model{nullptr};
    if (!params.devicePlacement.empty()) {
        // A device map (from the Plan page or a plan file): each tensor is read once, straight onto its
        // device; the model then moves activations at layer boundaries.
        model::DevicePlacement placement;
        for (const auto &[module, device] : params.devicePlacement)
            placement.entries.emplace_back(module, model::normalizeDevice(device, "device map entry " + module));
        model = model::loadDispatched(job.weightsFolder, placement, {}, "the device map").model;
        observer.onLog(LogLevel::Info, "fine-tuning the weights in " + job.weightsFolder.string() + " across "
                                           + std::to_string(placement.entries.size()) + " device-map entries");
    } else if (job.weightsFolder.empty()) {
        model = model::LlamaForCausalLM(job.config);
        model->initializeWeights(params.seed);
    } else {
        model = model::loadPretrained(job.weightsFolder);
        observer.onLog(LogLevel::Info, "fine-tuning the weights in " + job.weightsFolder.string());
    }
    // Inputs go where the embedding is; the labels go where the logits come out.
    const torch::Device device = params.devicePlacement.empty() ? job.device : model->parameters().front().device();
    if (params.devicePlacement.empty())
        model->to(device);
    model->train();
    auto optimizer = makeOptimizer(model, params);
    const std::vector<torch::Tensor> parameters = model->parameters();

    const LearningRateSchedule schedule{params.learningRate, params.effectiveWarmupSteps(), params.steps, params.minLearningRateRatio};
    const int64_t sequenceCount = job.sequences.size(0);
    std::mt19937_64 random(params.seed);
    std::vector<int64_t> order(static_cast<size_t>(sequenceCount));
    std::iota(order.begin(), order.end(), 0);
    size_t cursor = order.size(); // forces a shuffle before the first batch

    MetricsWriter writer(store, runId);
    LoopResult result;
    const auto start = Clock::now();
    double pausedSeconds = 0;
    double smoothedStepSeconds = 0;
    const double tokensPerStep = static_cast<double>(params.batchSize * params.sequenceLength);

    for (int64_t step = 1; step <= params.steps; ++step) {
        if (control.paused()) {
            writer.flush();
            observer.onLog(LogLevel::Info, "paused before step " + std::to_string(step));
            const auto pauseStart = Clock::now();
            const bool go = control.waitWhilePaused();
            pausedSeconds += secondsSince(pauseStart);
            if (go)
                observer.onLog(LogLevel::Info, "resumed");
        }
        if (control.cancelRequested()) {
            result.status = JobStatus::Cancelled;
            break;
        }
        const auto stepStart = Clock::now();

        std::vector<int64_t> batchRows(static_cast<size_t>(params.batchSize));
        for (auto &row : batchRows) {
            if (cursor >= order.size()) {
                std::shuffle(order.begin(), order.end(), random);
                cursor = 0;
            }
            row = order[cursor++];
        }
        const torch::Tensor rows = torch::tensor(batchRows, torch::kInt64);
        const torch::Tensor batch = job.sequences.index_select(0, rows).to(device);
        const torch::Tensor inputs = batch.narrow(1, 0, params.sequenceLength);
        const torch::Tensor labels = batch.narrow(1, 1, params.sequenceLength);

        const double lr = schedule.at(step);
        for (auto &group : optimizer->param_groups())
            static_cast<torch::optim::AdamWOptions &>(group.options()).lr(lr);

        optimizer->zero_grad();
        const torch::Tensor logits = model->forward(inputs);
        const torch::Tensor loss = torch::nn::functional::cross_entropy(
            logits.reshape({-1, logits.size(-1)}), labels.to(logits.device()).reshape({-1}));
        const double lossValue = loss.item<double>();
        if (!std::isfinite(lossValue)) {
            throw invalidInput("training diverged: the loss is " + formatDouble(lossValue) + " at step "
                               + std::to_string(step) + "; lower the learning rate (now "
                               + formatDouble(params.learningRate) + ")");
        }
        loss.backward();
        const double gradNorm = gradientNorm(parameters, params.gradClipNorm);
        optimizer->step();

        const double stepSeconds = secondsSince(stepStart);
        smoothedStepSeconds = step == 1 ? stepSeconds : 0.8 * smoothedStepSeconds + 0.2 * stepSeconds;
        StepMetrics metrics;
        metrics.step = step;
        metrics.totalSteps = params.steps;
        metrics.loss = lossValue;
        metrics.learningRate = lr;
        metrics.gradNorm = gradNorm;
        metrics.tokensPerSecond = tokensPerStep / std::max(stepSeconds, 1e-9);
        metrics.wallSeconds = secondsSince(start) - pausedSeconds;
        metrics.etaSeconds = smoothedStepSeconds * static_cast<double>(params.steps - step);

        writer.add(metrics);
        observer.onStep(metrics);
        if (step == 1)
            result.firstLoss = lossValue;
        result.lastLoss = lossValue;
        result.steps = step;
        result.curve.push_back({static_cast<double>(step), lossValue});
    }
    writer.flush();
    result.model = model;
    return result;
}

std::filesystem::path runOutputDir(const TrainingParams &params, int64_t runId)
{
    return params.outputDir.empty() ? dataDir() / "runs" / std::to_string(runId) : std::filesystem::path(params.outputDir);
}

/// Saves the trained model where `tunebench generate/score --model` and transformers can load it:
/// config.json + model.safetensors (save_pretrained layout) and the tokenizer.model it was trained with.
void saveTrainedModel(const TrainingParams &params, TrainingOutcome &outcome, model::LlamaForCausalLM &model,
                      const PreparedJob &job, store::RunStore &store, TrainingObserver &observer)
{
    const std::filesystem::path dir = runOutputDir(params, outcome.runId) / "model";
    try {
        model::savePretrained(model, dir);
        writeFileAtomically(dir / "tokenizer.model", readFile(job.tokenizerPath));
        store.addArtifact(outcome.runId, "model", dir.string());
        outcome.modelPath = dir.string();
    } catch (const std::exception &e) {
        observer.onLog(LogLevel::Warning, std::string("could not save the model: ") + e.what());
    }
}

void writeLossPlot(const TrainingParams &params, TrainingOutcome &outcome, const std::vector<report::CurvePoint> &curve,
                   store::RunStore &store, const std::string &runName, TrainingObserver &observer)
{
    if (curve.empty())
        return;
    const std::filesystem::path png = runOutputDir(params, outcome.runId) / "loss.png";
    try {
        report::LossPlotOptions options;
        options.title = "run " + std::to_string(outcome.runId) + ": " + runName;
        report::writeLossPlotPng(png, curve, options);
        store.addArtifact(outcome.runId, "loss_plot", png.string());
        outcome.lossPlotPath = png.string();
    } catch (const std::exception &e) {
        // A missing picture is not worth failing a finished run for; say so.
        observer.onLog(LogLevel::Warning, std::string("could not write the loss plot: ") + e.what());
    }
}

} // namespace

TrainingOutcome runTraining(const TrainingParams &params, JobControl &control, TrainingObserver &observer)
{
    TrainingOutcome outcome;
    std::optional<store::RunStore> store;
    std::optional<PreparedJob> job;
    try {
        params.validate();
        applyThreadCount(params.threads);
        job = prepare(params, control, observer);
        if (!job) {
            outcome.status = JobStatus::Cancelled;
            return outcome;
        }
        outcome.storePath = job->storePath.string();
        store.emplace(store::RunStore::open(job->storePath));
        nlohmann::json config = {{"training", params.toJson()}, {"model", job->config.toJson()},
                                 {"tokenizer", job->tokenizerPath}, {"corpus", job->corpusPath.string()},
                                 {"corpus_tokens", job->corpusTokens}};
        config["training"]["threads"] = params.threads > 0 ? params.threads : hardwareThreads();
        const std::string runName = params.runName.empty() ? defaultRunName(*job) : params.runName;
        outcome.runId = store->createRun(runName, config.dump(), job->modelName);
        observer.onRunCreated(outcome.runId, outcome.storePath);
        store->addEvent(outcome.runId, LogLevel::Info,
                        "started: " + std::to_string(params.steps) + " steps, " + std::to_string(job->config.parameterCount())
                            + " parameters, " + std::to_string(params.threads > 0 ? params.threads : hardwareThreads())
                            + " threads");
        observer.onLog(LogLevel::Info, "run " + std::to_string(outcome.runId) + " in " + outcome.storePath + ": "
                                           + std::to_string(job->config.parameterCount()) + " parameters");

        LoopResult loop = trainLoop(params, *job, control, observer, *store, outcome.runId);
        outcome.status = loop.status;
        outcome.stepsCompleted = loop.steps;
        outcome.firstLoss = loop.firstLoss;
        outcome.lastLoss = loop.lastLoss;
        writeLossPlot(params, outcome, loop.curve, *store, runName, observer);
        if (params.saveModel && loop.steps > 0)
            saveTrainedModel(params, outcome, *loop.model, *job, *store, observer);
        const bool cancelled = loop.status == JobStatus::Cancelled;
        store->addEvent(outcome.runId, LogLevel::Info,
                        std::string(cancelled ? "cancelled" : "finished") + " after " + std::to_string(loop.steps)
                            + " steps, loss " + formatDouble(loop.lastLoss));
        store->finishRun(outcome.runId, cancelled ? store::RunStatus::Cancelled : store::RunStatus::Succeeded);
    } catch (...) {
        outcome.status = JobStatus::Failed;
        outcome.error = currentExceptionInfo();
        if (store && outcome.runId > 0) {
            try {
                store->addEvent(outcome.runId, LogLevel::Error, outcome.error->message);
                store->finishRun(outcome.runId, store::RunStatus::Failed);
            } catch (...) {
                // The store itself failed; the run will read as interrupted once this process exits.
            }
        }
    }
    return outcome;
}

} // namespace engine::train
