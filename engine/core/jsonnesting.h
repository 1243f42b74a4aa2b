#pragma once
// A cap on how deeply JSON from outside may nest, checked on the text before it is parsed.
// nlohmann::json parses and destroys any depth without recursing, but copying a value, dump() and
// comparisons recurse once per level: a 200 KB config.json of nested brackets (about 100,000
// levels) overflows an 8 MiB stack wherever a reader copies or prints the field that holds it. No
// real file comes near the limit (tokenizer.json and config.json nest under 10 levels).

#include <string>
#include <string_view>

namespace engine {

inline constexpr int kMaxJsonNesting = 256;

/// The deepest nesting of arrays and objects in `text` (brackets inside strings do not count),
/// scanning no further than one level past `limit`. Malformed text gives some number; the parser
/// reports what is malformed.
int jsonNesting(std::string_view text, int limit = kMaxJsonNesting);

/// Throws Error(InvalidInput) "<source>: JSON nests deeper than 256 levels" when `text` does.
void checkJsonNesting(std::string_view text, const std::string &source);

} // namespace engine
