// Accelerate-format export and import, the --json schema, and the Python snippet.

#include "engine/plan/devicemapjson.h"
#include "engine/plan/planner.h"
#include "planfixtures.h"
#include "support/expecterror.h"
#include "support/tempdir.h"

#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

using namespace engine::plan;
using engine::ErrorKind;
using nlohmann::json;
using testing_support::expectError;

namespace {

Plan tinyPlan(const Planner &planner)
{
    PlanSettings s;
    s.strategy = Strategy::Sequential;
    return planner.plan(parseMaxMemory("0=250,1=1000,cpu=1000"), s);
}


/// The Python code of `py` without its comments (a '#' outside string literals to the line's end), so that
/// a call named in a comment is not taken for a call; with `blankStrings`, the string literals' contents
/// become '_' too (a call inside a string is no call either).
std::string withoutComments(const std::string &py, bool blankStrings = false)
{
    std::string code;
    char quote = 0;
    for (size_t i = 0; i < py.size(); ++i) {
        const char c = py[i];
        if (quote) {
            if (c == '\\' && i + 1 < py.size()) {
                code += blankStrings ? "__" : py.substr(i, 2);
                ++i;
            } else if (c == quote) {
                code += c;
                quote = 0;
            } else {
                code += blankStrings ? '_' : c;
            }
        } else if (c == '#') {
            while (i + 1 < py.size() && py[i + 1] != '\n')
                ++i;
        } else {
            if (c == '"' || c == '\'')
                quote = c;
            code += c;
        }
    }
    return code;
}

std::string trimmed(const std::string &text)
{
    const size_t begin = text.find_first_not_of(" \t\n");
    return begin == std::string::npos ? std::string() : text.substr(begin, text.find_last_not_of(" \t\n") - begin + 1);
}

/// The argument lists of every call of `name` in `code` (a call of a.b.name( counts as name's), each split
/// at its top-level commas and trimmed; keyword arguments stay "key=value".
std::vector<std::vector<std::string>> callsOf(const std::string &code, const std::string &name)
{
    std::vector<std::vector<std::string>> calls;
    const auto identifierChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    for (size_t at = code.find(name); at != std::string::npos; at = code.find(name, at + 1)) {
        if (at > 0 && identifierChar(code[at - 1]))
            continue; // a longer name that ends in `name`
        size_t open = at + name.size();
        while (open < code.size() && (code[open] == ' ' || code[open] == '\t'))
            ++open;
        if (open >= code.size() || code[open] != '(')
            continue;
        std::vector<std::string> arguments(1);
        int depth = 0;
        for (size_t i = open + 1; i < code.size(); ++i) {
            const char c = code[i];
            if (c == ')' && depth == 0)
                break;
            if (c == '(' || c == '[' || c == '{')
                ++depth;
            else if (c == ')' || c == ']' || c == '}')
                --depth;
            if (c == ',' && depth == 0)
                arguments.emplace_back();
            else
                arguments.back() += c;
        }
        for (std::string &argument : arguments)
            argument = trimmed(argument);
        if (arguments.size() == 1 && arguments[0].empty())
            arguments.clear();
        calls.push_back(arguments);
    }
    return calls;
}

/// Whether an argument list passes `value` (positionally or as a keyword's value).
bool passes(const std::vector<std::string> &arguments, const std::string &value)
{
    for (const std::string &argument : arguments) {
        const size_t equals = argument.find('=');
        if (argument == value || (equals != std::string::npos && trimmed(argument.substr(equals + 1)) == value))
            return true;
    }
    return false;
}

/// Whether some call of `name` passes `value`.
bool anyCallPasses(const std::string &code, const std::string &name, const std::string &value)
{
    for (const std::vector<std::string> &arguments : callsOf(code, name)) {
        if (passes(arguments, value))
            return true;
    }
    return false;
}

/// The pitfalls of training a dispatched model: each one found in `py`, as text ("" when none).
std::string pitfallsIn(const std::string &py)
{
    const std::string code = withoutComments(py, true);
    std::string found;
    if (anyCallPasses(code, "prepare", "model"))
        found += "accelerator.prepare(model...) wraps the dispatched model; ";
    for (const char *moving : {"model.to", "model.cuda", "DistributedDataParallel", "DataParallel"}) {
        if (!callsOf(code, moving).empty())
            found += std::string(moving) + "(...) moves or wraps the dispatched model; ";
    }
    if (!callsOf(code, "torch.nn.utils.clip_grad_norm_").empty() || !callsOf(code, "nn.utils.clip_grad_norm_").empty())
        found += "torch's clip_grad_norm_ fails across devices; ";
    return found;
}

} // namespace

TEST(DeviceMapJson, AccelerateFormatWithIntegerGpus)
{
    const Planner planner(plan_fixtures::tinyModel());
    const Plan plan = tinyPlan(planner);
    const json map = deviceMapJson(plan);
    EXPECT_EQ(map["embed"], 1);
    EXPECT_TRUE(map["embed"].is_number_integer());
    EXPECT_EQ(map["layers.3"], "cpu");
    const json file = exportJson(plan);
    EXPECT_EQ(file["max_memory"]["0"], 250);
    EXPECT_EQ(file["max_memory"]["cpu"], 1000);
    EXPECT_FALSE(file["max_memory"].contains("disk"));

    const json out = planJson(plan);
    for (const char *key : {"device_map", "devices", "peak", "verdict", "lint", "explanations"})
        EXPECT_TRUE(out.contains(key)) << key;
    EXPECT_EQ(out["verdict"], "fits");
    EXPECT_EQ(out["devices"][0]["device"], 0);
    EXPECT_EQ(out["devices"][1]["weights"], 1000);
    EXPECT_EQ(out["explanations"].size(), plan.deviceMap.size());
    EXPECT_TRUE(out["peak"].contains("phase"));
}

TEST(DeviceMapJson, ImportRoundTripAndValidation)
{
    const Planner planner(plan_fixtures::tinyModel());
    const Plan plan = tinyPlan(planner);
    const Plan back = planner.revalidate(importDeviceMap(exportJson(plan), "map.json", {}, plan.settings));
    EXPECT_EQ(deviceMapJson(back), deviceMapJson(plan));
    ASSERT_EQ(back.usage.size(), plan.usage.size());
    for (size_t i = 0; i < plan.usage.size(); ++i)
        EXPECT_EQ(back.usage[i].memory, plan.usage[i].memory);
    EXPECT_EQ(back.devices[0].budget, 250);

    // A bare device_map with "cuda:N" values, and parameterless modules Accelerate's maps can name.
    const json bare = {{"embed", "cuda:0"}, {"layers", 0}, {"layers.0.rotary_emb", 0}, {"norm", "cpu"}, {"lm_head", "disk"}};
    const Plan fromBare = planner.revalidate(importDeviceMap(bare, "bare.json", parseMaxMemory("0=10000,cpu=1000"), {}));
    EXPECT_EQ(fromBare.usageOf("0")->memory.weights, 1300);
    EXPECT_EQ(fromBare.usageOf("disk")->memory.weights, 100);

    const auto devices = parseMaxMemory("0=10000,cpu=1000");
    expectError([&] { planner.revalidate(importDeviceMap({{"embed", 0}, {"encoder", 0}, {"layers", 0}, {"norm", 0}, {"lm_head", 0}}, "m.json", devices, {})); },
                ErrorKind::InvalidInput, "\"encoder\" names no module");
    expectError([&] { planner.revalidate(importDeviceMap({{"embed", 0}, {"layers.0", 0}}, "m.json", devices, {})); },
                ErrorKind::InvalidInput, "unplaced: layers.1.attn.weight");
    expectError([&] { planner.revalidate(importDeviceMap({{"", 0}, {"embed", "cpu"}}, "m.json", devices, {})); },
                ErrorKind::InvalidInput, "overlap");
    expectError([&] { importDeviceMap({{"embed", "tpu"}}, "m.json", devices, {}); }, ErrorKind::InvalidInput,
                "device_map[\"embed\"]");
    expectError([&] { importDeviceMap({{"", 3}}, "m.json", devices, {}); }, ErrorKind::InvalidInput,
                "which --max-memory does not give");
    expectError([&] { importDeviceMap(json::array(), "m.json", devices, {}); }, ErrorKind::InvalidInput, "JSON object");
    expectError([&] { importDeviceMap(json::object(), "m.json", devices, {}); }, ErrorKind::InvalidInput, "empty");
}

// The file reader both `plan --import` and the Plan page's Import use: the export file reads back to the
// same map; a missing file, text that is not JSON and brackets nested past the limit (a stack overflow
// where a copy or dump() recurses) each get one error naming the file.
TEST(DeviceMapJson, ReadsAMapFileAndNamesWhatIsWrongWithIt)
{
    const Planner planner(plan_fixtures::tinyModel());
    const Plan plan = tinyPlan(planner);
    const testing_support::TempDir dir("devicemapfile");
    const auto write = [&](const std::string &name, const std::string &text) {
        std::ofstream(dir / name) << text;
        return (dir / name).string();
    };
    const std::string good = write("map.json", exportJson(plan).dump(2));
    const Plan back = planner.revalidate(importDeviceMap(readDeviceMapFile(good), good, {}, plan.settings));
    EXPECT_EQ(deviceMapJson(back), deviceMapJson(plan));

    expectError([&] { readDeviceMapFile(dir / "absent.json"); }, ErrorKind::Io, "absent.json");
    const std::string broken = write("broken.json", R"({"device_map": {"embed": 0,)");
    expectError([&] { readDeviceMapFile(broken); }, ErrorKind::InvalidInput, broken + ": not valid JSON");
    const std::string deep = write("deep.json", R"({"device_map": {"embed": )" + std::string(200000, '[') +
                                                    std::string(200000, ']') + "}}");
    expectError([&] { readDeviceMapFile(deep); }, ErrorKind::InvalidInput, deep + ": JSON nests deeper than 256 levels");
}

// The snippet loads with the plan's map and budgets, gives the optimizer the trainable parameters only,
// clips with Accelerate's cross-device norm, and never moves or wraps the dispatched model: no call
// prepare(...) with `model` among its arguments (a comment may name it), no .to/.cuda, no DDP.
TEST(DeviceMapJson, PythonSnippetAvoidsThePitfalls)
{
    // The checker itself finds each pitfall in code and ignores it in comments and strings.
    EXPECT_EQ(pitfallsIn("# never accelerator.prepare(model)\nx = \"prepare(model)\"\nopt = accelerator.prepare(optimizer)\n"), "");
    EXPECT_NE(pitfallsIn("model, opt = accelerator.prepare(\n    model, optimizer)\n"), "");
    EXPECT_NE(pitfallsIn("opt, model = accelerator.prepare(optimizer, model)  # prepare(optimizer)\n"), "");
    EXPECT_NE(pitfallsIn("model = accelerator.prepare(model=model)\n"), "");
    EXPECT_NE(pitfallsIn("model.to(\"cuda\")\n"), "");
    EXPECT_NE(pitfallsIn("torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"), "");
    EXPECT_EQ(pitfallsIn("model.todo = 1\nmy_model.to(x)\n"), "");

    const Planner planner(plan_fixtures::tinyModel());
    PlanSettings s;
    s.train = TrainMode::Full;
    const Plan plan = planner.plan(parseMaxMemory("0=100000,cpu=100000"), s);
    const std::string py = pythonSnippet(plan, "/models/tiny");
    const std::string code = withoutComments(py, true);
    EXPECT_EQ(pitfallsIn(py), "") << py;
    // The model loads once, with the plan's map and budgets (named constants at the top of the script).
    EXPECT_TRUE(anyCallPasses(code, "from_pretrained", "DEVICE_MAP")) << py;
    EXPECT_TRUE(anyCallPasses(code, "from_pretrained", "MAX_MEMORY")) << py;
    EXPECT_NE(py.find("\"/models/tiny\""), std::string::npos) << py;
    // AdamW over the trainable parameters only, and those are the ones that require a gradient.
    const auto optimizers = callsOf(code, "AdamW");
    ASSERT_EQ(optimizers.size(), 1u) << py;
    ASSERT_FALSE(optimizers[0].empty()) << py;
    EXPECT_EQ(optimizers[0][0], "trainable_parameters(model)") << py;
    EXPECT_NE(code.find("if p.requires_grad"), std::string::npos) << py;
}
