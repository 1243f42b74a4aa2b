#include "engine/tokenize/pretokenizer.h"

#include "engine/tokenize/jsonfields.h"
#include "engine/tokenize/textpattern.h"
#include "engine/tokenize/utf8.h"

#include <algorithm>
#include <functional>

namespace engine::tokenize {
namespace {

/// HF tokenizers' SplitDelimiterBehavior.
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parseBehavior(const nlohmann::json &config, const std::string &where, const std::string &path,
                       Behavior fallback)
{
    const std::string name = fields::optionalString(config, "behavior", "", where, path);
    if (name.empty())
        return fallback;
    if (name == "Removed")
        return Behavior::Removed;
    if (name == "Isolated")
        return Behavior::Isolated;
    if (name == "MergedWithPrevious")
        return Behavior::MergedWithPrevious;
    if (name == "MergedWithNext")
        return Behavior::MergedWithNext;
    if (name == "Contiguous")
        return Behavior::Contiguous;
    throw invalidInput(fields::at(where, path + ".behavior") + ": \"" + name +
                       "\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

struct Span {
    size_t begin;
    size_t end;
    bool isMatch;
};

/// Matches → spans covering the whole text (HF's Pattern::find_matches).
std::vector<Span> spansOf(const std::vector<std::pair<size_t, size_t>> &matches, size_t size, bool invert)
{
    std::vector<Span> spans;
    size_t previous = 0;
    for (const auto &[begin, end] : matches) {
        if (previous != begin)
            spans.push_back({previous, begin, invert});
        spans.push_back({begin, end, !invert});
        previous = end;
    }
    if (previous != size)
        spans.push_back({previous, size, invert});
    return spans;
}

/// Each character for which `predicate` holds is one match.
std::vector<std::pair<size_t, size_t>> charMatches(const std::string &text, const std::function<bool(char32_t)> &predicate)
{
    std::vector<std::pair<size_t, size_t>> matches;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t start = pos;
        if (predicate(utf8::next(text, pos)))
            matches.emplace_back(start, pos);
    }
    return matches;
}

/// Applies `behavior` to `spans` of `token` and appends the non-empty pieces to `out`.
void splitInto(const PreToken &token, std::vector<Span> spans, Behavior behavior, std::vector<PreToken> &out)
{
    std::vector<Span> pieces; // isMatch here means "remove"
    switch (behavior) {
    case Behavior::Removed:
        pieces = spans;
        break;
    case Behavior::Isolated:
        for (const Span &s : spans)
            pieces.push_back({s.begin, s.end, false});
        break;
    case Behavior::MergedWithPrevious: {
        bool previousMatch = false;
        for (const Span &s : spans) {
            if (s.isMatch && !previousMatch && !pieces.empty())
                pieces.back().end = s.end;
            else
                pieces.push_back({s.begin, s.end, false});
            previousMatch = s.isMatch;
        }
        break;
    }
    case Behavior::MergedWithNext: {
        bool previousMatch = false;
        for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
            if (it->isMatch && !previousMatch && !pieces.empty())
                pieces.back().begin = it->begin;
            else
                pieces.push_back({it->begin, it->end, false});
            previousMatch = it->isMatch;
        }
        std::reverse(pieces.begin(), pieces.end());
        break;
    }
    case Behavior::Contiguous: {
        bool previousMatch = false;
        for (const Span &s : spans) {
            if (s.isMatch == previousMatch && !pieces.empty())
                pieces.back().end = s.end;
            else
                pieces.push_back({s.begin, s.end, false});
            previousMatch = s.isMatch;
        }
        break;
    }
    }
    for (const Span &piece : pieces) {
        if (piece.isMatch || piece.begin == piece.end)
            continue;
        out.push_back({token.text.substr(piece.begin, piece.end - piece.begin), token.atTextStart && piece.begin == 0});
    }
}

/// Splits every token with `split(token, out)`.
template <typename Split>
void splitEach(std::vector<PreToken> &tokens, Split split)
{
    std::vector<PreToken> out;
    out.reserve(tokens.size() * 2);
    for (const PreToken &token : tokens)
        split(token, out);
    tokens = std::move(out);
}

class SequencePreTokenizer : public PreTokenizer {
public:
    explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : m_parts(std::move(parts)) {}
    void apply(std::vector<PreToken> &tokens) const override
    {
        for (const auto &part : m_parts)
            part->apply(tokens);
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> m_parts;
};

class SplitPreTokenizer : public PreTokenizer {
public:
    SplitPreTokenizer(const nlohmann::json &config, const std::string &where, const std::string &path)
        : m_pattern(config.value("pattern", nlohmann::json()), where, path + ".pattern"),
          m_behavior(parseBehavior(config, where, path, Behavior::Isolated)),
          m_invert(fields::optionalBool(config, "invert", false, where, path))
    {
    }
    void apply(std::vector<PreToken> &tokens) const override
    {
        splitEach(tokens, [&](const PreToken &token, std::vector<PreToken> &out) {
            splitInto(token, spansOf(m_pattern.findAll(token.text), token.text.size(), m_invert), m_behavior, out);
        });
    }

private:
    TextPattern m_pattern;
    Behavior m_behavior;
    bool m_invert;
};

class ByteLevelPreTokenizer : public PreTokenizer {
public:
    ByteLevelPreTokenizer(bool addPrefixSpace, bool useRegex, const std::string &where)
        : m_addPrefixSpace(addPrefixSpace)
    {
        if (useRegex)
            m_regex = std::make_unique<OnigRegex>(
                R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", where);
    }
    void apply(std::vector<PreToken> &tokens) const override
    {
        if (m_addPrefixSpace) {
            for (PreToken &token : tokens) {
                if (!token.text.starts_with(' '))
                    token.text.insert(0, 1, ' ');
            }
        }
        if (m_regex) {
            splitEach(tokens, [&](const PreToken &token, std::vector<PreToken> &out) {
                splitInto(token, spansOf(m_regex->findAll(token.text), token.text.size(), false), Behavior::Isolated, out);
            });
        }
        for (PreToken &token : tokens) {
            std::string mapped;
            mapped.reserve(token.text.size() * 2);
            for (const char c : token.text)
                utf8::append(mapped, utf8::byteToChar(static_cast<unsigned char>(c)));
            token.text = std::move(mapped);
        }
    }

private:
    bool m_addPrefixSpace;
    std::unique_ptr<OnigRegex> m_regex;
};

class MetaspacePreTokenizer : public PreTokenizer {
public:
    enum class Prepend { Always, First, Never };
    MetaspacePreTokenizer(std::string replacement, Prepend prepend, bool split)
        : m_replacement(std::move(replacement)), m_prepend(prepend), m_split(split)
    {
    }
    void apply(std::vector<PreToken> &tokens) const override
    {
        splitEach(tokens, [&](const PreToken &token, std::vector<PreToken> &out) {
            PreToken replaced{std::string(), token.atTextStart};
            for (const char c : token.text) {
                if (c == ' ')
                    replaced.text += m_replacement;
                else
                    replaced.text += c;
            }
            const bool prepend = !replaced.text.starts_with(m_replacement) &&
                                 (m_prepend == Prepend::Always || (m_prepend == Prepend::First && token.atTextStart));
            if (prepend)
                replaced.text.insert(0, m_replacement);
            if (!m_split) {
                if (!replaced.text.empty())
                    out.push_back(std::move(replaced));
                return;
            }
            std::vector<std::pair<size_t, size_t>> matches;
            for (size_t pos = replaced.text.find(m_replacement); pos != std::string::npos;
                 pos = replaced.text.find(m_replacement, pos + m_replacement.size()))
                matches.emplace_back(pos, pos + m_replacement.size());
            splitInto(replaced, spansOf(matches, replaced.text.size(), false), Behavior::MergedWithNext, out);
        });
    }

private:
    std::string m_replacement;
    Prepend m_prepend;
    bool m_split;
};

/// Splits with a per-character predicate (Digits, WhitespaceSplit, Punctuation).
class CharClassPreTokenizer : public PreTokenizer {
public:
    CharClassPreTokenizer(std::function<bool(char32_t)> predicate, Behavior behavior)
        : m_predicate(std::move(predicate)), m_behavior(behavior)
    {
    }
    void apply(std::vector<PreToken> &tokens) const override
    {
        splitEach(tokens, [&](const PreToken &token, std::vector<PreToken> &out) {
            splitInto(token, spansOf(charMatches(token.text, m_predicate), token.text.size(), false), m_behavior, out);
        });
    }

private:
    std::function<bool(char32_t)> m_predicate;
    Behavior m_behavior;
};

class WhitespacePreTokenizer : public PreTokenizer {
public:
    explicit WhitespacePreTokenizer(const std::string &where) : m_regex(R"(\w+|[^\w\s]+)", where) {}
    void apply(std::vector<PreToken> &tokens) const override
    {
        splitEach(tokens, [&](const PreToken &token, std::vector<PreToken> &out) {
            splitInto(token, spansOf(m_regex.findAll(token.text), token.text.size(), true), Behavior::Removed, out);
        });
    }

private:
    OnigRegex m_regex;
};

} // namespace

std::unique_ptr<PreTokenizer> makePreTokenizer(const nlohmann::json &config, const std::string &where,
                                               const std::string &path)
{
    if (config.is_null())
        return nullptr;
    const std::string type = fields::typeOf(config, where, path);
    if (type == "Sequence") {
        const auto it = config.find("pretokenizers");
        if (it == config.end() || !it->is_array())
            throw invalidInput(fields::at(where, path + ".pretokenizers") + " is missing or not a list");
        std::vector<std::unique_ptr<PreTokenizer>> parts;
        for (size_t i = 0; i < it->size(); ++i) {
            if (auto part = makePreTokenizer((*it)[i], where, path + ".pretokenizers[" + std::to_string(i) + "]"))
                parts.push_back(std::move(part));
        }
        return std::make_unique<SequencePreTokenizer>(std::move(parts));
    }
    if (type == "Split")
        return std::make_unique<SplitPreTokenizer>(config, where, path);
    if (type == "ByteLevel")
        return std::make_unique<ByteLevelPreTokenizer>(fields::optionalBool(config, "add_prefix_space", true, where, path),
                                                       fields::optionalBool(config, "use_regex", true, where, path),
                                                       fields::at(where, path));
    if (type == "Metaspace") {
        const std::string replacement = fields::optionalString(config, "replacement", "\xE2\x96\x81", where, path);
        if (replacement.empty())
            throw invalidInput(fields::at(where, path + ".replacement") + " is empty");
        auto prepend = MetaspacePreTokenizer::Prepend::Always;
        if (!fields::optionalBool(config, "add_prefix_space", true, where, path))
            prepend = MetaspacePreTokenizer::Prepend::Never;
        const std::string scheme = fields::optionalString(config, "prepend_scheme", "", where, path);
        if (scheme == "first")
            prepend = MetaspacePreTokenizer::Prepend::First;
        else if (scheme == "never")
            prepend = MetaspacePreTokenizer::Prepend::Never;
        else if (scheme == "always")
            prepend = MetaspacePreTokenizer::Prepend::Always;
        else if (!scheme.empty())
            throw invalidInput(fields::at(where, path + ".prepend_scheme") + ": \"" + scheme +
                               "\" is not one of first, never, always");
        return std::make_unique<MetaspacePreTokenizer>(replacement, prepend,
                                                       fields::optionalBool(config, "split", true, where, path));
    }
    if (type == "Digits") {
        const bool individual = fields::optionalBool(config, "individual_digits", false, where, path);
        return std::make_unique<CharClassPreTokenizer>(utf8::isNumeric,
                                                       individual ? Behavior::Isolated : Behavior::Contiguous);
    }
    if (type == "WhitespaceSplit")
        return std::make_unique<CharClassPreTokenizer>(utf8::isWhitespace, Behavior::Removed);
    if (type == "Punctuation")
        return std::make_unique<CharClassPreTokenizer>(utf8::isPunctuation,
                                                       parseBehavior(config, where, path, Behavior::Isolated));
    if (type == "Whitespace")
        return std::make_unique<WhitespacePreTokenizer>(fields::at(where, path));
    throw invalidInput(fields::at(where, path + ".type") + ": pre-tokenizer \"" + type +
                       "\" is not supported (supported: Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, "
                       "WhitespaceSplit, Punctuation)");
}

} // namespace engine::tokenize
