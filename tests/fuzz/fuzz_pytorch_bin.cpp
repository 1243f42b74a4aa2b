// pytorch_model.bin: the torch.save zip container (central directory, zip64, entry bounds, CRC).
// The restricted unpickler that reads data.pkl builds torch tensors, so it lives in engine_io_torch
// and is not fuzzed here (this build has no libtorch); its bad-input tests run under ASan in
// scripts/test-sanitize.sh.

#include "engine/io/pytorchbinarchive.h"
#include "fuzzsupport.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const auto path = fuzz::writeScratch("pytorch_model.bin", fuzz::asText(data, size));
    fuzz::expectCleanError([&] {
        engine::io::PytorchBinArchive archive(path);
        for (const char *name : {"data.pkl", "version", "byteorder", "data/0", "data/1"}) {
            const std::string entry = archive.prefix() + name;
            if (!archive.hasEntry(entry))
                continue;
            fuzz::expectCleanError([&] { archive.readEntry(entry, 1 << 20); });
            fuzz::expectCleanError([&] {
                const uint64_t bytes = archive.entrySize(entry);
                if (bytes > (1 << 20))
                    return;
                std::vector<char> buffer(static_cast<size_t>(bytes));
                archive.readEntryInto(entry, buffer.data(), bytes);
            });
        }
    });
    return 0;
}
