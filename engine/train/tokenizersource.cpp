#include "engine/train/tokenizersource.h"

#include "engine/core/error.h"
#include "engine/core/paths.h"
#include "engine/model/llamaconfig.h"
#include "engine/train/textcorpus.h"
#include "engine/train/trainer.h"
#include "engine/train/trainingparams.h"
#include "engine/train/dataset.h"
#include "engine/core/atomicfile.h"
#include "engine/tokenize/sentencepiecetokenizer.h"

#include <cstdio>

namespace engine::train {
namespace {

std::filesystem::path cachedTokenizerPath(const std::string &corpusText, int64_t vocabSize)
{
    char name[64];
    std::snprintf(name, sizeof name, "%016llx-v%lld.model", static_cast<unsigned long long>(contentHash(corpusText)),
                  static_cast<long long>(vocabSize));
    return cacheDir() / "tokenizers" / name;
}

} // namespace

TokenizerChoice resolveTokenizer(const TrainingParams &params, const model::LlamaConfig &config,
                                 const std::filesystem::path &corpusPath, const std::string &corpusText,
                                 TrainingObserver &observer)
{
    std::filesystem::path path;
    std::error_code ec;
    if (!params.tokenizerPath.empty()) {
        path = tokenize::tokenizerFile(params.tokenizerPath);
    } else if (!params.modelPath.empty() && std::filesystem::is_directory(params.modelPath, ec)
               && tokenize::holdsTokenizer(params.modelPath)) {
        path = tokenize::tokenizerFile(params.modelPath);
    }

    if (path.empty()) {
        path = cachedTokenizerPath(corpusText, config.vocabSize);
        if (!std::filesystem::exists(path, ec)) {
            observer.onLog(LogLevel::Info, "training a SentencePiece tokenizer (" + std::to_string(config.vocabSize)
                                               + " pieces) on " + corpusPath.string());
            tokenize::SentencePieceTrainOptions options;
            options.vocabSize = static_cast<int>(config.vocabSize);
            options.threads = params.threads;
            // JSONL: train on the records' text, not on their JSON spelling.
            std::filesystem::path source = corpusPath;
            if (isJsonl(corpusPath)) {
                source = path;
                source.replace_extension(".txt");
                writeFileAtomically(source, corpusText);
            }
            tokenize::SentencePieceTokenizer::train(source, path, options);
        } else {
            observer.onLog(LogLevel::Info, "using the cached tokenizer " + path.string());
        }
    } else {
        observer.onLog(LogLevel::Info, "tokenizer " + path.string());
    }

    TokenizerChoice choice{tokenize::loadTokenizer(path), tokenize::tokenizerFiles(path)};
    if (choice.tokenizer->vocabSize() > config.vocabSize) {
        throw invalidSetting("tokenizer", "tokenizer " + path.string() + " has " + std::to_string(choice.tokenizer->vocabSize())
                           + " tokens but the model's vocab_size is " + std::to_string(config.vocabSize));
    }
    return choice;
}

void saveTokenizerFiles(const std::vector<std::filesystem::path> &files, const std::filesystem::path &folder)
{
    for (size_t i = 0; i < files.size(); ++i) {
        // The vocabulary under the name loadTokenizer looks for (a trained one is cached as <hash>.model).
        const std::filesystem::path name = i > 0 ? files[i].filename()
            : files[i].extension() == ".json"   ? std::filesystem::path("tokenizer.json")
                                                : std::filesystem::path("tokenizer.model");
        writeFileAtomically(folder / name, readFile(files[i]));
    }
}

} // namespace engine::train
