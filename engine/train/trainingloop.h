#pragma once
// The training loop: the steps of one run, each step read as its phases (the batch, forward and
// backward per micro-batch, the gradients summed over the ranks, clipping and the optimizer step,
// metrics, evaluation, checkpoint), with data parallelism, fp16 loss scaling and the inspector's
// guard each in its phase. runTraining (trainer.cpp) prepares the job and creates or resumes the run
// in the store; this trains it. Engine-internal (torch).

#include "engine/core/jobcontrol.h"
#include "engine/model/llamamodel.h"
#include "engine/report/lossplot.h"
#include "engine/train/preparedjob.h"
#include "engine/train/trainer.h"
#include "engine/train/trainingparams.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace engine::store {
class RunStore;
}

namespace engine::train {

/// Where the loop is, for an out-of-memory message, and what it left for the Inspect page.
struct LoopPosition {
    std::string phase = "loading the model";
    int64_t step = 0;
    std::string nonFiniteStepFolder; ///< set when a non-finite loss or gradient, or the guard, stopped the run
};

/// What the loop trained: the model, how it ended and the losses the run's end reports.
struct LoopResult {
    std::optional<model::LlamaForCausalLM> model;
    JobStatus status = JobStatus::Succeeded;
    int64_t steps = 0;
    double firstLoss = 0;
    double lastLoss = 0;
    double lastEvalLoss = 0;
    std::string lastCheckpoint;
    std::vector<report::CurvePoint> curve;
};

/// The steps of one run, from the model's build (or `resume`'s checkpoint) to the last step or a stop.
/// `store` is null on the ranks other than 0 of a data-parallel job: they train their shard of every
/// batch and write nothing. `at` follows the phase and step. Throws engine::Error; an allocation
/// failure becomes one message naming the device, phase and step, and what to change.
LoopResult trainLoop(const TrainingParams &params, const PreparedJob &job, JobControl &control,
                     TrainingObserver &observer, store::RunStore *store, int64_t runId,
                     const std::filesystem::path &outputDir, const std::optional<ResumePoint> &resume, LoopPosition &at,
                     const RankContext &ranks);

} // namespace engine::train
