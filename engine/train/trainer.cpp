#include "engine/train/trainer.h"
#include "engine/train/preparedjob.h"
#include "engine/train/trainingloop.h"

#include "engine/core/atomicfile.h"
#include "engine/core/error.h"
#include "engine/core/mallocpolicy.h"
#include "engine/core/paths.h"
#include "engine/core/settings.h"
#include "engine/core/device.h"
#include "engine/core/systeminfo.h"
#include "engine/core/threads.h"
#include "engine/core/torchdevice.h"
#include "engine/dist/distributedgroup.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"
#include "engine/model/pretrained.h"
#include "engine/report/lossplot.h"
#include "engine/store/runfolder.h"
#include "engine/store/runstore.h"
#include "engine/tokenize/tokenizer.h"
#include "engine/model/lora.h"
#include "engine/plan/planner.h"
#include "engine/core/byteunits.h"
#include "engine/core/format.h"
#include "engine/train/checkpoint.h"
#include "engine/train/dataset.h"
#include "engine/train/optimizer.h"
#include "engine/train/textcorpus.h"
#include "engine/train/tokenizersource.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <charconv>
#include <numeric>
#include <random>

namespace engine::train {
namespace fs = std::filesystem;

std::string formatDouble(double value, int precision)
{
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    return buffer;
}

namespace {

std::string defaultRunName(const PreparedJob &job)
{
    const std::string corpus = job.corpusPath.stem().string();
    return job.modelName + " on " + corpus;
}

/// `--device-map auto`: the Plan's training plan for this run on this machine's GPUs and RAM. Empty
/// when the whole model lands on one device (it then trains there, as with --device). Throws
/// Error(InvalidInput) with the plan's verdict when the run does not fit.
std::vector<std::pair<std::string, std::string>> planDeviceMap(const TrainingParams &params, PreparedJob &job,
                                                                TrainingObserver &observer)
{
    const plan::Planner planner(plan::planModelFromPath(job.weightsFolder));
    plan::PlanSettings settings;
    settings.train = params.method == TrainingMethod::Lora ? plan::TrainMode::Lora : plan::TrainMode::Full;
    settings.dtype = "float32"; // the trainer keeps float32 weights
    settings.loraRank = params.lora.r;
    settings.loraDropout = params.lora.dropout;
    settings.loraAlpha = params.lora.alpha;
    if (params.method == TrainingMethod::Lora && params.lora.targetRegex.empty())
        settings.loraTargets = params.lora.targets;
    settings.batchSize = params.batchSize;
    settings.sequenceLength = params.sequenceLength;
    settings.checkpointing = params.gradientCheckpointing;
    std::vector<plan::MachineGpu> gpus;
    for (const GpuInfo &gpu : systemInfo().gpus)
        gpus.push_back({gpu.index, gpu.name, gpu.totalMemoryBytes, gpu.bf16});
    const std::vector<plan::DeviceSpec> devices = plan::machineDevices(gpus, plan::availableRamBudget());
    const plan::Plan plan = planner.plan(devices, settings);
    if (!plan.fits) {
        std::string verdicts;
        for (const plan::DeviceUsage &usage : plan.usage) {
            if (!usage.fits)
                verdicts += (verdicts.empty() ? "" : "; ") + usage.verdict;
        }
        throw invalidInput("--device-map auto: this run does not fit " + plan::maxMemoryText(devices) + " (" + verdicts
                           + "); plan it on the Plan page or with `tunebench plan --train " + methodName(params.method)
                           + "` and lower the batch size or sequence length, or use LoRA or --checkpointing");
    }
    std::vector<std::pair<std::string, std::string>> placements = plan.placements();
    const bool oneDevice = std::all_of(placements.begin(), placements.end(),
                                       [&](const auto &p) { return p.second == placements.front().second; });
    std::string summary;
    for (const plan::DeviceUsage &usage : plan.usage) {
        if (usage.memory.total() > 0)
            summary += (summary.empty() ? "" : ", ") + plan::deviceLabel(usage.device) + " " + formatBytes(usage.memory.total());
    }
    if (oneDevice && !placements.empty() && placements.front().second != "disk") {
        job.device = torchDevice(placements.front().second, "--device-map auto");
        observer.onLog(LogLevel::Info, "device map auto: the run fits on " + placements.front().second + " (" + summary + ")");
        return {};
    }
    observer.onLog(LogLevel::Info, "device map auto: " + std::to_string(placements.size()) + " entries over " + summary);
    return placements;
}

/// fp16 needs a GPU; bf16 on a GPU needs compute capability 8.0 (Ampere) or newer (a T4 or V100 has only fp16).
void requirePrecisionDevices(Precision precision, const PreparedJob &job)
{
    std::vector<std::string> used = {job.device.str()};
    for (const auto &entry : job.devicePlacement)
        used.push_back(entry.second);
    requireFp16Device(precision, used);
    if (precision != Precision::Bf16)
        return;
    for (const GpuInfo &gpu : systemInfo().gpus) {
        const std::string name = "cuda:" + std::to_string(gpu.index);
        if (!gpu.bf16 && std::find(used.begin(), used.end(), name) != used.end()) {
            throw invalidInput("precision bf16 needs a GPU of compute capability 8.0 or newer; " + name + " ("
                               + gpu.name + ", " + std::to_string(gpu.computeMajor) + "." + std::to_string(gpu.computeMinor)
                               + ") has no bf16: use --precision fp16 (with loss scaling) on it");
        }
    }
}

/// Resolves paths, model config, tokenizer and the packed corpus. Throws engine::Error.
/// Returns std::nullopt when cancelled meanwhile.
std::optional<PreparedJob> prepare(const TrainingParams &params, JobControl &control, TrainingObserver &observer)
{
    PreparedJob job;
    job.device = torchDevice(params.device, "setting device");
    if (params.distributed.distributed() && job.device.is_cuda() && !job.device.has_index()) // as torchrun scripts do
        job.device = torch::Device(torch::kCUDA, static_cast<torch::DeviceIndex>(params.distributed.localRank));
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
    if (params.method == TrainingMethod::Lora && job.weightsFolder.empty()) {
        throw invalidSetting("model", "LoRA adapts a pretrained model: give a model folder with weights (--model DIR); the "
                           "built-in demo model and a bare config.json start from random weights");
    }
    if ((!params.devicePlacement.empty() || params.autoDeviceMap) && job.weightsFolder.empty()) {
        throw invalidSetting("model", "a device map needs a model folder with weights to load onto its devices (--model DIR); "
                           "the built-in demo model and a bare config.json start from random weights");
    }
    job.devicePlacement = params.autoDeviceMap ? planDeviceMap(params, job, observer) : params.devicePlacement;
    requirePrecisionDevices(params.precision, job);
    if (params.sequenceLength > job.config.maxPositionEmbeddings) {
        throw invalidSetting("sequence_length", "setting sequence length = " + std::to_string(params.sequenceLength)
                           + " exceeds the model's max_position_embeddings = "
                           + std::to_string(job.config.maxPositionEmbeddings));
    }

    // Read (and for JSONL parsed) once: the tokenizer's text and the token rows both come from it.
    const DatasetFile data(job.corpusPath, params.skipBadLines ? BadLinePolicy::Skip : BadLinePolicy::Stop);
    const std::string text = data.trainingText();
    observer.onLog(LogLevel::Info, "data " + job.corpusPath.string() + ": " + std::to_string(fs::file_size(job.corpusPath))
                                       + " bytes");

    // Pre-tokenized JSONL needs no tokenizer; everything else has one (the model's, or trained on the text).
    std::optional<TokenizerChoice> tokenizer;
    if (!text.empty() || !params.tokenizerPath.empty()
        || (!params.modelPath.empty() && tokenize::holdsTokenizer(params.modelPath))) {
        tokenizer.emplace(resolveTokenizer(params, job.config, job.corpusPath, text, observer));
        job.tokenizerPath = tokenizer->files.front().string();
        job.tokenizerFiles = tokenizer->files;
    }
    if (control.cancelRequested())
        return std::nullopt;

    DatasetOptions options;
    options.sequenceLength = params.sequenceLength;
    options.badLines = params.skipBadLines ? BadLinePolicy::Skip : BadLinePolicy::Stop;
    if (!job.weightsFolder.empty() || (!params.modelPath.empty() && fs::is_directory(params.modelPath))) {
        const ChatTemplateSource chat = readChatTemplate(params.modelPath);
        options.chatTemplate = chat.source;
    }
    const tokenize::Tokenizer *tok = tokenizer ? tokenizer->tokenizer.get() : nullptr;
    auto toTensors = [&](TokenRows &rows, torch::Tensor &sequences, torch::Tensor &labels) {
        sequences = torch::tensor(rows.ids, torch::kInt64).view({rows.rows, rows.width});
        labels = torch::tensor(rows.labels, torch::kInt64).view({rows.rows, rows.width - 1});
        rows.ids.clear();
        rows.labels.clear();
    };
    std::optional<TokenRows> rows = loadDataset(data, tok, job.config.vocabSize, options, control);
    if (!rows)
        return std::nullopt;
    job.dataFormat = dataFormatName(rows->format);
    job.corpusTokens = rows->tokens;
    toTensors(*rows, job.sequences, job.labels);
    job.stats = *rows;
    std::string counts = std::to_string(rows->tokens) + " tokens, " + std::to_string(rows->rows) + " sequences of "
        + std::to_string(params.sequenceLength) + " tokens (" + job.dataFormat;
    if (rows->format != DataFormat::Text && rows->format != DataFormat::JsonlText)
        counts += ", " + std::to_string(rows->examples) + " examples, " + std::to_string(rows->truncated) + " truncated";
    if (rows->nothingToLearn > 0)
        counts += ", " + std::to_string(rows->nothingToLearn) + " with nothing to learn dropped";
    if (rows->skippedBadLines > 0)
        counts += ", " + std::to_string(rows->skippedBadLines) + " malformed lines skipped";
    observer.onLog(LogLevel::Info, counts + ")");

    if (!params.evalDataPath.empty()) {
        std::optional<TokenRows> evalRows;
        try {
            evalRows = loadDataset(params.evalDataPath, tok, job.config.vocabSize, options, control);
        } catch (const Error &e) {
            throw Error(e.kind(), std::string("eval data: ") + e.what());
        }
        if (!evalRows)
            return std::nullopt;
        toTensors(*evalRows, job.evalSequences, job.evalLabels);
    } else if (params.valFraction > 0) {
        const int64_t count = job.sequences.size(0);
        // A seeded random subset, so that the held-out text is spread over the corpus.
        const int64_t held = std::max<int64_t>(1, static_cast<int64_t>(std::llround(params.valFraction * double(count))));
        if (held >= count) {
            throw invalidSetting("val_fraction", "validation fraction " + formatDouble(params.valFraction) + " of " + std::to_string(count)
                               + " sequences leaves none to train on");
        }
        std::vector<int64_t> order(static_cast<size_t>(count));
        std::iota(order.begin(), order.end(), 0);
        std::mt19937_64 random(params.seed ^ 0x9e3779b97f4a7c15ull);
        std::shuffle(order.begin(), order.end(), random);
        std::vector<int64_t> evalRows(order.begin(), order.begin() + held);
        std::vector<int64_t> trainRows(order.begin() + held, order.end());
        std::sort(evalRows.begin(), evalRows.end());
        std::sort(trainRows.begin(), trainRows.end());
        const torch::Tensor evalIndex = torch::tensor(evalRows, torch::kInt64);
        const torch::Tensor trainIndex = torch::tensor(trainRows, torch::kInt64);
        job.evalSequences = job.sequences.index_select(0, evalIndex);
        job.evalLabels = job.labels.index_select(0, evalIndex);
        job.sequences = job.sequences.index_select(0, trainIndex);
        job.labels = job.labels.index_select(0, trainIndex);
    }
    if (job.evalSequences.defined()) {
        observer.onLog(LogLevel::Info, std::to_string(job.evalSequences.size(0)) + " eval sequences, "
                                           + std::to_string(job.sequences.size(0)) + " for training");
    }
    job.tokenizer = std::move(tokenizer);
    return job;
}

} // namespace

/// What a checkpoint must agree with for a resume to continue the same run.
nlohmann::json runIdentity(const TrainingParams &params, const PreparedJob &job)
{
    nlohmann::json lora = params.toJson()["lora"];
    nlohmann::json identity = {{"model_name", job.modelName},
            {"base_model", job.weightsFolder.empty() ? std::string() : std::filesystem::absolute(job.weightsFolder).string()},
            {"model_config", job.config.toJson()},
            {"method", methodName(params.method)},
            {"lora", lora},
            {"optimizer", optimizerName(params.optimizer)},
            {"batch_size", params.batchSize},
            {"sequence_length", params.sequenceLength},
            {"grad_accumulation", params.gradAccumulation},
            {"seed", params.seed},
            {"corpus", job.corpusPath.string()},
            {"corpus_tokens", job.corpusTokens},
            {"data_format", job.dataFormat},
            {"sequences", job.sequences.size(0)}};
    if (params.precision != Precision::Fp32) // fp32 checkpoints from before precision existed resume as fp32
        identity["precision"] = precisionName(params.precision);
    if (params.distributed.distributed()) // as precision: single-process checkpoints carry no world size
        identity["world_size"] = params.distributed.worldSize;
    return identity;
}

namespace {

void checkResumable(const nlohmann::json &saved, const nlohmann::json &now, const std::filesystem::path &checkpoint)
{
    // The most telling difference first (a JSON object iterates alphabetically).
    std::vector<std::string> keys = {"method", "model_name", "base_model", "corpus"};
    for (const nlohmann::json *side : {&now, &saved}) {
        for (const auto &item : side->items()) {
            if (std::find(keys.begin(), keys.end(), item.key()) == keys.end())
                keys.push_back(item.key());
        }
    }
    for (const std::string &key : keys) {
        const auto here = now.find(key);
        const auto it = saved.find(key);
        if (here == now.end() && it == saved.end())
            continue;
        if (it == saved.end() || here == now.end() || *it != *here) {
            // Only non-fp32 precisions are part of the identity (checkpoints from before it existed are fp32).
            const std::string absent = key == "precision" ? "\"fp32\"" : key == "world_size" ? "1" : "nothing";
            const std::string was = it == saved.end() ? absent : it->dump();
            std::string shown = here == now.end() ? absent : here->dump();
            if (shown.size() > 120)
                shown = shown.substr(0, 117) + "...";
            throw invalidInput("cannot resume from " + checkpoint.string() + ": it was written with " + key + " = "
                               + (was.size() > 120 ? was.substr(0, 117) + "..." : was) + ", this run has " + shown
                               + (key == "world_size" ? std::string(" (resume with as many ranks as the run was started with)")
                                                      : std::string(" (resume with the same model, method, data and batch settings)")));
        }
    }
}

/// Saves what the run trained where `tunebench generate/score` and Python load it: for full fine-tuning the
/// model (config.json + model.safetensors, save_pretrained layout) and its tokenizer.model in <output>/model;
/// for LoRA the PEFT adapter in <output>/adapter. Each folder appears whole (staged, then renamed).
void saveTrained(const TrainingParams &params, TrainingOutcome &outcome, model::LlamaForCausalLM &model,
                 const PreparedJob &job, store::RunStore &store, TrainingObserver &observer,
                 const std::filesystem::path &outputDir)
{
    const bool lora = params.method == TrainingMethod::Lora;
    const std::filesystem::path dir = outputDir / (lora ? "adapter" : "model");
    try {
        StagedFolder staged(dir);
        if (lora) {
            model::savePeftAdapter(model, params.lora, std::filesystem::absolute(job.weightsFolder).string(), staged.path());
        } else {
            model::savePretrained(model, staged.path());
        }
        saveTokenizerFiles(job.tokenizerFiles, staged.path());
        staged.commit(/*replace=*/true); // a resumed run replaces what its earlier part saved, once the new one is whole
        store.addArtifact(outcome.runId, lora ? "adapter" : "model", dir.string());
        (lora ? outcome.adapterPath : outcome.modelPath) = dir.string();
    } catch (const std::exception &e) {
        observer.onLog(LogLevel::Warning, std::string("could not save the ") + (lora ? "adapter" : "model") + ": " + e.what());
    }
}

void writeLossPlot(TrainingOutcome &outcome, const std::vector<report::CurvePoint> &curve, store::RunStore &store,
                   const std::string &runName, TrainingObserver &observer, const std::filesystem::path &outputDir)
{
    if (curve.empty())
        return;
    const std::filesystem::path png = outputDir / "loss.png";
    try {
        report::LossPlotOptions options;
        options.title = "run " + std::to_string(outcome.runId) + ": " + runName;
        for (const store::MetricPoint &point : store.metric(outcome.runId, "eval/loss"))
            options.evalCurve.push_back({static_cast<double>(point.step), point.value});
        report::writeLossPlot(png, curve, options);
        store.addArtifact(outcome.runId, "loss_plot", png.string());
        outcome.lossPlotPath = png.string();
    } catch (const std::exception &e) {
        // A missing picture is not worth failing a finished run for; say so.
        observer.onLog(LogLevel::Warning, std::string("could not write the loss plot: ") + e.what());
    }
}

/// The settings every rank of a data-parallel job must share: all but the threads (a machine's own).
std::string rankSettings(const TrainingParams &params)
{
    nlohmann::json settings = params.toJson();
    settings.erase("threads");
    settings["resume"] = params.resumeFrom;
    return settings.dump();
}

/// Digest of what a rank will train and evaluate on (its tokenized rows and labels).
uint64_t dataDigest(const PreparedJob &job)
{
    std::string bytes;
    for (const torch::Tensor *t : {&job.sequences, &job.labels, &job.evalSequences, &job.evalLabels}) {
        if (!t->defined())
            continue;
        const torch::Tensor c = t->contiguous();
        bytes.append(static_cast<const char *>(c.data_ptr()), c.nbytes());
    }
    return contentHash(bytes);
}

/// Every rank tokenized the same rows: a rank reading another file, tokenizer or version of the data
/// would silently train a different model. All ranks fail together when one differs.
void requireSameData(const PreparedJob &job, const RankContext &ranks)
{
    const std::string mine = std::to_string(dataDigest(job)) + " " + std::to_string(job.sequences.size(0));
    const std::string first = ranks.group->share("data", mine);
    const double differing = ranks.sum({first == mine ? 0.0 : 1.0})[0];
    if (differing > 0) {
        throw invalidInput(std::to_string(static_cast<int>(differing)) + " of " + std::to_string(ranks.world)
                           + " ranks tokenized other training data than rank 0 (rank 0: " + first.substr(first.find(' ') + 1)
                           + " sequences, rank " + std::to_string(ranks.rank) + ": " + std::to_string(job.sequences.size(0))
                           + "): every rank needs the same --data, tokenizer and data files");
    }
}
} // namespace

DatasetPreview previewData(const TrainingParams &params, JobControl &control, TrainingObserver &observer, int count)
{
    params.validate();
    applyThreadCount(params.threads);
    std::optional<PreparedJob> job = prepare(params, control, observer);
    if (!job)
        throw invalidInput("cancelled");
    DatasetPreview preview;
    const TokenRows &s = job->stats;
    preview.format = job->dataFormat;
    preview.examples = s.examples;
    preview.rows = job->sequences.size(0);
    preview.tokens = s.tokens;
    preview.truncated = s.truncated;
    preview.skippedBadLines = s.skippedBadLines;
    preview.nothingToLearn = s.nothingToLearn;
    preview.labelledTokens = job->labels.ne(kIgnoreLabel).sum().item<int64_t>();
    preview.evalRows = job->evalSequences.defined() ? job->evalSequences.size(0) : 0;
    preview.tokenizer = job->tokenizerPath;
    for (int64_t r = 0; r < std::min<int64_t>(count, job->sequences.size(0)); ++r) {
        const torch::Tensor row = job->sequences[r];
        const torch::Tensor labels = job->labels[r];
        std::vector<int> inputs;
        std::vector<int> learned;
        for (int64_t t = 0; t < params.sequenceLength; ++t) {
            inputs.push_back(static_cast<int>(row[t].item<int64_t>()));
            if (const int64_t label = labels[t].item<int64_t>(); label != kIgnoreLabel)
                learned.push_back(static_cast<int>(label));
        }
        DatasetPreview::Sample sample;
        sample.inputTokens = static_cast<int64_t>(inputs.size());
        sample.learnedTokens = static_cast<int64_t>(learned.size());
        if (job->tokenizer) {
            sample.input = job->tokenizer->tokenizer->decode(inputs, /*skipSpecialTokens=*/true);
            sample.learned = job->tokenizer->tokenizer->decode(learned, /*skipSpecialTokens=*/true);
        }
        preview.samples.push_back(std::move(sample));
    }
    return preview;
}

namespace {

/// LoRA's stock targets (q_proj, v_proj, PEFT's default for LLaMA) name no module of a model with fused
/// projections (Phi-3's qkv_proj): such a model gets PEFT's default for it instead, said in the log. Any
/// other choice is the user's and stays. A config that cannot be read is left for prepare() to name.
TrainingParams withModelLoraDefaults(const TrainingParams &requested, TrainingObserver &observer)
{
    TrainingParams params = requested;
    if (params.method != TrainingMethod::Lora || params.modelPath.empty() || !params.lora.targetRegex.empty()
        || params.lora.targets != model::LoraSettings().targets)
        return params;
    try {
        if (model::LlamaConfig::fromFile(params.modelPath).hasFusedProjections()) {
            params.lora.targets = {"qkv_proj"};
            observer.onLog(LogLevel::Info, "LoRA targets qkv_proj: this model fuses q, k and v into one projection "
                                           "(PEFT's default for it; --lora-targets chooses others)");
        }
    } catch (const std::exception &) {
    }
    return params;
}

} // namespace

TrainingOutcome runTraining(const TrainingParams &requested, JobControl &control, TrainingObserver &observer)
{
    const TrainingParams params = withModelLoraDefaults(requested, observer);
    TrainingOutcome outcome;
    std::optional<store::RunStore> store;
    std::optional<PreparedJob> job;
    LoopPosition at;
    try {
        params.validate();
        applyThreadCount(params.threads);
        keepFreedMemoryForReuse(); // a step reuses the previous step's pages (engine/core/mallocpolicy.h)
        // A resume reads its checkpoint first: a wrong folder fails before any work.
        std::optional<ResumePoint> resume;
        if (!params.resumeFrom.empty()) {
            ResumePoint point;
            point.checkpoint = findCheckpoint(params.resumeFrom);
            point.state = readCheckpointState(point.checkpoint);
            resume = point;
        }
        // Data parallelism: meet the other ranks before any work, so that a job set up wrong fails at once.
        std::unique_ptr<dist::DistributedGroup> group;
        RankContext ranks;
        if (params.distributed.distributed()) {
            observer.onLog(LogLevel::Info, "data parallel: " + params.distributed.describe() + "; waiting for the other ranks");
            dist::DistributedGroup::Options options;
            options.timeout = std::chrono::milliseconds(static_cast<int64_t>(params.distributedTimeoutSeconds * 1000));
            options.settingsJson = rankSettings(params);
            group = dist::DistributedGroup::connect(params.distributed, options);
            ranks = {group.get(), group->rank(), group->worldSize()};
            observer.onLog(LogLevel::Info, "all " + std::to_string(ranks.world) + " ranks joined (c10d TCPStore, Gloo)");
        }
        job = prepare(params, control, observer);
        // A stop during preparation on any rank cancels all (the others would wait for it).
        if (ranks.sum({job ? 0.0 : 1.0})[0] > 0) {
            outcome.status = JobStatus::Cancelled;
            return outcome;
        }
        if (ranks.group)
            requireSameData(*job, ranks);
        if (resume)
            checkResumable(resume->state.identity, runIdentity(params, *job), resume->checkpoint);
        if (resume && params.totalSteps(job->sequences.size(0)) <= resume->state.step) {
            throw invalidSetting("steps", "nothing to resume: " + resume->checkpoint.string() + " is at step "
                               + std::to_string(resume->state.step) + " and this run has "
                               + std::to_string(params.totalSteps(job->sequences.size(0)))
                               + " steps (give more --steps to continue training)");
        }
        const std::filesystem::path storePath = resume ? std::filesystem::path(resume->state.storePath) : job->storePath;
        const std::string runName = params.runName.empty() ? defaultRunName(*job) : params.runName;
        std::filesystem::path outputDir;
        if (!ranks.primary()) {
            // Rank 0 writes the run; this rank trains its shard and learns the run's id.
            outcome.runId = std::stoll(ranks.group->share("run", ""));
            outcome.resumedFromStep = resume ? resume->state.step : 0;
        } else if (resume) {
            outcome.storePath = storePath.string();
            store.emplace(store::RunStore::open(storePath));
            outcome.runId = resume->state.runId;
            outputDir = resume->checkpoint.parent_path();
            store->resumeRun(outcome.runId, resume->state.step);
            if (const int removed = removePartialCheckpoints(outputDir); removed > 0)
                observer.onLog(LogLevel::Info, "removed " + std::to_string(removed) + " unfinished checkpoint folder(s) of the interrupted process");
            outcome.resumedFromStep = resume->state.step;
            observer.onRunCreated(outcome.runId, outcome.storePath);
            store->addEvent(outcome.runId, LogLevel::Info, "resumed from " + resume->checkpoint.string());
        } else {
            outcome.storePath = storePath.string();
            store.emplace(store::RunStore::open(storePath));
            nlohmann::json config = {{"training", params.toJson()}, {"model", job->config.toJson()},
                                     {"tokenizer", job->tokenizerPath}, {"corpus", job->corpusPath.string()},
                                     {"corpus_tokens", job->corpusTokens}};
            config["training"]["threads"] = params.threads > 0 ? params.threads : hardwareThreads();
            if (params.autoDeviceMap) { // what "auto" planned on this machine, in map order (empty: one device)
                config["training"]["device_map_planned"] = devicePlacementJson(job->devicePlacement);
                config["training"]["device"] = job->device.str();
            }
            if (!params.outputDir.empty())
                config["output_dir"] = std::filesystem::absolute(params.outputDir).string();
            else
                config["output_root"] = store::runsFolderBeside(storePath).string();
            outcome.runId = store->createRun(runName, config.dump(), job->modelName);
            outputDir = store::newRunFolder(params.outputDir, outcome.runId, storePath);
            store::writeRunMarker(outputDir, {outcome.runId, outcome.storePath});
            observer.onRunCreated(outcome.runId, outcome.storePath);
            store->addEvent(outcome.runId, LogLevel::Info,
                            "started: " + std::to_string(params.totalSteps(job->sequences.size(0))) + " steps, "
                                + methodName(params.method) + ", " + std::to_string(job->config.parameterCount())
                                + " parameters, " + std::to_string(params.threads > 0 ? params.threads : hardwareThreads())
                                + " threads" + (ranks.world > 1 ? " on each of " + std::to_string(ranks.world) + " ranks" : ""));
        }
        if (ranks.group && ranks.primary())
            ranks.group->share("run", std::to_string(outcome.runId));
        outcome.outputDir = outputDir.string();
        observer.onLog(LogLevel::Info, "run " + std::to_string(outcome.runId) + " in " + outcome.storePath + ": "
                                           + std::to_string(job->config.parameterCount()) + " parameters");

        LoopResult loop = trainLoop(params, *job, control, observer, store ? &*store : nullptr, outcome.runId, outputDir,
                                    resume, at, ranks);
        outcome.status = loop.status;
        outcome.stepsCompleted = loop.steps;
        outcome.firstLoss = loop.firstLoss;
        outcome.lastLoss = loop.lastLoss;
        outcome.lastEvalLoss = loop.lastEvalLoss;
        outcome.lastCheckpoint = loop.lastCheckpoint;
        if (!store) // the ranks other than 0 are done: rank 0 writes the plot, the model and the run's end
            return outcome;
        std::vector<report::CurvePoint> curve = loop.curve;
        if (resume) { // the whole run's curve: the steps before the checkpoint are in the store
            curve.clear();
            for (const store::MetricPoint &point : store->metric(outcome.runId, "train/loss"))
                curve.push_back({static_cast<double>(point.step), point.value});
        }
        writeLossPlot(outcome, curve, *store, runName, observer, outputDir);
        if (params.saveModel && loop.steps > 0)
            saveTrained(params, outcome, *loop.model, *job, *store, observer, outputDir);
        const bool cancelled = loop.status == JobStatus::Cancelled;
        store->addEvent(outcome.runId, LogLevel::Info,
                        std::string(cancelled ? "cancelled" : "finished") + " after " + std::to_string(loop.steps)
                            + " steps, loss " + formatDouble(loop.lastLoss));
        store->finishRun(outcome.runId, cancelled ? store::RunStatus::Cancelled : store::RunStatus::Succeeded);
    } catch (...) {
        outcome.status = JobStatus::Failed;
        outcome.error = currentExceptionInfo();
        outcome.nonFiniteStepPath = at.nonFiniteStepFolder;
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
