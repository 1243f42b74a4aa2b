#include "engine/tokenize/normalizer.h"

#include "engine/tokenize/jsonfields.h"
#include "engine/tokenize/textpattern.h"
#include "engine/tokenize/utf8.h"

#include <vector>

namespace engine::tokenize {
namespace {

class SequenceNormalizer : public Normalizer {
public:
    explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : m_parts(std::move(parts)) {}
    std::string normalize(std::string_view text) const override
    {
        std::string value(text);
        for (const auto &part : m_parts)
            value = part->normalize(value);
        return value;
    }

private:
    std::vector<std::unique_ptr<Normalizer>> m_parts;
};

class UnicodeNormalizer : public Normalizer {
public:
    explicit UnicodeNormalizer(utf8::NormalForm form) : m_form(form) {}
    std::string normalize(std::string_view text) const override { return utf8::normalize(text, m_form); }

private:
    utf8::NormalForm m_form;
};

class LowercaseNormalizer : public Normalizer {
public:
    std::string normalize(std::string_view text) const override { return utf8::toLower(text); }
};

class StripNormalizer : public Normalizer {
public:
    StripNormalizer(bool left, bool right) : m_left(left), m_right(right) {}
    std::string normalize(std::string_view text) const override
    {
        size_t begin = 0;
        size_t end = text.size();
        if (m_left) {
            while (begin < end) {
                size_t probe = begin;
                if (!utf8::isWhitespace(utf8::next(text, probe)))
                    break;
                begin = probe;
            }
        }
        if (m_right) {
            while (end > begin) {
                size_t start = end - 1;
                while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
                    --start;
                size_t probe = start;
                if (!utf8::isWhitespace(utf8::next(text, probe)))
                    break;
                end = start;
            }
        }
        return std::string(text.substr(begin, end - begin));
    }

private:
    bool m_left;
    bool m_right;
};

class StripAccentsNormalizer : public Normalizer {
public:
    std::string normalize(std::string_view text) const override
    {
        std::string out;
        size_t pos = 0;
        while (pos < text.size()) {
            const size_t start = pos;
            if (!utf8::isNonSpacingMark(utf8::next(text, pos)))
                out.append(text.substr(start, pos - start));
        }
        return out;
    }
};

class ReplaceNormalizer : public Normalizer {
public:
    ReplaceNormalizer(const nlohmann::json &config, const std::string &where, const std::string &path)
        : m_pattern(config.value("pattern", nlohmann::json()), where, path + ".pattern"),
          m_content(fields::requireString(config, "content", where, path))
    {
    }
    std::string normalize(std::string_view text) const override { return m_pattern.replaceAll(text, m_content); }

private:
    TextPattern m_pattern;
    std::string m_content;
};

class PrependNormalizer : public Normalizer {
public:
    explicit PrependNormalizer(std::string prefix) : m_prefix(std::move(prefix)) {}
    std::string normalize(std::string_view text) const override
    {
        return text.empty() ? std::string() : m_prefix + std::string(text);
    }

private:
    std::string m_prefix;
};

} // namespace

std::unique_ptr<Normalizer> makeNormalizer(const nlohmann::json &config, const std::string &where,
                                           const std::string &path)
{
    if (config.is_null())
        return nullptr;
    const std::string type = fields::typeOf(config, where, path);
    if (type == "Sequence") {
        const auto it = config.find("normalizers");
        if (it == config.end() || !it->is_array())
            throw invalidInput(fields::at(where, path + ".normalizers") + " is missing or not a list");
        std::vector<std::unique_ptr<Normalizer>> parts;
        for (size_t i = 0; i < it->size(); ++i) {
            if (auto part = makeNormalizer((*it)[i], where, path + ".normalizers[" + std::to_string(i) + "]"))
                parts.push_back(std::move(part));
        }
        return std::make_unique<SequenceNormalizer>(std::move(parts));
    }
    if (type == "NFC")
        return std::make_unique<UnicodeNormalizer>(utf8::NormalForm::Nfc);
    if (type == "NFD")
        return std::make_unique<UnicodeNormalizer>(utf8::NormalForm::Nfd);
    if (type == "NFKC")
        return std::make_unique<UnicodeNormalizer>(utf8::NormalForm::Nfkc);
    if (type == "NFKD")
        return std::make_unique<UnicodeNormalizer>(utf8::NormalForm::Nfkd);
    if (type == "Lowercase")
        return std::make_unique<LowercaseNormalizer>();
    if (type == "Strip")
        return std::make_unique<StripNormalizer>(fields::optionalBool(config, "strip_left", true, where, path),
                                                 fields::optionalBool(config, "strip_right", true, where, path));
    if (type == "StripAccents")
        return std::make_unique<StripAccentsNormalizer>();
    if (type == "Replace")
        return std::make_unique<ReplaceNormalizer>(config, where, path);
    if (type == "Prepend")
        return std::make_unique<PrependNormalizer>(fields::requireString(config, "prepend", where, path));
    throw invalidInput(fields::at(where, path + ".type") + ": normalizer \"" + type +
                       "\" is not supported (supported: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
                       "StripAccents, Replace, Prepend)");
}

} // namespace engine::tokenize
