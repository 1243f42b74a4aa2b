#include "engine/plan/plansettings.h"

#include "engine/core/error.h"

namespace engine::plan {

const char *strategyName(Strategy strategy)
{
    switch (strategy) {
    case Strategy::Auto: return "auto";
    case Strategy::Balanced: return "balanced";
    case Strategy::BalancedLow0: return "balanced_low_0";
    case Strategy::Sequential: return "sequential";
    }
    return "auto";
}

Strategy parseStrategy(const std::string &text, const std::string &what)
{
    for (const Strategy s : {Strategy::Auto, Strategy::Balanced, Strategy::BalancedLow0, Strategy::Sequential}) {
        if (text == strategyName(s))
            return s;
    }
    throw invalidInput(what + " is \"" + text + "\": use auto, balanced, balanced_low_0 or sequential");
}

const char *trainModeName(TrainMode mode)
{
    switch (mode) {
    case TrainMode::None: return "none";
    case TrainMode::Lora: return "lora";
    case TrainMode::Full: return "full";
    }
    return "none";
}

TrainMode parseTrainMode(const std::string &text, const std::string &what)
{
    for (const TrainMode m : {TrainMode::None, TrainMode::Lora, TrainMode::Full}) {
        if (text == trainModeName(m))
            return m;
    }
    throw invalidInput(what + " is \"" + text + "\": use none, lora or full");
}

std::vector<std::string> defaultLoraTargets(const std::string &modelType)
{
    if (modelType == "chatglm")
        return {"query_key_value"};
    if (modelType == "gpt2")
        return {"c_attn"};
    if (modelType == "phi3")
        return {"qkv_proj"}; // q, k and v in one Linear, PEFT's default target for Phi-3
    return {"q_proj", "v_proj"};
}

} // namespace engine::plan
