#include "engine/core/atomicfile.h"
#include "engine/core/jobcontrol.h"
#include "engine/inspect/inspector.h"
#include "engine/model/pretrained.h"
#include "engine/store/runstore.h"
#include "engine/tokenize/tokenizer.h"
#include "engine/train/export.h"
#include "engine/store/runfolder.h"
#include "engine/train/trainer.h"
#include "support/bytelevelfolder.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <sstream>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

namespace fs = std::filesystem;
using engine::JobStatus;
using engine::train::StepMetrics;
using engine::train::TrainingParams;

namespace {

class RecordingObserver : public engine::train::TrainingObserver {
public:
    std::function<void(const StepMetrics &)> onEachStep;
    std::vector<StepMetrics> steps;
    std::vector<std::string> logs;
    int64_t runId = 0;

    void onRunCreated(int64_t id, const std::string &) override { runId = id; }
    void onLog(engine::LogLevel, const std::string &text) override { logs.push_back(text); }
    void onStep(const StepMetrics &m) override
    {
        steps.push_back(m);
        if (onEachStep)
            onEachStep(m);
    }
};

class TrainerTest : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_dir = new testing_support::TempDir("trainer");
        testing_support::isolateXdgDirs(s_dir->path());
        testing_support::writeCorpusSlice(s_dir->path() / "corpus.txt", 120'000);
        testing_support::writeTinyConfig(s_dir->path() / "tiny");
    }
    static void TearDownTestSuite()
    {
        delete s_dir;
        s_dir = nullptr;
    }

    TrainingParams tinyParams(const std::string &db) const
    {
        TrainingParams p;
        p.modelPath = (s_dir->path() / "tiny").string();
        p.dataPath = (s_dir->path() / "corpus.txt").string();
        p.storePath = (s_dir->path() / db).string();
        p.outputDir = (s_dir->path() / ("out-" + db)).string();
        p.steps = 40;
        p.learningRate = 1e-2;
        p.warmupSteps = 5;
        p.batchSize = 4;
        p.sequenceLength = 32;
        p.threads = 1;
        return p;
    }

    /// A model folder with weights and a tokenizer to fine-tune: the tiny config trained `steps` steps.
    std::string trainBase(const std::string &db, int64_t steps) const
    {
        engine::JobControl control;
        RecordingObserver observer;
        TrainingParams params = tinyParams(db);
        params.steps = steps;
        params.warmupSteps = 0;
        const auto outcome = engine::train::runTraining(params, control, observer);
        EXPECT_EQ(outcome.status, JobStatus::Succeeded) << (outcome.error ? outcome.error->message : "");
        return outcome.modelPath;
    }

    /// The tiny config trained one step, saved to `folder` with its weights changed by `edit`, and its tokenizer.
    fs::path editedBase(const std::string &folder, const std::string &db,
                        const std::function<void(engine::model::LlamaForCausalLM &)> &edit) const
    {
        const std::string baseModel = trainBase(db, 1);
        EXPECT_FALSE(baseModel.empty());
        const fs::path edited = s_dir->path() / folder;
        fs::create_directories(edited);
        auto model = engine::model::loadPretrained(baseModel);
        {
            torch::NoGradGuard noGrad;
            edit(model);
        }
        engine::model::savePretrained(model, edited);
        fs::copy_file(fs::path(baseModel) / "tokenizer.model", edited / "tokenizer.model");
        return edited;
    }

    /// Runs `params` with --on-nan skip into `db`: it succeeds with every one of its steps skipped.
    engine::train::TrainingOutcome runSkippingEveryStep(TrainingParams params, const std::string &db) const
    {
        engine::JobControl control;
        params.nonFinite = engine::train::NonFinitePolicy::Skip;
        params.storePath = (s_dir->path() / db).string();
        params.outputDir = (s_dir->path() / ("out-" + db)).string();
        RecordingObserver skip;
        const auto skipped = engine::train::runTraining(params, control, skip);
        EXPECT_EQ(skipped.status, JobStatus::Succeeded) << (skipped.error ? skipped.error->message : "");
        EXPECT_EQ(skip.steps.size(), static_cast<size_t>(params.steps));
        for (const auto &m : skip.steps)
            EXPECT_TRUE(m.skipped);
        return skipped;
    }

    static testing_support::TempDir *s_dir;
};

testing_support::TempDir *TrainerTest::s_dir = nullptr;

std::string slurp(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

double meanLoss(const std::vector<StepMetrics> &steps, size_t from, size_t to)
{
    double sum = 0;
    for (size_t i = from; i < to; ++i)
        sum += steps[i].loss;
    return sum / static_cast<double>(to - from);
}

} // namespace

TEST_F(TrainerTest, LossFallsAndEveryStepIsStored)
{
    engine::JobControl control;
    RecordingObserver observer;
    TrainingParams params = tinyParams("falls.sqlite3");
    params.steps = 80;
    const auto outcome = engine::train::runTraining(params, control, observer);
    ASSERT_EQ(outcome.status, JobStatus::Succeeded) << (outcome.error ? outcome.error->message : "");
    ASSERT_EQ(observer.steps.size(), 80u);
    EXPECT_EQ(outcome.stepsCompleted, 80);

    // ln(512) ~ 6.24 at the start; a model that learns gets well below it. The margin is 0.75 nats:
    // libtorch 1.13 falls 1.03 here and Debian 13's 2.6 0.93-1.01 (the same tokenizer file, token ids,
    // initial weights and batch order, yet the first loss already differs in the third decimal), so
    // the former bound of 1.0 sat inside the spread between libtorch versions; a model that does
    // not learn stays above 6.
    constexpr double kMinimumFall = 0.75;
    const double start = meanLoss(observer.steps, 0, 5);
    const double end = meanLoss(observer.steps, 70, 80);
    EXPECT_GT(start, 5.5);
    EXPECT_LT(end, start - kMinimumFall) << "loss did not fall: " << start << " -> " << end;
    for (const auto &m : observer.steps) {
        EXPECT_GT(m.tokensPerSecond, 0);
        EXPECT_GT(m.learningRate, 0);
        EXPECT_TRUE(std::isfinite(m.gradNorm));
    }
    EXPECT_NEAR(observer.steps[4].learningRate, 1e-2, 1e-12) << "warmup ends at the peak";

    auto store = engine::store::RunStore::open(params.storePath);
    const auto run = store.run(outcome.runId);
    ASSERT_TRUE(run);
    EXPECT_EQ(run->status, engine::store::RunStatus::Succeeded);
    const auto loss = store.metric(outcome.runId, "train/loss");
    ASSERT_EQ(loss.size(), 80u);
    for (size_t i = 0; i < loss.size(); ++i) {
        EXPECT_EQ(loss[i].step, static_cast<int64_t>(i + 1));
        EXPECT_DOUBLE_EQ(loss[i].value, observer.steps[i].loss);
    }
    EXPECT_EQ(store.metric(outcome.runId, "train/grad_norm").size(), 80u);
    // Memory per device: the process's resident peak of each step (the tiny model, its corpus and libtorch
    // take well over 10 MB, and no test process comes near 1 TB).
    const auto memory = store.metric(outcome.runId, "memory/cpu");
    ASSERT_EQ(memory.size(), 80u);
    for (const auto &m : memory) {
        EXPECT_GT(m.value, 10e6) << "step " << m.step;
        EXPECT_LT(m.value, 1e12) << "step " << m.step;
    }
    EXPECT_EQ(observer.steps[10].cpuPeakBytes, static_cast<int64_t>(memory[10].value));
    // System metrics: the process computes in every step (above 0 % of a core, below every core of
    // the machine flat out, with slack for clock granularity), and the machine has some RAM free.
    const auto cpu = store.metric(outcome.runId, "system/cpu_percent");
    ASSERT_EQ(cpu.size(), 80u);
    const double cores = std::max(1u, std::thread::hardware_concurrency());
    for (const auto &m : cpu) {
        EXPECT_GT(m.value, 0) << "step " << m.step;
        EXPECT_LT(m.value, 100.0 * cores + 50) << "step " << m.step;
    }
    const auto ram = store.metric(outcome.runId, "system/ram_available");
    ASSERT_EQ(ram.size(), 80u);
    EXPECT_GT(ram.front().value, 1e6);
    ASSERT_FALSE(outcome.lossPlotPath.empty());
    EXPECT_TRUE(fs::exists(outcome.lossPlotPath));
    const auto artifacts = store.artifacts(outcome.runId);
    ASSERT_EQ(artifacts.size(), 2u);
    EXPECT_EQ(artifacts[0].kind, "loss_plot");
    EXPECT_EQ(artifacts[1].kind, "model");
    EXPECT_EQ(artifacts[1].path, outcome.modelPath);
    for (const char *file : {"config.json", "model.safetensors", "tokenizer.model"})
        EXPECT_TRUE(fs::exists(fs::path(outcome.modelPath) / file)) << file;

    // Training again from the saved folder continues from the learned weights, not from scratch.
    RecordingObserver resumed;
    TrainingParams again = tinyParams("falls-again.sqlite3");
    again.modelPath = outcome.modelPath;
    again.steps = 3;
    again.warmupSteps = 0;
    const auto second = engine::train::runTraining(again, control, resumed);
    ASSERT_EQ(second.status, JobStatus::Succeeded) << (second.error ? second.error->message : "");
    EXPECT_LT(resumed.steps.front().loss, start - kMinimumFall) << "the saved weights were not loaded";
}

TEST_F(TrainerTest, SameSeedGivesSameLosses)
{
    engine::JobControl control;
    RecordingObserver a, b;
    TrainingParams params = tinyParams("seed.sqlite3");
    params.steps = 5;
    ASSERT_EQ(engine::train::runTraining(params, control, a).status, JobStatus::Succeeded);
    ASSERT_EQ(engine::train::runTraining(params, control, b).status, JobStatus::Succeeded);
    for (size_t i = 0; i < 5; ++i)
        EXPECT_DOUBLE_EQ(a.steps[i].loss, b.steps[i].loss) << "step " << i + 1;
}

TEST_F(TrainerTest, ADeviceMapOverCpuAndDiskTrainsExactlyLikeOneDevice)
{
    // A model folder with weights: train the tiny config briefly and keep what it saved.
    engine::JobControl control;
    RecordingObserver seed;
    TrainingParams first = tinyParams("map-seed.sqlite3");
    first.steps = 2;
    first.warmupSteps = 0;
    const auto saved = engine::train::runTraining(first, control, seed);
    ASSERT_EQ(saved.status, JobStatus::Succeeded) << (saved.error ? saved.error->message : "");

    TrainingParams plain = tinyParams("map-plain.sqlite3");
    plain.modelPath = saved.modelPath;
    plain.steps = 6;
    plain.warmupSteps = 0;
    TrainingParams mapped = plain;
    mapped.storePath = (s_dir->path() / "map-mapped.sqlite3").string();
    mapped.outputDir = (s_dir->path() / "out-map-mapped").string();
    // The tiny config ties lm_head to the embedding, so they share a device.
    mapped.devicePlacement = {{"model.embed_tokens", "cpu"}, {"model.layers.0", "disk"}, {"model.layers.1", "cpu"},
                              {"model.norm", "disk"}, {"lm_head", "cpu"}};
    RecordingObserver a, b;
    ASSERT_EQ(engine::train::runTraining(plain, control, a).status, JobStatus::Succeeded);
    const auto outcome = engine::train::runTraining(mapped, control, b);
    ASSERT_EQ(outcome.status, JobStatus::Succeeded) << (outcome.error ? outcome.error->message : "");
    ASSERT_EQ(a.steps.size(), b.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i) {
        EXPECT_DOUBLE_EQ(a.steps[i].loss, b.steps[i].loss) << "step " << i + 1;
        EXPECT_DOUBLE_EQ(a.steps[i].gradNorm, b.steps[i].gradNorm) << "step " << i + 1;
    }

    // --device-map auto plans this run on this machine: without a GPU the whole run fits in RAM and
    // trains there, exactly as on one device, and the run records what was planned.
    TrainingParams planned = plain;
    planned.storePath = (s_dir->path() / "map-auto.sqlite3").string();
    planned.outputDir = (s_dir->path() / "out-map-auto").string();
    planned.autoDeviceMap = true;
    RecordingObserver autoRun;
    const auto autoOutcome = engine::train::runTraining(planned, control, autoRun);
    ASSERT_EQ(autoOutcome.status, JobStatus::Succeeded) << (autoOutcome.error ? autoOutcome.error->message : "");
    ASSERT_EQ(autoRun.steps.size(), a.steps.size());
    for (size_t i = 0; i < a.steps.size(); ++i)
        EXPECT_DOUBLE_EQ(a.steps[i].loss, autoRun.steps[i].loss) << "step " << i + 1;
    if (!torch::cuda::is_available()) {
        EXPECT_TRUE(std::any_of(autoRun.logs.begin(), autoRun.logs.end(),
                                [](const std::string &l) { return l.rfind("device map auto: the run fits on cpu", 0) == 0; }));
        auto autoStore = engine::store::RunStore::open(planned.storePath);
        const auto config = nlohmann::json::parse(autoStore.run(autoOutcome.runId)->configJson);
        EXPECT_EQ(config["training"]["device_map"], "auto");
        EXPECT_EQ(config["training"]["device_map_planned"], nlohmann::json::array());
        EXPECT_EQ(config["training"]["device"], "cpu");
    }

    // A map naming a module the model lacks fails with one error that names it.
    TrainingParams bad = mapped;
    bad.storePath = (s_dir->path() / "map-bad.sqlite3").string();
    bad.devicePlacement.push_back({"model.layers.7", "cpu"});
    RecordingObserver c;
    const auto refused = engine::train::runTraining(bad, control, c);
    ASSERT_EQ(refused.status, JobStatus::Failed);
    EXPECT_NE(refused.error->message.find("model.layers.7"), std::string::npos) << refused.error->message;
}

TEST_F(TrainerTest, Bf16AutocastTrainsFloat32WeightsAndTracksTheFloat32Loss)
{
    engine::JobControl control;
    RecordingObserver fp32, bf16;
    TrainingParams params = tinyParams("bf16-ref.sqlite3");
    params.steps = 30;
    params.gradientCheckpointing = true; // the recomputation must run under the same autocast
    ASSERT_EQ(engine::train::runTraining(params, control, fp32).status, JobStatus::Succeeded);
    TrainingParams half = params;
    half.precision = engine::train::Precision::Bf16;
    half.storePath = (s_dir->path() / "bf16.sqlite3").string();
    half.outputDir = (s_dir->path() / "out-bf16").string();
    half.saveEvery = 10;
    const auto outcome = engine::train::runTraining(half, control, bf16);
    ASSERT_EQ(outcome.status, JobStatus::Succeeded) << (outcome.error ? outcome.error->message : "");
    ASSERT_EQ(bf16.steps.size(), fp32.steps.size());

    // bf16 products (8 bits of mantissa) move the loss a little, never far: the same run, not another one.
    EXPECT_NE(bf16.steps[0].loss, fp32.steps[0].loss) << "the products did not run in bf16";
    EXPECT_NEAR(bf16.steps[0].loss, fp32.steps[0].loss, 0.02 * fp32.steps[0].loss);
    EXPECT_NEAR(meanLoss(bf16.steps, 20, 30), meanLoss(fp32.steps, 20, 30), 0.1);
    EXPECT_LT(meanLoss(bf16.steps, 20, 30), meanLoss(bf16.steps, 0, 5) - 0.3) << "bf16 training did not learn";

    // Master weights stay float32: the saved model is F32 and so is every trained tensor.
    const engine::model::LlamaForCausalLM saved = engine::model::loadPretrained(outcome.modelPath);
    for (const auto &item : saved->named_parameters())
        EXPECT_EQ(item.value().scalar_type(), torch::kFloat32) << item.key();

    // A bf16 checkpoint does not resume as fp32: the losses would not continue the same curve.
    TrainingParams resume = params;
    resume.storePath = half.storePath;
    resume.outputDir = half.outputDir;
    resume.steps = 40;
    resume.resumeFrom = half.outputDir;
    RecordingObserver refused;
    const auto again = engine::train::runTraining(resume, control, refused);
    ASSERT_EQ(again.status, JobStatus::Failed);
    EXPECT_NE(again.error->message.find("precision"), std::string::npos) << again.error->message;
    EXPECT_NE(again.error->message.find("bf16"), std::string::npos) << again.error->message;
}

TEST_F(TrainerTest, RunningOutOfMemoryNamesTheDevicePhaseAndWhatToChange)
{
    // A model whose first projection (1e6 x 1e6 floats, 4 TB) no allocator grants. Under Linux's default
    // heuristic overcommit (mode 0) or strict accounting (2) the allocation fails at once; mode 1 would
    // grant it and let the kernel kill the process later, so the test does not run there.
    std::ifstream overcommit("/proc/sys/vm/overcommit_memory");
    int mode = 0;
    overcommit >> mode;
    if (mode == 1)
        GTEST_SKIP() << "vm.overcommit_memory = 1 grants any allocation";
    const fs::path folder = s_dir->path() / "huge";
    fs::create_directories(folder);
    std::ofstream(folder / "config.json") << R"({"model_type": "llama", "vocab_size": 16, "hidden_size": 1000000,
        "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 16, "num_key_value_heads": 16,
        "max_position_embeddings": 64, "tie_word_embeddings": true})";
    {
        std::ofstream data(folder / "ids.jsonl");
        for (int line = 0; line < 8; ++line) {
            data << R"({"input_ids": [)";
            for (int i = 0; i < 17; ++i)
                data << (i ? "," : "") << (line + i) % 16;
            data << "]}\n";
        }
    }
    engine::JobControl control;
    RecordingObserver observer;
    TrainingParams params = tinyParams("oom.sqlite3");
    params.modelPath = (folder / "config.json").string();
    params.dataPath = (folder / "ids.jsonl").string();
    params.sequenceLength = 16;
    params.batchSize = 2;
    const auto outcome = engine::train::runTraining(params, control, observer);
    ASSERT_EQ(outcome.status, JobStatus::Failed);
    ASSERT_TRUE(outcome.error);
    EXPECT_EQ(outcome.error->kind, engine::ErrorKind::OutOfMemory) << outcome.error->message;
    const std::string &message = outcome.error->message;
    EXPECT_EQ(message.rfind("out of memory on cpu in loading the model (", 0), 0u) << message;
    for (const char *hint : {"--batch-size (now 2", "--seq-len (now 16)", "--checkpointing", "--method lora", "--device-map"})
        EXPECT_NE(message.find(hint), std::string::npos) << hint << " in: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line, no backtrace: " << message;
    auto store = engine::store::RunStore::open(params.storePath);
    const auto run = store.run(outcome.runId);
    ASSERT_TRUE(run);
    EXPECT_EQ(run->status, engine::store::RunStatus::Failed);
}

TEST_F(TrainerTest, CancelMidRunKeepsMetricsUpToThatStep)
{
    engine::JobControl control;
    RecordingObserver observer;
    observer.onEachStep = [&](const StepMetrics &m) {
        if (m.step == 7)
            control.requestCancel();
    };
    const TrainingParams params = tinyParams("cancel.sqlite3");
    const auto outcome = engine::train::runTraining(params, control, observer);
    EXPECT_EQ(outcome.status, JobStatus::Cancelled);
    EXPECT_FALSE(outcome.error);
    EXPECT_EQ(outcome.stepsCompleted, 7);
    auto store = engine::store::RunStore::open(params.storePath);
    EXPECT_EQ(store.run(outcome.runId)->status, engine::store::RunStatus::Cancelled);
    for (const char *key : {"train/loss", "train/learning_rate", "train/grad_norm", "train/tokens_per_second"}) {
        const auto points = store.metric(outcome.runId, key);
        ASSERT_EQ(points.size(), 7u) << key;
        for (size_t i = 0; i < points.size(); ++i)
            EXPECT_EQ(points[i].step, static_cast<int64_t>(i + 1)) << key;
    }
}

// Paused after step 3, the loop holds before step 4 (JobControl::waitUntilHeld sees it wait) and no
// step runs until the resume: the order of events decides, not how long a step takes. The 60 s bound only
// ends a run whose loop never holds.
TEST_F(TrainerTest, PauseHoldsTheLoopUntilResumed)
{
    engine::JobControl control;
    RecordingObserver observer;
    std::mutex mutex;
    std::vector<std::string> events; // "step N", "held", "resuming", in the order they happened
    const auto event = [&](std::string text) {
        const std::lock_guard lock(mutex);
        events.push_back(std::move(text));
    };
    std::thread resumer;
    using Clock = std::chrono::steady_clock;
    const Clock::time_point started = Clock::now();
    Clock::time_point step4At;
    double heldSeconds = 0; // from the moment the loop was seen held to the resume: inside the pause
    observer.onEachStep = [&](const StepMetrics &m) {
        event("step " + std::to_string(m.step));
        if (m.step == 3) {
            control.setPaused(true);
            resumer = std::thread([&] {
                const bool held = control.waitUntilHeld(std::chrono::seconds(60));
                const Clock::time_point heldAt = Clock::now();
                event(held ? "held" : "never held");
                // Held for as long as the run had taken until then: longer than everything before the
                // first step, so that a pause counted as training time would show in step 4's wall time
                // (below). A wait for a measured span, not for another thread's progress.
                if (held)
                    std::this_thread::sleep_until(heldAt + (heldAt - started));
                heldSeconds = std::chrono::duration<double>(Clock::now() - heldAt).count();
                event("resuming");
                control.setPaused(false);
            });
        }
        if (m.step == 4)
            step4At = Clock::now();
    };
    TrainingParams params = tinyParams("pause.sqlite3");
    params.steps = 6;
    const auto outcome = engine::train::runTraining(params, control, observer);
    resumer.join();
    EXPECT_EQ(outcome.status, JobStatus::Succeeded);
    ASSERT_EQ(observer.steps.size(), 6u);
    // Held before step 4, and step 4 only after the resume (a pause that does not hold fails here).
    const std::vector<std::string> expected = {"step 1", "step 2", "step 3", "held", "resuming", "step 4", "step 5", "step 6"};
    EXPECT_EQ(events, expected);
    const auto paused = std::find(observer.logs.begin(), observer.logs.end(), "paused before step 4");
    ASSERT_NE(paused, observer.logs.end());
    EXPECT_NE(std::find(paused, observer.logs.end(), "resumed"), observer.logs.end());
    // The paused time is not training time: step 4's wall time (from the trainer's start, which comes after
    // `started`) is at most the real time until then less the pause. Counted, it would exceed that by the
    // time before the trainer's start and after step 4's clock reading, less than the hold.
    const double realUntilStep4 = std::chrono::duration<double>(step4At - started).count();
    EXPECT_LE(observer.steps[3].wallSeconds, realUntilStep4 - heldSeconds)
        << "step 4 at " << observer.steps[3].wallSeconds << " s of training; held " << heldSeconds << " s of "
        << realUntilStep4 << " s";
    EXPECT_GT(observer.steps[3].wallSeconds, observer.steps[2].wallSeconds);
}

// Without --output a run's files go beside its database (runs/<id> in the database's folder), so that a
// database kept elsewhere (the GUI's run folder, --db) keeps its runs with it, and every way of finding
// the run's folder again agrees.
TEST_F(TrainerTest, ARunWithoutAnOutputFolderKeepsItsFilesBesideItsDatabase)
{
    engine::JobControl control;
    RecordingObserver observer;
    TrainingParams params = tinyParams("beside.sqlite3");
    params.outputDir.clear();
    params.steps = 1;
    params.warmupSteps = 0;
    const auto outcome = engine::train::runTraining(params, control, observer);
    ASSERT_EQ(outcome.status, JobStatus::Succeeded) << (outcome.error ? outcome.error->message : "");
    const std::filesystem::path expected = s_dir->path() / "runs" / std::to_string(outcome.runId);
    EXPECT_EQ(std::filesystem::path(outcome.outputDir), expected);
    EXPECT_TRUE(std::filesystem::exists(expected / "run.json"));
    auto store = engine::store::RunStore::open(params.storePath);
    EXPECT_EQ(store.runFolder(outcome.runId), expected);
    EXPECT_EQ(store.createdRunFolder(outcome.runId), expected);
    EXPECT_EQ(engine::store::resolveRunFolder(std::to_string(outcome.runId), params.storePath), expected);
}

TEST_F(TrainerTest, TheThreadsSettingIsApplied)
{
    engine::JobControl control;
    for (const int threads : {1, 2}) {
        RecordingObserver observer;
        TrainingParams params = tinyParams("threads.sqlite3");
        params.steps = 1;
        params.warmupSteps = 0;
        params.threads = threads;
        ASSERT_EQ(engine::train::runTraining(params, control, observer).status, JobStatus::Succeeded);
        EXPECT_EQ(torch::get_num_threads(), threads);
        auto store = engine::store::RunStore::open(params.storePath);
        const auto config = nlohmann::json::parse(store.listRuns().front().configJson);
        EXPECT_EQ(config["training"]["threads"], threads);
    }
}

TEST_F(TrainerTest, AccumulatingKMicroBatchesEqualsOneBatchOfKTimesB)
{
    engine::JobControl control;
    RecordingObserver big, small;
    TrainingParams one = tinyParams("accum-one.sqlite3");
    one.steps = 4;
    one.warmupSteps = 1;
    one.batchSize = 6;
    TrainingParams three = tinyParams("accum-three.sqlite3");
    three.steps = 4;
    three.warmupSteps = 1;
    three.batchSize = 2;
    three.gradAccumulation = 3;
    ASSERT_EQ(engine::train::runTraining(one, control, big).status, JobStatus::Succeeded);
    ASSERT_EQ(engine::train::runTraining(three, control, small).status, JobStatus::Succeeded);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_NEAR(big.steps[i].loss, small.steps[i].loss, 1e-5) << "step " << i + 1;
        EXPECT_NEAR(big.steps[i].gradNorm, small.steps[i].gradNorm, 1e-4 * big.steps[i].gradNorm) << "step " << i + 1;
    }
    EXPECT_GT(std::abs(big.steps[3].loss - big.steps[0].loss), 1e-3) << "the model trained";
}

TEST_F(TrainerTest, GradientClippingBoundsTheUpdate)
{
    // Plain SGD moves each weight by lr * gradient: clipped to 1e-7 the loss cannot change.
    engine::JobControl control;
    RecordingObserver clipped, free;
    TrainingParams params = tinyParams("clip.sqlite3");
    params.steps = 5;
    params.optimizer = engine::train::OptimizerKind::Sgd;
    params.momentum = 0;
    params.learningRate = 0.5;
    params.warmupSteps = 0;
    params.schedule = engine::train::ScheduleKind::Constant;
    params.gradClipNorm = 1e-7;
    ASSERT_EQ(engine::train::runTraining(params, control, clipped).status, JobStatus::Succeeded);
    params.gradClipNorm = 0;
    ASSERT_EQ(engine::train::runTraining(params, control, free).status, JobStatus::Succeeded);
    EXPECT_NEAR(clipped.steps[4].loss, clipped.steps[0].loss, 0.05) << "same batches differ, the weights barely moved";
    EXPECT_GT(clipped.steps[0].gradNorm, 1e-3) << "the norm is measured before clipping";
    EXPECT_EQ(clipped.steps[0].loss, free.steps[0].loss);
    double differs = 0;
    for (size_t i = 1; i < 5; ++i)
        differs = std::max(differs, std::abs(clipped.steps[i].loss - free.steps[i].loss));
    EXPECT_GT(differs, 1e-3) << "without clipping the updates change the losses";
}

TEST_F(TrainerTest, LoraWithDropoutResumesBitForBitAndKeepsTheBaseFolderUntouched)
{
    engine::JobControl control;
    const std::string baseModel = trainBase("lora-base.sqlite3", 3);
    ASSERT_FALSE(baseModel.empty());
    const std::string baseBytes = slurp(fs::path(baseModel) / "model.safetensors");

    TrainingParams lora = tinyParams("lora.sqlite3");
    lora.modelPath = baseModel;
    lora.method = engine::train::TrainingMethod::Lora;
    lora.lora.dropout = 0.3; // draws from the generator: the resume must restore it
    lora.lora.targets = {"q_proj", "v_proj", "gate_proj"};
    lora.steps = 14;
    lora.outputDir = (s_dir->path() / "out-lora-straight").string();
    RecordingObserver straight;
    const auto whole = engine::train::runTraining(lora, control, straight);
    ASSERT_EQ(whole.status, JobStatus::Succeeded) << (whole.error ? whole.error->message : "");
    EXPECT_FALSE(whole.adapterPath.empty());
    EXPECT_TRUE(whole.modelPath.empty());
    EXPECT_TRUE(fs::exists(fs::path(whole.adapterPath) / "adapter_model.safetensors"));
    EXPECT_EQ(slurp(fs::path(baseModel) / "model.safetensors"), baseBytes) << "the base model is never written";

    lora.outputDir = (s_dir->path() / "out-lora-stopped").string();
    lora.saveEvery = 4;
    lora.keepCheckpoints = 1;
    engine::JobControl stopper;
    RecordingObserver part;
    part.onEachStep = [&](const StepMetrics &m) {
        if (m.step == 6)
            stopper.requestCancel();
    };
    const auto stopped = engine::train::runTraining(lora, stopper, part);
    ASSERT_EQ(stopped.status, JobStatus::Cancelled);
    // keep 1: checkpoint-4 gave way to the one written at the stop.
    EXPECT_FALSE(fs::exists(fs::path(lora.outputDir) / "checkpoint-4"));
    EXPECT_TRUE(fs::exists(fs::path(lora.outputDir) / "checkpoint-6" / "adapter_model.safetensors"));

    TrainingParams again = lora;
    again.resumeFrom = lora.outputDir;
    RecordingObserver rest;
    const auto resumed = engine::train::runTraining(again, control, rest);
    ASSERT_EQ(resumed.status, JobStatus::Succeeded) << (resumed.error ? resumed.error->message : "");
    EXPECT_EQ(resumed.runId, stopped.runId) << "the resumed steps land in the same run";
    EXPECT_EQ(resumed.resumedFromStep, 6);
    ASSERT_EQ(rest.steps.size(), 8u);
    for (size_t i = 0; i < 14; ++i) {
        const StepMetrics &got = i < 6 ? part.steps[i] : rest.steps[i - 6];
        EXPECT_EQ(got.loss, straight.steps[i].loss) << "step " << i + 1;
    }
    auto store = engine::store::RunStore::open(lora.storePath);
    EXPECT_EQ(store.metric(resumed.runId, "train/loss").size(), 14u);
    EXPECT_EQ(store.run(resumed.runId)->status, engine::store::RunStatus::Succeeded);

    // Another method on the same checkpoint is refused by name.
    TrainingParams full = again;
    full.method = engine::train::TrainingMethod::Full;
    full.steps = 20;
    RecordingObserver none;
    const auto refused = engine::train::runTraining(full, control, none);
    ASSERT_EQ(refused.status, JobStatus::Failed);
    EXPECT_NE(refused.error->message.find("method = \"lora\", this run has \"full\""), std::string::npos)
        << refused.error->message;
}

TEST_F(TrainerTest, ANonFiniteLossStopsTheRunOrSkipsTheStep)
{
    engine::JobControl control;
    // One NaN in the norm of the last layer poisons every logit.
    const fs::path poisoned = editedBase("poisoned", "nan-base.sqlite3", [](engine::model::LlamaForCausalLM &model) {
        model->model->norm->weight[3] = std::nan("");
    });
    TrainingParams params = tinyParams("nan.sqlite3");
    params.modelPath = poisoned.string();
    params.steps = 3;
    params.warmupSteps = 0;
    RecordingObserver stop;
    const auto stopped = engine::train::runTraining(params, control, stop);
    ASSERT_EQ(stopped.status, JobStatus::Failed);
    EXPECT_NE(stopped.error->message.find("the loss is nan at step 1"), std::string::npos) << stopped.error->message;
    auto store = engine::store::RunStore::open(params.storePath);
    bool offersInspect = false;
    for (const auto &e : store.events(stopped.runId))
        offersInspect = offersInspect || e.text.find("inspect this step") != std::string::npos;
    EXPECT_TRUE(offersInspect);

    // The failing step is kept for the inspector: the weights it ran with and its batch. Inspecting it
    // finds the NaN where it is, in the last norm's weight (the loss exactly as the trainer computed it).
    ASSERT_FALSE(stopped.nonFiniteStepPath.empty());
    const fs::path step = stopped.nonFiniteStepPath;
    EXPECT_EQ(step.filename(), "nonfinite-step-1");
    for (const char *file : {"config.json", "model.safetensors", "tokenizer.model", "batch.safetensors"})
        EXPECT_TRUE(fs::exists(step / file)) << file;
    EXPECT_NE(stopped.error->message.find("tunebench inspect --model " + step.string()), std::string::npos)
        << stopped.error->message;
    const auto report = engine::inspect::inspectModelFolder(step, step / "batch.safetensors");
    EXPECT_EQ(report.status, engine::inspect::InspectStatus::Nan) << report.summary << report.error;
    ASSERT_TRUE(report.nan.has_value()) << report.summary;
    EXPECT_EQ(report.nan->module, "model.norm") << report.nan->op;
    EXPECT_TRUE(std::isnan(report.loss));

    // With LoRA the step keeps the adapter, and the inspector applies it over its base.
    TrainingParams lora = params;
    lora.method = engine::train::TrainingMethod::Lora;
    lora.storePath = (s_dir->path() / "nan-lora.sqlite3").string();
    lora.outputDir = (s_dir->path() / "out-nan-lora").string();
    RecordingObserver loraStop;
    const auto loraStopped = engine::train::runTraining(lora, control, loraStop);
    ASSERT_EQ(loraStopped.status, JobStatus::Failed);
    ASSERT_FALSE(loraStopped.nonFiniteStepPath.empty());
    EXPECT_TRUE(fs::exists(fs::path(loraStopped.nonFiniteStepPath) / "adapter_config.json"));
    const auto loraReport = engine::inspect::inspectModelFolder(loraStopped.nonFiniteStepPath,
                                                               fs::path(loraStopped.nonFiniteStepPath) / "batch.safetensors");
    EXPECT_EQ(loraReport.status, engine::inspect::InspectStatus::Nan) << loraReport.summary << loraReport.error;
    EXPECT_NE(loraReport.source.find("adapter over " + poisoned.string()), std::string::npos) << loraReport.source;

    runSkippingEveryStep(params, "nan-skip.sqlite3");
}

TEST_F(TrainerTest, AFiniteLossWithNonFiniteGradientsStopsBeforeTheUpdate)
{
    // Regression: only the loss was checked, so a step whose backward made NaN (loss finite) updated
    // every weight with it, and the next step's inspection found NaN in the weights, not its origin.
    engine::JobControl control;
    // Embeddings near float32's largest value: every RMSNorm's square overflows to Inf, its rsqrt is 0,
    // so each layer sees zeros and the logits are exactly 0 (loss ln 512). Backward multiplies that 0
    // by an infinite sum over the huge inputs: NaN gradients under a finite loss.
    const fs::path poisoned = editedBase("overflowing", "nangrad-base.sqlite3", [](engine::model::LlamaForCausalLM &model) {
        torch::Tensor embed = model->model->embed_tokens->weight;
        torch::manual_seed(7);
        embed.copy_(3e38 * (0.3 + 0.7 * torch::rand(embed.sizes())));
    });
    TrainingParams params = tinyParams("nangrad.sqlite3");
    params.modelPath = poisoned.string();
    params.steps = 3;
    params.warmupSteps = 0;
    RecordingObserver stop;
    const auto stopped = engine::train::runTraining(params, control, stop);
    ASSERT_EQ(stopped.status, JobStatus::Failed);
    EXPECT_NE(stopped.error->message.find("the gradient norm is "), std::string::npos) << stopped.error->message;
    EXPECT_NE(stopped.error->message.find("nan at step 1"), std::string::npos) << stopped.error->message;
    EXPECT_NE(stopped.error->message.find("is finite"), std::string::npos) << stopped.error->message;
    EXPECT_TRUE(stop.steps.empty()); // no step was taken

    // The step kept for the inspector ran with the unchanged weights: the inspection finds where the
    // first non-finite value appeared (the first norm's square, in forward), not NaN everywhere.
    ASSERT_FALSE(stopped.nonFiniteStepPath.empty());
    const fs::path step = stopped.nonFiniteStepPath;
    {
        auto kept = engine::model::loadPretrained(step);
        EXPECT_TRUE(kept->model->embed_tokens->weight.isfinite().all().item<bool>());
    }
    const auto report = engine::inspect::inspectModelFolder(step, step / "batch.safetensors");
    EXPECT_EQ(report.status, engine::inspect::InspectStatus::Nan) << report.summary << report.error;
    ASSERT_TRUE(report.nan.has_value()) << report.summary;
    EXPECT_EQ(report.nan->module, "model.layers.0.input_layernorm") << report.nan->op;
    EXPECT_TRUE(std::isfinite(report.loss));

    // Skipping leaves the weights as they were: every step skipped, the saved model still finite.
    const auto skipped = runSkippingEveryStep(params, "nangrad-skip.sqlite3");
    ASSERT_FALSE(skipped.modelPath.empty());
    auto saved = engine::model::loadPretrained(skipped.modelPath);
    EXPECT_TRUE(saved->model->embed_tokens->weight.isfinite().all().item<bool>());
}

TEST_F(TrainerTest, TheGuardWatchesEveryStepWithoutChangingTheLosses)
{
    // The always-on guard (saved-tensor hooks) leaves a clean run's losses exactly as they are without
    // it, and the run's settings record it.
    engine::JobControl control;
    TrainingParams params = tinyParams("guard-on.sqlite3");
    params.steps = 4;
    params.warmupSteps = 0;
    params.gradAccumulation = 2;
    params.gradientCheckpointing = true;
    RecordingObserver on, off;
    ASSERT_TRUE(params.inspectGuard); // the default
    const auto guarded = engine::train::runTraining(params, control, on);
    ASSERT_EQ(guarded.status, JobStatus::Succeeded) << (guarded.error ? guarded.error->message : "");
    params.inspectGuard = false;
    params.storePath = (s_dir->path() / "guard-off.sqlite3").string();
    params.outputDir = (s_dir->path() / "out-guard-off").string();
    const auto plain = engine::train::runTraining(params, control, off);
    ASSERT_EQ(plain.status, JobStatus::Succeeded) << (plain.error ? plain.error->message : "");
    ASSERT_EQ(on.steps.size(), off.steps.size());
    for (size_t i = 0; i < on.steps.size(); ++i) {
        EXPECT_EQ(on.steps[i].loss, off.steps[i].loss) << "step " << i + 1;
        EXPECT_EQ(on.steps[i].gradNorm, off.steps[i].gradNorm) << "step " << i + 1;
    }
    auto store = engine::store::RunStore::open((s_dir->path() / "guard-on.sqlite3").string());
    const auto config = nlohmann::json::parse(store.run(guarded.runId)->configJson);
    EXPECT_EQ(config["training"]["inspect_guard"], true) << config.dump();
}

TEST_F(TrainerTest, TokenizerIsTrainedOnceThenCached)
{
    engine::JobControl control;
    RecordingObserver first, second;
    TrainingParams params = tinyParams("cache.sqlite3");
    params.steps = 1;
    params.warmupSteps = 0;
    ASSERT_EQ(engine::train::runTraining(params, control, first).status, JobStatus::Succeeded);
    ASSERT_EQ(engine::train::runTraining(params, control, second).status, JobStatus::Succeeded);
    auto mentions = [](const std::vector<std::string> &logs, const std::string &word) {
        for (const auto &l : logs)
            if (l.find(word) != std::string::npos)
                return true;
        return false;
    };
    EXPECT_TRUE(mentions(second.logs, "cached tokenizer"));
}

TEST_F(TrainerTest, AModelWithATokenizerJsonTrainsWithItAndEverySaveCarriesIt)
{
    // A ChatML model folder with tokenizer.json + tokenizer_config.json and no tokenizer.model (as Qwen2
    // and Llama 3 ship): the run must tokenize with it (a SentencePiece tokenizer trained on the data
    // would give ids the model never learned), and the saved model and its export carry it.
    const fs::path folder = s_dir->path() / "chatml-tiny";
    testing_support::writeTinyConfig(folder);
    const std::string chatml = engine::readFile(fs::path(TUNEBENCH_TEST_DATA) / "chattemplate" / "chatml.jinja");
    testing_support::writeByteLevelTokenizer(folder, {"<|im_start|>", "<|im_end|>"}, "<|im_end|>", chatml);
    const fs::path data = s_dir->path() / "chatml.jsonl";
    {
        std::ofstream out(data);
        for (int i = 0; i < 24; ++i) {
            out << nlohmann::json({{"messages", {{{"role", "user"}, {"content", "Who is Ahab? " + std::to_string(i)}},
                                                 {{"role", "assistant"}, {"content", "The captain."}}}}})
                       .dump()
                << "\n";
        }
    }
    TrainingParams params = tinyParams("chatml.sqlite3");
    params.modelPath = folder.string();
    params.dataPath = data.string();
    params.steps = 2;
    params.warmupSteps = 0;
    params.sequenceLength = 96;

    engine::JobControl control;
    RecordingObserver silent;
    const engine::train::DatasetPreview preview = engine::train::previewData(params, control, silent, 1);
    EXPECT_EQ(preview.tokenizer, (folder / "tokenizer.json").string());
    EXPECT_EQ(preview.format, "chat messages");
    ASSERT_EQ(preview.samples.size(), 1u);
    EXPECT_EQ(preview.samples[0].learned, "The captain.\n") << "the special tokens dropped from the text shown";

    RecordingObserver observer;
    const auto outcome = engine::train::runTraining(params, control, observer);
    ASSERT_EQ(outcome.status, JobStatus::Succeeded) << (outcome.error ? outcome.error->message : "");
    for (const std::string &line : observer.logs)
        EXPECT_EQ(line.find("training a SentencePiece tokenizer"), std::string::npos) << line;
    ASSERT_FALSE(outcome.modelPath.empty());
    for (const char *file : {"tokenizer.json", "tokenizer_config.json"})
        EXPECT_EQ(slurp(fs::path(outcome.modelPath) / file), slurp(folder / file)) << file;
    EXPECT_FALSE(fs::exists(fs::path(outcome.modelPath) / "tokenizer.model"));

    const fs::path merged = s_dir->path() / "chatml-merged";
    engine::train::exportRun(params.outputDir, engine::train::ExportKind::Merged, merged);
    EXPECT_EQ(slurp(merged / "tokenizer.json"), slurp(folder / "tokenizer.json"));
    EXPECT_EQ(slurp(merged / "tokenizer_config.json"), slurp(folder / "tokenizer_config.json"));
    EXPECT_EQ(engine::tokenize::loadTokenizer(merged)->tokenToId("<|im_end|>"), 257);
}

struct BadInputCase {
    const char *name;
    std::function<void(TrainingParams &, const fs::path &)> edit;
    engine::ErrorKind kind;
    const char *mustMention;
};

class TrainerBadInput : public TrainerTest, public ::testing::WithParamInterface<BadInputCase> {};

TEST_P(TrainerBadInput, FailsWithOneClearMessageAndLeavesNoRunningRun)
{
    const BadInputCase &c = GetParam();
    engine::JobControl control;
    RecordingObserver observer;
    TrainingParams params = tinyParams(std::string("bad-") + c.name + ".sqlite3");
    c.edit(params, s_dir->path());
    const auto outcome = engine::train::runTraining(params, control, observer);
    ASSERT_EQ(outcome.status, JobStatus::Failed);
    ASSERT_TRUE(outcome.error);
    EXPECT_EQ(outcome.error->kind, c.kind) << outcome.error->message;
    EXPECT_NE(outcome.error->message.find(c.mustMention), std::string::npos) << outcome.error->message;
    EXPECT_TRUE(observer.steps.empty());
    if (fs::exists(params.storePath)) {
        auto store = engine::store::RunStore::open(params.storePath);
        for (const auto &run : store.listRuns())
            EXPECT_NE(run.status, engine::store::RunStatus::Running);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TrainerBadInput,
    ::testing::Values(
        BadInputCase{"missing_corpus", [](TrainingParams &p, const fs::path &d) { p.dataPath = (d / "nope.txt").string(); },
                     engine::ErrorKind::Io, "nope.txt"},
        BadInputCase{"empty_corpus",
                     [](TrainingParams &p, const fs::path &d) {
                         std::ofstream(d / "empty.txt") << "  \n\n ";
                         p.dataPath = (d / "empty.txt").string();
                     },
                     engine::ErrorKind::InvalidInput, "empty"},
        BadInputCase{"short_corpus",
                     [](TrainingParams &p, const fs::path &d) {
                         std::ofstream(d / "short.txt") << "Call me Ishmael.\n";
                         p.dataPath = (d / "short.txt").string();
                     },
                     engine::ErrorKind::InvalidInput, "too short"},
        BadInputCase{"negative_lr", [](TrainingParams &p, const fs::path &) { p.learningRate = -1e-3; },
                     engine::ErrorKind::InvalidInput, "learning rate"},
        BadInputCase{"zero_batch", [](TrainingParams &p, const fs::path &) { p.batchSize = 0; },
                     engine::ErrorKind::InvalidInput, "batch size"},
        BadInputCase{"too_many_threads", [](TrainingParams &p, const fs::path &) { p.threads = 100000; },
                     engine::ErrorKind::InvalidInput, "threads"},
        BadInputCase{"zero_steps", [](TrainingParams &p, const fs::path &) { p.steps = 0; },
                     engine::ErrorKind::InvalidInput, "steps"},
        BadInputCase{"seq_len_beyond_positions", [](TrainingParams &p, const fs::path &) { p.sequenceLength = 1000; },
                     engine::ErrorKind::InvalidInput, "max_position_embeddings"},
        BadInputCase{"lora_without_weights",
                     [](TrainingParams &p, const fs::path &) { p.method = engine::train::TrainingMethod::Lora; },
                     engine::ErrorKind::InvalidInput, "LoRA adapts a pretrained model"},
        BadInputCase{"eval_file_and_fraction",
                     [](TrainingParams &p, const fs::path &d) {
                         p.evalDataPath = (d / "corpus.txt").string();
                         p.valFraction = 0.1;
                     },
                     engine::ErrorKind::InvalidInput, "not both"},
        BadInputCase{"short_eval_data",
                     [](TrainingParams &p, const fs::path &d) {
                         std::ofstream(d / "short-eval.txt") << "Call me Ishmael.\n";
                         p.evalDataPath = (d / "short-eval.txt").string();
                     },
                     engine::ErrorKind::InvalidInput, "too short"},
        BadInputCase{"resume_without_checkpoint",
                     [](TrainingParams &p, const fs::path &d) {
                         fs::create_directories(d / "no-checkpoints");
                         p.resumeFrom = (d / "no-checkpoints").string();
                     },
                     engine::ErrorKind::InvalidInput, "holds no checkpoint"},
        BadInputCase{"missing_model", [](TrainingParams &p, const fs::path &d) { p.modelPath = (d / "no-model").string(); },
                     engine::ErrorKind::Io, "no-model"},
        BadInputCase{"fp16_on_the_cpu",
                     [](TrainingParams &p, const fs::path &) { p.precision = engine::train::Precision::Fp16; },
                     engine::ErrorKind::InvalidInput, "fp16 needs a CUDA device"}),
    [](const ::testing::TestParamInfo<BadInputCase> &info) { return std::string(info.param.name); });
