#pragma once
// The "pre_tokenizer" of a tokenizer.json: splits normalized text into words for the model.
// Supported: Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation.

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace engine::tokenize {

/// A word on its way to the model.
struct PreToken {
    std::string text;
    bool atTextStart = false; ///< begins at offset 0 of the original text (Metaspace "first")
};

/// Splits (and may rewrite) pre-tokens in place.
class PreTokenizer {
public:
    virtual ~PreTokenizer() = default;
    virtual void apply(std::vector<PreToken> &tokens) const = 0;
};

/// Builds the pre-tokenizer described by `config` (null gives nullptr). Throws Error(InvalidInput)
/// naming `where` (the file) and `path` (the field) for unknown types and malformed fields.
std::unique_ptr<PreTokenizer> makePreTokenizer(const nlohmann::json &config, const std::string &where,
                                               const std::string &path = "pre_tokenizer");

} // namespace engine::tokenize
