#pragma once
// Which tokenizer a training job uses: the one named, the model folder's, or one trained on the
// corpus (cached by corpus content and vocabulary size, so the demo trains it once).

#include "engine/tokenize/sentencepiecetokenizer.h"

#include <filesystem>
#include <string>

namespace engine::model {
struct LlamaConfig;
}

namespace engine::train {

struct TrainingParams;
class TrainingObserver;

struct TokenizerChoice {
    tokenize::SentencePieceTokenizer tokenizer;
    std::filesystem::path path;
};

/// Loads or trains the tokenizer for a job. Throws Error(InvalidInput) when the tokenizer's
/// vocabulary does not fit the model's vocab_size.
TokenizerChoice resolveTokenizer(const TrainingParams &params, const model::LlamaConfig &config,
                                 const std::filesystem::path &corpusPath, const std::string &corpusText,
                                 TrainingObserver &observer);

} // namespace engine::train
