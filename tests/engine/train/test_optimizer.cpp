// The trainer's optimizers against torch's own, clipping across parameter groups against
// torch.nn.utils.clip_grad_norm_ over all gradients, frozen weights under LoRA training, and the batch
// sampler's seek.

#include "engine/model/lora.h"
#include "engine/train/batchsampler.h"
#include "engine/train/gradientclip.h"
#include "engine/train/optimizer.h"
#include "support/expecterror.h"
#include "support/tinymodels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <map>

using engine::train::Optimizer;
using engine::train::OptimizerKind;
using engine::train::ParameterGroup;
using testing_support::maxAbsDiff;

namespace {

struct Twin {
    std::vector<torch::Tensor> ours;
    std::vector<torch::Tensor> theirs;
};

// Two parameter groups (a matrix with decay, a vector without), identical copies for torch's optimizer.
Twin makeTwin()
{
    torch::manual_seed(3);
    Twin t;
    for (auto shape : {std::vector<int64_t>{5, 4}, std::vector<int64_t>{7}}) {
        torch::Tensor p = torch::randn(shape).requires_grad_(true);
        t.ours.push_back(p);
        t.theirs.push_back(p.detach().clone().requires_grad_(true));
    }
    return t;
}

void setGradients(Twin &t, int step)
{
    torch::manual_seed(100 + step);
    for (size_t i = 0; i < t.ours.size(); ++i) {
        const torch::Tensor g = torch::randn(t.ours[i].sizes());
        t.ours[i].mutable_grad() = g.clone();
        t.theirs[i].mutable_grad() = g.clone();
    }
}

} // namespace

TEST(Optimizer, AdamWMatchesTorchAdamWWithDecayOnOneGroupOnly)
{
    Twin t = makeTwin();
    Optimizer ours(OptimizerKind::AdamW, {ParameterGroup{{{"w", t.ours[0]}}, 0.1}, ParameterGroup{{{"b", t.ours[1]}}, 0.0}},
                   {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8});
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<torch::Tensor>{t.theirs[0]},
                        std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(0.01).betas({0.9, 0.95}).weight_decay(0.1)));
    groups.emplace_back(std::vector<torch::Tensor>{t.theirs[1]},
                        std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(0.01).betas({0.9, 0.95}).weight_decay(0.0)));
    torch::optim::AdamW theirs(groups, torch::optim::AdamWOptions(0.01));
    for (int step = 0; step < 6; ++step) {
        setGradients(t, step);
        ours.step(0.01);
        theirs.step();
        for (size_t i = 0; i < t.ours.size(); ++i)
            EXPECT_LT(maxAbsDiff(t.ours[i], t.theirs[i]), 1e-6) << "step " << step << " param " << i;
    }
    EXPECT_GT(maxAbsDiff(t.ours[0], makeTwin().ours[0]), 1e-3) << "the parameters moved";
    EXPECT_EQ(ours.stepCount(), 6);
}

TEST(Optimizer, SgdWithMomentumMatchesTorchSgd)
{
    Twin t = makeTwin();
    Optimizer ours(OptimizerKind::Sgd, {ParameterGroup{{{"w", t.ours[0]}, {"b", t.ours[1]}}, 0.01}}, {.momentum = 0.9});
    torch::optim::SGD theirs(t.theirs, torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01));
    for (int step = 0; step < 5; ++step) {
        setGradients(t, step);
        ours.step(0.05);
        theirs.step();
        for (size_t i = 0; i < t.ours.size(); ++i)
            EXPECT_LT(maxAbsDiff(t.ours[i], t.theirs[i]), 1e-6) << "step " << step;
    }
}

TEST(Optimizer, StateRoundTripsExactlyAndBadStateIsRefused)
{
    for (const auto kind : {OptimizerKind::AdamW, OptimizerKind::Sgd}) {
        Twin a = makeTwin();
        Twin b = makeTwin();
        Optimizer first(kind, {ParameterGroup{{{"w", a.ours[0]}, {"b", a.ours[1]}}, 0.1}});
        for (int step = 0; step < 3; ++step) {
            setGradients(a, step);
            first.step(0.01);
        }
        // A second optimizer over a copy of the parameters, given the first one's state, continues identically.
        {
            torch::NoGradGuard noGrad;
            b.ours[0].copy_(a.ours[0]);
            b.ours[1].copy_(a.ours[1]);
        }
        Optimizer second(kind, {ParameterGroup{{{"w", b.ours[0]}, {"b", b.ours[1]}}, 0.1}});
        std::map<std::string, torch::Tensor> state;
        for (auto &[name, tensor] : first.stateTensors())
            state[name] = tensor;
        EXPECT_EQ(state.size(), kind == OptimizerKind::AdamW ? 4u : 2u);
        second.loadState(state, first.stepCount(), "state");
        setGradients(a, 9);
        b.ours[0].mutable_grad() = a.ours[0].grad().clone();
        b.ours[1].mutable_grad() = a.ours[1].grad().clone();
        first.step(0.01);
        second.step(0.01);
        EXPECT_TRUE(torch::equal(a.ours[0], b.ours[0]));
        EXPECT_TRUE(torch::equal(a.ours[1], b.ours[1]));

        auto bad = state;
        bad["lm_head.weight.exp_avg"] = torch::zeros({2});
        testing_support::expectError([&] { second.loadState(bad, 3, "opt.safetensors"); }, engine::ErrorKind::InvalidInput,
                                     "opt.safetensors: optimizer state 'lm_head.weight.exp_avg' is for a parameter this run does not train");
    }
}

TEST(GradientClipping, TwoGroupsClipExactlyAsTorchOverAllGradients)
{
    for (const double clip : {0.5, 1e6}) {
        Twin t = makeTwin();
        setGradients(t, 1);
        // Our two groups (as if on two devices) against torch's clip over every gradient at once.
        const auto norm = engine::train::clipGradientsByGroup({{t.ours[0]}, {t.ours[1]}}, {"cpu", "cuda:0"}, clip);
        const double theirs = torch::nn::utils::clip_grad_norm_(t.theirs, clip);
        EXPECT_NEAR(norm.total, theirs, 3e-7 * theirs); // torch's norm is float32, ours sums in float64
        ASSERT_EQ(norm.perDevice.size(), 2u);
        EXPECT_NEAR(norm.perDevice[0].second * norm.perDevice[0].second + norm.perDevice[1].second * norm.perDevice[1].second,
                    theirs * theirs, 6e-7 * theirs * theirs);
        for (size_t i = 0; i < 2; ++i)
            EXPECT_LT(maxAbsDiff(t.ours[i].grad(), t.theirs[i].grad()), 1e-7) << "clip " << clip;
        if (clip < 1) {
            const double after = std::sqrt(t.ours[0].grad().pow(2).sum().item<double>() + t.ours[1].grad().pow(2).sum().item<double>());
            EXPECT_NEAR(after, clip, 1e-5);
        }
    }
}

TEST(LoraTraining, FrozenWeightsNeverChangeAndTheOptimizerHoldsOnlyTheAdapter)
{
    auto model = testing_support::randomLlama(testing_support::tinyLlama());
    std::map<std::string, torch::Tensor> before;
    for (auto &item : model->named_parameters())
        before[item.key()] = item.value().detach().clone();
    engine::model::LoraSettings lora;
    lora.targets = {"q_proj", "v_proj"};
    lora.r = 2;
    const auto attached = engine::model::attachLora(model, lora);
    ParameterGroup group{{}, 0.1};
    for (auto &item : model->named_parameters()) {
        if (item.value().requires_grad())
            group.parameters.emplace_back(item.key(), item.value());
    }
    Optimizer optimizer(OptimizerKind::AdamW, {group});
    EXPECT_EQ(optimizer.parameterCount(), attached.trainableParameters);
    model->train();
    const torch::Tensor ids = testing_support::someIds(2, 8);
    for (int step = 0; step < 3; ++step) {
        optimizer.zeroGrad();
        const torch::Tensor logits = model->forward(ids);
        torch::nn::functional::cross_entropy(logits.reshape({-1, 64}), ids.reshape({-1})).backward();
        optimizer.step(0.05);
    }
    int changed = 0;
    for (auto &item : model->named_parameters()) {
        if (item.key().find(".lora_") != std::string::npos) {
            changed += maxAbsDiff(item.value(), torch::zeros_like(item.value())) > 0;
            continue;
        }
        EXPECT_TRUE(torch::equal(item.value(), before.at(item.key()))) << item.key() << " is frozen";
        EXPECT_FALSE(item.value().grad().defined()) << item.key() << " got a gradient";
    }
    EXPECT_EQ(changed, 8);
}

TEST(Optimizer, WeightDecaySkipsNormsAndBiasesButDecaysEveryMatrix)
{
    // A model with biases (mlp_bias) and LoRA on the attention, as the trainer builds its groups.
    engine::model::LlamaConfig config = testing_support::tinyLlama();
    config.mlpBias = true;
    auto model = testing_support::randomLlama(config);
    engine::model::LoraSettings lora;
    lora.targets = {"q_proj", "v_proj"};
    engine::model::attachLora(model, lora);
    for (auto &item : model->named_parameters()) // full fine-tuning of everything but the LoRA base weights' freeze
        if (item.key().find(".lora_") == std::string::npos && item.value().dim() == 1)
            item.value().requires_grad_(true);
    std::vector<std::pair<std::string, torch::Tensor>> named;
    for (auto &item : model->named_parameters())
        named.emplace_back(item.key(), item.value());
    const std::vector<ParameterGroup> groups = engine::train::weightDecayGroups(named, 0.1);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].weightDecay, 0.1);
    EXPECT_EQ(groups[1].weightDecay, 0.0);
    int norms = 0, biases = 0, loras = 0;
    for (const auto &[name, p] : groups[0].parameters) {
        EXPECT_GE(p.dim(), 2) << name;
        EXPECT_TRUE(p.requires_grad()) << name;
        loras += name.find(".lora_") != std::string::npos;
    }
    for (const auto &[name, p] : groups[1].parameters) {
        EXPECT_EQ(p.dim(), 1) << name;
        norms += name.find("norm.weight") != std::string::npos;
        biases += name.find(".bias") != std::string::npos;
    }
    EXPECT_EQ(loras, 4 * config.numHiddenLayers) << "LoRA A and B of q_proj and v_proj in every layer decay";
    EXPECT_EQ(norms, 2 * config.numHiddenLayers + 1) << "every RMSNorm weight is exempt";
    EXPECT_EQ(biases, 3 * config.numHiddenLayers) << "the MLP biases are exempt";
    for (const auto &[name, p] : named) { // frozen base weights are in no group
        if (!p.requires_grad()) {
            for (const auto &g : groups)
                for (const auto &[n, q] : g.parameters)
                    EXPECT_NE(n, name);
        }
    }

    // The exemption holds in the update: with no gradient signal (zero gradients), AdamW moves only the
    // decayed group, by lr * decay * w.
    Optimizer optimizer(OptimizerKind::AdamW, groups);
    std::map<std::string, torch::Tensor> before;
    for (const auto &g : groups)
        for (const auto &[name, p] : g.parameters) {
            before[name] = p.detach().clone();
            p.mutable_grad() = torch::zeros_like(p);
        }
    optimizer.step(0.01);
    for (const auto &[name, p] : groups[1].parameters)
        EXPECT_TRUE(torch::equal(p, before.at(name))) << name << " was decayed";
    for (const auto &[name, p] : groups[0].parameters) {
        if (before.at(name).abs().max().item<double>() > 0) { // LoRA B starts at zero: nothing to decay
            EXPECT_TRUE(torch::allclose(p, before.at(name) * (1 - 0.01 * 0.1), 1e-6, 1e-9)) << name;
        }
    }
}

TEST(BatchSampler, SeekLandsOnTheSameNextBatch)
{
    engine::train::BatchSampler a(10, 42);
    std::vector<int64_t> drawn;
    for (int i = 0; i < 7; ++i) {
        auto rows = a.next(3);
        drawn.insert(drawn.end(), rows.begin(), rows.end());
    }
    // Every epoch is a permutation of all rows.
    std::vector<int64_t> epoch(drawn.begin(), drawn.begin() + 10);
    std::sort(epoch.begin(), epoch.end());
    for (int64_t i = 0; i < 10; ++i)
        EXPECT_EQ(epoch[static_cast<size_t>(i)], i);
    engine::train::BatchSampler b(10, 42);
    b.seek(a.shuffles(), a.cursor());
    EXPECT_EQ(a.next(5), b.next(5));
    EXPECT_EQ(a.next(9), b.next(9));
    testing_support::expectError([&] { b.seek(0, 3); }, engine::ErrorKind::InvalidInput, "does not fit 10 sequences");
}
