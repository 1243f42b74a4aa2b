// `tunebench score` and `tunebench generate` run as a user would (a child process per command),
// checked against the independent Python reference (tests/engine/model/reference_llama.py), which
// reads the same model folders with its own safetensors parser, and against golden log-probs it
// wrote (tests/data/score/score_golden.json) so the comparison also runs without Python.

#include "engine/core/atomicfile.h"
#include "engine/io/safetensorsfile.h"
#include "engine/model/generation.h"
#include "engine/model/pretrained.h"
#include "support/cliprocess.h"
#include "support/tempdir.h"
#include "support/tinymodels.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

namespace fs = std::filesystem;
using engine::model::LlamaConfig;
using engine::model::LlamaForCausalLM;
using nlohmann::json;

namespace {

const fs::path kScoreData = fs::path(TUNEBENCH_TEST_DATA) / "score";

using testing_support::ProcessResult;

std::string slurp(const fs::path &path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string idList(const std::vector<int64_t> &ids)
{
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) {
        if (i)
            text += ',';
        text += std::to_string(ids[i]);
    }
    return text;
}

/// One line on stderr, "tunebench: ..." — what every refused input must give.
void expectOneErrorLine(const ProcessResult &r, const std::string &needle, const std::string &what)
{
    EXPECT_NE(r.exitCode, 0) << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("tunebench: ")) << what << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << what << ": " << r.err;
}

class ScoreCliTest : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        s_dir = new testing_support::TempDir("scorecli");
        testing_support::isolateXdgDirs(s_dir->path());
    }
    static void TearDownTestSuite()
    {
        delete s_dir;
        s_dir = nullptr;
    }

    static fs::path dir() { return s_dir->path(); }

    ProcessResult run(const std::vector<std::string> &args, const std::string &tag = "cmd")
    {
        return testing_support::runProcess(TUNEBENCH_CLI, args, dir(), tag);
    }

    /// `tunebench score --json`; fails the test (and returns {}) when it does not succeed.
    json score(const fs::path &model, const std::vector<int64_t> &ids, const fs::path &adapter = {})
    {
        std::vector<std::string> args = {"score", "--model", model.string(), "--ids", idList(ids), "--json",
                                         "--threads", "1"};
        if (!adapter.empty()) {
            args.push_back("--adapter");
            args.push_back(adapter.string());
        }
        const ProcessResult r = run(args, "score");
        EXPECT_EQ(r.exitCode, 0) << r.err;
        if (r.exitCode != 0)
            return json::object();
        return json::parse(r.out);
    }

    static testing_support::TempDir *s_dir;
};

testing_support::TempDir *ScoreCliTest::s_dir = nullptr;

/// Writes a PEFT adapter folder for `modules` with the given A [r, in] and B [out, r] per module.
void writeAdapter(const fs::path &folder, int64_t r, double alpha, bool rslora,
                  const std::vector<std::tuple<std::string, torch::Tensor, torch::Tensor>> &modules)
{
    fs::create_directories(folder);
    json targets = json::array();
    std::vector<std::pair<std::string, torch::Tensor>> tensors;
    for (const auto &[module, a, b] : modules) {
        targets.push_back(module.substr(module.rfind('.') + 1));
        tensors.emplace_back("base_model.model." + module + ".lora_A.weight", a);
        tensors.emplace_back("base_model.model." + module + ".lora_B.weight", b);
    }
    const json config = {{"peft_type", "LORA"}, {"base_model_name_or_path", "tiny"}, {"task_type", "CAUSAL_LM"},
                         {"r", r}, {"lora_alpha", alpha}, {"lora_dropout", 0.0}, {"target_modules", targets},
                         {"bias", "none"}, {"fan_in_fan_out", false}, {"use_rslora", rslora}, {"use_dora", false},
                         {"modules_to_save", nullptr}};
    engine::writeFileAtomically(folder / "adapter_config.json", config.dump(2));
    engine::io::writeSafetensors(folder / "adapter_model.safetensors", tensors, {{"format", "pt"}});
}

/// The model folder (and adapter folder) of a score_golden.json case, from the formula weights.
void writeGoldenCase(const json &testCase, const fs::path &modelDir, const fs::path &adapterDir)
{
    const LlamaConfig config = LlamaConfig::fromJson(testCase.at("config"), "score_golden.json");
    LlamaForCausalLM model(config);
    testing_support::setFormulaWeights(model);
    if (testCase.value("dtype", "float32") == "bfloat16")
        model->to(torch::kBFloat16);
    engine::model::savePretrained(model, modelDir, testCase.value("shard_bytes", uint64_t(5'000'000'000ull)));
    if (testCase.contains("adapter")) {
        const json &adapter = testCase.at("adapter");
        const int64_t r = adapter.at("r");
        const auto params = model->named_parameters();
        std::vector<std::tuple<std::string, torch::Tensor, torch::Tensor>> modules;
        int index = 0;
        for (const std::string module : adapter.at("modules")) {
            const torch::Tensor w = params[module + ".weight"];
            modules.emplace_back(module, testing_support::formulaLora(r, w.size(1), index, false),
                                 testing_support::formulaLora(w.size(0), r, index, true));
            ++index;
        }
        writeAdapter(adapterDir, r, adapter.at("lora_alpha").get<double>(), adapter.at("use_rslora").get<bool>(),
                     modules);
    }
}

bool pythonWithTorch()
{
    return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

/// A model folder a tokenizer can drive: vocab 20 with tests/data/tokenize/bytelevel (eos = 19).
fs::path writeTokenizerModel(const fs::path &folder)
{
    LlamaConfig config = testing_support::tinyLlama("llama", false, 2);
    config.vocabSize = 20;
    config.eosTokenId = 19;
    config.bosTokenId = -1;
    LlamaForCausalLM model = testing_support::randomLlama(config, 17);
    engine::model::savePretrained(model, folder);
    for (const char *name : {"tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(fs::path(TUNEBENCH_TEST_DATA) / "tokenize" / "bytelevel" / name, folder / name,
                      fs::copy_options::overwrite_existing);
    return folder;
}

} // namespace

// Golden log-probs (float64 reference over formula weights): untied GQA, tied MHA, bf16 weights,
// sharded, qwen2 biases, mistral window, llama3 RoPE over 3 × original_max_position_embeddings,
// LoRA and rsLoRA adapters, and the checked-in bf16 checkpoint tests/data/score/tiny-bf16.
TEST_F(ScoreCliTest, MatchesCheckedInGoldenLogprobs)
{
    const json golden = json::parse(slurp(kScoreData / "score_golden.json"));
    ASSERT_EQ(golden.at("cases").size(), 10u);
    for (const json &testCase : golden.at("cases")) {
        const std::string name = testCase.at("name");
        fs::path modelDir = dir() / ("golden-" + name);
        const fs::path adapterDir = dir() / ("golden-" + name + "-adapter");
        writeGoldenCase(testCase, modelDir, adapterDir);
        if (testCase.contains("checkpoint")) {
            // The checked-in checkpoint is exactly what the formula gives (set TUNEBENCH_UPDATE_GOLDEN=1 to rewrite).
            const fs::path checkedIn = kScoreData / testCase.at("checkpoint").get<std::string>();
            if (std::getenv("TUNEBENCH_UPDATE_GOLDEN")) {
                fs::create_directories(checkedIn);
                for (const char *file : {"config.json", "model.safetensors"})
                    fs::copy_file(modelDir / file, checkedIn / file, fs::copy_options::overwrite_existing);
            }
            for (const char *file : {"config.json", "model.safetensors"})
                EXPECT_EQ(slurp(modelDir / file), slurp(checkedIn / file)) << checkedIn / file;
            EXPECT_LT(fs::file_size(checkedIn / "model.safetensors"), 8000u);
            modelDir = checkedIn;
        }
        if (testCase.contains("shard_bytes")) {
            EXPECT_TRUE(fs::exists(modelDir / "model.safetensors.index.json")) << name;
        }
        const std::vector<int64_t> ids = testCase.at("ids");
        const std::vector<double> expected = testCase.at("logprobs");
        const json out = score(modelDir, ids, testCase.contains("adapter") ? adapterDir : fs::path());
        ASSERT_TRUE(out.contains("logprobs")) << name;
        EXPECT_EQ(out.at("ids").get<std::vector<int64_t>>(), ids) << name;
        const std::vector<double> logprobs = out.at("logprobs");
        ASSERT_EQ(logprobs.size(), expected.size()) << name;
        double sum = 0;
        for (size_t t = 0; t < expected.size(); ++t) {
            EXPECT_NEAR(logprobs[t], expected[t], 1e-4) << name << " position " << t;
            sum += logprobs[t];
        }
        const double meanLoss = -sum / double(logprobs.size());
        EXPECT_NEAR(out.at("mean_loss").get<double>(), meanLoss, 1e-9) << name;
        EXPECT_NEAR(out.at("perplexity").get<double>(), std::exp(meanLoss), 1e-6 * std::exp(meanLoss)) << name;
    }
}

// Random tiny models written by savePretrained, read back by the Python reference's own parser.
TEST_F(ScoreCliTest, MatchesIndependentPythonReferenceOnTheSameFolders)
{
    if (!pythonWithTorch())
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch); the golden-file test still runs";

    struct Case {
        std::string name;
        LlamaConfig config;
        int64_t length;
        bool bf16 = false;
        uint64_t shardBytes = 5'000'000'000ull;
        bool adapter = false;
        bool rslora = false;
    };
    LlamaConfig llama3 = testing_support::tinyLlama("llama", false, 2);
    llama3.headDim = 16;
    llama3.ropeTheta = 100.0;
    llama3.ropeScaling = {"llama3", 4.0, 0.25, 1.0, 8};
    LlamaConfig mistral = testing_support::tinyLlama("mistral", false, 1);
    mistral.slidingWindow = 4;
    LlamaConfig linearBias = testing_support::tinyLlama("llama", true, 4);
    linearBias.attentionBias = true;
    linearBias.ropeScaling = {"linear", 2.0, 1.0, 4.0, 8192};
    const std::vector<Case> cases = {
        {"untied", testing_support::tinyLlama("llama", false, 4), 12},
        {"tied", testing_support::tinyLlama("llama", true, 4), 11},
        {"gqa", testing_support::tinyLlama("llama", false, 1), 13},
        {"bf16", testing_support::tinyLlama("llama", false, 2), 12, true},
        {"sharded", testing_support::tinyLlama("llama", false, 2), 10, false, 10'000},
        {"sharded_bf16_tied", testing_support::tinyLlama("qwen2", true, 2), 10, true, 6'000},
        {"qwen2_bias", testing_support::tinyLlama("qwen2", false, 2), 14},
        {"llama3_rope_24", llama3, 24},
        {"mistral_window", mistral, 15},
        {"linear_rope_attention_bias", linearBias, 12},
        {"lora", testing_support::tinyLlama("llama", false, 2), 12, false, 5'000'000'000ull, true},
        {"rslora_qwen2_bf16", testing_support::tinyLlama("qwen2", true, 2), 12, true, 5'000'000'000ull, true, true},
    };

    json batch = json::array();
    std::vector<std::vector<double>> cli;
    uint64_t seed = 100;
    for (const Case &c : cases) {
        LlamaForCausalLM model = testing_support::randomLlama(c.config, ++seed);
        if (c.bf16)
            model->to(torch::kBFloat16);
        const fs::path modelDir = dir() / ("ref-" + c.name);
        const fs::path adapterDir = dir() / ("ref-" + c.name + "-adapter");
        engine::model::savePretrained(model, modelDir, c.shardBytes);
        if (c.adapter) {
            torch::manual_seed(int64_t(seed));
            const int64_t r = 4;
            writeAdapter(adapterDir, r, 8.0, c.rslora,
                         {{"model.layers.0.self_attn.q_proj", 0.5 * torch::randn({r, 32}), 0.5 * torch::randn({32, r})},
                          {"model.layers.1.self_attn.k_proj", 0.5 * torch::randn({r, 32}), 0.5 * torch::randn({16, r})},
                          {"model.layers.0.mlp.gate_proj", 0.5 * torch::randn({r, 32}), 0.5 * torch::randn({48, r})},
                          {"lm_head", 0.5 * torch::randn({r, 32}), 0.5 * torch::randn({64, r})}});
            if (c.config.tieWordEmbeddings) { // a tied model has no lm_head to adapt
                writeAdapter(adapterDir, r, 8.0, c.rslora,
                             {{"model.layers.0.self_attn.q_proj", 0.5 * torch::randn({r, 32}), 0.5 * torch::randn({32, r})},
                              {"model.layers.1.self_attn.v_proj", 0.5 * torch::randn({r, 32}), 0.5 * torch::randn({16, r})}});
            }
        }
        torch::manual_seed(int64_t(seed) + 1);
        const torch::Tensor idTensor = torch::randint(c.config.vocabSize, {c.length}, torch::kInt64);
        const std::vector<int64_t> ids(idTensor.data_ptr<int64_t>(), idTensor.data_ptr<int64_t>() + c.length);
        const json out = score(modelDir, ids, c.adapter ? adapterDir : fs::path());
        ASSERT_TRUE(out.contains("logprobs")) << c.name;
        cli.push_back(out.at("logprobs").get<std::vector<double>>());
        json entry = {{"model_dir", modelDir.string()}, {"ids", ids}};
        if (c.adapter)
            entry["adapter_dir"] = adapterDir.string();
        batch.push_back(entry);
        if (c.shardBytes < 1'000'000) {
            EXPECT_TRUE(fs::exists(modelDir / "model.safetensors.index.json")) << c.name;
        }
    }
    std::ofstream(dir() / "ref-cases.json") << batch.dump();
    const std::string command = "/usr/bin/python3 '" MODEL_REFERENCE_SCRIPT "' --score '"
        + (dir() / "ref-cases.json").string() + "' '" + (dir() / "ref-out.json").string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
    const json reference = json::parse(slurp(dir() / "ref-out.json"));
    ASSERT_EQ(reference.size(), cases.size());
    for (size_t i = 0; i < cases.size(); ++i) {
        const std::vector<double> expected = reference[i].at("logprobs");
        ASSERT_EQ(cli[i].size(), expected.size()) << cases[i].name;
        double spread = 0;
        for (size_t t = 0; t < expected.size(); ++t) {
            EXPECT_NEAR(cli[i][t], expected[t], 1e-4) << cases[i].name << " position " << t;
            spread = std::max(spread, std::abs(expected[t] - expected[0]));
        }
        EXPECT_GT(spread, 0.1) << cases[i].name << ": log-probs too uniform to test anything";
    }
}

TEST_F(ScoreCliTest, AdapterChangesTheScoreAsMergingItByHandDoes)
{
    const LlamaConfig config = testing_support::tinyLlama("llama", false, 2);
    LlamaForCausalLM model = testing_support::randomLlama(config, 3);
    engine::model::savePretrained(model, dir() / "adapter-base");
    torch::manual_seed(5);
    const torch::Tensor a = torch::randn({2, 32});
    const torch::Tensor b = torch::randn({32, 2});
    writeAdapter(dir() / "adapter", 2, 4.0, false, {{"model.layers.1.self_attn.o_proj", a, b}});
    {
        torch::NoGradGuard noGrad;
        model->model->decoderLayers()[1]->self_attn->o_proj->weight.add_(2.0 * torch::matmul(b, a));
    }
    engine::model::savePretrained(model, dir() / "adapter-merged");
    const std::vector<int64_t> ids = {3, 14, 15, 9, 26, 5, 35, 8, 9, 7};
    const json withAdapter = score(dir() / "adapter-base", ids, dir() / "adapter");
    const json merged = score(dir() / "adapter-merged", ids);
    const json plain = score(dir() / "adapter-base", ids);
    const std::vector<double> x = withAdapter.at("logprobs"), y = merged.at("logprobs"), z = plain.at("logprobs");
    double change = 0;
    for (size_t t = 0; t < x.size(); ++t) {
        EXPECT_NEAR(x[t], y[t], 1e-5) << t;
        change = std::max(change, std::abs(x[t] - z[t]));
    }
    EXPECT_GT(change, 1e-2) << "the adapter must matter";
}

TEST_F(ScoreCliTest, TextIsTokenizedWithTheFolderTokenizer)
{
    const fs::path model = writeTokenizerModel(dir() / "tok-model");
    const ProcessResult r = run({"score", "--model", model.string(), "--text", "hello world hello", "--json"}, "text");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out.at("ids"), json::array({12, 17, 8, 12})) << "hello, Ġworld, Ġ, hello";
    EXPECT_EQ(out.at("logprobs"), score(model, {12, 17, 8, 12}).at("logprobs"));
}

TEST_F(ScoreCliTest, GenerateRunsGreedyAndStopsAtMaxTokens)
{
    const fs::path model = writeTokenizerModel(dir() / "gen-model");
    ProcessResult r = run({"generate", "--model", model.string(), "--prompt", "hello world", "--max-new-tokens", "6",
                           "--no-eos-stop", "--json", "--threads", "1"},
                          "generate");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json out = json::parse(r.out);
    EXPECT_EQ(out.at("prompt_ids"), json::array({12, 17}));
    EXPECT_EQ(out.at("stop_reason"), "max_tokens");
    ASSERT_EQ(out.at("ids").size(), 6u);
    EXPECT_TRUE(out.at("text").is_string());
    // The same ids as greedy decoding in-process (argmax step by step is checked in test_model).
    LlamaForCausalLM loaded = engine::model::loadPretrained(model);
    engine::model::GenerationOptions greedy;
    greedy.maxNewTokens = 6;
    EXPECT_EQ(out.at("ids").get<std::vector<int64_t>>(), engine::model::generate(loaded, {12, 17}, greedy).tokens);

    // With eos stopping the run ends at max tokens or at eos (19), which is then the last id.
    r = run({"generate", "--model", model.string(), "--prompt", "hello", "--max-new-tokens", "40", "--json"}, "eos");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const json eos = json::parse(r.out);
    const std::string reason = eos.at("stop_reason");
    if (reason == "eos")
        EXPECT_EQ(eos.at("ids").back(), 19);
    else
        EXPECT_EQ(reason, "max_tokens");

    // Streaming: the prompt, then the text; the count and reason on stderr.
    r = run({"generate", "--model", model.string(), "--prompt", "hello", "--max-new-tokens", "3", "--no-eos-stop"},
            "stream");
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with("hello")) << r.out;
    EXPECT_NE(r.err.find("3 tokens (max_tokens)"), std::string::npos) << r.err;
}

TEST_F(ScoreCliTest, BadInputExitsNonZeroWithOneLine)
{
    const fs::path model = writeTokenizerModel(dir() / "bad-model");
    const std::string m = model.string();
    expectOneErrorLine(run({"score", "--model", (dir() / "no-such-folder").string(), "--ids", "1,2"}), "no-such-folder",
                       "missing folder");
    expectOneErrorLine(run({"generate", "--model", (dir() / "no-such-folder").string(), "--prompt", "hi"}),
                       "no-such-folder", "generate: missing folder");
    expectOneErrorLine(run({"score", "--model", m, "--ids", "1,2", "--text", "hello"}), "--text", "--ids and --text");
    expectOneErrorLine(run({"score", "--model", m}), "--ids", "neither --ids nor --text");
    expectOneErrorLine(run({"score", "--model", m, "--ids", "1,20,3"}), "token id 20", "id out of the vocabulary");
    expectOneErrorLine(run({"score", "--model", m, "--ids", "4"}), "at least 2 tokens", "one id");
    expectOneErrorLine(run({"score", "--model", m, "--ids", "1,x"}), "--ids", "not a number");
    expectOneErrorLine(run({"generate", "--model", m, "--prompt", "hello", "--top-p", "2"}), "top-p", "bad top-p");

    // A corrupt safetensors file: garbage after a valid-looking length prefix, then a truncated file.
    fs::create_directories(dir() / "corrupt");
    fs::copy_file(model / "config.json", dir() / "corrupt" / "config.json");
    std::string garbage(8, '\0');
    garbage[0] = 40;
    garbage += "{\"a\": not json at all ......................";
    engine::writeFileAtomically(dir() / "corrupt" / "model.safetensors", garbage);
    expectOneErrorLine(run({"score", "--model", (dir() / "corrupt").string(), "--ids", "1,2"}), "model.safetensors",
                       "corrupt safetensors");
    const std::string bytes = slurp(model / "model.safetensors");
    engine::writeFileAtomically(dir() / "corrupt" / "model.safetensors", bytes.substr(0, bytes.size() - 100));
    expectOneErrorLine(run({"score", "--model", (dir() / "corrupt").string(), "--ids", "1,2"}), "model.safetensors",
                       "truncated safetensors");
    // No weights at all.
    fs::remove(dir() / "corrupt" / "model.safetensors");
    expectOneErrorLine(run({"score", "--model", (dir() / "corrupt").string(), "--ids", "1,2"}), "no weights found",
                       "no weights");
    // An adapter the engine refuses.
    writeAdapter(dir() / "dora", 2, 4.0, false, {{"model.layers.0.self_attn.q_proj", torch::ones({2, 32}), torch::ones({32, 2})}});
    json dora = json::parse(slurp(dir() / "dora" / "adapter_config.json"));
    dora["use_dora"] = true;
    engine::writeFileAtomically(dir() / "dora" / "adapter_config.json", dora.dump());
    expectOneErrorLine(run({"score", "--model", m, "--ids", "1,2", "--adapter", (dir() / "dora").string()}), "use_dora",
                       "DoRA adapter");
}
