// Qwen3 end to end through the LLaMA-family model: a checkpoint written by a script of its own
// (make_tiny_qwen3.py: Hugging Face's names, model_type "qwen3", head_dim 12 where hidden / heads is 8)
// loads, scores as the float64 reference (reference_llama.py) does, with and without a PEFT LoRA adapter
// (merged and as unmerged branches), and an adapter trained here exports as PEFT writes it and scores
// the same through the reference.

#include "engine/io/safetensorsfile.h"
#include "engine/model/generation.h"
#include "engine/model/lora.h"
#include "engine/model/pretrained.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace {

namespace fs = std::filesystem;
using engine::model::LlamaForCausalLM;
using engine::model::LoraSettings;
using nlohmann::json;
using testing_support::TempDir;

const std::vector<int64_t> kIds = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 31, 40, 2, 63, 17, 28};

bool havePythonTorch()
{
    return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

json readJson(const fs::path &path)
{
    std::ifstream in(path);
    return json::parse(in);
}

void runPython(const std::string &arguments)
{
    const std::string command = "/usr/bin/python3 " + arguments;
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

// The reference's log-probabilities of kIds for each {model_dir, adapter_dir?} case.
std::vector<std::vector<double>> referenceLogprobs(const TempDir &dir, const json &cases)
{
    std::ofstream(dir / "cases.json") << cases.dump();
    runPython("'" MODEL_REFERENCE_SCRIPT "' --score '" + (dir / "cases.json").string() + "' '"
              + (dir / "reference.json").string() + "'");
    std::vector<std::vector<double>> out;
    for (const json &result : readJson(dir / "reference.json"))
        out.push_back(result.at("logprobs").get<std::vector<double>>());
    return out;
}

double maxAbsDiff(const std::vector<double> &a, const std::vector<double> &b)
{
    EXPECT_EQ(a.size(), b.size());
    double diff = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        diff = std::max(diff, std::abs(a[i] - b[i]));
    return diff;
}

// Within 1e-4 of the reference, and the reference far from uniform (so the comparison tests something).
void expectMatches(const std::vector<double> &actual, const std::vector<double> &expected, const std::string &what)
{
    const double diff = maxAbsDiff(actual, expected);
    std::cout << "[ qwen3 ] " << what << ": max |log p - reference| = " << diff << '\n';
    EXPECT_LT(diff, 1e-4) << what;
    const auto [lo, hi] = std::minmax_element(expected.begin(), expected.end());
    EXPECT_GT(*hi - *lo, 0.5) << what << ": log-probs too uniform to test anything";
}

class Qwen3Checkpoint : public ::testing::Test {
protected:
    void SetUp() override
    {
        if (!havePythonTorch())
            GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
        runPython("'" TINY_QWEN3_SCRIPT "' '" + modelDir().string() + "' '" + adapterDir().string() + "'");
    }

    fs::path modelDir() const { return m_dir / "model"; }
    fs::path adapterDir() const { return m_dir / "adapter"; }

    TempDir m_dir{"qwen3"};
};

} // namespace

TEST_F(Qwen3Checkpoint, LoadsAsQwen3WithHeadDimAndQkNorms)
{
    LlamaForCausalLM model = engine::model::loadPretrained(modelDir());
    EXPECT_EQ(model->config().modelType, "qwen3");
    EXPECT_EQ(model->config().effectiveHeadDim(), 12);
    EXPECT_TRUE(model->config().hasQkNorm());
    const auto params = model->named_parameters();
    EXPECT_EQ(params["model.layers.1.self_attn.k_norm.weight"].sizes().vec(), std::vector<int64_t>{12});
    EXPECT_EQ(params["model.layers.0.self_attn.q_proj.weight"].sizes().vec(), (std::vector<int64_t>{48, 32}));
}

TEST_F(Qwen3Checkpoint, ScoresAsTheReferenceWithAndWithoutAnAdapter)
{
    const json cases = json::array({{{"model_dir", modelDir().string()}, {"ids", kIds}},
                                     {{"model_dir", modelDir().string()}, {"ids", kIds},
                                      {"adapter_dir", adapterDir().string()}}});
    const std::vector<std::vector<double>> reference = referenceLogprobs(m_dir, cases);
    ASSERT_EQ(reference.size(), 2u);

    LlamaForCausalLM base = engine::model::loadPretrained(modelDir());
    expectMatches(engine::model::scoreLogprobs(base, kIds), reference[0], "base model");

    // The adapter merged into the weights, as `tunebench score --adapter` applies it.
    LlamaForCausalLM merged = engine::model::loadPretrained(modelDir());
    EXPECT_EQ(engine::model::applyPeftLoraAdapter(merged, adapterDir()), 8) << "4 targets in 2 layers";
    expectMatches(engine::model::scoreLogprobs(merged, kIds), reference[1], "adapter merged");

    // The same adapter as unmerged branches, as training runs them.
    LlamaForCausalLM branched = engine::model::loadPretrained(modelDir());
    const LoraSettings settings =
        LoraSettings::fromPeftConfig(readJson(adapterDir() / "adapter_config.json"), "adapter_config.json");
    engine::model::attachLora(branched, settings);
    const auto file = engine::io::SafetensorsFile::open(adapterDir() / "adapter_model.safetensors");
    std::map<std::string, torch::Tensor> tensors;
    for (const auto &[name, unused] : engine::model::peftAdapterTensors(branched, settings))
        tensors[name] = file.tensor(name);
    engine::model::loadPeftAdapterTensors(branched, settings, tensors, "adapter_model.safetensors");
    branched->eval();
    expectMatches(engine::model::scoreLogprobs(branched, kIds), reference[1], "adapter as LoRA branches");
}

// PEFT export through the family's code: the default targets (q_proj, v_proj), PEFT's names, and the
// exported folder scores through the reference as the model with its branches does.
TEST_F(Qwen3Checkpoint, ExportedAdapterIsPeftsAndScoresTheSameThroughTheReference)
{
    LlamaForCausalLM model = engine::model::loadPretrained(modelDir());
    LoraSettings settings; // q_proj, v_proj: the LLaMA family's default targets
    settings.r = 2;
    settings.alpha = 6;
    settings.dropout = 0;
    torch::manual_seed(9);
    engine::model::attachLora(model, settings);
    {
        // A trained adapter: B away from its zero init.
        torch::NoGradGuard noGrad;
        for (auto &item : model->named_parameters()) {
            if (item.key().find("lora_B") != std::string::npos)
                item.value().copy_(0.5 * torch::randn(item.value().sizes()));
        }
    }
    model->eval();
    const fs::path exported = m_dir / "exported";
    engine::model::savePeftAdapter(model, settings, modelDir().string(), exported);

    const json config = readJson(exported / "adapter_config.json");
    EXPECT_EQ(config.at("peft_type"), "LORA");
    EXPECT_EQ(config.at("r"), 2);
    std::vector<std::string> targets = config.at("target_modules").get<std::vector<std::string>>();
    std::sort(targets.begin(), targets.end());
    EXPECT_EQ(targets, (std::vector<std::string>{"q_proj", "v_proj"}));
    const auto file = engine::io::SafetensorsFile::open(exported / "adapter_model.safetensors");
    EXPECT_TRUE(file.contains("base_model.model.model.layers.1.self_attn.q_proj.lora_A.weight"));
    EXPECT_EQ(file.tensor("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight").sizes().vec(),
              (std::vector<int64_t>{24, 2})) << "v_proj out = kv heads 2 x head_dim 12";
    EXPECT_FALSE(file.contains("base_model.model.model.layers.0.self_attn.q_norm.lora_A.weight"));

    const json cases = json::array({{{"model_dir", modelDir().string()}, {"ids", kIds},
                                     {"adapter_dir", exported.string()}}});
    const std::vector<std::vector<double>> reference = referenceLogprobs(m_dir, cases);
    ASSERT_EQ(reference.size(), 1u);
    expectMatches(engine::model::scoreLogprobs(model, kIds), reference[0], "exported adapter");
}
