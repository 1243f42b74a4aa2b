#include "engine/train/trainingparams.h"

#include "engine/train/settingschema.h"

#include "engine/core/error.h"
#include "engine/core/device.h"
#include "engine/core/threads.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace engine::train {

const char *methodName(TrainingMethod method)
{
    return method == TrainingMethod::Lora ? "lora" : "full";
}

const char *precisionName(Precision precision)
{
    switch (precision) {
    case Precision::Bf16: return "bf16";
    case Precision::Fp16: return "fp16";
    case Precision::Fp32: break;
    }
    return "fp32";
}

void requireFp16Device(Precision precision, const std::vector<std::string> &devices)
{
    const bool onCuda = std::any_of(devices.begin(), devices.end(), [](const std::string &d) { return d.rfind("cuda", 0) == 0; });
    if (precision == Precision::Fp16 && !onCuda) {
        throw invalidInput("precision fp16 needs a CUDA device (--device cuda, or a device map with cuda:N): "
                           "fp16 with loss scaling is for GPUs; on the CPU use bf16");
    }
}

const char *optimizerName(OptimizerKind kind)
{
    return kind == OptimizerKind::AdamW ? "adamw" : "sgd";
}

int64_t TrainingParams::totalSteps(int64_t sequences) const
{
    if (epochs <= 0)
        return steps;
    const int64_t perStep = batchSize * gradAccumulation * distributed.worldSize;
    return epochs * std::max<int64_t>(1, (sequences + perStep - 1) / perStep);
}

void TrainingParams::validate() const { validateSettings(*this); }

nlohmann::json TrainingParams::toJson() const
{
    nlohmann::json json = settingsToJson(*this);
    if (distributed.distributed()) { // the job's shape, recorded with a data-parallel run's settings
        json["world_size"] = distributed.worldSize;
        json["launcher"] = distributed.launcher;
    }
    return json;
}

nlohmann::json devicePlacementJson(const std::vector<std::pair<std::string, std::string>> &placement)
{
    nlohmann::json map = nlohmann::json::array();
    for (const auto &[module, target] : placement)
        map.push_back({module, target});
    return map;
}

nlohmann::json TrainingParams::devicePlacementJson() const
{
    return devicePlacement.empty() ? nlohmann::json(nullptr) : train::devicePlacementJson(devicePlacement);
}

} // namespace engine::train
