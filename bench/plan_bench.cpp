// Planning speed: a 405B-class model (Llama-3.1-405B's shapes, 126 layers) planned weights-only and
// balanced (target < 4 ms; Accelerate takes ~42 ms plus ~26 ms to build its meta model), and a
// drag-and-revalidate on an 80-layer model (Llama-3-70B's shapes; target < 1 ms), which the Plan page
// runs on every drag, and the advisor on the 126-layer model (target < 50 ms). Prints medians of many runs.
//   build/bench/plan_bench [rounds]

#include "engine/plan/advisor.h"
#include "engine/plan/planner.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace engine::plan;

namespace {

nlohmann::json llamaConfig(int layers, int hidden, int intermediate, int heads, int kvHeads)
{
    return {{"model_type", "llama"}, {"hidden_size", hidden}, {"intermediate_size", intermediate},
            {"num_attention_heads", heads}, {"num_key_value_heads", kvHeads}, {"num_hidden_layers", layers},
            {"vocab_size", 128256}, {"torch_dtype", "bfloat16"}, {"max_position_embeddings", 131072},
            {"rope_theta", 500000.0}, {"tie_word_embeddings", false}};
}

template <typename F> double medianMs(int rounds, F &&f)
{
    std::vector<double> times;
    for (int i = 0; i < rounds; ++i) {
        const auto start = std::chrono::steady_clock::now();
        f();
        times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
    size_t sink = 0;

    // 405B: tree from config.json (the meta-model equivalent), then the plan.
    const nlohmann::json big = llamaConfig(126, 16384, 53248, 128, 8);
    const double buildMs = medianMs(std::max(1, rounds / 10), [&] {
        const Planner p(planModelFromConfig(big, "405b.json"));
        sink += p.flatTree().nodes.size();
    });
    const Planner planner405(planModelFromConfig(big, "405b.json"));
    const auto gpus = parseMaxMemory("0=80GB,1=80GB,2=80GB,3=80GB,4=80GB,5=80GB,6=80GB,7=80GB,cpu=512GB");
    PlanSettings balanced;
    balanced.strategy = Strategy::Balanced;
    const double planMs = medianMs(rounds, [&] { sink += planner405.plan(gpus, balanced).deviceMap.size(); });

    // 80 layers: LoRA training plan, then one drag (a layer to the other GPU) and back.
    const Planner planner80(planModelFromConfig(llamaConfig(80, 8192, 28672, 64, 8), "70b.json"));
    PlanSettings lora;
    lora.train = TrainMode::Lora;
    lora.loraRank = 16;
    const Plan plan80 = planner80.plan(parseMaxMemory("0=80GB,1=80GB,cpu=256GB"), lora);
    const std::string from = plan80.deviceOf("model.layers.40");
    const std::string to = from == "0" ? "1" : "0";
    const double moveMs = medianMs(rounds, [&] { sink += planner80.move(plan80, "model.layers.40", to).lint.size(); });
    const double plan80Ms = medianMs(rounds, [&] { sink += planner80.plan(parseMaxMemory("0=80GB,1=80GB,cpu=256GB"), lora).deviceMap.size(); });

    // A full advice on the 126-layer model: full fine-tuning that does not fit on eight 80 GB GPUs
    // (target < 50 ms), and the largest batch of a LoRA plan that fits.
    PlanSettings full;
    full.train = TrainMode::Full;
    full.dtype = "bfloat16";
    const double adviseMs = medianMs(std::max(1, rounds / 20), [&] { sink += advise(planner405, gpus, full).size(); });
    PlanSettings lora405;
    lora405.train = TrainMode::Lora;
    lora405.dtype = "bfloat16";
    lora405.batchSize = 1;
    const double adviseFitMs = medianMs(std::max(1, rounds / 20), [&] { sink += advise(planner405, gpus, lora405).size(); });
    const double trainPlanMs = medianMs(std::max(1, rounds / 10), [&] { sink += planner405.plan(gpus, full).deviceMap.size(); });
    std::printf("405B-class: full fine-tuning plan %.3f ms; advice when it does not fit %.3f ms, largest batch when it "
                "fits %.3f ms (target < 50 ms: %.1fx under)\n",
                trainPlanMs, adviseMs, adviseFitMs, 50.0 / std::max(adviseMs, adviseFitMs));
    std::printf("405B-class (126 layers, %zu nodes): tree %.3f ms, weights-only balanced plan %.3f ms (target < 4 ms: %.1fx under)\n",
                planner405.flatTree().nodes.size(), buildMs, planMs, 4.0 / planMs);
    std::printf("80 layers (%zu nodes): LoRA training plan %.3f ms; drag-and-revalidate %.3f ms (target < 1 ms: %.1fx under)\n",
                planner80.flatTree().nodes.size(), plan80Ms, moveMs, 1.0 / moveMs);
    return sink == 0 ? 1 : 0;
}
