#include "engine/train/trainingloop.h"

#include "engine/core/atomicfile.h"
#include "engine/core/autocast.h"
#include "engine/core/byteunits.h"
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


/// The steps of one run. `store` is null on the ranks other than 0 of a data-parallel job: they train
/// their shard of every batch and write nothing.
LoopResult runSteps(const TrainingParams &params, const PreparedJob &job, JobControl &control,
                    TrainingObserver &observer, store::RunStore *store, int64_t runId,
                    const std::filesystem::path &outputDir, const std::optional<ResumePoint> &resume, LoopPosition &at,
                    const RankContext &ranks)
{
    torch::manual_seed(params.seed);
    model::LlamaForCausalLM model = buildModel(params, job, observer);
    // Inputs go where the embedding is; the labels go where the logits come out.
    const torch::Device device = job.devicePlacement.empty() ? job.device : model->parameters().front().device();
    const std::optional<AutocastState> amp = autocastFor(params.precision);
    std::optional<LossScaler> scaler;
    if (params.precision == Precision::Fp16)
        scaler.emplace();
    auto optimizer = makeOptimizer(model, params);
    std::vector<torch::Tensor> parameters;
    for (const auto &group : optimizer->groups()) {
        for (const auto &item : group.parameters)
            parameters.push_back(item.second);
    }
    auto event = [&](LogLevel level, const std::string &text) {
        if (store)
            store->addEvent(runId, level, text);
    };

    const int64_t sequenceCount = job.sequences.size(0);
    const int64_t totalSteps = params.totalSteps(sequenceCount);
    const int64_t warmup = params.warmupSteps < 0 ? totalSteps / 10 : std::min(params.warmupSteps, totalSteps);
    const LearningRateSchedule schedule{params.learningRate, warmup, totalSteps, params.minLearningRateRatio, params.schedule};
    BatchSampler sampler(sequenceCount, params.seed);
    const nlohmann::json identity = runIdentity(params, job);

    MetricsWriter writer(store, runId);
    // Data parallelism: only the trainable parameters' gradients travel (LoRA: the adapters).
    std::optional<dist::GradientReducer> reducer;
    LoopResult result;
    int64_t firstStep = 1;
    double wallOffset = 0;
    int64_t lastCheckpointStep = 0;
    if (resume) {
        restoreCheckpoint(resume->checkpoint, resume->state, model, params, *optimizer);
        if (scaler && resume->state.lossScale > 0)
            scaler->restore(resume->state.lossScale, resume->state.lossScaleGrowthTracker);
        sampler.seek(resume->state.samplerShuffles, resume->state.samplerCursor);
        firstStep = resume->state.step + 1;
        wallOffset = resume->state.training.value("wall_seconds", 0.0);
        lastCheckpointStep = resume->state.step;
        result.steps = resume->state.step;
        result.lastCheckpoint = resume->checkpoint.string();
        observer.onLog(LogLevel::Info, "resumed from " + resume->checkpoint.string() + " at step "
                                           + std::to_string(resume->state.step) + " of " + std::to_string(totalSteps));
    }
    if (ranks.group) {
        at.phase = "sharing rank 0's weights";
        broadcastWeights(model, ranks);
        const bool overlap = params.bucketMegabytes > 0;
        const auto bucketBytes = static_cast<int64_t>(params.bucketMegabytes * 1024 * 1024);
        reducer.emplace(*ranks.group, parameters, overlap ? bucketBytes : int64_t(1) << 62, overlap);
        // Same weights, but each rank its own random stream: dropout masks must not repeat across the shards.
        torch::manual_seed(params.seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(ranks.rank + 1)));
        observer.onLog(LogLevel::Info, "data parallel over " + std::to_string(ranks.world) + " ranks: "
                                           + formatBytes(reducer->bytesPerStep()) + " of gradients per step in "
                                           + std::to_string(reducer->bucketCount()) + " buckets"
                                           + (overlap ? ", summed during backward" : ", summed after backward"));
    }

    const auto start = Clock::now();
    double pausedSeconds = 0;
    double smoothedStepSeconds = 0;
    auto wallNow = [&] { return wallOffset + secondsSince(start) - pausedSeconds; };
    auto checkpoint = [&](int64_t step) {
        if (step <= lastCheckpointStep || step == 0)
            return;
        if (!store) { // the other ranks wait for rank 0's checkpoint (every rank reaches this at the same step)
            lastCheckpointStep = step;
            ranks.waitForRank0();
            return;
        }
        // Metrics up to this step reach the store first: a crash after the checkpoint then loses none
        // of the steps a resume does not redo.
        writer.flush();
        CheckpointState state;
        state.step = step;
        state.runId = runId;
        state.storePath = store->path().string();
        state.samplerShuffles = sampler.shuffles();
        state.samplerCursor = sampler.cursor();
        state.optimizerSteps = optimizer->stepCount();
        if (scaler) {
            state.lossScale = scaler->currentScale();
            state.lossScaleGrowthTracker = scaler->growthTracker();
        }
        state.identity = identity;
        state.training = params.toJson();
        state.training["wall_seconds"] = wallNow();
        const std::filesystem::path folder = writeCheckpoint(outputDir, state, model, params, *optimizer, params.keepCheckpoints);
        lastCheckpointStep = step;
        result.lastCheckpoint = folder.string();
        event(LogLevel::Info, "checkpoint at step " + std::to_string(step) + ": " + folder.string());
        ranks.waitForRank0();
    };
    const double tokensPerStep
        = static_cast<double>(params.batchSize * params.gradAccumulation * params.sequenceLength * ranks.world);
    // Memory per device: the process's resident peak for the CPU, the caching allocator's peak per GPU.
    std::vector<int> gpus;
    for (const torch::Tensor &p : model->parameters()) {
        if (p.is_cuda() && std::find(gpus.begin(), gpus.end(), p.get_device()) == gpus.end())
            gpus.push_back(p.get_device());
    }
    const bool haveEval = job.evalSequences.defined();

    if (!resume) {
        if (haveEval) {
            // Step 0: where the eval loss starts, so that the curve shows how far training moved it.
            at.phase = "evaluation";
            const double before = evaluate(model, params, job.evalSequences, job.evalLabels, device, ranks);
            writer.addValue("eval/loss", 0, 0.0, before);
            writer.addValue("eval/perplexity", 0, 0.0, std::exp(before));
            StepMetrics initial;
            initial.totalSteps = totalSteps;
            initial.evaluated = true;
            initial.evalLoss = before;
            initial.evalPerplexity = std::exp(before);
            observer.onInitialEvaluation(initial);
            observer.onLog(LogLevel::Info, "eval loss before training: " + formatDouble(before) + " (perplexity "
                                               + formatDouble(std::exp(before)) + ")");
        }
        at.phase = "generating the sample";
        if (store)
            logSample(model, params, job, observer, *store, runId, "before training", control);
        ranks.waitForRank0();
    }

    CpuUsageMeter cpuMeter; // the process's CPU use over each step (the system metrics)
    inspect::TrainingGuard guard; // watches each micro-batch's saved tensors when params.inspectGuard
    // The step kept for the inspector, an event that offers it, and the command that inspects it.
    auto keepStepForInspection = [&](int64_t step, const std::vector<std::pair<torch::Tensor, torch::Tensor>> &micro,
                                     const std::string &what, const std::string &prefix) {
        if (store) // rank 0 keeps its shard of the step
            at.nonFiniteStepFolder = saveNonFiniteStep(outputDir, step, model, params, job, micro, observer, prefix);
        ranks.waitForRank0(); // all stop together, once rank 0 has kept the step
        const std::string inspect = at.nonFiniteStepFolder.empty()
            ? std::string("tunebench inspect, or the Inspect page")
            : "tunebench inspect --model " + at.nonFiniteStepFolder + " --data " + at.nonFiniteStepFolder
                + "/batch.safetensors, or Inspect on the Train page";
        event(LogLevel::Error, what + "; run stopped before the update (inspect this step: " + inspect + ")");
        if (store && !at.nonFiniteStepFolder.empty())
            store->addArtifact(runId, "nonfinite_step", at.nonFiniteStepFolder);
        return inspect;
    };
    for (int64_t step = firstStep; step <= totalSteps; ++step) {
        if (control.paused()) {
            writer.flush();
            observer.onLog(LogLevel::Info, "paused before step " + std::to_string(step));
            const auto pauseStart = Clock::now();
            const bool go = control.waitWhilePaused();
            pausedSeconds += secondsSince(pauseStart);
            if (go)
                observer.onLog(LogLevel::Info, "resumed");
        }
        // A stop on any rank stops all at this step: the others would wait for it in the next allreduce.
        if (ranks.sum({control.cancelRequested() ? 1.0 : 0.0})[0] > 0) {
            result.status = JobStatus::Cancelled;
            break;
        }
        const auto stepStart = Clock::now();
        cpuMeter.sample(); // starts the step's window: the sample before it, a pause, leave it
        const double lr = schedule.at(step);
        at.step = step;
        resetResidentPeak();
        for (const int gpu : gpus)
            resetCudaPeakMemory(gpu);

        // K micro-batches; each one's summed loss is divided by the step's token count, so that the
        // gradient equals that of one batch of K * B sequences.
        std::vector<std::pair<torch::Tensor, torch::Tensor>> micro; // (rows, labels)
        int64_t labelled = 0;
        for (int64_t k = 0; k < params.gradAccumulation; ++k) {
            // Every rank draws the whole batch of all ranks and keeps its shard (DistributedSampler's order).
            const std::vector<int64_t> drawn = sampler.next(params.batchSize * ranks.world);
            const torch::Tensor index
                = torch::tensor(ranks.world > 1 ? rankShard(drawn, ranks.rank, ranks.world) : drawn, torch::kInt64);
            micro.emplace_back(job.sequences.index_select(0, index), job.labels.index_select(0, index));
            labelled += micro.back().second.ne(kIgnoreLabel).sum().item<int64_t>();
        }
        // Over all ranks: each rank's summed loss over the step's global target count, and gradients
        // summed (not averaged) over the ranks, give exactly one process's gradient of the whole batch.
        const double stepTokens = std::max(ranks.sum({static_cast<double>(labelled)})[0], 1.0);
        optimizer->zeroGrad();
        double lossValue = 0;
        for (size_t k = 0; k < micro.size(); ++k) {
            const auto &[rows, rowLabels] = micro[k];
            if (params.inspectGuard)
                guard.beginStep();
            at.phase = "forward";
            const torch::Tensor batch = rows.to(device);
            const torch::Tensor logits = forwardLogits(model, batch, params.sequenceLength, amp);
            const torch::Tensor labels = rowLabels.to(logits.device());
            const torch::Tensor loss = torch::nn::functional::cross_entropy(
                                           logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions()
                                               .reduction(torch::kSum)
                                               .ignore_index(kIgnoreLabel))
                / stepTokens;
            const double microLoss = loss.item<double>();
            lossValue += microLoss;
            if (guard.watching() && std::isfinite(microLoss)) {
                // A saved tensor already written in place: backward would raise PyTorch's version error.
                // Stop here instead, with the step kept for the inspector (a finite loss is checked
                // below, with the whole step's).
                const inspect::GuardVerdict verdict = guard.checkSavedTensors(loss);
                if (verdict.fired) {
                    guard.endStep();
                    const std::string what = "the guard stopped step " + std::to_string(step) + ": " + verdict.reason;
                    const std::string inspect = keepStepForInspection(step, micro, what, "guarded-step-");
                    throw invalidInput(what + "; find the in-place write: " + inspect);
                }
            }
            at.phase = "backward";
            if (reducer)
                reducer->prepare(/*synchronize=*/k + 1 == micro.size()); // as DDP's no_sync() before the last
            (scaler ? scaler->scale(loss) : loss).backward();
            guard.endStep();
        }
        if (reducer) {
            at.phase = "summing gradients over the ranks";
            reducer->finish();
            lossValue = ranks.sum({lossValue})[0];
            const dist::GradientReducer::Timing timing = reducer->lastTiming();
            writer.addValue("dist/allreduce_wait_seconds", step, wallNow(), timing.waitSeconds);
            writer.addValue("dist/buckets_during_backward", step, wallNow(), timing.backwardLaunched);
        }
        at.phase = "optimizer step";
        StepMetrics metrics;
        metrics.step = step;
        metrics.totalSteps = totalSteps;
        metrics.loss = lossValue;
        metrics.learningRate = lr;
        // A non-finite loss, or (fp32/bf16) a finite loss whose gradients hold NaN or Inf: stop with the
        // step kept for the inspector, or skip it. Updating would carry the NaN into every weight, and
        // the next step's inspection would find it there instead of where it began.
        auto stopOrSkip = [&](const std::string &what) {
            if (params.nonFinite == NonFinitePolicy::Stop) {
                const std::string inspect = keepStepForInspection(step, micro, what, "nonfinite-step-");
                throw invalidInput("training diverged: " + what + "; lower the learning rate (now "
                                   + formatDouble(params.learningRate) + ") or find where the NaN first appears: " + inspect);
            }
            if (scaler) { // as GradScaler: the non-finite gradients back the scale off
                scaler->unscale(parameters);
                scaler->update();
            }
            optimizer->zeroGrad();
            metrics.skipped = true;
            event(LogLevel::Warning, what + "; step skipped (no update)");
            observer.onLog(LogLevel::Warning, what + "; step skipped (no update)");
        };
        GradientNorm norm;
        if (!std::isfinite(lossValue)) {
            stopOrSkip("the loss is " + formatDouble(lossValue) + " at step " + std::to_string(step));
        } else if (scaler && !scaler->unscale(parameters)) {
            // fp16 overflowed in backward (the loss itself is finite): no update, a smaller scale next step.
            optimizer->zeroGrad();
            metrics.skipped = true;
            scaler->update();
            writer.addValue("train/loss_scale", step, wallNow(), scaler->currentScale());
        } else if (norm = clipGradients(parameters, params.gradClipNorm); !std::isfinite(norm.total)) {
            stopOrSkip("the gradient norm is " + formatDouble(norm.total) + " at step " + std::to_string(step)
                       + " (the loss, " + formatDouble(lossValue) + ", is finite: backward made the NaN or Inf)");
        } else {
            metrics.gradNorm = norm.total;
            for (const auto &[deviceName, value] : norm.perDevice)
                writer.addValue("train/grad_norm/" + deviceName, step, wallNow(), value);
            optimizer->step(lr);
            if (scaler) {
                scaler->update();
                writer.addValue("train/loss_scale", step, wallNow(), scaler->currentScale());
            }
        }

        // The step's time, speed and memory leave the evaluation out: it is not training work.
        const double stepSeconds = secondsSince(stepStart);
        metrics.cpuPeakBytes = residentPeakBytes();
        if (metrics.cpuPeakBytes > 0)
            writer.addValue("memory/cpu", step, wallNow(), static_cast<double>(metrics.cpuPeakBytes));
        writer.addValue("system/cpu_percent", step, wallNow(), cpuMeter.sample());
        if (const int64_t available = availableRamBytes(); available > 0)
            writer.addValue("system/ram_available", step, wallNow(), static_cast<double>(available));
        for (const int gpu : gpus) {
            const int64_t peak = cudaMemoryStats(gpu).peakAllocatedBytes;
            metrics.gpuPeakBytes += peak;
            writer.addValue("memory/cuda:" + std::to_string(gpu), step, wallNow(), static_cast<double>(peak));
        }
        if (haveEval && ((params.evalEvery > 0 && step % params.evalEvery == 0) || step == totalSteps)) {
            at.phase = "evaluation";
            metrics.evaluated = true;
            metrics.evalLoss = evaluate(model, params, job.evalSequences, job.evalLabels, device, ranks);
            metrics.evalPerplexity = std::exp(metrics.evalLoss);
            result.lastEvalLoss = metrics.evalLoss;
        }

        smoothedStepSeconds = step == firstStep ? stepSeconds : 0.8 * smoothedStepSeconds + 0.2 * stepSeconds;
        metrics.tokensPerSecond = tokensPerStep / std::max(stepSeconds, 1e-9);
        metrics.stepSeconds = stepSeconds;
        metrics.wallSeconds = wallNow();
        metrics.etaSeconds = smoothedStepSeconds * static_cast<double>(totalSteps - step);
        writer.add(metrics);
        observer.onStep(metrics);
        if (step == firstStep)
            result.firstLoss = lossValue;
        result.lastLoss = lossValue;
        result.steps = step;
        result.curve.push_back({static_cast<double>(step), lossValue});
        if (params.saveEvery > 0 && step % params.saveEvery == 0)
            checkpoint(step);
    }
    writer.flush();
    // At stop (Ctrl+C, Stop) and at the end: the state after the last finished step.
    checkpoint(result.steps);
    at.phase = "generating the sample";
    if (result.steps >= firstStep && store)
        logSample(model, params, job, observer, *store, runId, "after " + std::to_string(result.steps) + " steps", control);
    at.phase = "finishing with the other ranks";
    ranks.waitForRank0(); // the last collective: rank 0 may still be generating the sample
    result.model = model;
    return result;
}

} // namespace

/// runSteps, with an allocation failure turned into one message naming the device, phase and step, and
/// what to change.
LoopResult trainLoop(const TrainingParams &params, const PreparedJob &job, JobControl &control,
                     TrainingObserver &observer, store::RunStore *store, int64_t runId,
                     const std::filesystem::path &outputDir, const std::optional<ResumePoint> &resume, LoopPosition &at,
                     const RankContext &ranks)
{
    try {
        return runSteps(params, job, control, observer, store, runId, outputDir, resume, at, ranks);
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
