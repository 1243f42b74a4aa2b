// model.safetensors.index.json / pytorch_model.bin.index.json: which shard holds which tensor.

#include "engine/io/shardindex.h"
#include "fuzzsupport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string text(fuzz::asText(data, size));
    fuzz::expectCleanError([&] {
        engine::io::parseShardIndex(text, "/models/fuzz", "/models/fuzz/model.safetensors.index.json");
    });
    return 0;
}
