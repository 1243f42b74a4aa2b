#pragma once
// The training job: corpus -> tokenizer -> packed sequences -> LLaMA model -> AdamW steps, with
// every step's metrics written to the run store and reported to an observer.
//
// How to use (from any thread that may block; the GUI calls it on the engine thread):
//   engine::JobControl control;          // another thread may requestCancel() / setPaused()
//   MyObserver observer;                 // receives log lines and step metrics on this thread
//   TrainingOutcome outcome = runTraining(params, control, observer);   // never throws

#include "engine/core/error.h"
#include "engine/core/jobcontrol.h"
#include "engine/core/loglevel.h"
#include "engine/train/datasetpreview.h"
#include "engine/train/stepmetrics.h"
#include "engine/train/trainingparams.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace engine::train {

/// Callbacks from the training thread. Keep them fast: they run between steps.
class TrainingObserver {
public:
    virtual ~TrainingObserver() = default;
    /// The run exists in the store (called once, before the first step).
    virtual void onRunCreated(int64_t runId, const std::string &storePath) {}
    /// A human-readable line: phases (tokenizing, building the model), warnings.
    virtual void onLog(LogLevel level, const std::string &text) {}
    /// After every optimizer step.
    virtual void onStep(const StepMetrics &metrics) {}
    /// The eval loss before the first step of a new run with eval data: step 0, `evaluated` set, no
    /// training values. Later evaluations arrive with their step in onStep.
    virtual void onInitialEvaluation(const StepMetrics &metrics) {}
};

/// How a training job ended.
struct TrainingOutcome {
    JobStatus status = JobStatus::Failed;
    std::optional<ErrorInfo> error; ///< set when status is Failed
    int64_t runId = 0;              ///< 0 when the job failed before the run was created
    std::string storePath;
    int64_t stepsCompleted = 0;
    double firstLoss = 0;
    double lastLoss = 0;
    std::string lossPlotPath;       ///< PNG of the loss curve; empty when no step completed
    std::string modelPath;          ///< the saved model folder (full fine-tuning); empty when not saved
    std::string adapterPath;        ///< the saved PEFT adapter folder (LoRA); empty when not saved
    std::string outputDir;          ///< the run's folder (checkpoints, plot, model or adapter)
    std::string lastCheckpoint;     ///< the newest checkpoint folder; empty when none was written
    int64_t resumedFromStep = 0;    ///< > 0 when the run continued from a checkpoint at this step
    double lastEvalLoss = 0;        ///< the last evaluation's loss; 0 when there was no eval data
    /// A non-finite loss stopped the run: the folder with that step for the inspector (the weights it
    /// ran with and batch.safetensors); empty otherwise.
    std::string nonFiniteStepPath;
};

/// Reads and tokenizes the data exactly as runTraining would (nothing is trained or stored) and decodes
/// the first `count` rows. Throws engine::Error for bad input.
DatasetPreview previewData(const TrainingParams &params, JobControl &control, TrainingObserver &observer, int count = 3);

/// Runs a whole training job. Never throws: bad settings, I/O failures and torch errors come back
/// as Failed with a typed error; a cancel request ends it as Cancelled at the next step boundary.
/// The run is never left marked Running.
TrainingOutcome runTraining(const TrainingParams &params, JobControl &control, TrainingObserver &observer);

} // namespace engine::train
