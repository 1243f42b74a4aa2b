#include "engine/tokenize/utf8.h"

#include "engine/core/error.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <array>

namespace engine::tokenize::utf8 {
namespace {

/// For a lead byte: how many continuation bytes follow, and the allowed range of the first one.
struct LeadInfo {
    int continuation = -1; ///< -1: not a valid lead byte
    unsigned char lower = 0x80;
    unsigned char upper = 0xBF;
};

LeadInfo leadInfo(unsigned char b)
{
    if (b >= 0xC2 && b <= 0xDF)
        return {1};
    if (b == 0xE0)
        return {2, 0xA0, 0xBF};
    if (b == 0xED)
        return {2, 0x80, 0x9F};
    if (b >= 0xE1 && b <= 0xEF)
        return {2};
    if (b == 0xF0)
        return {3, 0x90, 0xBF};
    if (b == 0xF4)
        return {3, 0x80, 0x8F};
    if (b >= 0xF1 && b <= 0xF3)
        return {3};
    return {};
}

/// Length of the valid sequence at `pos`, or 0 with `*consumed` = the maximal invalid subpart.
size_t validSequenceAt(std::string_view bytes, size_t pos, size_t *consumed)
{
    const auto b = static_cast<unsigned char>(bytes[pos]);
    if (b < 0x80)
        return 1;
    const LeadInfo info = leadInfo(b);
    if (info.continuation < 0) {
        *consumed = 1;
        return 0;
    }
    size_t j = pos + 1;
    unsigned char lower = info.lower;
    unsigned char upper = info.upper;
    for (int k = 0; k < info.continuation; ++k, ++j) {
        if (j >= bytes.size()) {
            *consumed = j - pos;
            return 0;
        }
        const auto c = static_cast<unsigned char>(bytes[j]);
        if (c < lower || c > upper) {
            *consumed = j - pos;
            return 0;
        }
        lower = 0x80;
        upper = 0xBF;
    }
    return j - pos;
}

const std::array<char32_t, 256> &byteMap()
{
    static const std::array<char32_t, 256> map = [] {
        std::array<char32_t, 256> m{};
        char32_t extra = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            m[b] = printable ? static_cast<char32_t>(b) : extra++;
        }
        return m;
    }();
    return map;
}

icu::UnicodeString toIcu(std::string_view text)
{
    return icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
}

} // namespace

int sequenceLength(unsigned char lead)
{
    if (lead < 0x80)
        return 1;
    if (lead >= 0xF0 && lead <= 0xF7)
        return 4;
    if (lead >= 0xE0)
        return lead <= 0xEF ? 3 : 1;
    if (lead >= 0xC0)
        return 2;
    return 1;
}

char32_t next(std::string_view text, size_t &pos)
{
    const auto lead = static_cast<unsigned char>(text[pos]);
    const int length = sequenceLength(lead);
    if (length == 1 || pos + length > text.size()) {
        ++pos;
        return lead;
    }
    char32_t cp = length == 2 ? (lead & 0x1F) : length == 3 ? (lead & 0x0F) : (lead & 0x07);
    for (int i = 1; i < length; ++i)
        cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
    pos += length;
    return cp;
}

void append(std::string &out, char32_t cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

size_t firstInvalid(std::string_view text)
{
    size_t pos = 0;
    while (pos < text.size()) {
        size_t consumed = 0;
        const size_t length = validSequenceAt(text, pos, &consumed);
        if (length == 0)
            return pos;
        pos += length;
    }
    return std::string_view::npos;
}

std::string decodeLossy(std::string_view bytes)
{
    std::string out;
    out.reserve(bytes.size());
    size_t pos = 0;
    while (pos < bytes.size()) {
        size_t consumed = 0;
        const size_t length = validSequenceAt(bytes, pos, &consumed);
        if (length > 0) {
            out.append(bytes.substr(pos, length));
            pos += length;
        } else {
            out += "\xEF\xBF\xBD";
            pos += consumed;
        }
    }
    return out;
}

char32_t byteToChar(unsigned char byte) { return byteMap()[byte]; }

int charToByte(char32_t cp)
{
    static const std::array<int, 324> inverse = [] {
        std::array<int, 324> inv;
        inv.fill(-1);
        for (int b = 0; b < 256; ++b)
            inv[byteMap()[b]] = b;
        return inv;
    }();
    return cp < inverse.size() ? inverse[cp] : -1;
}

bool isWhitespace(char32_t cp) { return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE); }

bool isWordChar(char32_t cp)
{
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') || cp == '_';
    const int32_t mask = U_GET_GC_MASK(static_cast<UChar32>(cp));
    return (mask & (U_GC_L_MASK | U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

bool isNumeric(char32_t cp) { return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_N_MASK) != 0; }

bool isPunctuation(char32_t cp)
{
    if (cp < 0x80)
        return (cp >= '!' && cp <= '/') || (cp >= ':' && cp <= '@') || (cp >= '[' && cp <= '`') ||
               (cp >= '{' && cp <= '~');
    return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_P_MASK) != 0;
}

bool isNonSpacingMark(char32_t cp) { return u_charType(static_cast<UChar32>(cp)) == U_NON_SPACING_MARK; }

std::string normalize(std::string_view text, NormalForm form)
{
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2 *normalizer = nullptr;
    switch (form) {
    case NormalForm::Nfc: normalizer = icu::Normalizer2::getNFCInstance(status); break;
    case NormalForm::Nfd: normalizer = icu::Normalizer2::getNFDInstance(status); break;
    case NormalForm::Nfkc: normalizer = icu::Normalizer2::getNFKCInstance(status); break;
    case NormalForm::Nfkd: normalizer = icu::Normalizer2::getNFKDInstance(status); break;
    }
    if (U_FAILURE(status) || !normalizer)
        throw Error(ErrorKind::Internal, std::string("ICU normalizer unavailable: ") + u_errorName(status));
    const icu::UnicodeString input = toIcu(text);
    if (normalizer->isNormalized(input, status) && U_SUCCESS(status))
        return std::string(text);
    status = U_ZERO_ERROR;
    const icu::UnicodeString output = normalizer->normalize(input, status);
    if (U_FAILURE(status))
        throw Error(ErrorKind::Internal, std::string("ICU normalization failed: ") + u_errorName(status));
    std::string result;
    output.toUTF8String(result);
    return result;
}

std::string toLower(std::string_view text)
{
    icu::UnicodeString value = toIcu(text);
    value.toLower(icu::Locale::getRoot());
    std::string result;
    value.toUTF8String(result);
    return result;
}

} // namespace engine::tokenize::utf8
