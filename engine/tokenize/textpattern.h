#pragma once
// The "pattern" of tokenizer.json's Split, Replace and similar components: a literal string or an
// Oniguruma regex.

#include "engine/tokenize/onigregex.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace engine::tokenize {

/// {"String": "..."} or {"Regex": "..."}.
class TextPattern {
public:
    /// Reads the pattern object; throws Error(InvalidInput) naming `where` and `path` when malformed.
    TextPattern(const nlohmann::json &pattern, const std::string &where, const std::string &path);

    /// Byte ranges of the successive non-overlapping matches.
    std::vector<std::pair<size_t, size_t>> findAll(std::string_view text) const;
    /// `text` with every match replaced by `content`.
    std::string replaceAll(std::string_view text, std::string_view content) const;

private:
    std::string m_literal;
    std::unique_ptr<OnigRegex> m_regex; // null for a literal
};

} // namespace engine::tokenize
