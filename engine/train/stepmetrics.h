#pragma once

#include <cstdint>

namespace engine::train {

/// What the trainer reports after every optimizer step. Plain value, cheap to copy across threads.
struct StepMetrics {
    int64_t step = 0;        ///< 1-based
    int64_t totalSteps = 0;
    double loss = 0;
    double learningRate = 0;
    double gradNorm = 0;     ///< total L2 norm before clipping
    double tokensPerSecond = 0;
    double wallSeconds = 0;  ///< since the first step started
    double etaSeconds = 0;   ///< estimate of the time left
    double stepSeconds = 0;  ///< this step's duration
    bool evaluated = false;  ///< evalLoss / evalPerplexity hold this step's evaluation
    double evalLoss = 0;
    double evalPerplexity = 0;
    bool skipped = false;    ///< the loss was not finite and the step was skipped (no update)
    int64_t cpuPeakBytes = 0; ///< the process's peak resident memory during the step (0 = unknown)
    int64_t gpuPeakBytes = 0; ///< the CUDA allocator's peak during the step, summed over the GPUs in use
};

} // namespace engine::train
