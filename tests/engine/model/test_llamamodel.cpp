#include "engine/model/llamaconfig.h"
#include "engine/model/llamamodel.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

using engine::model::KvCache;
using engine::model::LlamaConfig;
using engine::model::LlamaForCausalLM;
using nlohmann::json;
using testing_support::maxAbsDiff;
using testing_support::randomLlama;
using testing_support::setFormulaWeights;
using testing_support::someIds;
using testing_support::TempDir;
using testing_support::tinyLlama;

namespace {

std::vector<std::string> expectedNames(const LlamaConfig &c)
{
    std::vector<std::string> names{"model.embed_tokens.weight"};
    for (int64_t i = 0; i < c.numHiddenLayers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        for (const char *suffix : {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                   "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
                                   "mlp.down_proj.weight", "input_layernorm.weight",
                                   "post_attention_layernorm.weight"})
            names.push_back(p + suffix);
    }
    names.push_back("model.norm.weight");
    if (!c.tieWordEmbeddings)
        names.push_back("lm_head.weight");
    return names;
}

// --- An independent forward pass, written from the formulas with per-head loops. ---------------

torch::Tensor refRmsNorm(const torch::Tensor &x, const torch::Tensor &w, double eps)
{
    return w * (x / torch::sqrt((x * x).mean(-1, true) + eps));
}

torch::Tensor refRotateHalf(const torch::Tensor &x)
{
    const int64_t d = x.size(-1) / 2;
    return torch::cat({-x.slice(-1, d), x.slice(-1, 0, d)}, -1);
}

// x [T, D] for one head at positions offset..offset+T-1.
torch::Tensor refRotary(const torch::Tensor &x, int64_t offset, double theta)
{
    const int64_t t = x.size(0), d = x.size(1);
    auto angles = torch::empty({t, d}, torch::kFloat64);
    for (int64_t pos = 0; pos < t; ++pos) {
        for (int64_t i = 0; i < d / 2; ++i) {
            const double a = double(offset + pos) * std::pow(theta, -2.0 * double(i) / double(d));
            angles[pos][i] = a;
            angles[pos][i + d / 2] = a;
        }
    }
    return x * angles.cos() + refRotateHalf(x) * angles.sin();
}

torch::Tensor referenceLogits(LlamaForCausalLM &model, const torch::Tensor &ids, int64_t offset = 0)
{
    torch::NoGradGuard noGrad;
    const LlamaConfig &c = model->config();
    std::map<std::string, torch::Tensor> w;
    for (const auto &item : model->named_parameters())
        w[item.key()] = item.value().detach().to(torch::kFloat64);
    const int64_t b = ids.size(0), t = ids.size(1), nh = c.numAttentionHeads, nkv = c.numKeyValueHeads;
    const int64_t hd = c.effectiveHeadDim();
    const torch::Tensor causal = torch::ones({t, t}).tril().to(torch::kBool);

    torch::Tensor x = w.at("model.embed_tokens.weight").index_select(0, ids.flatten()).view({b, t, -1});
    for (int64_t l = 0; l < c.numHiddenLayers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        const torch::Tensor a = refRmsNorm(x, w.at(p + "input_layernorm.weight"), c.rmsNormEps);
        const torch::Tensor q = torch::matmul(a, w.at(p + "self_attn.q_proj.weight").t());
        const torch::Tensor k = torch::matmul(a, w.at(p + "self_attn.k_proj.weight").t());
        const torch::Tensor v = torch::matmul(a, w.at(p + "self_attn.v_proj.weight").t());
        std::vector<torch::Tensor> batches;
        for (int64_t s = 0; s < b; ++s) {
            std::vector<torch::Tensor> heads;
            for (int64_t h = 0; h < nh; ++h) {
                const int64_t kvh = h / (nh / nkv);
                const auto qh = refRotary(q[s].slice(1, h * hd, (h + 1) * hd), offset, c.ropeTheta);
                const auto kh = refRotary(k[s].slice(1, kvh * hd, (kvh + 1) * hd), offset, c.ropeTheta);
                const auto vh = v[s].slice(1, kvh * hd, (kvh + 1) * hd);
                auto scores = torch::matmul(qh, kh.t()) / std::sqrt(double(hd));
                scores = scores.masked_fill(causal.logical_not(), -INFINITY);
                heads.push_back(torch::matmul(torch::softmax(scores, -1), vh));
            }
            batches.push_back(torch::cat(heads, 1));
        }
        x = x + torch::matmul(torch::stack(batches), w.at(p + "self_attn.o_proj.weight").t());
        const torch::Tensor m = refRmsNorm(x, w.at(p + "post_attention_layernorm.weight"), c.rmsNormEps);
        const torch::Tensor gate = torch::matmul(m, w.at(p + "mlp.gate_proj.weight").t());
        const torch::Tensor up = torch::matmul(m, w.at(p + "mlp.up_proj.weight").t());
        x = x + torch::matmul(gate * torch::sigmoid(gate) * up, w.at(p + "mlp.down_proj.weight").t());
    }
    x = refRmsNorm(x, w.at("model.norm.weight"), c.rmsNormEps);
    const auto out = c.tieWordEmbeddings ? w.at("model.embed_tokens.weight") : w.at("lm_head.weight");
    return torch::matmul(x, out.t());
}

json readJson(const std::filesystem::path &path)
{
    std::ifstream in(path);
    return json::parse(in);
}

torch::Tensor tensorFromJson(const json &nested)
{
    std::vector<double> flat;
    std::vector<int64_t> shape;
    const json *level = &nested;
    while (level->is_array()) {
        shape.push_back(static_cast<int64_t>(level->size()));
        level = &level->front();
    }
    std::function<void(const json &)> collect = [&](const json &j) {
        if (j.is_array()) {
            for (const json &e : j)
                collect(e);
        } else {
            flat.push_back(j.get<double>());
        }
    };
    collect(nested);
    return torch::tensor(flat, torch::kFloat64).view(shape);
}

} // namespace

TEST(LlamaModel, ParameterNamesAndShapesMatchHuggingFace)
{
    for (bool tied : {false, true}) {
        const LlamaConfig c = tinyLlama("llama", tied);
        LlamaForCausalLM model(c);
        const auto params = model->named_parameters();
        std::vector<std::string> names;
        int64_t total = 0;
        for (const auto &item : params) {
            names.push_back(item.key());
            total += item.value().numel();
        }
        EXPECT_EQ(names, expectedNames(c)) << (tied ? "tied" : "untied");
        EXPECT_EQ(total, c.parameterCount());
        EXPECT_TRUE(model->named_buffers().is_empty()) << "rotary tables must not be buffers";

        const auto shape = [&](const std::string &name) { return params[name].sizes().vec(); };
        using S = std::vector<int64_t>;
        EXPECT_EQ(shape("model.embed_tokens.weight"), (S{64, 32}));
        for (int l = 0; l < 2; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            EXPECT_EQ(shape(p + "self_attn.q_proj.weight"), (S{32, 32}));
            EXPECT_EQ(shape(p + "self_attn.k_proj.weight"), (S{16, 32}));
            EXPECT_EQ(shape(p + "self_attn.v_proj.weight"), (S{16, 32}));
            EXPECT_EQ(shape(p + "self_attn.o_proj.weight"), (S{32, 32}));
            EXPECT_EQ(shape(p + "mlp.gate_proj.weight"), (S{48, 32}));
            EXPECT_EQ(shape(p + "mlp.up_proj.weight"), (S{48, 32}));
            EXPECT_EQ(shape(p + "mlp.down_proj.weight"), (S{32, 48}));
            EXPECT_EQ(shape(p + "input_layernorm.weight"), (S{32}));
            EXPECT_EQ(shape(p + "post_attention_layernorm.weight"), (S{32}));
        }
        EXPECT_EQ(shape("model.norm.weight"), (S{32}));
        if (tied) {
            EXPECT_FALSE(model->lm_head);
            EXPECT_TRUE(model->outputWeight().is_same(params["model.embed_tokens.weight"]));
        } else {
            EXPECT_EQ(shape("lm_head.weight"), (S{64, 32}));
        }
    }
}

TEST(LlamaModel, ParameterCountMatchesRegisteredParameters)
{
    LlamaConfig headDim = tinyLlama("llama", true, 1);
    headDim.headDim = 16; // heads * head_dim = 64 != hidden 32
    for (const LlamaConfig &c : {tinyLlama(), tinyLlama("llama", true), headDim, engine::model::demoConfig()}) {
        LlamaForCausalLM model(c);
        int64_t total = 0;
        for (const auto &p : model->parameters())
            total += p.numel();
        EXPECT_EQ(total, c.parameterCount());
    }
}

TEST(LlamaModel, ForwardShapeAndDtype)
{
    LlamaForCausalLM model = randomLlama(tinyLlama());
    const torch::Tensor logits = model->forward(someIds(3, 5));
    EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{3, 5, 64}));
    EXPECT_EQ(logits.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
}

TEST(LlamaModel, LaterTokensNeverChangeEarlierLogits)
{
    LlamaForCausalLM model = randomLlama(tinyLlama());
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = someIds(2, 10);
    const torch::Tensor before = model->forward(ids);
    for (int64_t changed : {9, 5, 1}) {
        torch::Tensor other = ids.clone();
        other.select(1, changed).add_(1).remainder_(64);
        const torch::Tensor after = model->forward(other);
        EXPECT_LT(maxAbsDiff(before.slice(1, 0, changed), after.slice(1, 0, changed)), 1e-6) << "changed " << changed;
        EXPECT_GT(maxAbsDiff(before.slice(1, changed), after.slice(1, changed)), 1e-3) << "changed " << changed;
    }
}

TEST(LlamaModel, MatchesPerHeadReferenceMultiHead)
{
    LlamaForCausalLM model = randomLlama(tinyLlama("llama", false, 4));
    const torch::Tensor ids = someIds(2, 7);
    torch::NoGradGuard noGrad;
    EXPECT_LT(maxAbsDiff(model->forward(ids), referenceLogits(model, ids)), 1e-4);
    EXPECT_LT(maxAbsDiff(model->forward(ids, 11), referenceLogits(model, ids, 11)), 1e-4) << "position offset";
}

TEST(LlamaModel, MatchesPerHeadReferenceGroupedQuery)
{
    for (int64_t kv : {2, 1}) {
        LlamaForCausalLM model = randomLlama(tinyLlama("llama", true, kv));
        const torch::Tensor ids = someIds(2, 7);
        torch::NoGradGuard noGrad;
        EXPECT_LT(maxAbsDiff(model->forward(ids, 3), referenceLogits(model, ids, 3)), 1e-4) << "kv heads " << kv;
    }
}

TEST(LlamaModel, GroupedQueryEqualsMultiHeadWithRepeatedKeyValueWeights)
{
    const LlamaConfig gqaConfig = tinyLlama("llama", false, 2);
    LlamaForCausalLM gqa = randomLlama(gqaConfig);
    LlamaForCausalLM mha(tinyLlama("llama", false, 4));
    {
        torch::NoGradGuard noGrad;
        auto target = mha->named_parameters();
        const int64_t groups = 2, headDim = 8;
        for (const auto &item : gqa->named_parameters()) {
            torch::Tensor value = item.value();
            if (item.key().find("k_proj") != std::string::npos || item.key().find("v_proj") != std::string::npos) {
                // kv head j serves query heads j*groups .. j*groups+groups-1.
                value = value.view({2, headDim, 32}).repeat_interleave(groups, 0).reshape({4 * headDim, 32});
            }
            target[item.key()].copy_(value);
        }
    }
    const torch::Tensor ids = someIds(gqaConfig, 2, 9);
    torch::NoGradGuard noGrad;
    EXPECT_LT(maxAbsDiff(gqa->forward(ids), mha->forward(ids)), 1e-5);
}

TEST(LlamaModel, KvCacheGivesTheSameLogitsAsOneFullPass)
{
    LlamaForCausalLM model = randomLlama(tinyLlama());
    torch::NoGradGuard noGrad;
    const torch::Tensor ids = someIds(2, 9);
    const torch::Tensor full = model->forward(ids);
    KvCache cache;
    const torch::Tensor prompt = model->forward(ids.slice(1, 0, 5), 0, &cache);
    EXPECT_EQ(cache.length(), 5);
    EXPECT_LT(maxAbsDiff(prompt, full.slice(1, 0, 5)), 1e-5);
    for (int64_t pos = 5; pos < 9; ++pos) {
        const torch::Tensor step = model->forward(ids.slice(1, pos, pos + 1), cache.length(), &cache);
        EXPECT_LT(maxAbsDiff(step, full.slice(1, pos, pos + 1)), 1e-5) << "position " << pos;
    }
    EXPECT_EQ(cache.length(), 9);
    // Two tokens at once after a prompt exercise the offset causal mask.
    KvCache second;
    model->forward(ids.slice(1, 0, 4), 0, &second);
    EXPECT_LT(maxAbsDiff(model->forward(ids.slice(1, 4, 9), 4, &second), full.slice(1, 4, 9)), 1e-5);
}

TEST(LlamaModel, BackwardGivesFiniteGradientsForEveryParameter)
{
    for (bool tied : {false, true}) {
        LlamaForCausalLM model = randomLlama(tinyLlama("llama", tied));
        const torch::Tensor ids = someIds(2, 8);
        const torch::Tensor logits = model->forward(ids.slice(1, 0, 7));
        const torch::Tensor loss =
            torch::nn::functional::cross_entropy(logits.reshape({-1, 64}), ids.slice(1, 1, 8).reshape({-1}));
        loss.backward();
        for (const auto &item : model->named_parameters()) {
            const torch::Tensor grad = item.value().grad();
            ASSERT_TRUE(grad.defined()) << item.key();
            EXPECT_TRUE(torch::isfinite(grad).all().item<bool>()) << item.key();
            EXPECT_GT(grad.abs().max().item<double>(), 0.0) << item.key();
        }
    }
}

TEST(LlamaModel, GradientsMatchFiniteDifferences)
{
    // Double precision so that central differences are accurate.
    LlamaForCausalLM model = randomLlama(tinyLlama("llama", false, 2));
    model->to(torch::kFloat64);
    const torch::Tensor ids = someIds(1, 6);
    auto lossOf = [&] { return (model->hiddenStates(ids) * torch::linspace(-1, 1, 32, torch::kFloat64)).sum(); };
    lossOf().backward();
    torch::NoGradGuard noGrad;
    for (const std::string name : {"model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.gate_proj.weight",
                                   "model.layers.0.input_layernorm.weight", "model.embed_tokens.weight"}) {
        torch::Tensor p = model->named_parameters()[name];
        const torch::Tensor grad = p.grad().flatten();
        torch::Tensor flat = p.view({-1});
        for (int64_t i : {int64_t(0), flat.numel() / 3, flat.numel() - 1}) {
            const double h = 1e-6, original = flat[i].item<double>();
            flat[i] = original + h;
            const double up = lossOf().item<double>();
            flat[i] = original - h;
            const double down = lossOf().item<double>();
            flat[i] = original;
            EXPECT_NEAR(grad[i].item<double>(), (up - down) / (2 * h), 1e-6) << name << "[" << i << "]";
        }
    }
}

TEST(LlamaModel, InitializeWeightsIsDeterministic)
{
    LlamaForCausalLM a(tinyLlama()), b(tinyLlama()), c(tinyLlama());
    a->initializeWeights(42);
    b->initializeWeights(42);
    c->initializeWeights(43);
    const auto pa = a->named_parameters(), pb = b->named_parameters(), pc = c->named_parameters();
    for (const auto &item : pa) {
        EXPECT_TRUE(torch::equal(item.value(), pb[item.key()])) << item.key();
        if (item.value().dim() == 1) {
            EXPECT_TRUE(torch::equal(item.value(), torch::ones_like(item.value()))) << item.key();
        } else {
            EXPECT_FALSE(torch::equal(item.value(), pc[item.key()])) << item.key();
            EXPECT_NEAR(item.value().std().item<double>(), 0.2, 0.03) << item.key();
            EXPECT_NEAR(item.value().mean().item<double>(), 0.0, 0.03) << item.key();
        }
    }
}

TEST(LlamaModel, OtherDtypes)
{
    LlamaForCausalLM model = randomLlama(tinyLlama());
    const torch::Tensor ids = someIds(2, 6);
    torch::NoGradGuard noGrad;
    const torch::Tensor f32 = model->forward(ids);
    model->to(torch::kFloat64);
    const torch::Tensor f64 = model->forward(ids);
    EXPECT_EQ(f64.scalar_type(), torch::kFloat32);
    EXPECT_LT(maxAbsDiff(f32, f64), 1e-4);
    model->to(torch::kBFloat16);
    const torch::Tensor bf16 = model->forward(ids);
    EXPECT_EQ(bf16.scalar_type(), torch::kFloat32);
    EXPECT_LT(maxAbsDiff(f32, bf16), 0.5);
}

TEST(LlamaModel, MatchesCheckedInGoldenLogits)
{
    const json golden = readJson(std::filesystem::path(TUNEBENCH_TEST_DATA) / "model" / "llama_golden.json");
    // llama GQA untied; llama MQA tied with head_dim and offset; qwen2 q/k/v biases tied GQA; mistral
    // sliding window; llama3 RoPE over 3 × original_max_position_embeddings; linear RoPE with attention_bias;
    // qwen3's per-head q/k norm with head_dim 12 (hidden / heads is 8) and an offset.
    ASSERT_EQ(golden.at("cases").size(), 7u);
    for (const json &testCase : golden.at("cases")) {
        const LlamaConfig config = LlamaConfig::fromJson(testCase.at("config"), "llama_golden.json");
        LlamaForCausalLM model(config);
        setFormulaWeights(model);
        const torch::Tensor ids = tensorFromJson(testCase.at("input_ids")).to(torch::kInt64);
        torch::NoGradGuard noGrad;
        const torch::Tensor logits = model->forward(ids, testCase.at("position_offset").get<int64_t>());
        const torch::Tensor expected = tensorFromJson(testCase.at("logits"));
        ASSERT_EQ(logits.sizes(), expected.sizes()) << testCase.at("name");
        EXPECT_LT(maxAbsDiff(logits, expected), 1e-4) << testCase.at("name");
        EXPECT_LT(maxAbsDiff(torch::log_softmax(logits.to(torch::kFloat64), -1), torch::log_softmax(expected, -1)), 1e-4)
            << testCase.at("name");
        EXPECT_GT(expected.abs().max().item<double>(), 0.1) << "golden logits too small to test anything";
    }
}

TEST(LlamaModel, MatchesIndependentPythonReference)
{
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch); the golden-file test still runs";

    struct Case {
        std::string name;
        LlamaConfig config;
        int64_t length;
        int64_t offset;
    };
    std::vector<Case> cases;
    for (bool tied : {false, true}) {
        LlamaConfig config = tinyLlama("llama", tied, tied ? 1 : 2);
        config.ropeTheta = 300.0;
        cases.push_back({tied ? "tied" : "untied", config, 8, tied ? 4 : 0});
    }
    LlamaConfig qwen2 = tinyLlama("qwen2", true, 2);
    qwen2.ropeTheta = 1e6;
    cases.push_back({"qwen2", qwen2, 9, 2});
    LlamaConfig mistral = tinyLlama("mistral", false, 1);
    mistral.slidingWindow = 4;
    mistral.headDim = 10;
    cases.push_back({"mistral_window", mistral, 13, 0});
    LlamaConfig llama3 = tinyLlama("llama", false, 2);
    llama3.headDim = 16;
    llama3.ropeTheta = 100.0;
    llama3.ropeScaling = {"llama3", 4.0, 0.25, 1.0, 8};
    cases.push_back({"llama3_rope", llama3, 24, 0});
    LlamaConfig linear = tinyLlama("llama", true, 4);
    linear.attentionBias = true;
    linear.ropeScaling = {"linear", 3.0, 1.0, 4.0, 8192};
    cases.push_back({"linear_rope_bias", linear, 10, 6});
    cases.push_back({"qwen3_qk_norm_head_dim", testing_support::tinyQwen3(false, false, 2), 11, 3});
    cases.push_back({"qwen3_tied_bias_mqa", testing_support::tinyQwen3(true, true, 1), 9, 0});

    // Weights of every case as <dir>/<case>/<parameter>.f32, then one Python run over all cases.
    TempDir dir("model-reference");
    std::vector<LlamaForCausalLM> models;
    std::vector<torch::Tensor> inputs;
    json batch = json::array();
    uint64_t seed = 11;
    for (const Case &c : cases) {
        LlamaForCausalLM model = randomLlama(c.config, ++seed);
        const std::filesystem::path weights = dir / c.name;
        std::filesystem::create_directories(weights);
        for (const auto &item : model->named_parameters()) {
            const torch::Tensor t = item.value().detach().contiguous();
            std::ofstream out(weights / (item.key() + ".f32"), std::ios::binary);
            out.write(static_cast<const char *>(t.data_ptr()), static_cast<std::streamsize>(t.numel() * sizeof(float)));
        }
        const torch::Tensor ids = someIds(c.config, 2, c.length, static_cast<int64_t>(seed));
        json ids2d = json::array();
        for (int64_t b = 0; b < ids.size(0); ++b) {
            json row = json::array();
            for (int64_t t = 0; t < ids.size(1); ++t)
                row.push_back(ids[b][t].item<int64_t>());
            ids2d.push_back(row);
        }
        batch.push_back({{"config", c.config.toJson()}, {"input_ids", ids2d}, {"position_offset", c.offset},
                         {"weights_dir", weights.string()}});
        models.push_back(model);
        inputs.push_back(ids);
    }
    std::ofstream(dir / "cases.json") << batch.dump();
    const std::string command = "/usr/bin/python3 '" MODEL_REFERENCE_SCRIPT "' '" + (dir / "cases.json").string()
        + "' '" + (dir / "out.json").string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const json results = readJson(dir / "out.json");
    ASSERT_EQ(results.size(), cases.size());

    torch::NoGradGuard noGrad;
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case &c = cases[i];
        const torch::Tensor expected = tensorFromJson(results[i].at("logits"));
        const torch::Tensor logits = models[i]->forward(inputs[i], c.offset);
        ASSERT_EQ(logits.sizes(), expected.sizes()) << c.name;
        EXPECT_LT(maxAbsDiff(logits, expected), 1e-4) << c.name;
        EXPECT_LT(maxAbsDiff(torch::log_softmax(logits.to(torch::kFloat64), -1), torch::log_softmax(expected, -1)), 1e-4)
            << c.name;
        EXPECT_GT(expected.abs().max().item<double>(), 0.5) << c.name;
    }
}
