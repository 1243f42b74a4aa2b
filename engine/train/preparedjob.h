#pragma once
// What runTraining (trainer.cpp) hands the training loop (trainingloop.h): the job it prepared, this
// process's part in a data-parallel job and the checkpoint a resume continues from; with the run's
// identity and the number format both sides use. Engine-internal (torch).

#include "engine/dist/distributedgroup.h"
#include "engine/model/llamaconfig.h"
#include "engine/train/checkpoint.h"
#include "engine/train/dataset.h"
#include "engine/train/tokenizersource.h"
#include "engine/train/trainingparams.h"

#include <torch/types.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace engine::train {

/// This process's part in a data-parallel job: rank 0 of 1 without a group for a single process.
struct RankContext {
    dist::DistributedGroup *group = nullptr;
    int rank = 0;
    int world = 1;

    bool primary() const { return rank == 0; }
    /// Where the ranks wait while rank 0 alone writes (a checkpoint, the sample, a failing step): that
    /// may take far longer than a step, so the wait is long (10x the timeout, at least 30 minutes).
    void waitForRank0() const
    {
        if (group)
            group->barrier(std::max<std::chrono::milliseconds>(group->timeout() * 10, std::chrono::minutes(30)));
    }
    /// The values summed over the ranks (themselves for a single process).
    std::vector<double> sum(const std::vector<double> &values) const { return group ? group->sumScalars(values) : values; }
};

/// Everything resolved and checked before a run is created, so bad input never leaves a run behind.
struct PreparedJob {
    std::filesystem::path storePath;
    std::filesystem::path corpusPath;
    model::LlamaConfig config;
    std::string modelName;
    torch::Tensor sequences; ///< [N, seq_len + 1] int64: training rows (inputs are the first seq_len)
    torch::Tensor labels;    ///< [N, seq_len] int64: the target of each position, kIgnoreLabel = none
    torch::Tensor evalSequences; ///< [M, seq_len + 1] int64; undefined when there is no eval data
    torch::Tensor evalLabels;    ///< [M, seq_len]
    std::string dataFormat;
    std::optional<TokenizerChoice> tokenizer; ///< none for pre-tokenized data without one
    TokenRows stats;             ///< the training data's counts (ids moved into the tensors)
    int64_t corpusTokens = 0;
    std::string tokenizerPath;
    std::vector<std::filesystem::path> tokenizerFiles; ///< what saved models and adapters carry of the tokenizer
    std::filesystem::path weightsFolder; ///< set when the model folder holds weights to start from
    torch::Device device{torch::kCPU};   ///< checked before the run exists
    /// The device map the model loads with: the params' or the planned one (--device-map auto); empty = all on `device`.
    std::vector<std::pair<std::string, std::string>> devicePlacement;
};

/// Where a run's steps come from when it continues: the checkpoint and what it recorded.
struct ResumePoint {
    std::filesystem::path checkpoint;
    CheckpointState state;
};

/// What a checkpoint must agree with for a resume to continue the same run.
nlohmann::json runIdentity(const TrainingParams &params, const PreparedJob &job);

/// `value` as the log lines and messages show numbers: printf's %.<precision>g.
std::string formatDouble(double value, int precision = 4);

} // namespace engine::train
