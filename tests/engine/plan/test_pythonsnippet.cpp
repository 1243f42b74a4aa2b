// The exported Python script: it compiles, and its folder, Auto class, remote code, dtype, budgets and
// LoRA settings are the plan's, for every architecture tunebench plans and every training mode.

#include "engine/plan/devicemapjson.h"
#include "engine/plan/planner.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

using namespace engine::plan;

namespace {

const std::filesystem::path kConfigs = std::filesystem::path(TUNEBENCH_TEST_DATA) / "model" / "configs";
const char *const kPython = "/usr/bin/python3";

struct Architecture {
    const char *config;
    const char *modelType;
    const char *autoClass;
    bool trustRemoteCode;
    std::vector<std::string> loraTargets; // the defaults
};

const std::vector<Architecture> &architectures()
{
    static const std::vector<Architecture> all = {
        {"llama-2-7b.json", "llama", "AutoModelForCausalLM", false, {"q_proj", "v_proj"}},
        {"mistral-7b-v0.1.json", "mistral", "AutoModelForCausalLM", false, {"q_proj", "v_proj"}},
        {"qwen2-0.5b.json", "qwen2", "AutoModelForCausalLM", false, {"q_proj", "v_proj"}},
        {"chatglm-6b.json", "chatglm", "AutoModel", true, {"query_key_value"}},
        {"gpt2.json", "gpt2", "AutoModelForCausalLM", false, {"c_attn"}},
    };
    return all;
}

PlanSettings settingsFor(TrainMode mode)
{
    PlanSettings s;
    s.train = mode;
    s.dtype = "float16";
    s.loraRank = 32;
    s.loraAlpha = 64;
    s.loraDropout = 0.1;
    s.batchSize = 1;
    s.checkpointing = mode != TrainMode::None;
    return s;
}

// The first capture of `pattern` in `text`, or "" (the test then reports the text).
std::string capture(const std::string &text, const std::string &pattern)
{
    std::smatch m;
    return std::regex_search(text, m, std::regex(pattern)) ? m[1].str() : std::string();
}

// Keys of the MAX_MEMORY literal, as written: 0, 1, "cpu".
std::vector<std::string> maxMemoryKeys(const std::string &py)
{
    std::vector<std::string> keys;
    const std::string body = capture(py, "MAX_MEMORY = \\{([^}]*)\\}");
    const std::regex key("(\\d+|\"\\w+\"): \\d+");
    for (auto it = std::sregex_iterator(body.begin(), body.end(), key); it != std::sregex_iterator(); ++it)
        keys.push_back((*it)[1].str());
    return keys;
}

bool pythonAvailable() { return std::filesystem::exists(kPython); }

// Empty when `py` parses as Python 3; else python's error.
std::string pythonSyntaxError(const std::string &py, const std::string &name)
{
    const testing_support::TempDir dir("pysnippet");
    const auto script = dir / (name + ".py"), errors = dir / "errors.txt";
    std::ofstream(script) << py;
    const std::string command = std::string(kPython) + " -c 'import ast,sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' '"
                                + script.string() + "' 2> '" + errors.string() + "'";
    if (std::system(command.c_str()) == 0)
        return {};
    std::ifstream in(errors);
    return std::string(std::istreambuf_iterator<char>(in), {}) + "\n" + py;
}

} // namespace

TEST(PythonSnippet, LoaderPerArchitecture)
{
    EXPECT_EQ(pythonLoader("chatglm", {}).autoClass, "AutoModel");
    EXPECT_TRUE(pythonLoader("chatglm", {}).trustRemoteCode);
    for (const char *type : {"llama", "mistral", "qwen2", "gpt2"}) {
        EXPECT_EQ(pythonLoader(type, {}).autoClass, "AutoModelForCausalLM") << type;
        EXPECT_FALSE(pythonLoader(type, {}).trustRemoteCode) << type;
    }
    // Remote code (auto_map) is trusted; the causal-LM class when auto_map has one, else AutoModel.
    const PythonLoader causal = pythonLoader("baichuan", {"AutoConfig", "AutoModelForCausalLM"});
    EXPECT_EQ(causal.autoClass, "AutoModelForCausalLM");
    EXPECT_TRUE(causal.trustRemoteCode);
    EXPECT_EQ(pythonLoader("custom", {"AutoConfig", "AutoModel"}).autoClass, "AutoModel");
    EXPECT_TRUE(pythonLoader("custom", {"AutoConfig"}).trustRemoteCode);
    EXPECT_FALSE(pythonLoader("unknown", {}).trustRemoteCode);
}

// Regression: a plan made from chatglm-6b/config.json loaded the file, not the folder.
TEST(PythonSnippet, LoadsTheFolderNotTheConfig)
{
    EXPECT_EQ(modelFolder("chatglm-6b/config.json"), "chatglm-6b");
    EXPECT_EQ(modelFolder("/models/chatglm-6b/config.json"), "/models/chatglm-6b");
    EXPECT_EQ(modelFolder("config.json"), ".");
    EXPECT_EQ(modelFolder("/models/chatglm-6b"), "/models/chatglm-6b");

    const Planner planner(planModelFromPath(kConfigs / "chatglm-6b.json"));
    const Plan plan = planner.plan(parseMaxMemory("0=15GiB,1=15GiB,cpu=13GiB"), settingsFor(TrainMode::Lora));
    const std::string py = pythonSnippet(plan, "chatglm-6b/config.json");
    EXPECT_EQ(capture(py, "MODEL_FOLDER = \"([^\"]*)\""), "chatglm-6b") << py;
    EXPECT_EQ(py.find("config.json"), std::string::npos) << py;
    EXPECT_NE(py.find("AutoModel.from_pretrained(\n        MODEL_FOLDER,\n        trust_remote_code=TRUST_REMOTE_CODE"),
              std::string::npos) << py;
    EXPECT_NE(py.find("TRUST_REMOTE_CODE = True"), std::string::npos) << py;
    // Quotes and backslashes in a path stay inside the string literal.
    EXPECT_NE(pythonSnippet(plan, "it's \"odd\"\\dir").find("MODEL_FOLDER = \"it's \\\"odd\\\"\\\\dir\"\n"),
              std::string::npos);
}

TEST(PythonSnippet, MatchesThePlanForEveryArchitectureAndMode)
{
    const bool python = pythonAvailable();
    for (const Architecture &arch : architectures()) {
        const Planner planner(planModelFromPath(kConfigs / arch.config));
        for (TrainMode mode : {TrainMode::None, TrainMode::Lora, TrainMode::Full}) {
            SCOPED_TRACE(std::string(arch.config) + " " + trainModeName(mode));
            const Plan plan = planner.plan(parseMaxMemory("0=15GiB,1=15GiB,cpu=64GiB"), settingsFor(mode));
            const std::string py = pythonSnippet(plan, (kConfigs / arch.config).string());

            EXPECT_EQ(capture(py, "MODEL_FOLDER = \"([^\"]*)\""), kConfigs.string()) << py;
            EXPECT_EQ(capture(py, "model = (\\w+)\\.from_pretrained\\("), arch.autoClass) << py;
            EXPECT_EQ(capture(py, "from transformers import (\\w+), AutoTokenizer"), arch.autoClass) << py;
            EXPECT_EQ(capture(py, "TRUST_REMOTE_CODE = (\\w+)"), arch.trustRemoteCode ? "True" : "False") << py;
            EXPECT_EQ(capture(py, "TORCH_DTYPE = (\\S+)"), "torch.float16") << py;
            for (const char *argument : {"device_map=DEVICE_MAP", "max_memory=MAX_MEMORY", "torch_dtype=TORCH_DTYPE"})
                EXPECT_NE(py.find(argument), std::string::npos) << argument << "\n" << py;
            EXPECT_EQ(maxMemoryKeys(py), (std::vector<std::string>{"0", "1", "\"cpu\""})) << py;
            for (const Placement &p : plan.deviceMap)
                EXPECT_NE(py.find("    \"" + p.module + "\": " + (p.device == "cpu" || p.device == "disk" ? "\"" + p.device + "\"" : p.device) + ",\n"),
                          std::string::npos) << p.module << "\n" << py;

            const bool lora = mode == TrainMode::Lora;
            EXPECT_EQ(py.find("from peft import LoraConfig, get_peft_model") != std::string::npos, lora) << py;
            if (lora) {
                EXPECT_EQ(capture(py, "LoraConfig\\(r=(\\d+)"), "32") << py;
                EXPECT_EQ(capture(py, "lora_alpha=([0-9.]+)"), "64") << py;
                EXPECT_EQ(capture(py, "lora_dropout=([0-9.]+)"), "0.1") << py;
                std::string targets;
                for (const std::string &t : arch.loraTargets)
                    targets += (targets.empty() ? "\"" : ", \"") + t + "\"";
                EXPECT_EQ(capture(py, "target_modules=\\[([^\\]]*)\\]"), targets) << py;
                EXPECT_NE(py.find("model.enable_input_require_grads()"), std::string::npos) << py;
            }
            if (mode == TrainMode::None) {
                EXPECT_NE(py.find("model.eval()"), std::string::npos) << py;
                EXPECT_EQ(py.find("optimizer"), std::string::npos) << py;
            } else {
                // The pitfalls the lint names, avoided: trainable-only optimizer, cross-device clipping, no re-dispatch.
                EXPECT_NE(py.find("torch.optim.AdamW(trainable_parameters(model)"), std::string::npos) << py;
                EXPECT_NE(py.find("if p.requires_grad"), std::string::npos) << py;
                EXPECT_NE(py.find("clip_grad_norm(trainable_parameters(model), MAX_GRAD_NORM)"), std::string::npos) << py;
                EXPECT_NE(py.find("labels = input_ids.to(logits.device)"), std::string::npos) << py;
                EXPECT_NE(py.find("model.gradient_checkpointing_enable()"), std::string::npos) << py;
                EXPECT_EQ(py.find("prepare(model"), py.find("prepare(model)")) << "only in the warning comment";
                EXPECT_EQ(py.find(".cuda()"), py.find(".cuda(),")) << "only in the warning comment";
            }
            if (python) {
                EXPECT_EQ(pythonSyntaxError(py, std::string(arch.modelType) + "-" + trainModeName(mode)), "");
            }
        }
    }
    if (!python)
        GTEST_SKIP() << kPython << " is absent: the scripts' syntax was not checked";
}

TEST(PythonSnippet, DefaultsAndAsStoredDtype)
{
    const Planner planner(planModelFromPath(kConfigs / "llama-2-7b.json"));
    PlanSettings s;
    s.train = TrainMode::Lora;
    const std::string py = pythonSnippet(planner.plan(parseMaxMemory("0=24GB,cpu=64GB"), s), "/models/llama");
    EXPECT_EQ(capture(py, "MODEL_FOLDER = \"([^\"]*)\""), "/models/llama");
    EXPECT_EQ(capture(py, "TORCH_DTYPE = (\\S+)"), "\"auto\"") << py;
    EXPECT_EQ(capture(py, "LoraConfig\\(r=(\\d+)"), "8") << py;
    EXPECT_EQ(capture(py, "lora_alpha=([0-9.]+)"), "16") << py; // tunebench train's default
    EXPECT_EQ(capture(py, "lora_dropout=([0-9.]+)"), "0.05") << py;
    EXPECT_EQ(py.find("gradient_checkpointing_enable"), std::string::npos) << py;
}

// Runs each architecture's script (every mode across them) as written on the CPU, with stand-ins for
// transformers and peft that record what the script passes them: the folder, the class, the map and
// budgets reach from_pretrained; the optimizer gets the trainable parameters only; the script's
// cross-device clipping equals torch.nn.utils.clip_grad_norm_ on one device; a step gives a loss.
TEST(PythonSnippet, RunsAsWrittenWithStandInsForTransformersAndPeft)
{
    if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0)
        GTEST_SKIP() << "/usr/bin/python3 cannot import torch (install python3-torch)";
    const std::vector<std::pair<const char *, TrainMode>> cases = {{"chatglm-6b.json", TrainMode::Lora},
                                                                   {"llama-2-7b.json", TrainMode::Full},
                                                                   {"qwen2-0.5b.json", TrainMode::None},
                                                                   {"gpt2.json", TrainMode::Lora},
                                                                   {"mistral-7b-v0.1.json", TrainMode::Lora}};
    const testing_support::TempDir dir("pyrun");
    for (const auto &[config, mode] : cases) {
        SCOPED_TRACE(std::string(config) + " " + trainModeName(mode));
        const Architecture &arch = *std::find_if(architectures().begin(), architectures().end(),
                                                 [&](const Architecture &a) { return std::string(a.config) == config; });
        const Plan plan = Planner(planModelFromPath(kConfigs / config)).plan(parseMaxMemory("0=15GiB,1=15GiB,cpu=64GiB"),
                                                                              settingsFor(mode));
        const auto script = dir / (std::string(arch.modelType) + ".py"), out = dir / "out.txt";
        std::ofstream(script) << pythonSnippet(plan, (kConfigs / config).string());
        const std::string command = std::string(kPython) + " '" PLAN_SCRIPT_RUNNER "' '" + script.string() + "' > '"
                                    + out.string() + "' 2>&1";
        const int rc = std::system(command.c_str());
        std::ifstream in(out);
        const std::string text((std::istreambuf_iterator<char>(in)), {});
        ASSERT_EQ(rc, 0) << text;
        const nlohmann::json calls = nlohmann::json::parse(text.substr(text.rfind("\n{") + 1));

        EXPECT_EQ(calls["path"], kConfigs.string());
        EXPECT_EQ(calls["auto_class"], arch.autoClass);
        EXPECT_EQ(calls["kwargs"]["trust_remote_code"], arch.trustRemoteCode);
        EXPECT_EQ(calls["tokenizer"]["trust_remote_code"], arch.trustRemoteCode);
        EXPECT_EQ(calls["kwargs"]["torch_dtype"], "torch.float16");
        EXPECT_EQ(calls["kwargs"]["device_map"], nlohmann::json(deviceMapJson(plan)));
        EXPECT_EQ(calls["kwargs"]["max_memory"], nlohmann::json(exportJson(plan)["max_memory"]));
        if (mode == TrainMode::None) {
            EXPECT_NE(text.find("next token:"), std::string::npos) << text;
            continue;
        }
        EXPECT_NE(text.find("loss: "), std::string::npos) << text;
        EXPECT_EQ(calls["optimized_all_trainable"], true);
        EXPECT_EQ(calls["optimized"], mode == TrainMode::Lora ? 2 : 5) << "LoRA's stand-in trains one Linear";
        EXPECT_EQ(calls["clip_matches_torch"], true);
        EXPECT_EQ(calls.value("checkpointing", false), true);
        if (mode == TrainMode::Lora) {
            EXPECT_EQ(calls["lora"]["r"], 32);
            EXPECT_EQ(calls["lora"]["lora_alpha"], 64);
            EXPECT_EQ(calls["lora"]["lora_dropout"], 0.1);
            EXPECT_EQ(calls["lora"]["target_modules"], nlohmann::json(arch.loraTargets));
        }
    }
}
