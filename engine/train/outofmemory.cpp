#include "engine/train/outofmemory.h"

#include <regex>

namespace engine::train {

std::string outOfMemoryDevice(const std::string &allocatorMessage, const std::string &fallback)
{
    static const std::regex gpu(R"(GPU (\d+))");
    std::smatch match;
    if (std::regex_search(allocatorMessage, match, gpu))
        return "cuda:" + match[1].str();
    for (const char *cpu : {"CPUAllocator", "can't allocate memory", "not enough memory", "bad_alloc", "host memory"}) {
        if (allocatorMessage.find(cpu) != std::string::npos)
            return "cpu";
    }
    return fallback;
}

std::string outOfMemoryMessage(const std::string &allocatorMessage, const OutOfMemoryContext &c)
{
    const std::string device = outOfMemoryDevice(allocatorMessage, c.defaultDevice);
    // The allocator's own first line says how much it wanted; the rest (a backtrace, allocator tuning) is noise here.
    std::string said = allocatorMessage.substr(0, allocatorMessage.find('\n'));
    if (said.size() > 240)
        said = said.substr(0, 237) + "...";
    std::string text = "out of memory on " + device + " in " + c.phase;
    if (c.step > 0)
        text += " at step " + std::to_string(c.step);
    text += " (" + said + "): ";
    text += "lower --batch-size (now " + std::to_string(c.batchSize) + "; --grad-accum keeps the tokens per step) or --seq-len (now "
        + std::to_string(c.sequenceLength) + ")";
    if (!c.checkpointing)
        text += ", turn on --checkpointing (recomputes each layer in backward instead of keeping its activations)";
    if (!c.lora)
        text += ", train LoRA (--method lora) instead of every weight";
    text += ", or move layers off " + device + ": plan the run (the Plan page, or tunebench plan --model "
        + (c.modelPath.empty() ? std::string("DIR") : c.modelPath) + " --train " + (c.lora ? "lora" : "full")
        + " --batch-size " + std::to_string(c.batchSize) + " --seq-len " + std::to_string(c.sequenceLength)
        + " --max-memory ... --output map.json) and train with --device-map map.json";
    return text;
}

} // namespace engine::train
