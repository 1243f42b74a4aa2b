// LoRA on the LLaMA model (engine/model/lora.h): PEFT's target semantics, gradients against finite
// differences, merge equals base + adapter, the PEFT file layout, and gradient checkpointing.

#include "engine/core/autocast.h"
#include "engine/core/error.h"
#include "engine/io/safetensorsfile.h"
#include "engine/model/lora.h"
#include "engine/model/pretrained.h"
#include "support/expecterror.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

using engine::ErrorKind;
using engine::model::LlamaForCausalLM;
using engine::model::LoraSettings;
using testing_support::expectError;
using testing_support::maxAbsDiff;
using testing_support::randomLlama;
using testing_support::someIds;
using testing_support::tinyLlama;
using testing_support::TempDir;

namespace {

LoraSettings settings(std::vector<std::string> targets = {"q_proj", "v_proj"}, int64_t r = 4, double alpha = 8)
{
    LoraSettings s;
    s.r = r;
    s.alpha = alpha;
    s.dropout = 0;
    s.targets = std::move(targets);
    return s;
}

// B is zero after attaching; give it values so that the branch changes the output.
void randomizeB(LlamaForCausalLM &model, uint64_t seed = 11)
{
    torch::NoGradGuard noGrad;
    torch::manual_seed(seed);
    for (auto &site : model->linearSites()) {
        if (site.lora->attached())
            site.lora->b->weight.copy_(torch::randn_like(site.lora->b->weight) * 0.3);
    }
}

std::map<std::string, torch::Tensor> byName(LlamaForCausalLM &model)
{
    std::map<std::string, torch::Tensor> map;
    for (auto &item : model->named_parameters())
        map[item.key()] = item.value();
    return map;
}

} // namespace

TEST(Lora, AttachingFreezesTheBaseNamesParametersAsPeftAndChangesNothingUntilBMoves)
{
    LlamaForCausalLM model = randomLlama(tinyLlama());
    const torch::Tensor ids = someIds(2, 7);
    model->eval();
    const torch::Tensor before = model->forward(ids);
    const auto attached = engine::model::attachLora(model, settings());
    ASSERT_EQ(attached.adapted.size(), 4u); // q and v of two layers
    EXPECT_EQ(attached.adapted[0], "model.layers.0.self_attn.q_proj");
    EXPECT_EQ(attached.trainableParameters, 2 * 4 * ((32 + 32) + (32 + 16)));
    EXPECT_TRUE(torch::equal(model->forward(ids), before)) << "B = 0: the adapter adds exactly zero";

    int64_t trainable = 0;
    for (auto &item : model->named_parameters()) {
        const bool isLora = item.key().find(".lora_") != std::string::npos;
        EXPECT_EQ(item.value().requires_grad(), isLora) << item.key();
        trainable += item.value().requires_grad() ? item.value().numel() : 0;
    }
    EXPECT_EQ(trainable, attached.trainableParameters);
    const auto params = byName(model);
    ASSERT_TRUE(params.count("model.layers.1.self_attn.v_proj.lora_A.weight"));
    EXPECT_EQ(params.at("model.layers.1.self_attn.v_proj.lora_A.weight").sizes(), (std::vector<int64_t>{4, 32}));
    EXPECT_EQ(params.at("model.layers.1.self_attn.v_proj.lora_B.weight").sizes(), (std::vector<int64_t>{16, 4}));
    // PEFT's init: A ~ kaiming_uniform(a = sqrt 5): |A| <= 1 / sqrt(in).
    const torch::Tensor a = params.at("model.layers.0.self_attn.q_proj.lora_A.weight");
    EXPECT_LE(a.abs().max().item<double>(), 1.0 / std::sqrt(32.0) + 1e-6);
    EXPECT_GT(a.abs().max().item<double>(), 0.5 / std::sqrt(32.0));

    randomizeB(model);
    EXPECT_GT(maxAbsDiff(model->forward(ids), before), 1e-3);
}

TEST(Lora, ForwardIsBasePlusScaleTimesBAx)
{
    // One projection (rsLoRA scale) checked against W x + s B (A x) in float64 through its MLP.
    LlamaForCausalLM model = randomLlama(tinyLlama());
    LoraSettings s = settings({"model.layers.0.mlp.down_proj"}, 3, 5);
    s.rslora = true;
    engine::model::attachLora(model, s);
    randomizeB(model);
    model->to(torch::kFloat64); // adapters too: x is cast to the adapter's dtype, as PEFT does
    const auto site = model->linearSites()[6];
    ASSERT_EQ(site.name, "model.layers.0.mlp.down_proj");
    const double scale = 5.0 / std::sqrt(3.0);
    EXPECT_DOUBLE_EQ(site.lora->scale, scale);
    const torch::Tensor a = site.lora->a->weight.to(torch::kFloat64);
    const torch::Tensor b = site.lora->b->weight.to(torch::kFloat64);

    engine::model::LlamaMlp mlp = model->model->decoderLayers()[0]->mlp;
    model->eval();
    torch::manual_seed(4);
    const torch::Tensor h = torch::randn({2, 3, 32}, torch::kFloat64);
    const torch::Tensor inner = torch::silu(mlp->gate_proj->forward(h)) * mlp->up_proj->forward(h);
    const torch::Tensor base = torch::matmul(inner, site.linear->weight.t());
    const torch::Tensor reference = base + scale * torch::matmul(torch::matmul(inner, a.t()), b.t());
    EXPECT_LT(maxAbsDiff(mlp->forward(h), reference), 1e-12);
    EXPECT_GT(maxAbsDiff(reference, base), 1e-3) << "the branch is not zero";
}

TEST(Lora, GradientsMatchFiniteDifferences)
{
    LlamaForCausalLM model = randomLlama(tinyLlama());
    engine::model::attachLora(model, settings({"q_proj", "down_proj"}, 2, 4));
    randomizeB(model);
    model->to(torch::kFloat64); // adapters too, so that central differences are exact to ~1e-9
    model->train();
    const torch::Tensor ids = someIds(2, 6);
    torch::manual_seed(9);
    const torch::Tensor probe = torch::randn({2, 6, 64}, torch::kFloat64);
    // forward() returns float32 logits; the loss stays in float64 through the hidden states.
    auto lossDouble = [&] { return (torch::matmul(model->hiddenStates(ids), model->outputWeight().t()) * probe).sum(); };
    model->zero_grad();
    lossDouble().backward();
    int checked = 0;
    for (auto &item : model->named_parameters()) {
        if (!item.value().requires_grad())
            continue;
        torch::Tensor p = item.value();
        const torch::Tensor grad = p.grad().clone();
        const torch::Tensor flat = p.view({-1});
        for (int64_t k : {int64_t(0), p.numel() / 2, p.numel() - 1}) {
            const double h = 1e-6;
            double plus = 0, minus = 0;
            {
                torch::NoGradGuard noGrad;
                const double original = flat[k].item<double>();
                flat[k].fill_(original + h);
                plus = lossDouble().item<double>();
                flat[k].fill_(original - h);
                minus = lossDouble().item<double>();
                flat[k].fill_(original);
            }
            const double numeric = (plus - minus) / (2 * h);
            const double analytic = grad.view({-1})[k].item<double>();
            EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << item.key() << "[" << k << "]";
            ++checked;
        }
    }
    EXPECT_EQ(checked, 3 * 2 * 2 * 2); // A and B of q_proj and down_proj in two layers, three elements each
}

TEST(Lora, MergedWeightsScoreAsBasePlusAdapterAndTheBranchesAreGone)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("qwen2", true, 2));
    engine::model::attachLora(model, settings({"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}));
    randomizeB(model);
    model->eval();
    const torch::Tensor ids = someIds(2, 9);
    const torch::Tensor unmerged = model->forward(ids);
    EXPECT_EQ(engine::model::mergeLora(model), 14);
    EXPECT_FALSE(engine::model::hasLora(model));
    for (auto &item : model->named_parameters())
        EXPECT_EQ(item.key().find("lora_"), std::string::npos) << item.key();
    EXPECT_LT(maxAbsDiff(model->forward(ids), unmerged), 2e-5);
}

TEST(Lora, SavedAdapterHasPeftLayoutAndReloadsToTheSameScores)
{
    TempDir dir("lora-save");
    LlamaForCausalLM base = randomLlama(tinyLlama(), 3);
    LlamaForCausalLM model = randomLlama(tinyLlama(), 3);
    LoraSettings s = settings({"q_proj", "v_proj"}, 4, 16);
    s.modulesToSave = {"lm_head"};
    const auto attached = engine::model::attachLora(model, s);
    EXPECT_EQ(attached.savedWhole, (std::vector<std::string>{"lm_head"}));
    EXPECT_TRUE(model->lm_head->weight.requires_grad());
    randomizeB(model);
    {
        torch::NoGradGuard noGrad;
        model->lm_head->weight.add_(0.1);
    }
    engine::model::savePeftAdapter(model, s, "tiny-base", dir / "adapter");

    const auto config = nlohmann::json::parse(std::ifstream(dir / "adapter" / "adapter_config.json"));
    EXPECT_EQ(config["peft_type"], "LORA");
    EXPECT_EQ(config["task_type"], "CAUSAL_LM");
    EXPECT_EQ(config["base_model_name_or_path"], "tiny-base");
    EXPECT_EQ(config["r"], 4);
    EXPECT_EQ(config["lora_alpha"], 16.0);
    EXPECT_EQ(config["target_modules"], nlohmann::json({"q_proj", "v_proj"}));
    EXPECT_EQ(config["modules_to_save"], nlohmann::json({"lm_head"}));
    const auto file = engine::io::SafetensorsFile::open(dir / "adapter" / "adapter_model.safetensors");
    std::set<std::string> names;
    for (const auto &info : file.header().tensors)
        names.insert(info.name);
    EXPECT_TRUE(names.count("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));
    EXPECT_TRUE(names.count("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight"));
    EXPECT_TRUE(names.count("base_model.model.lm_head.weight"));
    EXPECT_EQ(names.size(), 4u * 2 + 1);

    model->eval();
    base->eval();
    const torch::Tensor ids = someIds(1, 8);
    EXPECT_EQ(engine::model::applyPeftLoraAdapter(base, dir / "adapter"), 4);
    EXPECT_LT(maxAbsDiff(base->forward(ids), model->forward(ids)), 2e-5);

    // Loading the tensors back into a freshly attached model reproduces the adapter exactly.
    LlamaForCausalLM again = randomLlama(tinyLlama(), 3);
    engine::model::attachLora(again, s);
    std::map<std::string, torch::Tensor> tensors;
    engine::io::TensorLoadOptions copy;
    copy.copy = true;
    for (const auto &info : file.header().tensors)
        tensors[info.name] = file.tensor(info.name, copy);
    engine::model::loadPeftAdapterTensors(again, s, tensors, "adapter");
    again->eval();
    EXPECT_TRUE(torch::equal(again->forward(ids), model->forward(ids)));
    tensors.erase("base_model.model.lm_head.weight");
    expectError([&] { engine::model::loadPeftAdapterTensors(again, s, tensors, "adapter"); }, ErrorKind::InvalidInput,
                "base_model.model.lm_head.weight' is missing");
    expectError([&] { engine::model::savePretrained(model, dir / "merged"); }, ErrorKind::Internal, "merge them first");
}

TEST(Lora, TargetsFollowPeftMatchingAndBadTargetsNameWhatExists)
{
    LlamaForCausalLM model = randomLlama(tinyLlama());
    LoraSettings s = settings();
    s.setTargetsFromText("self_attn.q_proj, mlp.up_proj");
    EXPECT_EQ(s.targets, (std::vector<std::string>{"self_attn.q_proj", "mlp.up_proj"}));
    EXPECT_EQ(engine::model::resolveLoraTargets(model, s).size(), 4u);
    s.setTargetsFromText(R"(model\.layers\.1\..*_proj)");
    EXPECT_TRUE(s.targets.empty());
    EXPECT_EQ(engine::model::resolveLoraTargets(model, s).size(), 7u);
    EXPECT_TRUE(engine::model::peftTargetMatches("model.layers.1.mlp.up_proj", s));
    EXPECT_FALSE(engine::model::peftTargetMatches("model.layers.0.mlp.up_proj", s)) << "fullmatch, not search";
    // "proj" is no suffix part of "q_proj": PEFT matches whole dotted parts.
    expectError([&] { engine::model::resolveLoraTargets(model, settings({"proj"})); }, ErrorKind::InvalidInput,
                "match no module of the model; its Linear modules are q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, lm_head");
    expectError([&] { engine::model::resolveLoraTargets(model, settings({"embed_tokens"})); }, ErrorKind::InvalidInput,
                "not Linear layers: model.embed_tokens");
    EXPECT_EQ(engine::model::resolveLoraTargets(model, settings({"lm_head"})), (std::vector<std::string>{"lm_head"}));
    LoraSettings bad = settings();
    bad.setTargetsFromText("(q_proj");
    expectError([&] { engine::model::resolveLoraTargets(model, bad); }, ErrorKind::InvalidInput, "does not compile");
    bad = settings();
    bad.r = 0;
    expectError([&] { engine::model::attachLora(model, bad); }, ErrorKind::InvalidInput, "rank r = 0");
    bad = settings();
    bad.dropout = 1;
    expectError([&] { engine::model::attachLora(model, bad); }, ErrorKind::InvalidInput, "dropout");
    // Nothing was attached by the refused calls.
    EXPECT_FALSE(engine::model::hasLora(model));
}

TEST(Lora, DropoutActsInTrainingOnly)
{
    LlamaForCausalLM model = randomLlama(tinyLlama());
    LoraSettings s = settings();
    s.dropout = 0.5;
    engine::model::attachLora(model, s);
    randomizeB(model);
    const torch::Tensor ids = someIds(2, 6);
    model->eval();
    EXPECT_TRUE(torch::equal(model->forward(ids), model->forward(ids)));
    model->train();
    torch::manual_seed(1);
    const torch::Tensor a = model->forward(ids);
    torch::manual_seed(2);
    const torch::Tensor b = model->forward(ids);
    EXPECT_GT(maxAbsDiff(a, b), 1e-4);
}

TEST(GradientCheckpointing, GivesTheSameLossAndGradientsWithLoraDropoutAndFullTraining)
{
    double fp32Loss = 0;
    for (const auto &[lora, bf16] : {std::pair{false, false}, std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
        auto run = [&, lora = lora, bf16 = bf16](bool checkpointing) {
            LlamaForCausalLM model = randomLlama(tinyLlama(), 5);
            if (lora) {
                LoraSettings s = settings({"q_proj", "v_proj", "down_proj"});
                s.dropout = 0.3;
                torch::manual_seed(3);
                engine::model::attachLora(model, s);
                randomizeB(model);
            }
            model->setGradientCheckpointing(checkpointing);
            model->train();
            torch::manual_seed(17); // the dropout masks
            const torch::Tensor ids = someIds(2, 8);
            torch::Tensor logits;
            if (bf16) { // the recomputation in backward must re-enter the forward's autocast
                const engine::AutocastScope amp(c10::DeviceType::CPU, torch::kBFloat16);
                logits = model->forward(ids).to(torch::kFloat32);
            } else {
                logits = model->forward(ids);
            }
            const torch::Tensor loss = torch::nn::functional::cross_entropy(
                logits.reshape({-1, 64}).narrow(0, 0, 14), ids.reshape({-1}).narrow(0, 1, 14));
            loss.backward();
            std::map<std::string, torch::Tensor> grads;
            for (auto &item : model->named_parameters()) {
                if (item.value().requires_grad())
                    grads[item.key()] = item.value().grad().clone();
            }
            return std::make_pair(loss.item<double>(), grads);
        };
        const auto [plainLoss, plain] = run(false);
        const auto [checkpointedLoss, checkpointed] = run(true);
        EXPECT_EQ(plainLoss, checkpointedLoss) << "lora " << lora << " bf16 " << bf16;
        if (!lora && !bf16)
            fp32Loss = plainLoss;
        if (!lora && bf16) {
            EXPECT_NE(plainLoss, fp32Loss) << "autocast changed nothing: the bf16 case would test nothing";
        }
        ASSERT_EQ(plain.size(), checkpointed.size());
        for (const auto &[name, grad] : plain) {
            ASSERT_TRUE(checkpointed.at(name).defined()) << name << " got no gradient under checkpointing";
            EXPECT_LT(maxAbsDiff(grad, checkpointed.at(name)), 1e-6) << name << " lora " << lora << " bf16 " << bf16;
            EXPECT_GT(grad.abs().max().item<double>(), 0) << name;
        }
    }
}
