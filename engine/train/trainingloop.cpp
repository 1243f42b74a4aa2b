#include "engine/train/trainingloop.h"

#include "engine/core/atomicfile.h"
#include "engine/core/autocast.h"
#include "engine/core/format.h"
#include "engine/core/error.h"
#include "engine/core/processcpu.h"
#include "engine/core/processmemory.h"
#include "engine/core/systeminfo.h"
#include "engine/dist/gradientreducer.h"
#include "engine/inspect/trainingguard.h"
#include "engine/io/safetensorsfile.h"
#include "engine/model/deviceplacement.h"
#include "engine/model/dispatch.h"
#include "engine/model/generation.h"
#include "engine/model/lora.h"
#include "engine/model/pretrained.h"
#include "engine/store/runstore.h"
#include "engine/tokenize/tokenizer.h"
#include "engine/train/batchsampler.h"
#include "engine/train/checkpoint.h"
#include "engine/train/gradientclip.h"
#include "engine/train/lossscaler.h"
#include "engine/train/lrschedule.h"
#include "engine/train/optimizer.h"
#include "engine/train/outofmemory.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <memory>

namespace engine::train {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start)
{
    return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The optimizer over exactly the trainable parameters (a frozen base adds nothing). Weight decay skips
/// biases and norm weights (every 1-D parameter), as Hugging Face's Trainer does.
std::unique_ptr<Optimizer> makeOptimizer(model::LlamaForCausalLM &model, const TrainingParams &params)
{
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (const auto &item : model->named_parameters())
        named.emplace_back(item.key(), item.value());
    OptimizerOptions options;
    options.momentum = params.momentum;
    return std::make_unique<Optimizer>(params.optimizer, weightDecayGroups(named, params.weightDecay), options);
}

/// Buffers metric samples and commits them in one transaction at most every flushInterval.
class MetricsWriter {
public:
    /// `store` null: a rank other than 0 of a data-parallel job, which writes nothing.
    MetricsWriter(store::RunStore *store, int64_t run) : m_store(store), m_run(run) {}
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
        m_pending.push_back({"train/step_seconds", m.step, m.wallSeconds, m.stepSeconds});
        if (m.evaluated) {
            m_pending.push_back({"eval/loss", m.step, m.wallSeconds, m.evalLoss});
            m_pending.push_back({"eval/perplexity", m.step, m.wallSeconds, m.evalPerplexity});
        }
        if (secondsSince(m_lastFlush) >= kFlushIntervalSeconds)
            flush();
    }

    void addValue(const std::string &key, int64_t step, double wall, double value)
    {
        m_pending.push_back({key, step, wall, value});
    }

    void flush()
    {
        if (!m_pending.empty() && m_store)
            m_store->appendMetrics(m_run, m_pending);
        m_pending.clear();
        m_lastFlush = Clock::now();
    }

private:
    static constexpr double kFlushIntervalSeconds = 0.25;
    store::RunStore *m_store;
    int64_t m_run;
    std::vector<store::MetricSample> m_pending;
    Clock::time_point m_lastFlush = Clock::now();
};

/// The autocast state a precision trains under (none for fp32): bf16 on the CPU and on CUDA, fp16 on
/// CUDA only (layers a device map puts on the CPU stay float32 then).
std::optional<AutocastState> autocastFor(Precision precision)
{
    if (precision == Precision::Fp32)
        return std::nullopt;
    AutocastState state;
    state.cuda = true;
    if (precision == Precision::Bf16) {
        state.cpu = true;
        state.cpuDtype = torch::kBFloat16;
        state.cudaDtype = torch::kBFloat16;
    } else {
        state.cudaDtype = torch::kHalf;
    }
    return state;
}

/// The model's float32 logits for `batch`, the forward under autocast when `amp` is set.
torch::Tensor forwardLogits(model::LlamaForCausalLM &model, const torch::Tensor &batch, int64_t sequenceLength,
                            const std::optional<AutocastState> &amp)
{
    const torch::Tensor ids = batch.narrow(1, 0, sequenceLength);
    if (!amp)
        return model->forward(ids);
    const AutocastScope scope(*amp);
    return model->forward(ids); // lm_head returns float32 logits in every precision
}

/// Mean cross-entropy over the eval windows (all, or the first evalBatches batches), in eval mode.
/// In a data-parallel job each rank evaluates every world-th batch and the sums are added up.
double evaluate(model::LlamaForCausalLM &model, const TrainingParams &params, const torch::Tensor &sequences,
                const torch::Tensor &allLabels, torch::Device device, const RankContext &ranks)
{
    torch::NoGradGuard noGrad;
    model->eval();
    const int64_t count = sequences.size(0);
    int64_t batches = (count + params.batchSize - 1) / params.batchSize;
    if (params.evalBatches > 0)
        batches = std::min(batches, params.evalBatches);
    double lossSum = 0;
    int64_t tokens = 0;
    for (int64_t b = ranks.rank; b < batches; b += ranks.world) {
        const int64_t first = b * params.batchSize;
        const int64_t size = std::min(params.batchSize, count - first);
        const torch::Tensor batch = sequences.narrow(0, first, size).to(device);
        const torch::Tensor logits = forwardLogits(model, batch, params.sequenceLength, autocastFor(params.precision));
        const torch::Tensor labels = allLabels.narrow(0, first, size).to(logits.device());
        lossSum += torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}),
                                                        torch::nn::functional::CrossEntropyFuncOptions()
                                                            .reduction(torch::kSum)
                                                            .ignore_index(kIgnoreLabel))
                       .item<double>();
        tokens += labels.ne(kIgnoreLabel).sum().item<int64_t>();
    }
    model->train();
    const std::vector<double> total = ranks.sum({lossSum, static_cast<double>(tokens)});
    return total[0] / std::max(total[1], 1.0);
}

/// A greedy continuation of the sample prompt, logged and kept as a run event; the model goes back to training mode.
void logSample(model::LlamaForCausalLM &model, const TrainingParams &params, const PreparedJob &job, TrainingObserver &observer,
               store::RunStore &store, int64_t runId, const std::string &when, JobControl &control)
{
    if (params.samplePrompt.empty() || !job.tokenizer)
        return;
    const tokenize::Tokenizer &tokenizer = *job.tokenizer->tokenizer;
    std::vector<int64_t> prompt;
    if (tokenizer.bosId() >= 0)
        prompt.push_back(tokenizer.bosId());
    for (int id : tokenizer.encode(params.samplePrompt))
        prompt.push_back(id);
    model::GenerationOptions options;
    options.maxNewTokens = std::min<int64_t>(params.sampleTokens, job.config.maxPositionEmbeddings - static_cast<int64_t>(prompt.size()));
    if (options.maxNewTokens < 1)
        return;
    if (tokenizer.eosId() >= 0)
        options.stopIds = {tokenizer.eosId()};
    const model::GenerationResult result = model::generate(model, prompt, options, &control);
    std::vector<int> ids;
    for (int64_t id : result.tokens) {
        if (id != tokenizer.eosId())
            ids.push_back(static_cast<int>(id));
    }
    // Decoded with the prompt, so that the first new word gets its space; one line for the log.
    std::vector<int> all;
    for (int64_t id : prompt) {
        if (id != tokenizer.bosId())
            all.push_back(static_cast<int>(id));
    }
    all.insert(all.end(), ids.begin(), ids.end());
    std::string sample = tokenizer.decode(all, /*skipSpecialTokens=*/true);
    for (size_t at = sample.find('\n'); at != std::string::npos; at = sample.find('\n', at + 3))
        sample.replace(at, 1, " / ");
    const std::string text = "sample " + when + ": \"" + sample + "\"";
    observer.onLog(LogLevel::Info, text);
    store.addEvent(runId, LogLevel::Info, text);
    model->train();
}

model::LlamaForCausalLM buildModel(const TrainingParams &params, const PreparedJob &job, TrainingObserver &observer)
{
    model::LlamaForCausalLM model{nullptr};
    if (!job.devicePlacement.empty()) {
        // A device map (from the Plan page or a plan file): each tensor is read once, straight onto its
        // device; the model then moves activations at layer boundaries.
        model::DevicePlacement placement;
        for (const auto &[module, device] : job.devicePlacement)
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
    if (job.devicePlacement.empty())
        model->to(job.device);
    if (params.method == TrainingMethod::Lora) {
        const model::LoraAttachment attached = model::attachLora(model, params.lora);
        observer.onLog(LogLevel::Info, "LoRA r=" + std::to_string(params.lora.r) + " on "
                                           + std::to_string(attached.adapted.size()) + " modules: "
                                           + std::to_string(attached.trainableParameters) + " trainable parameters of "
                                           + std::to_string(job.config.parameterCount()));
    }
    model->setGradientCheckpointing(params.gradientCheckpointing);
    model->train();
    return model;
}

/// The step that stopped the run, as the inspector reproduces it: <output>/<prefix><N>/ (nonfinite-step-
/// for a NaN/Inf loss or gradient, guarded-step- when the guard found a stale saved tensor) with
/// the weights the step ran with (the model in save_pretrained layout, or the LoRA adapter over its
/// base) and batch.safetensors (input_ids and labels, every micro-batch). Nothing was updated, so
/// `tunebench inspect --model DIR --data DIR/batch.safetensors` runs exactly that forward and backward.
/// Returns the folder; empty (with a warning) when it could not be written.
std::string saveNonFiniteStep(const std::filesystem::path &outputDir, int64_t step, model::LlamaForCausalLM &model,
                              const TrainingParams &params, const PreparedJob &job,
                              const std::vector<std::pair<torch::Tensor, torch::Tensor>> &micro, TrainingObserver &observer,
                              const std::string &prefix)
{
    const std::filesystem::path dir = outputDir / (prefix + std::to_string(step));
    try {
        StagedFolder staged(dir);
        if (params.method == TrainingMethod::Lora)
            model::savePeftAdapter(model, params.lora, std::filesystem::absolute(job.weightsFolder).string(), staged.path());
        else
            model::savePretrained(model, staged.path());
        saveTokenizerFiles(job.tokenizerFiles, staged.path());
        std::vector<torch::Tensor> ids, labels;
        for (const auto &[rows, rowLabels] : micro) {
            ids.push_back(rows.narrow(1, 0, params.sequenceLength).to(torch::kInt64).contiguous());
            labels.push_back(rowLabels.to(torch::kInt64).contiguous());
        }
        io::writeSafetensors(staged.path() / "batch.safetensors",
                             {{"input_ids", torch::cat(ids)}, {"labels", torch::cat(labels)}},
                             {{"step", std::to_string(step)}, {"format", "pt"}});
        staged.commit(/*replace=*/true);
        return dir.string();
    } catch (const std::exception &e) {
        observer.onLog(LogLevel::Warning, std::string("could not save the failing step for inspection: ") + e.what());
        return {};
    }
}

/// Rank 0's weights on every rank, as DDP does when it wraps a model: parameters and buffers.
void broadcastWeights(model::LlamaForCausalLM &model, const RankContext &ranks)
{
    if (!ranks.group)
        return;
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> tensors;
    for (const torch::Tensor &p : model->parameters())
        tensors.push_back(p.detach());
    for (const torch::Tensor &b : model->buffers()) {
        if (b.is_contiguous())
            tensors.push_back(b.detach());
    }
    ranks.group->broadcast(tensors, 0);
}

/// The (rows, labels) of each micro-batch of a step.
using MicroBatches = std::vector<std::pair<torch::Tensor, torch::Tensor>>;

/// One step as its phases fill it in.
struct StepState {
    int64_t step = 0;
    double lr = 0;
    Clock::time_point start;
    MicroBatches micro;
    double tokens = 0;  ///< the step's labelled tokens over all ranks (at least 1): each loss is divided by it
    double loss = 0;    ///< summed over the micro-batches (and the ranks, once reduced)
    double seconds = 0; ///< the step's training time, the evaluation left out
    StepMetrics metrics;
};

/// The steps of one run. The constructor builds the model and what trains it; run() restores a
/// checkpoint or evaluates the model before training, then steps: beginStep, drawBatch,
/// forwardBackward per micro-batch, reduceGradients, clipAndStep, measureStep, evaluateIfDue,
/// recordMetrics, checkpointIfDue; and finish(). Data parallelism lives in joinRanks (the weights and
/// the gradient reducer), drawBatch (the shard), forwardBackward (the reducer's prepare) and
/// reduceGradients; the loss scaler in forwardBackward (scale) and clipAndStep (unscale, update); the
/// guard in forwardBackward.
class TrainingLoop {
public:
    /// Seeds torch and builds the model, then the optimizer and what the steps need.
    TrainingLoop(const TrainingParams &params, const PreparedJob &job, JobControl &control, TrainingObserver &observer,
                 store::RunStore *store, int64_t runId, const std::filesystem::path &outputDir, LoopPosition &at,
                 const RankContext &ranks);
    TrainingLoop(const TrainingLoop &) = delete;
    TrainingLoop &operator=(const TrainingLoop &) = delete;

    /// From `resume`'s checkpoint, or a new run's first step, to the last step or a stop.
    LoopResult run(const std::optional<ResumePoint> &resume);

private:
    // Before the first step.
    void resumeFrom(const ResumePoint &resume);
    void joinRanks();
    void evaluateBeforeTraining();
    // The step, phase by phase.
    bool trainStep(int64_t step);
    bool beginStep(StepState &s);
    void pause(int64_t step);
    void drawBatch(StepState &s);
    void forwardBackward(StepState &s, size_t k);
    void stopIfGuardFires(const StepState &s, const torch::Tensor &loss);
    void reduceGradients(StepState &s);
    void clipAndStep(StepState &s);
    void stopOrSkip(StepState &s, const std::string &what);
    void measureStep(StepState &s);
    void evaluateIfDue(StepState &s);
    void recordMetrics(StepState &s);
    void checkpointIfDue(int64_t step);
    // After the last step.
    LoopResult finish();
    // Shared by the phases.
    void checkpoint(int64_t step);
    std::string keepStepForInspection(int64_t step, const MicroBatches &micro, const std::string &what,
                                      const std::string &prefix);
    void event(LogLevel level, const std::string &text);
    double wallNow() const;

    const TrainingParams &m_params;
    const PreparedJob &m_job;
    JobControl &m_control;
    TrainingObserver &m_observer;
    store::RunStore *m_store; ///< null on the ranks other than 0
    const int64_t m_runId;
    const std::filesystem::path &m_outputDir;
    LoopPosition &m_at;
    const RankContext &m_ranks;

    // Declared (and so made) in the order the loop has always made them: the seed and the model first;
    // a random draw must not move.
    model::LlamaForCausalLM m_model;
    const torch::Device m_device; ///< inputs go where the embedding is; the labels go where the logits come out
    const std::optional<AutocastState> m_amp;
    std::optional<LossScaler> m_scaler; ///< fp16 only
    std::unique_ptr<Optimizer> m_optimizer;
    const std::vector<torch::Tensor> m_parameters; ///< the trainable ones, in the optimizer's order
    const int64_t m_totalSteps;
    const LearningRateSchedule m_schedule;
    BatchSampler m_sampler;
    const nlohmann::json m_identity;
    MetricsWriter m_writer;
    // Data parallelism: only the trainable parameters' gradients travel (LoRA: the adapters).
    std::optional<dist::GradientReducer> m_reducer;
    LoopResult m_result;
    int64_t m_firstStep = 1;
    double m_wallOffset = 0; ///< the wall time of the steps before a resume
    int64_t m_lastCheckpointStep = 0;
    Clock::time_point m_start;
    double m_pausedSeconds = 0;
    double m_smoothedStepSeconds = 0;
    const double m_tokensPerStep;
    // Memory per device: the process's resident peak for the CPU, the caching allocator's peak per GPU.
    std::vector<int> m_gpus;
    const bool m_haveEval;
    CpuUsageMeter m_cpuMeter;     // the process's CPU use over each step (the system metrics)
    inspect::TrainingGuard m_guard; // watches each micro-batch's saved tensors when params.inspectGuard
};

/// The model, built right after the run's seed is set (its initial weights and LoRA's come from it).
model::LlamaForCausalLM seededModel(const TrainingParams &params, const PreparedJob &job, TrainingObserver &observer)
{
    torch::manual_seed(params.seed);
    return buildModel(params, job, observer);
}

/// The parameters the optimizer updates, group by group.
std::vector<torch::Tensor> trainableParameters(const Optimizer &optimizer)
{
    std::vector<torch::Tensor> parameters;
    for (const auto &group : optimizer.groups()) {
        for (const auto &item : group.parameters)
            parameters.push_back(item.second);
    }
    return parameters;
}

/// The GPUs the model's parameters are on, in the order they first appear.
std::vector<int> gpusOf(model::LlamaForCausalLM &model)
{
    std::vector<int> gpus;
    for (const torch::Tensor &p : model->parameters()) {
        if (p.is_cuda() && std::find(gpus.begin(), gpus.end(), p.get_device()) == gpus.end())
            gpus.push_back(p.get_device());
    }
    return gpus;
}

/// The schedule over the run's steps: warmup a tenth of them unless the params say otherwise.
LearningRateSchedule scheduleFor(const TrainingParams &params, int64_t totalSteps)
{
    const int64_t warmup = params.warmupSteps < 0 ? totalSteps / 10 : std::min(params.warmupSteps, totalSteps);
    return LearningRateSchedule{params.learningRate, warmup, totalSteps, params.minLearningRateRatio, params.schedule};
}

TrainingLoop::TrainingLoop(const TrainingParams &params, const PreparedJob &job, JobControl &control,
                           TrainingObserver &observer, store::RunStore *store, int64_t runId,
                           const std::filesystem::path &outputDir, LoopPosition &at, const RankContext &ranks)
    : m_params(params), m_job(job), m_control(control), m_observer(observer), m_store(store), m_runId(runId),
      m_outputDir(outputDir), m_at(at), m_ranks(ranks), m_model(seededModel(params, job, observer)),
      m_device(job.devicePlacement.empty() ? job.device : m_model->parameters().front().device()),
      m_amp(autocastFor(params.precision)),
      m_scaler(params.precision == Precision::Fp16 ? std::make_optional<LossScaler>() : std::nullopt),
      m_optimizer(makeOptimizer(m_model, params)), m_parameters(trainableParameters(*m_optimizer)),
      m_totalSteps(params.totalSteps(job.sequences.size(0))), m_schedule(scheduleFor(params, m_totalSteps)),
      m_sampler(job.sequences.size(0), params.seed), m_identity(runIdentity(params, job)), m_writer(store, runId),
      m_tokensPerStep(
          static_cast<double>(params.batchSize * params.gradAccumulation * params.sequenceLength * ranks.world)),
      m_haveEval(job.evalSequences.defined())
{
}

LoopResult TrainingLoop::run(const std::optional<ResumePoint> &resume)
{
    if (resume)
        resumeFrom(*resume);
    if (m_ranks.group)
        joinRanks();
    m_start = Clock::now();
    m_gpus = gpusOf(m_model);
    if (!resume)
        evaluateBeforeTraining();
    for (int64_t step = m_firstStep; step <= m_totalSteps; ++step) {
        if (!trainStep(step)) {
            m_result.status = JobStatus::Cancelled;
            break;
        }
    }
    return finish();
}

/// The weights, optimizer, loss scale, data position and random generator of the checkpoint.
void TrainingLoop::resumeFrom(const ResumePoint &resume)
{
    restoreCheckpoint(resume.checkpoint, resume.state, m_model, m_params, *m_optimizer);
    if (m_scaler && resume.state.lossScale > 0)
        m_scaler->restore(resume.state.lossScale, resume.state.lossScaleGrowthTracker);
    m_sampler.seek(resume.state.samplerShuffles, resume.state.samplerCursor);
    m_firstStep = resume.state.step + 1;
    m_wallOffset = resume.state.training.value("wall_seconds", 0.0);
    m_lastCheckpointStep = resume.state.step;
    m_result.steps = resume.state.step;
    m_result.lastCheckpoint = resume.checkpoint.string();
    m_observer.onLog(LogLevel::Info, "resumed from " + resume.checkpoint.string() + " at step "
                                         + std::to_string(resume.state.step) + " of " + std::to_string(m_totalSteps));
}

/// Data parallelism: rank 0's weights on every rank, the gradient reducer, and each rank its own random stream.
void TrainingLoop::joinRanks()
{
    m_at.phase = "sharing rank 0's weights";
    broadcastWeights(m_model, m_ranks);
    const bool overlap = m_params.bucketMegabytes > 0;
    const auto bucketBytes = static_cast<int64_t>(m_params.bucketMegabytes * 1024 * 1024);
    m_reducer.emplace(*m_ranks.group, m_parameters, overlap ? bucketBytes : int64_t(1) << 62, overlap);
    // Same weights, but each rank its own random stream: dropout masks must not repeat across the shards.
    torch::manual_seed(m_params.seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(m_ranks.rank + 1)));
    m_observer.onLog(LogLevel::Info, "data parallel over " + std::to_string(m_ranks.world) + " ranks: "
                                         + formatBytes(m_reducer->bytesPerStep()) + " of gradients per step in "
                                         + std::to_string(m_reducer->bucketCount()) + " buckets"
                                         + (overlap ? ", summed during backward" : ", summed after backward"));
}

/// A new run: the eval loss at step 0 (with eval data) and the sample before training.
void TrainingLoop::evaluateBeforeTraining()
{
    if (m_haveEval) {
        // Step 0: where the eval loss starts, so that the curve shows how far training moved it.
        m_at.phase = "evaluation";
        const double before = evaluate(m_model, m_params, m_job.evalSequences, m_job.evalLabels, m_device, m_ranks);
        m_writer.addValue("eval/loss", 0, 0.0, before);
        m_writer.addValue("eval/perplexity", 0, 0.0, std::exp(before));
        StepMetrics initial;
        initial.totalSteps = m_totalSteps;
        initial.evaluated = true;
        initial.evalLoss = before;
        initial.evalPerplexity = std::exp(before);
        m_observer.onInitialEvaluation(initial);
        m_observer.onLog(LogLevel::Info, "eval loss before training: " + formatDouble(before) + " (perplexity "
                                             + formatDouble(std::exp(before)) + ")");
    }
    m_at.phase = "generating the sample";
    if (m_store)
        logSample(m_model, m_params, m_job, m_observer, *m_store, m_runId, "before training", m_control);
    m_ranks.waitForRank0();
}

/// One optimizer step, phase by phase. False when a rank asked to stop before it.
bool TrainingLoop::trainStep(int64_t step)
{
    StepState s;
    s.step = step;
    if (!beginStep(s))
        return false;
    drawBatch(s);
    m_optimizer->zeroGrad();
    for (size_t k = 0; k < s.micro.size(); ++k)
        forwardBackward(s, k);
    reduceGradients(s);
    clipAndStep(s);
    measureStep(s);
    evaluateIfDue(s);
    recordMetrics(s);
    checkpointIfDue(step);
    return true;
}

/// A pause, the ranks' vote on a stop, the learning rate, and the step's clocks and memory peaks.
bool TrainingLoop::beginStep(StepState &s)
{
    if (m_control.paused())
        pause(s.step);
    // A stop on any rank stops all at this step: the others would wait for it in the next allreduce.
    if (m_ranks.sum({m_control.cancelRequested() ? 1.0 : 0.0})[0] > 0)
        return false;
    s.start = Clock::now();
    m_cpuMeter.sample(); // starts the step's window: the sample before it, a pause, leave it
    s.lr = m_schedule.at(s.step);
    m_at.step = s.step;
    resetResidentPeak();
    for (const int gpu : m_gpus)
        resetCudaPeakMemory(gpu);
    return true;
}

/// Waits while the job is paused; the pause does not count as wall time.
void TrainingLoop::pause(int64_t step)
{
    m_writer.flush();
    m_observer.onLog(LogLevel::Info, "paused before step " + std::to_string(step));
    const auto pauseStart = Clock::now();
    const bool go = m_control.waitWhilePaused();
    m_pausedSeconds += secondsSince(pauseStart);
    if (go)
        m_observer.onLog(LogLevel::Info, "resumed");
}

/// K micro-batches; each one's summed loss is divided by the step's token count, so that the
/// gradient equals that of one batch of K * B sequences.
void TrainingLoop::drawBatch(StepState &s)
{
    int64_t labelled = 0;
    for (int64_t k = 0; k < m_params.gradAccumulation; ++k) {
        // Every rank draws the whole batch of all ranks and keeps its shard (DistributedSampler's order).
        const std::vector<int64_t> drawn = m_sampler.next(m_params.batchSize * m_ranks.world);
        const torch::Tensor index
            = torch::tensor(m_ranks.world > 1 ? rankShard(drawn, m_ranks.rank, m_ranks.world) : drawn, torch::kInt64);
        s.micro.emplace_back(m_job.sequences.index_select(0, index), m_job.labels.index_select(0, index));
        labelled += s.micro.back().second.ne(kIgnoreLabel).sum().item<int64_t>();
    }
    // Over all ranks: each rank's summed loss over the step's global target count, and gradients
    // summed (not averaged) over the ranks, give exactly one process's gradient of the whole batch.
    s.tokens = std::max(m_ranks.sum({static_cast<double>(labelled)})[0], 1.0);
}

/// Micro-batch k: forward, the guard's check of the saved tensors, backward (scaled with fp16; the
/// reducer sums the gradients over the ranks after the last micro-batch's).
void TrainingLoop::forwardBackward(StepState &s, size_t k)
{
    const auto &[rows, rowLabels] = s.micro[k];
    if (m_params.inspectGuard)
        m_guard.beginStep();
    m_at.phase = "forward";
    const torch::Tensor batch = rows.to(m_device);
    const torch::Tensor logits = forwardLogits(m_model, batch, m_params.sequenceLength, m_amp);
    const torch::Tensor labels = rowLabels.to(logits.device());
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
                                   logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}),
                                   torch::nn::functional::CrossEntropyFuncOptions()
                                       .reduction(torch::kSum)
                                       .ignore_index(kIgnoreLabel))
        / s.tokens;
    const double microLoss = loss.item<double>();
    s.loss += microLoss;
    if (m_guard.watching() && std::isfinite(microLoss))
        stopIfGuardFires(s, loss); // a non-finite loss is checked in clipAndStep, with the whole step's
    m_at.phase = "backward";
    if (m_reducer)
        m_reducer->prepare(/*synchronize=*/k + 1 == s.micro.size()); // as DDP's no_sync() before the last
    (m_scaler ? m_scaler->scale(loss) : loss).backward();
    m_guard.endStep();
}

/// A saved tensor already written in place: backward would raise PyTorch's version error. Stop here
/// instead, with the step kept for the inspector.
void TrainingLoop::stopIfGuardFires(const StepState &s, const torch::Tensor &loss)
{
    const inspect::GuardVerdict verdict = m_guard.checkSavedTensors(loss);
    if (!verdict.fired)
        return;
    m_guard.endStep();
    const std::string what = "the guard stopped step " + std::to_string(s.step) + ": " + verdict.reason;
    const std::string inspect = keepStepForInspection(s.step, s.micro, what, "guarded-step-");
    throw invalidInput(what + "; find the in-place write: " + inspect);
}

/// Data parallelism: the gradients' last buckets and the step's loss summed over the ranks.
void TrainingLoop::reduceGradients(StepState &s)
{
    if (!m_reducer)
        return;
    m_at.phase = "summing gradients over the ranks";
    m_reducer->finish();
    s.loss = m_ranks.sum({s.loss})[0];
    const dist::GradientReducer::Timing timing = m_reducer->lastTiming();
    m_writer.addValue("dist/allreduce_wait_seconds", s.step, wallNow(), timing.waitSeconds);
    m_writer.addValue("dist/buckets_during_backward", s.step, wallNow(), timing.backwardLaunched);
}

/// The update, unless the loss or the gradients are not finite: fp16's unscaling (an overflow skips
/// the step and backs the scale off), clipping, the optimizer step, the loss scale's update.
void TrainingLoop::clipAndStep(StepState &s)
{
    m_at.phase = "optimizer step";
    s.metrics.step = s.step;
    s.metrics.totalSteps = m_totalSteps;
    s.metrics.loss = s.loss;
    s.metrics.learningRate = s.lr;
    GradientNorm norm;
    if (!std::isfinite(s.loss)) {
        stopOrSkip(s, "the loss is " + formatDouble(s.loss) + " at step " + std::to_string(s.step));
    } else if (m_scaler && !m_scaler->unscale(m_parameters)) {
        // fp16 overflowed in backward (the loss itself is finite): no update, a smaller scale next step.
        m_optimizer->zeroGrad();
        s.metrics.skipped = true;
        m_scaler->update();
        m_writer.addValue("train/loss_scale", s.step, wallNow(), m_scaler->currentScale());
    } else if (norm = clipGradients(m_parameters, m_params.gradClipNorm); !std::isfinite(norm.total)) {
        stopOrSkip(s, "the gradient norm is " + formatDouble(norm.total) + " at step " + std::to_string(s.step)
                          + " (the loss, " + formatDouble(s.loss) + ", is finite: backward made the NaN or Inf)");
    } else {
        s.metrics.gradNorm = norm.total;
        for (const auto &[deviceName, value] : norm.perDevice)
            m_writer.addValue("train/grad_norm/" + deviceName, s.step, wallNow(), value);
        m_optimizer->step(s.lr);
        if (m_scaler) {
            m_scaler->update();
            m_writer.addValue("train/loss_scale", s.step, wallNow(), m_scaler->currentScale());
        }
    }
}

/// A non-finite loss, or (fp32/bf16) a finite loss whose gradients hold NaN or Inf: stop with the
/// step kept for the inspector, or skip it. Updating would carry the NaN into every weight, and
/// the next step's inspection would find it there instead of where it began.
void TrainingLoop::stopOrSkip(StepState &s, const std::string &what)
{
    if (m_params.nonFinite == NonFinitePolicy::Stop) {
        const std::string inspect = keepStepForInspection(s.step, s.micro, what, "nonfinite-step-");
        throw invalidInput("training diverged: " + what + "; lower the learning rate (now "
                           + formatDouble(m_params.learningRate) + ") or find where the NaN first appears: " + inspect);
    }
    if (m_scaler) { // as GradScaler: the non-finite gradients back the scale off
        m_scaler->unscale(m_parameters);
        m_scaler->update();
    }
    m_optimizer->zeroGrad();
    s.metrics.skipped = true;
    event(LogLevel::Warning, what + "; step skipped (no update)");
    m_observer.onLog(LogLevel::Warning, what + "; step skipped (no update)");
}

/// The step's time, speed and memory leave the evaluation out: it is not training work.
void TrainingLoop::measureStep(StepState &s)
{
    s.seconds = secondsSince(s.start);
    s.metrics.cpuPeakBytes = residentPeakBytes();
    if (s.metrics.cpuPeakBytes > 0)
        m_writer.addValue("memory/cpu", s.step, wallNow(), static_cast<double>(s.metrics.cpuPeakBytes));
    m_writer.addValue("system/cpu_percent", s.step, wallNow(), m_cpuMeter.sample());
    if (const int64_t available = availableRamBytes(); available > 0)
        m_writer.addValue("system/ram_available", s.step, wallNow(), static_cast<double>(available));
    for (const int gpu : m_gpus) {
        const int64_t peak = cudaMemoryStats(gpu).peakAllocatedBytes;
        s.metrics.gpuPeakBytes += peak;
        m_writer.addValue("memory/cuda:" + std::to_string(gpu), s.step, wallNow(), static_cast<double>(peak));
    }
}

/// The eval loss every evalEvery steps and at the last step, with eval data.
void TrainingLoop::evaluateIfDue(StepState &s)
{
    if (m_haveEval && ((m_params.evalEvery > 0 && s.step % m_params.evalEvery == 0) || s.step == m_totalSteps)) {
        m_at.phase = "evaluation";
        s.metrics.evaluated = true;
        s.metrics.evalLoss = evaluate(m_model, m_params, m_job.evalSequences, m_job.evalLabels, m_device, m_ranks);
        s.metrics.evalPerplexity = std::exp(s.metrics.evalLoss);
        m_result.lastEvalLoss = s.metrics.evalLoss;
    }
}

/// The step's metrics to the store and the observer, its loss to the result.
void TrainingLoop::recordMetrics(StepState &s)
{
    m_smoothedStepSeconds = s.step == m_firstStep ? s.seconds : 0.8 * m_smoothedStepSeconds + 0.2 * s.seconds;
    s.metrics.tokensPerSecond = m_tokensPerStep / std::max(s.seconds, 1e-9);
    s.metrics.stepSeconds = s.seconds;
    s.metrics.wallSeconds = wallNow();
    s.metrics.etaSeconds = m_smoothedStepSeconds * static_cast<double>(m_totalSteps - s.step);
    m_writer.add(s.metrics);
    m_observer.onStep(s.metrics);
    if (s.step == m_firstStep)
        m_result.firstLoss = s.loss;
    m_result.lastLoss = s.loss;
    m_result.steps = s.step;
    m_result.curve.push_back({static_cast<double>(s.step), s.loss});
}

void TrainingLoop::checkpointIfDue(int64_t step)
{
    if (m_params.saveEvery > 0 && step % m_params.saveEvery == 0)
        checkpoint(step);
}

/// At stop (Ctrl+C, Stop) and at the end: the state after the last finished step, the sample, and
/// the last collective.
LoopResult TrainingLoop::finish()
{
    m_writer.flush();
    checkpoint(m_result.steps);
    m_at.phase = "generating the sample";
    if (m_result.steps >= m_firstStep && m_store)
        logSample(m_model, m_params, m_job, m_observer, *m_store, m_runId,
                  "after " + std::to_string(m_result.steps) + " steps", m_control);
    m_at.phase = "finishing with the other ranks";
    m_ranks.waitForRank0(); // the last collective: rank 0 may still be generating the sample
    m_result.model = m_model;
    return std::move(m_result);
}

/// checkpoint-<step> in the output folder, written by rank 0 (once per step; none at step 0).
void TrainingLoop::checkpoint(int64_t step)
{
    if (step <= m_lastCheckpointStep || step == 0)
        return;
    if (!m_store) { // the other ranks wait for rank 0's checkpoint (every rank reaches this at the same step)
        m_lastCheckpointStep = step;
        m_ranks.waitForRank0();
        return;
    }
    // Metrics up to this step reach the store first: a crash after the checkpoint then loses none
    // of the steps a resume does not redo.
    m_writer.flush();
    CheckpointState state;
    state.step = step;
    state.runId = m_runId;
    state.storePath = m_store->path().string();
    state.samplerShuffles = m_sampler.shuffles();
    state.samplerCursor = m_sampler.cursor();
    state.optimizerSteps = m_optimizer->stepCount();
    if (m_scaler) {
        state.lossScale = m_scaler->currentScale();
        state.lossScaleGrowthTracker = m_scaler->growthTracker();
    }
    state.identity = m_identity;
    state.training = m_params.toJson();
    state.training["wall_seconds"] = wallNow();
    const std::filesystem::path folder
        = writeCheckpoint(m_outputDir, state, m_model, m_params, *m_optimizer, m_params.keepCheckpoints);
    m_lastCheckpointStep = step;
    m_result.lastCheckpoint = folder.string();
    event(LogLevel::Info, "checkpoint at step " + std::to_string(step) + ": " + folder.string());
    m_ranks.waitForRank0();
}

/// The step kept for the inspector, an event that offers it; returns the command that inspects it.
std::string TrainingLoop::keepStepForInspection(int64_t step, const MicroBatches &micro, const std::string &what,
                                                const std::string &prefix)
{
    if (m_store) // rank 0 keeps its shard of the step
        m_at.nonFiniteStepFolder = saveNonFiniteStep(m_outputDir, step, m_model, m_params, m_job, micro, m_observer, prefix);
    m_ranks.waitForRank0(); // all stop together, once rank 0 has kept the step
    const std::string inspect = m_at.nonFiniteStepFolder.empty()
        ? std::string("tunebench inspect, or the Inspect page")
        : "tunebench inspect --model " + m_at.nonFiniteStepFolder + " --data " + m_at.nonFiniteStepFolder
            + "/batch.safetensors, or Inspect on the Train page";
    event(LogLevel::Error, what + "; run stopped before the update (inspect this step: " + inspect + ")");
    if (m_store && !m_at.nonFiniteStepFolder.empty())
        m_store->addArtifact(m_runId, "nonfinite_step", m_at.nonFiniteStepFolder);
    return inspect;
}

/// A run event (rank 0 only).
void TrainingLoop::event(LogLevel level, const std::string &text)
{
    if (m_store)
        m_store->addEvent(m_runId, level, text);
}

/// Seconds of training: those before a resume, since the loop began, less the pauses.
double TrainingLoop::wallNow() const
{
    return m_wallOffset + secondsSince(m_start) - m_pausedSeconds;
}

} // namespace

LoopResult trainLoop(const TrainingParams &params, const PreparedJob &job, JobControl &control,
                     TrainingObserver &observer, store::RunStore *store, int64_t runId,
                     const std::filesystem::path &outputDir, const std::optional<ResumePoint> &resume, LoopPosition &at,
                     const RankContext &ranks)
{
    try {
        TrainingLoop loop(params, job, control, observer, store, runId, outputDir, at, ranks);
        return loop.run(resume);
    } catch (...) {
        const ErrorInfo info = currentExceptionInfo();
        if (info.kind != ErrorKind::OutOfMemory)
            throw;
        OutOfMemoryContext context;
        context.phase = at.phase;
        context.step = at.step;
        context.defaultDevice = job.device.str();
        context.modelPath = job.weightsFolder.empty() ? params.modelPath : job.weightsFolder.string();
        context.batchSize = params.batchSize;
        context.sequenceLength = params.sequenceLength;
        context.lora = params.method == TrainingMethod::Lora;
        context.checkpointing = params.gradientCheckpointing;
        throw Error(ErrorKind::OutOfMemory, outOfMemoryMessage(info.message, context));
    }
}

} // namespace engine::train
