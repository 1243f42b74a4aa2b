#pragma once
// Settings of a training job: a value that the CLI and the UI fill and the trainer consumes.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace engine::train {

struct TrainingParams {
    std::string modelPath;     ///< folder with config.json, or a config.json; empty = built-in demo model
    std::string dataPath;      ///< UTF-8 text corpus; empty = the bundled demo corpus
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
    uint64_t seed = 1234;
    bool saveModel = true;      ///< save the trained model (save_pretrained layout + tokenizer) to <output>/model

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
