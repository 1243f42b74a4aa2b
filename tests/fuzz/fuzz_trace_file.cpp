// Trace files of the Python recorder (JSONL: a header, records, an end record), read and diagnosed
// as `tunebench inspect --trace` and the Inspect page do.

#include "engine/inspect/tracefile.h"
#include "fuzzsupport.h"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const std::string text(fuzz::asText(data, size));
    fuzz::expectCleanError([&] {
        std::istringstream in(text);
        engine::inspect::readTrace(in, "trace.jsonl");
    });
    const auto path = fuzz::writeScratch("trace.jsonl", text);
    fuzz::expectCleanError([&] { engine::inspect::inspectTraceFile(path); });
    return 0;
}
