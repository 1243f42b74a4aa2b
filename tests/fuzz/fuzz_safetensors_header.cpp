// The header of a .safetensors file: the 8-byte length prefix, the JSON after it and the layout
// checks, exactly as readSafetensorsHeader reads a file (the input is the whole file).

#include "engine/io/safetensorsheader.h"
#include "engine/io/safetensorslayout.h"
#include "fuzzsupport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    fuzz::expectCleanError([&] {
        const uint64_t length = engine::io::checkSafetensorsHeaderLength(data, size, "fuzz.safetensors");
        const std::string_view json = fuzz::asText(data + 8, static_cast<size_t>(length));
        const uint64_t fileSize = size;
        engine::io::parseSafetensorsHeader(json, fileSize, "fuzz.safetensors");
    });
    // The file reader too (same checks, through the file).
    const auto path = fuzz::writeScratch("model.safetensors", fuzz::asText(data, size));
    fuzz::expectCleanError([&] { engine::io::readSafetensorsHeader(path); });
    return 0;
}
