// Planning speed: a 405B-class model (Llama-3.1-405B's shapes, 126 layers) planned weights-only and
// balanced (target < 4 ms; Accelerate takes ~42 ms plus ~26 ms to build its meta model), and a
// drag-and-revalidate on an 80-layer model (Llama-3-70B's shapes; target < 1 ms), which the Plan page
// runs on every drag, and the advisor on the 126-layer model (target < 50 ms). Last, a model tunebench has
// no architecture for, planned from the headers of a sharded checkpoint of 1,000 tensors (8 shards written
// into a temp folder, data left as holes): the header reads, the derived tree and a balanced plan, as
// `tunebench plan --model` runs them. Prints medians of many runs.
//   build/bench/plan_bench [rounds]

#include "engine/io/safetensorsheader.h"
#include "engine/plan/advisor.h"
#include "engine/plan/planner.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
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

struct BenchTensor {
    std::string name;
    std::vector<int64_t> shape;
};

// A safetensors file holding only the header of `tensors` (bf16); the buffer is a hole, since only the
// header is read.
void writeHeaderOnly(const std::filesystem::path &path, const std::vector<BenchTensor> &tensors)
{
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    uint64_t offset = 0;
    for (const BenchTensor &t : tensors) {
        uint64_t bytes = 2;
        for (const int64_t d : t.shape)
            bytes *= static_cast<uint64_t>(d);
        header[t.name] = {{"dtype", "BF16"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string text = header.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    {
        std::ofstream out(path, std::ios::binary);
        const uint64_t size = text.size();
        out.write(reinterpret_cast<const char *>(&size), 8);
        out << text;
    }
    std::filesystem::resize_file(path, 8 + text.size() + offset);
}

// 111 decoder layers of 9 tensors plus the embedding = 1,000 tensors (lm_head tied, so absent), in 8 shards
// and an index, under an unknown model_type. Returns the folder.
std::filesystem::path writeShardedUnknownModel()
{
    const auto folder = std::filesystem::temp_directory_path() / ("plan_bench_" + std::to_string(getpid()));
    std::filesystem::create_directories(folder);
    const int64_t h = 256, kv = 64, f = 704, vocab = 32000;
    std::vector<BenchTensor> tensors = {{"model.embed_tokens.weight", {vocab, h}}};
    for (int i = 0; i < 111; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        for (const BenchTensor &t : std::vector<BenchTensor>{
                 {p + "self_attn.q_proj.weight", {h, h}},   {p + "self_attn.k_proj.weight", {kv, h}},
                 {p + "self_attn.v_proj.weight", {kv, h}},  {p + "self_attn.o_proj.weight", {h, h}},
                 {p + "mlp.gate_proj.weight", {f, h}},      {p + "mlp.up_proj.weight", {f, h}},
                 {p + "mlp.down_proj.weight", {h, f}},      {p + "input_layernorm.weight", {h}},
                 {p + "post_attention_layernorm.weight", {h}}})
            tensors.push_back(t);
    }
    std::sort(tensors.begin(), tensors.end(), [](const auto &a, const auto &b) { return a.name < b.name; });
    nlohmann::ordered_json weightMap = nlohmann::ordered_json::object();
    const size_t shards = 8, per = tensors.size() / shards;
    for (size_t s = 0; s < shards; ++s) {
        char name[64];
        std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards);
        const std::vector<BenchTensor> part(tensors.begin() + s * per, tensors.begin() + (s + 1) * per);
        for (const BenchTensor &t : part)
            weightMap[t.name] = name;
        writeHeaderOnly(folder / name, part);
    }
    std::ofstream(folder / "model.safetensors.index.json") << nlohmann::json{{"metadata", nlohmann::json::object()}, {"weight_map", weightMap}}.dump();
    std::ofstream(folder / "config.json") << nlohmann::json{{"model_type", "mystery"}, {"hidden_size", h},
                                                            {"num_attention_heads", 4}, {"num_key_value_heads", 1},
                                                            {"intermediate_size", f}, {"vocab_size", vocab}}.dump();
    return folder;
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

    // Headers only: 1,000 tensors in 8 shards, an architecture tunebench does not implement.
    const std::filesystem::path folder = writeShardedUnknownModel();
    const auto two = parseMaxMemory("0=24GB,1=24GB,cpu=64GB");
    size_t tensors = 0;
    const double readMs = medianMs(rounds, [&] {
        for (const auto &entry : std::filesystem::directory_iterator(folder)) {
            if (entry.path().extension() == ".safetensors")
                sink += engine::io::readSafetensorsHeader(entry.path()).tensors.size();
        }
    });
    const double headersMs = medianMs(rounds, [&] { sink += planModelFromPath(folder).tree.root.children.size(); });
    const double headersPlanMs = medianMs(rounds, [&] {
        const Planner p(planModelFromPath(folder));
        tensors = p.model().tree.namedParameters(false).size();
        sink += p.plan(two, balanced).deviceMap.size();
    });
    std::filesystem::remove_all(folder);
    std::printf("unknown architecture, %zu tensors in 8 shards: reading the headers %.3f ms; + tree (planModelFromPath) "
                "%.3f ms; + balanced plan %.3f ms\n",
                tensors, readMs, headersMs, headersPlanMs);
    return sink == 0 ? 1 : 0;
}
