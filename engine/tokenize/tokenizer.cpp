#include "engine/tokenize/tokenizer.h"

#include "engine/core/error.h"
#include "engine/tokenize/hftokenizer.h"
#include "engine/tokenize/sentencepieceadapter.h"

namespace engine::tokenize {

namespace {

/// A folder's vocabulary files, in the order Hugging Face's AutoTokenizer prefers them.
constexpr const char *kVocabularyFiles[] = {"tokenizer.json", "tokenizer.model"};

} // namespace

std::filesystem::path tokenizerFile(const std::filesystem::path &pathOrFolder)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (pathOrFolder.empty())
        throw invalidInput("no tokenizer path given");
    if (!fs::exists(pathOrFolder, ec))
        throw ioError("tokenizer path " + pathOrFolder.string() + " does not exist");
    if (fs::is_directory(pathOrFolder, ec)) {
        for (const char *name : kVocabularyFiles) {
            if (fs::is_regular_file(pathOrFolder / name, ec))
                return pathOrFolder / name;
        }
        throw ioError("the folder " + pathOrFolder.string() + " has neither tokenizer.json nor tokenizer.model");
    }
    if (pathOrFolder.filename() == "tokenizer_config.json")
        throw invalidInput(pathOrFolder.string() +
                           " holds tokenizer settings, not a vocabulary: give tokenizer.json, tokenizer.model or the folder");
    return pathOrFolder;
}

bool holdsTokenizer(const std::filesystem::path &folder)
{
    std::error_code ec;
    for (const char *name : kVocabularyFiles) {
        if (std::filesystem::is_regular_file(folder / name, ec))
            return true;
    }
    return false;
}

std::vector<std::filesystem::path> tokenizerFiles(const std::filesystem::path &pathOrFolder)
{
    const std::filesystem::path file = tokenizerFile(pathOrFolder);
    std::vector<std::filesystem::path> files{file};
    std::error_code ec;
    for (const char *name : {"tokenizer_config.json", "special_tokens_map.json"}) {
        const std::filesystem::path beside = file.parent_path() / name;
        if (std::filesystem::is_regular_file(beside, ec))
            files.push_back(beside);
    }
    return files;
}

std::unique_ptr<Tokenizer> loadTokenizer(const std::filesystem::path &pathOrFolder)
{
    const std::filesystem::path file = tokenizerFile(pathOrFolder);
    if (file.extension() == ".json")
        return HfTokenizer::load(file);
    return SentencePieceAdapter::load(file);
}

} // namespace engine::tokenize
