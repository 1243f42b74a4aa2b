// Predicted against measured training peak on CPU: a counting allocator (wrapping libtorch's default
// CPU allocator, installed with c10::SetCPUAllocator before the model exists) sees every CPU
// allocation of a training step of the engine's LLaMA model (fp32, the engine's AdamW, gradients set to
// None before the forward): full fine-tuning and the demo's LoRA, each with and without gradient
// checkpointing, on the demo config, a larger GQA config and a Qwen3 one of that size. The planner's
// cpu peak for the same settings must lie within 15 %. docs/memory-estimate.md lists the measured
// numbers. On a GPU the same steps run on cuda:0 and the caching allocator's max_memory_allocated is
// the measurement (_CUDA).

#include "engine/core/systeminfo.h"
#include "engine/core/torchversion.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"
#include "engine/model/lora.h"
#include "engine/plan/planner.h"
#include "engine/train/gradientclip.h"
#include "engine/train/optimizer.h"

#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <atomic>
#include <cstdio>

using namespace engine::plan;
using engine::model::LlamaConfig;

namespace {

// Counts live bytes and the high-water mark. libtorch 2.3 made allocate() non-const and added copy_data.
class CountingAllocator final : public c10::Allocator {
public:
    explicit CountingAllocator(c10::Allocator *inner) : m_inner(inner) {}

#if TUNEBENCH_TORCH_AT_LEAST(2, 3)
    c10::DataPtr allocate(size_t n) override { return wrap(n); }
    void copy_data(void *dest, const void *src, std::size_t count) const override { default_copy_data(dest, src, count); }
#else
    c10::DataPtr allocate(size_t n) const override { return const_cast<CountingAllocator *>(this)->wrap(n); }
#endif

    int64_t live() const { return m_live.load(); }
    int64_t peak() const { return m_peak.load(); }
    void resetPeak() { m_peak.store(m_live.load()); }
    c10::Allocator *inner() const { return m_inner; }

private:
    struct Record {
        c10::DataPtr inner;
        size_t bytes;
        CountingAllocator *owner;
    };

    static void release(void *ctx)
    {
        auto *record = static_cast<Record *>(ctx);
        record->owner->m_live -= static_cast<int64_t>(record->bytes);
        delete record;
    }

    c10::DataPtr wrap(size_t n)
    {
        c10::DataPtr inner = m_inner->allocate(n);
        void *data = inner.get();
        const c10::Device device = inner.device();
        auto *record = new Record{std::move(inner), n, this};
        const int64_t now = (m_live += static_cast<int64_t>(n));
        int64_t seen = m_peak.load();
        while (now > seen && !m_peak.compare_exchange_weak(seen, now)) {
        }
        return c10::DataPtr(data, record, &CountingAllocator::release, device);
    }

    c10::Allocator *m_inner;
    std::atomic<int64_t> m_live{0};
    std::atomic<int64_t> m_peak{0};
};

CountingAllocator &counting()
{
    static CountingAllocator allocator(c10::GetDefaultCPUAllocator());
    return allocator;
}

struct Measured {
    int64_t predicted = 0;
    int64_t measured = 0;
    // Per phase, predicted and measured (the highest of the measured steps): forward, backward, optimizer step.
    int64_t predictedPhase[3] = {0, 0, 0};
    int64_t measuredPhase[3] = {0, 0, 0};
};

// What is trained, as `tunebench train` runs it: full fine-tuning, or the demo's LoRA (`train --demo`:
// r 16, alpha 32 on q/k/v/o_proj, LoraSettings' dropout 0.05), each with or without gradient checkpointing.
struct Run {
    TrainMode mode = TrainMode::Full;
    bool checkpointing = false;
};

engine::model::LoraSettings demoLora()
{
    engine::model::LoraSettings lora;
    lora.r = 16;
    lora.alpha = 32;
    lora.targets = {"q_proj", "k_proj", "v_proj", "o_proj"};
    return lora;
}

// The peak of what one device allocates: the counting allocator on the CPU, the caching allocator's
// statistics (max_memory_allocated) on cuda:0.
struct PeakProbe {
    bool gpu = false;
    void reset() const
    {
        if (gpu) {
            torch::cuda::synchronize();
            engine::resetCudaPeakMemory(0);
        } else {
            counting().resetPeak();
        }
    }
    int64_t peak() const
    {
        if (!gpu)
            return counting().peak();
        torch::cuda::synchronize();
        return engine::cudaMemoryStats(0).peakAllocatedBytes;
    }
};

// Three training steps as the trainer runs them (engine/train/trainer.cpp): gradients set to None, forward,
// summed cross-entropy over the token count, backward, gradient clipping, the engine's AdamW over the
// trainable parameters (weight decay groups as makeOptimizer). The peak of the second and third steps
// against the planner's peak for the same settings on that device (cpu, or GPU 0 without the runtime
// overhead, which the caching allocator does not count).
Measured measure(const LlamaConfig &config, int64_t batch, int64_t seq, Run run, bool gpu = false)
{
    const engine::model::LoraSettings lora = demoLora();
    const PeakProbe probe{gpu};
    const torch::Device device = gpu ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    if (!gpu)
        c10::SetCPUAllocator(&counting(), /*priority=*/100);
    torch::manual_seed(0);
    engine::model::LlamaForCausalLM model(config);
    model->initializeWeights(0);
    model->to(device);
    if (run.mode == TrainMode::Lora)
        engine::model::attachLora(model, lora);
    model->setGradientCheckpointing(run.checkpointing);
    model->train();
    std::vector<std::pair<std::string, torch::Tensor>> named;
    std::vector<torch::Tensor> trainable;
    for (const auto &item : model->named_parameters()) {
        named.emplace_back(item.key(), item.value());
        if (item.value().requires_grad())
            trainable.push_back(item.value());
    }
    engine::train::Optimizer optimizer(engine::train::OptimizerKind::AdamW,
                                       engine::train::weightDecayGroups(named, 0.1));
    const torch::Tensor ids = torch::randint(config.vocabSize, {batch, seq + 1}, torch::kLong);
    const torch::Tensor inputs = ids.narrow(1, 0, seq).contiguous().to(device);
    const torch::Tensor labels = ids.narrow(1, 1, seq).contiguous().to(device);
    Measured m;
    for (int step = 0; step < 3; ++step) {
        optimizer.zeroGrad(); // set_to_none
        int64_t phase[3];
        probe.reset();
        {
            const torch::Tensor logits = model->forward(inputs);
            const torch::Tensor loss = torch::nn::functional::cross_entropy(
                                           logits.reshape({-1, logits.size(-1)}), labels.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                / static_cast<double>(batch * seq);
            phase[0] = probe.peak();
            probe.reset();
            loss.backward();
            phase[1] = probe.peak();
        }
        probe.reset();
        engine::train::clipGradients(trainable, 1.0);
        optimizer.step(1e-3);
        phase[2] = probe.peak();
        if (step == 0) // the first step allocates the optimizer state; steady state from the second
            continue;
        for (int k = 0; k < 3; ++k) {
            m.measuredPhase[k] = std::max(m.measuredPhase[k], phase[k]);
            m.measured = std::max(m.measured, phase[k]);
        }
    }
    if (!gpu)
        c10::SetCPUAllocator(counting().inner(), 100);

    nlohmann::json json = config.toJson();
    json["torch_dtype"] = "float32";
    const PlanModel planModel = planModelFromConfig(json, "config");
    PlanSettings settings;
    settings.dtype = "float32"; // the trainer keeps float32 weights
    settings.train = run.mode;
    settings.loraRank = lora.r;
    settings.loraTargets = lora.targets;
    settings.loraDropout = lora.dropout;
    settings.checkpointing = run.checkpointing;
    settings.batchSize = batch;
    settings.sequenceLength = seq;
    std::vector<DeviceSpec> devices = parseMaxMemory(gpu ? "0=1TB" : "cpu=1TB");
    for (DeviceSpec &spec : devices)
        spec.overheadBytes = 0;
    const Plan plan = Planner(planModel).plan(devices, settings);
    const DeviceUsage &cpu = *plan.usageOf(gpu ? "0" : "cpu");
    m.predicted = cpu.peakBytes;
    m.predictedPhase[0] = cpu.forwardBytes;
    m.predictedPhase[1] = cpu.backwardBytes;
    m.predictedPhase[2] = cpu.optimizerBytes;
    return m;
}

void report(const std::string &what, const Measured &m)
{
    const double ratio = static_cast<double>(m.predicted) / static_cast<double>(m.measured);
    std::printf("[memory] %s: predicted %.2f MiB, measured %.2f MiB, ratio %.3f\n", what.c_str(),
                m.predicted / 1048576.0, m.measured / 1048576.0, ratio);
    static const char *phases[] = {"forward", "backward", "optimizer step"};
    for (int k = 0; k < 3; ++k)
        std::printf("[memory]     %-14s predicted %8.2f MiB, measured %8.2f MiB\n", phases[k],
                    m.predictedPhase[k] / 1048576.0, m.measuredPhase[k] / 1048576.0);
    ::testing::Test::RecordProperty(what + "_ratio", std::to_string(ratio));
    EXPECT_NEAR(ratio, 1.0, 0.15) << what;
}

LlamaConfig largerConfig()
{
    LlamaConfig config = engine::model::demoConfig();
    config.hiddenSize = 256;
    config.intermediateSize = 688;
    config.numHiddenLayers = 4;
    config.numAttentionHeads = 8;
    config.numKeyValueHeads = 2;
    config.vocabSize = 8000;
    config.tieWordEmbeddings = false;
    return config;
}

// Qwen3: per-head q/k norms, and heads * head_dim (512) wider than hidden_size (256).
LlamaConfig qwen3Config()
{
    LlamaConfig config = largerConfig();
    config.modelType = "qwen3";
    config.headDim = 64;
    return config;
}

// The three configurations for one kind of run.
void measureBoth(const std::string &kind, Run run)
{
    at::set_num_threads(1);
    report("demo b8 s128, " + kind, measure(engine::model::demoConfig(), 8, 128, run));
    report("256h x 4 layers GQA b4 s256, " + kind, measure(largerConfig(), 4, 256, run));
    report("qwen3 256h x 4 layers head_dim 64 b4 s256, " + kind, measure(qwen3Config(), 4, 256, run));
}

} // namespace

TEST(MemoryMeasure, FullFineTuning)
{
    measureBoth("full", {TrainMode::Full, false});
}

TEST(MemoryMeasure, FullFineTuningCheckpointed)
{
    measureBoth("full + checkpointing", {TrainMode::Full, true});
}

TEST(MemoryMeasure, Lora)
{
    measureBoth("LoRA", {TrainMode::Lora, false});
}

TEST(MemoryMeasure, LoraCheckpointed)
{
    measureBoth("LoRA + checkpointing", {TrainMode::Lora, true});
}

// On a GPU: the same four kinds of run on cuda:0 against max_memory_allocated. Larger batches than on the
// CPU, so that the activations outweigh what the plan leaves out (cuBLAS's workspace, which the caching
// allocator also serves). Skipped without a GPU; scripts/test-cuda.sh runs it.
TEST(MemoryMeasure, EveryKindOfRunOnTheGpu_CUDA)
{
    if (!torch::cuda::is_available())
        GTEST_SKIP() << "no CUDA GPU (CPU-only libtorch or no device visible)";
    const std::vector<std::pair<std::string, ::Run>> kinds = {{"full", ::Run{TrainMode::Full, false}},
                                                            {"full + checkpointing", ::Run{TrainMode::Full, true}},
                                                            {"LoRA", ::Run{TrainMode::Lora, false}},
                                                            {"LoRA + checkpointing", ::Run{TrainMode::Lora, true}}};
    for (const auto &kind : kinds)
        report("cuda:0 256h x 4 layers GQA b16 s256, " + kind.first, measure(largerConfig(), 16, 256, kind.second, true));
}
