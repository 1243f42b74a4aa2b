#include "engine/tokenize/tokendecoder.h"

#include "engine/tokenize/jsonfields.h"
#include "engine/tokenize/textpattern.h"
#include "engine/tokenize/utf8.h"

namespace engine::tokenize {
namespace {

class SequenceDecoder : public TokenDecoder {
public:
    explicit SequenceDecoder(std::vector<std::unique_ptr<TokenDecoder>> parts) : m_parts(std::move(parts)) {}
    std::vector<std::string> decodeChain(std::vector<std::string> tokens) const override
    {
        for (const auto &part : m_parts)
            tokens = part->decodeChain(std::move(tokens));
        return tokens;
    }

private:
    std::vector<std::unique_ptr<TokenDecoder>> m_parts;
};

class ByteLevelDecoder : public TokenDecoder {
public:
    std::vector<std::string> decodeChain(std::vector<std::string> tokens) const override
    {
        std::string bytes;
        for (const std::string &token : tokens) {
            // A token with a character outside the byte map (an added token) is kept as it is.
            std::string mapped;
            bool allMapped = true;
            size_t pos = 0;
            while (pos < token.size()) {
                const int byte = utf8::charToByte(utf8::next(token, pos));
                if (byte < 0) {
                    allMapped = false;
                    break;
                }
                mapped += static_cast<char>(byte);
            }
            bytes += allMapped ? mapped : token;
        }
        return {utf8::decodeLossy(bytes)};
    }
};

class ReplaceDecoder : public TokenDecoder {
public:
    ReplaceDecoder(const nlohmann::json &config, const std::string &where, const std::string &path)
        : m_pattern(config.value("pattern", nlohmann::json()), where, path + ".pattern"),
          m_content(fields::requireString(config, "content", where, path))
    {
    }
    std::vector<std::string> decodeChain(std::vector<std::string> tokens) const override
    {
        for (std::string &token : tokens)
            token = m_pattern.replaceAll(token, m_content);
        return tokens;
    }

private:
    TextPattern m_pattern;
    std::string m_content;
};

class ByteFallbackDecoder : public TokenDecoder {
public:
    std::vector<std::string> decodeChain(std::vector<std::string> tokens) const override
    {
        std::vector<std::string> out;
        std::string pending;
        auto flush = [&] {
            if (pending.empty())
                return;
            if (utf8::firstInvalid(pending) == std::string::npos) {
                out.push_back(pending);
            } else {
                for (size_t i = 0; i < pending.size(); ++i)
                    out.emplace_back("\xEF\xBF\xBD"); // HF tokenizers: one U+FFFD per byte
            }
            pending.clear();
        };
        for (std::string &token : tokens) {
            const int byte = byteOf(token);
            if (byte >= 0) {
                pending += static_cast<char>(byte);
                continue;
            }
            flush();
            out.push_back(std::move(token));
        }
        flush();
        return out;
    }

private:
    static int hexDigit(char c)
    {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        if (c >= 'a' && c <= 'f')
            return c - 'a' + 10;
        return -1;
    }
    /// The byte of "<0xAB>", or -1.
    static int byteOf(const std::string &token)
    {
        if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>')
            return -1;
        const int high = hexDigit(token[3]);
        const int low = hexDigit(token[4]);
        return high < 0 || low < 0 ? -1 : high * 16 + low;
    }
};

class FuseDecoder : public TokenDecoder {
public:
    std::vector<std::string> decodeChain(std::vector<std::string> tokens) const override
    {
        std::string joined;
        for (const std::string &token : tokens)
            joined += token;
        return {joined};
    }
};

class StripDecoder : public TokenDecoder {
public:
    StripDecoder(std::string content, int start, int stop) : m_content(std::move(content)), m_start(start), m_stop(stop) {}
    std::vector<std::string> decodeChain(std::vector<std::string> tokens) const override
    {
        for (std::string &token : tokens) {
            size_t begin = 0;
            for (int i = 0; i < m_start && token.compare(begin, m_content.size(), m_content) == 0; ++i)
                begin += m_content.size();
            size_t end = token.size();
            for (int i = 0; i < m_stop && end >= begin + m_content.size() &&
                            token.compare(end - m_content.size(), m_content.size(), m_content) == 0;
                 ++i)
                end -= m_content.size();
            token = token.substr(begin, end - begin);
        }
        return tokens;
    }

private:
    std::string m_content;
    int m_start;
    int m_stop;
};

class MetaspaceDecoder : public TokenDecoder {
public:
    MetaspaceDecoder(std::string replacement, bool stripFirst) : m_replacement(std::move(replacement)), m_stripFirst(stripFirst) {}
    std::vector<std::string> decodeChain(std::vector<std::string> tokens) const override
    {
        for (size_t i = 0; i < tokens.size(); ++i) {
            std::string out;
            const std::string &token = tokens[i];
            for (size_t pos = 0; pos < token.size();) {
                if (token.compare(pos, m_replacement.size(), m_replacement) == 0) {
                    if (!(i == 0 && m_stripFirst))
                        out += ' ';
                    pos += m_replacement.size();
                } else {
                    out += token[pos++];
                }
            }
            tokens[i] = std::move(out);
        }
        return tokens;
    }

private:
    std::string m_replacement;
    bool m_stripFirst;
};

class BpeSuffixDecoder : public TokenDecoder {
public:
    explicit BpeSuffixDecoder(std::string suffix) : m_suffix(std::move(suffix)) {}
    std::vector<std::string> decodeChain(std::vector<std::string> tokens) const override
    {
        for (size_t i = 0; i < tokens.size(); ++i) {
            std::string out;
            const std::string &token = tokens[i];
            const std::string replacement = i + 1 == tokens.size() ? "" : " ";
            for (size_t pos = 0; pos < token.size();) {
                if (!m_suffix.empty() && token.compare(pos, m_suffix.size(), m_suffix) == 0) {
                    out += replacement;
                    pos += m_suffix.size();
                } else {
                    out += token[pos++];
                }
            }
            tokens[i] = std::move(out);
        }
        return tokens;
    }

private:
    std::string m_suffix;
};

int optionalInt(const nlohmann::json &config, const char *key, const std::string &where, const std::string &path)
{
    const auto it = config.find(key);
    if (it == config.end() || it->is_null())
        return 0;
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
        throw invalidInput(fields::at(where, path + "." + key) + " is not a non-negative integer");
    return it->get<int>();
}

} // namespace

std::unique_ptr<TokenDecoder> makeTokenDecoder(const nlohmann::json &config, const std::string &where,
                                               const std::string &path)
{
    if (config.is_null())
        return nullptr;
    const std::string type = fields::typeOf(config, where, path);
    if (type == "Sequence") {
        const auto it = config.find("decoders");
        if (it == config.end() || !it->is_array())
            throw invalidInput(fields::at(where, path + ".decoders") + " is missing or not a list");
        std::vector<std::unique_ptr<TokenDecoder>> parts;
        for (size_t i = 0; i < it->size(); ++i) {
            if (auto part = makeTokenDecoder((*it)[i], where, path + ".decoders[" + std::to_string(i) + "]"))
                parts.push_back(std::move(part));
        }
        return std::make_unique<SequenceDecoder>(std::move(parts));
    }
    if (type == "ByteLevel")
        return std::make_unique<ByteLevelDecoder>();
    if (type == "Replace")
        return std::make_unique<ReplaceDecoder>(config, where, path);
    if (type == "ByteFallback")
        return std::make_unique<ByteFallbackDecoder>();
    if (type == "Fuse")
        return std::make_unique<FuseDecoder>();
    if (type == "Strip")
        return std::make_unique<StripDecoder>(fields::requireString(config, "content", where, path),
                                              optionalInt(config, "start", where, path),
                                              optionalInt(config, "stop", where, path));
    if (type == "Metaspace") {
        const std::string replacement = fields::optionalString(config, "replacement", "\xE2\x96\x81", where, path);
        bool stripFirst = fields::optionalBool(config, "add_prefix_space", true, where, path);
        const std::string scheme = fields::optionalString(config, "prepend_scheme", "", where, path);
        if (!scheme.empty())
            stripFirst = scheme != "never";
        return std::make_unique<MetaspaceDecoder>(replacement, stripFirst);
    }
    if (type == "BPEDecoder")
        return std::make_unique<BpeSuffixDecoder>(fields::optionalString(config, "suffix", "</w>", where, path));
    throw invalidInput(fields::at(where, path + ".type") + ": decoder \"" + type +
                       "\" is not supported (supported: Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, "
                       "Metaspace, BPEDecoder)");
}

} // namespace engine::tokenize
