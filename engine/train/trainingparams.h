#pragma once
// Settings of a training job: a value that the CLI and the UI fill and the trainer consumes.

#include "engine/dist/distenv.h"
#include "engine/model/lorasettings.h"
#include "engine/train/lrschedule.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace engine::train {

enum class TrainingMethod { Full, Lora };
enum class OptimizerKind { AdamW, Sgd };

/// "full" / "lora".
const char *methodName(TrainingMethod method);
/// "adamw" / "sgd".
const char *optimizerName(OptimizerKind kind);

/// The arithmetic of forward and backward. Weights, optimizer state and the loss stay float32 in every
/// case; bf16 and fp16 run the matrix products under autocast (torch.autocast), fp16 with dynamic loss
/// scaling (torch.amp.GradScaler's rules). fp16 needs CUDA.
enum class Precision { Fp32, Bf16, Fp16 };
/// "fp32" / "bf16" / "fp16".
const char *precisionName(Precision precision);

/// Refuses (Error(InvalidInput)) fp16 when none of `devices` (device names or device-map values:
/// "cpu", "disk", "cuda:N") is a GPU. Checked on the settings and again on the devices a plan chose.
void requireFp16Device(Precision precision, const std::vector<std::string> &devices);

/// A device map as [[module, device], ...] in map order ([] when empty).
nlohmann::json devicePlacementJson(const std::vector<std::pair<std::string, std::string>> &placement);

/// What happens when a step's loss is NaN or infinite.
enum class NonFinitePolicy { Stop, Skip };

struct TrainingParams {
    std::string modelPath;     ///< folder with config.json, or a config.json; empty = built-in demo model
    std::string dataPath;      ///< UTF-8 text corpus or JSONL (engine/train/dataset.h); empty = the bundled demo corpus
    std::string tokenizerPath; ///< tokenizer.model; empty = the model folder's, else one trained on the corpus
    std::string storePath;     ///< run database; empty = the setting, else the XDG default
    std::string runName;       ///< empty = derived from the model and corpus names
    std::string outputDir;     ///< where artifacts (loss plot, tokenizer) go; empty = <data dir>/runs/<id>

    int64_t steps = 300;
    double learningRate = 3e-3;
    int64_t warmupSteps = -1; ///< linear warmup; -1 = 10 % of the steps
    double minLearningRateRatio = 0.1; ///< cosine decay after warmup ends at this fraction of the peak
    int64_t batchSize = 8;
    int64_t sequenceLength = 128;
    double weightDecay = 0.1;
    double gradClipNorm = 1.0;  ///< 0 = no clipping (the norm is still measured)
    int threads = 0;            ///< libtorch threads; 0 = all cores
    std::string device = "cpu"; ///< where the model trains: "cpu", "cuda", "cuda:N"
    /// A device map (module prefix, "cpu" / "disk" / "cuda:N"), e.g. a Plan's placements(): the model is
    /// loaded onto those devices tensor by tensor and trains across them. Empty = all on `device`.
    std::vector<std::pair<std::string, std::string>> devicePlacement;
    /// Plan the device map on this machine's GPUs and RAM for this run (--device-map auto), as the
    /// Plan page would; the planned map is stored with the run. Excludes devicePlacement.
    bool autoDeviceMap = false;
    uint64_t seed = 1234;
    bool saveModel = true;      ///< save the trained model (save_pretrained layout + tokenizer) to <output>/model

    TrainingMethod method = TrainingMethod::Full;
    model::LoraSettings lora;   ///< with method Lora
    OptimizerKind optimizer = OptimizerKind::AdamW;
    double momentum = 0.9;      ///< SGD
    ScheduleKind schedule = ScheduleKind::Cosine;
    int64_t epochs = 0;         ///< > 0: steps = epochs * ceil(sequences / (batch * accumulation))
    int64_t gradAccumulation = 1; ///< micro-batches of batchSize per optimizer step
    bool gradientCheckpointing = false;
    Precision precision = Precision::Fp32;

    std::string evalDataPath;   ///< a second corpus for eval loss; empty = valFraction of the training data
    double valFraction = 0;     ///< fraction of the training sequences held out for eval (when no evalDataPath)
    int64_t evalEvery = 0;      ///< eval loss and perplexity every N steps (and at the end); 0 = at the end only, when there is eval data
    int64_t evalBatches = 0;    ///< batches per evaluation; 0 = the whole eval set

    int64_t saveEvery = 0;      ///< a checkpoint every N steps; 0 = only when stopped or finished
    int64_t keepCheckpoints = 3; ///< keep the last K checkpoints (0 = keep all)
    std::string resumeFrom;     ///< a run's output folder or checkpoint folder to continue; empty = a new run
    int64_t resumeRunId = 0;    ///< the run the resumed steps are written to (set with resumeFrom)
    NonFinitePolicy nonFinite = NonFinitePolicy::Stop; ///< for a non-finite loss or gradient
    /// The inspector's always-on guard (engine/inspect/trainingguard.h): each step's saved tensors are
    /// watched, so an in-place write that would break backward stops the run before backward, with the
    /// step kept for the Inspect page. Loss and gradients are checked for NaN/Inf either way.
    bool inspectGuard = true;
    std::string samplePrompt;   ///< when set, a greedy sample of this prompt is generated before and after training
    int64_t sampleTokens = 40;  ///< new tokens of that sample
    bool skipBadLines = false;  ///< a malformed JSONL line is skipped and counted instead of stopping the run

    /// Data parallelism (engine/dist): this process's rank in the job, from the launcher's environment.
    /// World size 1 = one process. Each rank trains on its shard of every batch of batchSize * worldSize
    /// sequences; rank 0 alone writes the run.
    dist::DistributedEnv distributed;
    double distributedTimeoutSeconds = 300; ///< how long a rank waits for the others before it fails
    double bucketMegabytes = 25;            ///< DDP's bucket_cap_mb; 0 = one allreduce after backward (no overlap)

    /// The number of optimizer steps: `steps`, or what `epochs` gives for `sequences` training sequences.
    int64_t totalSteps(int64_t sequences) const;
    /// warmupSteps, or 10 % of the steps when it is -1.
    int64_t effectiveWarmupSteps() const { return warmupSteps < 0 ? steps / 10 : warmupSteps; }

    /// Throws Error(InvalidInput) with one clear message naming the first bad setting and its limit.
    void validate() const;
    /// The settings as JSON (stored with the run).
    nlohmann::json toJson() const;
    /// devicePlacement as [[module, device], ...] in map order (null when empty).
    nlohmann::json devicePlacementJson() const;
};

} // namespace engine::train
