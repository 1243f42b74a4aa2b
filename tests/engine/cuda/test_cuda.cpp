// GPU tests: the engine on cuda:N gives what it gives on the CPU. Skipped where no GPU is visible;
// on a GPU machine scripts/test-cuda.sh runs them (name suffix _CUDA).
#include "engine/core/jobcontrol.h"
#include "engine/core/systeminfo.h"
#include "engine/core/torchdevice.h"
#include "engine/infer/inference.h"
#include "engine/model/generation.h"
#include "engine/model/pretrained.h"
#include "engine/train/trainer.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

#include "engine/store/runstore.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

using engine::model::LlamaForCausalLM;
using testing_support::randomLlama;
using testing_support::tinyLlama;

namespace {

bool haveGpu() { return engine::torchHasCuda() && torch::cuda::is_available(); }

#define REQUIRE_GPU()                                                                                             \
    do {                                                                                                          \
        if (!haveGpu())                                                                                           \
            GTEST_SKIP() << "no CUDA GPU (CPU-only libtorch or no device visible)";                               \
    } while (0)

const torch::Device kGpu(torch::kCUDA, 0);

std::vector<int64_t> someIds() { return {1, 5, 9, 33, 2, 17, 60, 8, 4, 22, 11, 3}; }

/// 30 steps of the tiny config on cuda:0 over a corpus slice, writing into `dir` (the inputs are
/// written once per folder) and `dir`/`output`.
engine::train::TrainingParams tinyGpuRun(const testing_support::TempDir &dir, const std::string &output)
{
    if (!std::filesystem::exists(dir / "tiny")) {
        testing_support::isolateXdgDirs(dir.path());
        testing_support::writeCorpusSlice(dir / "corpus.txt", 60'000);
        testing_support::writeTinyConfig(dir / "tiny");
    }
    engine::train::TrainingParams params;
    params.modelPath = (dir / "tiny").string();
    params.dataPath = (dir / "corpus.txt").string();
    params.storePath = (dir / "runs.sqlite3").string();
    params.outputDir = (dir / output).string();
    params.steps = 30;
    params.learningRate = 1e-2;
    params.warmupSteps = 3;
    params.batchSize = 4;
    params.sequenceLength = 32;
    params.device = "cuda:0";
    return params;
}

} // namespace

TEST(Cuda, ModelPlacementPutsEveryParameterOnTheGpu_CUDA)
{
    REQUIRE_GPU();
    LlamaForCausalLM cpu = randomLlama(tinyLlama("llama", true));
    LlamaForCausalLM gpu = randomLlama(tinyLlama("llama", true));
    gpu->to(engine::torchDevice("cuda:0"));
    for (const auto &p : gpu->parameters())
        EXPECT_TRUE(p.device().is_cuda());
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = torch::tensor(someIds(), torch::kInt64).unsqueeze(0);
    const torch::Tensor expected = cpu->forward(ids);
    const torch::Tensor got = gpu->forward(ids.to(kGpu)).to(torch::kCPU);
    EXPECT_TRUE(torch::allclose(got, expected, 1e-4, 1e-4)) << (got - expected).abs().max().item<double>();
}

TEST(Cuda, GreedyGenerationAndScoresEqualTheCpu_CUDA)
{
    REQUIRE_GPU();
    LlamaForCausalLM cpu = randomLlama(tinyLlama());
    LlamaForCausalLM gpu = randomLlama(tinyLlama());
    gpu->to(kGpu);
    engine::model::GenerationOptions options;
    options.maxNewTokens = 24;
    const auto a = engine::model::generate(cpu, {1, 2, 3}, options);
    const auto b = engine::model::generate(gpu, {1, 2, 3}, options);
    EXPECT_EQ(a.tokens, b.tokens);
    const auto lpCpu = engine::model::scoreLogprobs(cpu, someIds());
    const auto lpGpu = engine::model::scoreLogprobs(gpu, someIds());
    ASSERT_EQ(lpCpu.size(), lpGpu.size());
    for (size_t i = 0; i < lpCpu.size(); ++i)
        EXPECT_NEAR(lpCpu[i], lpGpu[i], 1e-4) << "position " << i;
}

TEST(Cuda, ScoreRequestOnCudaEqualsCpu_CUDA)
{
    REQUIRE_GPU();
    testing_support::TempDir dir("cuda-score");
    LlamaForCausalLM model = randomLlama(tinyLlama());
    engine::model::savePretrained(model, dir.path());
    engine::infer::ScoreRequest request;
    request.modelPath = dir.path().string();
    request.ids = someIds();
    const auto cpu = engine::infer::score(request);
    request.device = "cuda:0";
    const auto gpu = engine::infer::score(request);
    EXPECT_NEAR(cpu.meanLoss, gpu.meanLoss, 1e-4);
}

TEST(Cuda, TrainingStepsOnTheGpuLowerTheLoss_CUDA)
{
    REQUIRE_GPU();
    testing_support::TempDir dir("cuda-train");
    const engine::train::TrainingParams params = tinyGpuRun(dir, "out");
    engine::resetCudaPeakMemory(0);
    engine::JobControl control;
    engine::train::TrainingObserver observer;
    const auto outcome = engine::train::runTraining(params, control, observer);
    ASSERT_EQ(outcome.status, engine::JobStatus::Succeeded) << (outcome.error ? outcome.error->message : "");
    EXPECT_LT(outcome.lastLoss, outcome.firstLoss - 0.3);
    EXPECT_GT(engine::cudaMemoryStats(0).peakAllocatedBytes, 0) << "the steps ran on the GPU";
    EXPECT_FALSE(outcome.modelPath.empty()) << "the model saved from the GPU";
}

TEST(Cuda, Fp16WithLossScalingAndBf16TrainAndStoreTheirScaleAndMemory_CUDA)
{
    REQUIRE_GPU();
    testing_support::TempDir dir("cuda-amp");
    const bool bf16 = engine::systemInfo().gpus.at(0).bf16;
    for (const auto precision : {engine::train::Precision::Fp16, engine::train::Precision::Bf16}) {
        if (precision == engine::train::Precision::Bf16 && !bf16)
            continue; // refused by name on a T4 / V100 (tested by the trainer's message)
        const std::string name = engine::train::precisionName(precision);
        engine::train::TrainingParams params = tinyGpuRun(dir, "out-" + name);
        params.precision = precision;
        engine::JobControl control;
        engine::train::TrainingObserver observer;
        const auto outcome = engine::train::runTraining(params, control, observer);
        ASSERT_EQ(outcome.status, engine::JobStatus::Succeeded) << name << ": " << (outcome.error ? outcome.error->message : "");
        EXPECT_LT(outcome.lastLoss, outcome.firstLoss - 0.3) << name;
        auto store = engine::store::RunStore::open(params.storePath);
        EXPECT_EQ(store.metric(outcome.runId, "memory/cuda:0").size(), 30u) << name;
        const auto scale = store.metric(outcome.runId, "train/loss_scale");
        if (precision == engine::train::Precision::Fp16) {
            ASSERT_FALSE(scale.empty()) << "fp16 records its loss scale";
            EXPECT_GT(scale.back().value, 0);
            EXPECT_LE(scale.back().value, 65536.0) << "no growth within 2000 steps";
        } else {
            EXPECT_TRUE(scale.empty()) << "bf16 needs no loss scaling";
        }
    }
}

TEST(Cuda, PeakMemoryComesFromTheCachingAllocator_CUDA)
{
    REQUIRE_GPU();
    torch::cuda::synchronize();
    engine::resetCudaPeakMemory(0);
    const int64_t before = engine::cudaMemoryStats(0).allocatedBytes;
    constexpr int64_t bytes = 64ll << 20;
    {
        const torch::Tensor block = torch::empty({bytes / 4}, torch::TensorOptions().dtype(torch::kFloat).device(kGpu));
        EXPECT_GE(engine::cudaMemoryStats(0).allocatedBytes - before, bytes);
    }
    const engine::CudaMemoryStats after = engine::cudaMemoryStats(0);
    EXPECT_GE(after.peakAllocatedBytes - before, bytes);
    EXPECT_LT(after.allocatedBytes, after.peakAllocatedBytes);
    EXPECT_GE(after.reservedBytes, after.allocatedBytes);
}

TEST(Cuda, DoctorListsTheGpus_CUDA)
{
    REQUIRE_GPU();
    const engine::SystemInfo info = engine::systemInfo();
    ASSERT_EQ(info.gpus.size(), torch::cuda::device_count());
    EXPECT_FALSE(info.gpus[0].name.empty());
    EXPECT_GT(info.gpus[0].totalMemoryBytes, int64_t(1) << 30);
    EXPECT_FALSE(info.cudaRuntimeVersion.empty());
}
