#pragma once
// A compiled Oniguruma regex: the engine Hugging Face tokenizers uses for the patterns in
// tokenizer.json, so that \p{L}, (?i:...), (?!\S) and \s behave exactly as there.

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace engine::tokenize {

/// A UTF-8 regex, compiled once; findAll is const and safe to call from several threads.
class OnigRegex {
public:
    /// Compiles `pattern`; throws Error(InvalidInput) starting with `where` when it does not compile.
    OnigRegex(std::string_view pattern, const std::string &where);
    ~OnigRegex();
    OnigRegex(const OnigRegex &) = delete;
    OnigRegex &operator=(const OnigRegex &) = delete;

    /// Byte ranges [begin, end) of the successive non-overlapping matches in `text`, as the onig
    /// crate's find_iter gives them (an empty match right after the previous match is skipped).
    std::vector<std::pair<size_t, size_t>> findAll(std::string_view text) const;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace engine::tokenize
