#include "engine/core/jsonnesting.h"

#include "engine/core/error.h"

namespace engine {

int jsonNesting(std::string_view text, int limit)
{
    int depth = 0;
    int deepest = 0;
    bool inString = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (inString) {
            if (c == '\\')
                ++i; // the escaped character cannot end the string
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) {
                deepest = depth;
                if (deepest > limit)
                    return deepest;
            }
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return deepest;
}

void checkJsonNesting(std::string_view text, const std::string &source)
{
    if (jsonNesting(text) > kMaxJsonNesting)
        throw invalidInput(source + ": JSON nests deeper than " + std::to_string(kMaxJsonNesting) + " levels");
}

} // namespace engine
