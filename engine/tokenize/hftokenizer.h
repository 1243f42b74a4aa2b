#pragma once
// A Hugging Face tokenizer.json with a BPE model: byte-level (GPT-2, Llama 3, Qwen2) and
// SentencePiece-style with byte fallback (Llama 1/2, Mistral). Pipeline, as in HF tokenizers:
// added tokens → normalizer → pre-tokenizer → BPE → post-processor; decoder for the way back.

#include "engine/tokenize/tokenizer.h"

#include <filesystem>
#include <memory>
#include <string>

namespace engine::tokenize {

/// tokenizer.json (+ optional tokenizer_config.json).
class HfTokenizer : public Tokenizer {
public:
    /// Reads `tokenizerJson` and, when it exists, `tokenizerConfig` (by default the
    /// tokenizer_config.json beside it). Throws Error(Io) / Error(InvalidInput) naming the file.
    static std::unique_ptr<HfTokenizer> load(const std::filesystem::path &tokenizerJson,
                                             std::filesystem::path tokenizerConfig = {});
    /// Parses the two files' contents; `configText` may be empty. `where` names them in errors.
    static std::unique_ptr<HfTokenizer> fromText(const std::string &jsonText, const std::string &configText,
                                                 const std::string &where, const std::string &configWhere);

    ~HfTokenizer() override;

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
    struct Impl;
    explicit HfTokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

} // namespace engine::tokenize
