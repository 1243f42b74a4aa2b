// Predicted against measured training peak on CPU: a counting allocator (wrapping libtorch's default
// CPU allocator, installed with c10::SetCPUAllocator before the model exists) sees every CPU
// allocation of a full fine-tuning step of the engine's LLaMA model (fp32, AdamW, gradients set to
// None before the forward); the planner's cpu peak for the same settings must lie within 15 %.

#include "engine/core/torchversion.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"
#include "engine/plan/planner.h"

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
};

Measured measure(const LlamaConfig &config, int64_t batch, int64_t seq)
{
    c10::SetCPUAllocator(&counting(), /*priority=*/100);
    torch::manual_seed(0);
    engine::model::LlamaForCausalLM model(config);
    model->initializeWeights(0);
    std::vector<torch::Tensor> params = model->parameters();
    torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(1e-3));
    const torch::Tensor ids = torch::randint(config.vocabSize, {batch, seq + 1}, torch::kLong);
    const torch::Tensor inputs = ids.narrow(1, 0, seq).contiguous();
    const torch::Tensor labels = ids.narrow(1, 1, seq).contiguous();
    int64_t peak = 0;
    for (int step = 0; step < 3; ++step) {
        for (torch::Tensor &p : params)
            p.mutable_grad() = torch::Tensor(); // set_to_none
        counting().resetPeak();
        const torch::Tensor logits = model->forward(inputs);
        const torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}),
                                                                        labels.reshape({-1}));
        loss.backward();
        optimizer.step();
        if (step > 0) // the first step allocates the optimizer state; steady state from the second
            peak = std::max(peak, counting().peak());
    }
    c10::SetCPUAllocator(counting().inner(), 100);

    nlohmann::json json = config.toJson();
    json["torch_dtype"] = "float32";
    const PlanModel planModel = planModelFromConfig(json, "config");
    PlanSettings settings;
    settings.dtype = "float32";
    settings.train = TrainMode::Full;
    settings.batchSize = batch;
    settings.sequenceLength = seq;
    const Plan plan = Planner(planModel).plan(parseMaxMemory("cpu=1TB"), settings);
    return {plan.usageOf("cpu")->peakBytes, peak};
}

void report(const char *what, const Measured &m)
{
    const double ratio = static_cast<double>(m.predicted) / static_cast<double>(m.measured);
    std::printf("[memory] %s: predicted %.2f MiB, measured %.2f MiB, ratio %.3f\n", what, m.predicted / 1048576.0,
                m.measured / 1048576.0, ratio);
    ::testing::Test::RecordProperty(std::string(what) + "_ratio", std::to_string(ratio));
    EXPECT_NEAR(ratio, 1.0, 0.15) << what;
}

} // namespace

TEST(MemoryMeasure, DemoModelFullFineTuning)
{
    at::set_num_threads(1);
    report("demo b8 s128", measure(engine::model::demoConfig(), 8, 128));
}

TEST(MemoryMeasure, LargerConfigFullFineTuning)
{
    at::set_num_threads(1);
    LlamaConfig config = engine::model::demoConfig();
    config.hiddenSize = 256;
    config.intermediateSize = 688;
    config.numHiddenLayers = 4;
    config.numAttentionHeads = 8;
    config.numKeyValueHeads = 2;
    config.vocabSize = 8000;
    config.tieWordEmbeddings = false;
    report("256h x 4 layers GQA b4 s256", measure(config, 4, 256));
}
