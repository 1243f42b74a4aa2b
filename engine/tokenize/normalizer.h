#pragma once
// The "normalizer" of a tokenizer.json: NFC/NFD/NFKC/NFKD (ICU), Lowercase, Strip, StripAccents,
// Replace, Prepend and Sequence.

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace engine::tokenize {

/// Rewrites text before pre-tokenization.
class Normalizer {
public:
    virtual ~Normalizer() = default;
    virtual std::string normalize(std::string_view text) const = 0;
};

/// Builds the normalizer described by `config` (null gives nullptr). Throws Error(InvalidInput)
/// naming `where` (the file) and `path` (the field) for unknown types and malformed fields.
std::unique_ptr<Normalizer> makeNormalizer(const nlohmann::json &config, const std::string &where,
                                           const std::string &path = "normalizer");

} // namespace engine::tokenize
