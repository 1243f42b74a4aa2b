#include "engine/tokenize/onigregex.h"

#include "engine/core/error.h"
#include "engine/tokenize/utf8.h"

#include <oniguruma.h>

#include <mutex>

namespace engine::tokenize {
namespace {

void initializeOnce()
{
    static std::once_flag once;
    std::call_once(once, [] {
        OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
        onig_initialize(encodings, 1);
    });
}

/// Frees a match region on scope exit.
struct RegionGuard {
    OnigRegion *region = onig_region_new();
    ~RegionGuard() { onig_region_free(region, 1); }
};

} // namespace

struct OnigRegex::Impl {
    regex_t *regex = nullptr;
};

OnigRegex::OnigRegex(std::string_view pattern, const std::string &where) : m_impl(std::make_unique<Impl>())
{
    initializeOnce();
    OnigErrorInfo info{};
    const auto *begin = reinterpret_cast<const OnigUChar *>(pattern.data());
    const int code = onig_new(&m_impl->regex, begin, begin + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                              ONIG_SYNTAX_DEFAULT, &info);
    if (code != ONIG_NORMAL) {
        OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
        onig_error_code_to_str(message, code, &info);
        m_impl->regex = nullptr;
        throw invalidInput(where + ": the regex /" + std::string(pattern) + "/ does not compile (" +
                           reinterpret_cast<const char *>(message) + ")");
    }
}

OnigRegex::~OnigRegex()
{
    if (m_impl && m_impl->regex)
        onig_free(m_impl->regex);
}

std::vector<std::pair<size_t, size_t>> OnigRegex::findAll(std::string_view text) const
{
    std::vector<std::pair<size_t, size_t>> matches;
    const auto *begin = reinterpret_cast<const OnigUChar *>(text.data());
    const auto *end = begin + text.size();
    RegionGuard guard;
    size_t searchFrom = 0;
    bool havePrevious = false;
    size_t previousEnd = 0;
    while (searchFrom <= text.size()) {
        onig_region_clear(guard.region);
        const int found = onig_search(m_impl->regex, begin, end, begin + searchFrom, end, guard.region, ONIG_OPTION_NONE);
        if (found == ONIG_MISMATCH)
            break;
        if (found < 0)
            throw Error(ErrorKind::Internal, "Oniguruma search failed with code " + std::to_string(found));
        const auto matchBegin = static_cast<size_t>(guard.region->beg[0]);
        const auto matchEnd = static_cast<size_t>(guard.region->end[0]);
        if (matchBegin == matchEnd && havePrevious && previousEnd == matchEnd) {
            // An empty match right after the previous one: step over one character and retry.
            searchFrom += searchFrom < text.size() ? utf8::sequenceLength(static_cast<unsigned char>(text[searchFrom])) : 1;
            continue;
        }
        matches.emplace_back(matchBegin, matchEnd);
        searchFrom = matchEnd;
        havePrevious = true;
        previousEnd = matchEnd;
    }
    return matches;
}

} // namespace engine::tokenize
