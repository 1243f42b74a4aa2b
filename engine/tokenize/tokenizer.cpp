#include "engine/tokenize/tokenizer.h"

#include "engine/core/error.h"
#include "engine/tokenize/hftokenizer.h"
#include "engine/tokenize/sentencepieceadapter.h"

namespace engine::tokenize {

std::unique_ptr<Tokenizer> loadTokenizer(const std::filesystem::path &pathOrFolder)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    if (pathOrFolder.empty())
        throw invalidInput("no tokenizer path given");
    if (!fs::exists(pathOrFolder, ec))
        throw ioError("tokenizer path " + pathOrFolder.string() + " does not exist");
    if (fs::is_directory(pathOrFolder, ec)) {
        if (fs::is_regular_file(pathOrFolder / "tokenizer.json", ec))
            return HfTokenizer::load(pathOrFolder / "tokenizer.json");
        if (fs::is_regular_file(pathOrFolder / "tokenizer.model", ec))
            return SentencePieceAdapter::load(pathOrFolder / "tokenizer.model");
        throw ioError("the folder " + pathOrFolder.string() + " has neither tokenizer.json nor tokenizer.model");
    }
    if (pathOrFolder.filename() == "tokenizer_config.json")
        throw invalidInput(pathOrFolder.string() +
                           " holds tokenizer settings, not a vocabulary: give tokenizer.json, tokenizer.model or the folder");
    if (pathOrFolder.extension() == ".json")
        return HfTokenizer::load(pathOrFolder);
    return SentencePieceAdapter::load(pathOrFolder);
}

} // namespace engine::tokenize
