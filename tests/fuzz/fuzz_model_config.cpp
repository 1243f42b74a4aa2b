// config.json of any architecture: the module tree the planner builds from it (llama, mistral,
// qwen2, gpt2, chatglm, ... and the fallbacks), the plan model, and the LLaMA config the trainer reads.

#include "engine/model/configfields.h"
#include "engine/model/llamaconfig.h"
#include "engine/model/moduletree.h"
#include "engine/plan/planmodel.h"
#include "fuzzsupport.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const auto path = fuzz::writeScratch("config.json", fuzz::asText(data, size));
    fuzz::expectCleanError([&] {
        std::string source;
        const nlohmann::json config = engine::model::configfields::readConfigFile(path, source);
        fuzz::expectCleanError([&] { engine::model::moduleTreeFromConfig(config, source); });
        fuzz::expectCleanError([&] { engine::plan::planModelFromConfig(config, source); });
        fuzz::expectCleanError([&] { engine::model::LlamaConfig::fromJson(config, source); });
    });
    return 0;
}
