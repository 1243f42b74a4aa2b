#pragma once
// SentencePiece's tokenizer.model behind the Tokenizer interface, with the special-token behaviour
// of Hugging Face's LlamaTokenizer (bos added for add_special_tokens=True unless
// tokenizer_config.json says add_bos_token: false; eos only with add_eos_token: true).

#include "engine/tokenize/sentencepiecetokenizer.h"
#include "engine/tokenize/tokenizer.h"

#include <filesystem>
#include <memory>
#include <string>
#include <unordered_map>

namespace engine::tokenize {

/// A tokenizer.model (+ optional tokenizer_config.json) as a Tokenizer.
class SentencePieceAdapter : public Tokenizer {
public:
    /// Loads `modelFile` and the tokenizer_config.json beside it when present.
    static std::unique_ptr<SentencePieceAdapter> load(const std::filesystem::path &modelFile);

    std::vector<int> encode(std::string_view text, bool addSpecialTokens = false) const override;
    std::string decode(const std::vector<int> &ids, bool skipSpecialTokens = false) const override;
    int vocabSize() const override;
    int bosId() const override;
    int eosId() const override;
    int tokenToId(std::string_view token) const override;
    std::string idToToken(int id) const override;
    bool isSpecial(int id) const override;
    std::string description() const override;

private:
    SentencePieceAdapter(SentencePieceTokenizer model, std::filesystem::path file);

    SentencePieceTokenizer m_model;
    std::filesystem::path m_file;
    std::unordered_map<std::string, int> m_pieceIds;
    bool m_addBos = true;
    bool m_addEos = false;
};

} // namespace engine::tokenize
