#pragma once
// Which tokenizer a training job uses: the one named, the model folder's (its tokenizer.json when it
// has one, else its tokenizer.model, as Hugging Face's AutoTokenizer chooses), or a SentencePiece
// tokenizer trained on the corpus (cached by corpus content and vocabulary size, so the demo trains it
// once).

#include "engine/tokenize/tokenizer.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace engine::model {
struct LlamaConfig;
}

namespace engine::train {

struct TrainingParams;
class TrainingObserver;

struct TokenizerChoice {
    std::unique_ptr<tokenize::Tokenizer> tokenizer;
    /// What saved models and adapters carry (tokenizerFiles): first the file it was read from
    /// (tokenizer.json or a .model), then the settings beside it.
    std::vector<std::filesystem::path> files;
};

/// Writes `files` (tokenizerFiles) into `folder`, each atomically: the first (the vocabulary) as
/// tokenizer.json or tokenizer.model, the others under their own names.
void saveTokenizerFiles(const std::vector<std::filesystem::path> &files, const std::filesystem::path &folder);

/// Loads or trains the tokenizer for a job. Throws Error(InvalidInput) when the tokenizer's
/// vocabulary does not fit the model's vocab_size.
TokenizerChoice resolveTokenizer(const TrainingParams &params, const model::LlamaConfig &config,
                                 const std::filesystem::path &corpusPath, const std::string &corpusText,
                                 TrainingObserver &observer);

} // namespace engine::train
