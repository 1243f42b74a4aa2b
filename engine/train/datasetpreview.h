#pragma once
// What a run would train on: the counts and first rows of the data as the trainer reads it
// (previewData in trainer.h makes one), and their text. Torch-free.

#include "engine/train/trainingparams.h"

#include <cstdint>
#include <string>
#include <vector>

namespace engine::train {

/// What a run would train on, for `train --preview` and the Train page.
struct DatasetPreview {
    struct Sample {
        std::string input;   ///< the row's input tokens, decoded
        std::string learned; ///< the tokens the loss is computed on, decoded
        int64_t inputTokens = 0;
        int64_t learnedTokens = 0;
    };
    std::string format;      ///< "text", "prompt/completion", ...
    int64_t examples = 0;
    int64_t rows = 0;        ///< training rows after any validation split
    int64_t evalRows = 0;
    int64_t tokens = 0;
    int64_t truncated = 0;
    int64_t skippedBadLines = 0;
    int64_t nothingToLearn = 0;
    int64_t labelledTokens = 0; ///< targets in the training rows
    std::string tokenizer;
    std::vector<Sample> samples; ///< the first rows
};

/// The preview as the CLI (`train --preview`) and the Train page show it: the counts, then each row's
/// input and the part the loss is computed on.
std::string describePreview(const DatasetPreview &preview, const TrainingParams &params);

} // namespace engine::train
