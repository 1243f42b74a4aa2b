#pragma once
// Running out of memory in training, told as the user can act on it: which device, in which phase
// (loading, forward, backward, optimizer step, evaluation), at which step, and what to change in the
// plan. Torch-free. Engine-internal.

#include <cstdint>
#include <string>

namespace engine::train {

/// What the trainer was doing when an allocation failed.
struct OutOfMemoryContext {
    std::string phase;          ///< "forward", "backward", "optimizer step", "evaluation", "loading the model"
    int64_t step = 0;           ///< 0 = before the first step
    std::string defaultDevice;  ///< where the run trains when the message names no GPU ("cpu", "cuda:0")
    std::string modelPath;      ///< for the plan command it suggests
    int64_t batchSize = 0;
    int64_t sequenceLength = 0;
    bool lora = false;
    bool checkpointing = false;
};

/// The device an allocator's message names: "cuda:N" for CUDA's "... GPU N ..." (libtorch 1.13 and 2.x
/// word it differently, both name the GPU so), "cpu" for the CPU allocator's messages and bad_alloc,
/// else `fallback`.
std::string outOfMemoryDevice(const std::string &allocatorMessage, const std::string &fallback);

/// "out of memory on cuda:0 in backward at step 12 (CUDA out of memory. Tried to allocate 2.00 GiB):
/// lower --batch-size (now 8) ..., turn on --checkpointing, ... or move layers off cuda:0 with a device
/// map (tunebench plan --model M --train lora ...)".
std::string outOfMemoryMessage(const std::string &allocatorMessage, const OutOfMemoryContext &context);

} // namespace engine::train
