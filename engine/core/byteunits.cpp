#include "engine/core/byteunits.h"

#include "engine/core/error.h"
#include "engine/core/textutil.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace engine {
namespace {

struct Unit {
    const char *suffix; // upper case
    double factor;
    bool decimal;       // a lowercase trailing "b" means bits
};

// Longest suffixes first so "GIB" wins over "B".
constexpr Unit kUnits[] = {
    {"TIB", 1099511627776.0, false}, {"GIB", 1073741824.0, false}, {"MIB", 1048576.0, false},
    {"KIB", 1024.0, false},          {"TB", 1e12, true},           {"GB", 1e9, true},
    {"MB", 1e6, true},               {"KB", 1e3, true},            {"B", 1.0, false},
};

bool endsWithUpper(std::string_view text, std::string_view suffix)
{
    if (text.size() < suffix.size())
        return false;
    for (size_t i = 0; i < suffix.size(); ++i) {
        const char c = static_cast<char>(std::toupper(static_cast<unsigned char>(text[text.size() - suffix.size() + i])));
        if (c != suffix[i])
            return false;
    }
    return true;
}

} // namespace

int64_t parseByteSize(std::string_view input, const std::string &what)
{
    const std::string_view text = trimWhitespace(input);
    const auto bad = [&](const std::string &why) {
        return invalidInput(what + ": \"" + std::string(input) + "\" " + why
                            + " (use bytes as an integer, or a number with KB/MB/GB/TB or KiB/MiB/GiB/TiB, e.g. 15GiB)");
    };
    if (text.empty())
        throw bad("is empty");
    std::string_view number = text;
    double factor = 1.0;
    bool bits = false;
    for (const Unit &unit : kUnits) {
        if (endsWithUpper(text, unit.suffix)) {
            number = trimWhitespace(text.substr(0, text.size() - std::string_view(unit.suffix).size()));
            factor = unit.factor;
            bits = unit.decimal && text.back() == 'b';
            break;
        }
    }
    if (number.empty())
        throw bad("has no number");
    // Digits, at most one '.', an optional leading sign (a '-' is refused below with its own message).
    bool seenDigit = false, seenDot = false;
    for (size_t i = 0; i < number.size(); ++i) {
        const char c = number[i];
        if (std::isdigit(static_cast<unsigned char>(c)))
            seenDigit = true;
        else if (c == '.' && !seenDot)
            seenDot = true;
        else if (i == 0 && (c == '-' || c == '+'))
            continue;
        else
            throw bad("is not a size");
    }
    if (!seenDigit)
        throw bad("is not a size");
    if (number.front() == '-')
        throw bad("is negative");
    if (number.front() == '+')
        number.remove_prefix(1);

    int64_t bytes = 0;
    if (!seenDot && factor == 1.0) {
        // Plain integers are exact (no detour through double).
        const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), bytes);
        if (ec != std::errc() || end != number.data() + number.size() || bytes > (int64_t(1) << 62))
            throw bad("is too large (limit 4 EiB)");
    } else {
        const double value = std::strtod(std::string(number).c_str(), nullptr) * factor;
        if (!std::isfinite(value) || value > std::ldexp(1.0, 62))
            throw bad("is too large (limit 4 EiB)");
        bytes = static_cast<int64_t>(value); // truncated, as Accelerate's int(float(...) * unit)
        if (bits)
            bytes /= 8;
    }
    if (bytes <= 0)
        throw bad("is zero: a budget must be at least one byte");
    return bytes;
}

} // namespace engine
