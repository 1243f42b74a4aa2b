#pragma once
// Limits of the chat-template interpreter. A chat template is code from whoever published the model
// (tokenizer_config.json), so every way it could exhaust the stack, the memory or the time is capped
// and reported as Error(InvalidInput) naming the limit, instead of crashing the program that renders it.
// Real templates stay far below each limit (the deepest seen nests about 12 levels, the longest
// renders a few kilobytes per message). Internal to engine/tokenize.

#include <cstddef>
#include <cstdint>

namespace engine::tokenize::jinja {

/// Nesting of expressions ((((x)))), [[[x]]], a+b+c+..., not not x) and of blocks (if/for/set inside
/// each other): the parser, the evaluator and the tree's destructor recurse once per level, and an
/// 8 MiB stack ends somewhere past 10,000 levels (fewer under AddressSanitizer).
inline constexpr int kMaxNesting = 256;
/// Nesting of values built while rendering ([[[...]]] grown by a loop, a namespace holding itself):
/// printing, comparing and destroying them recurse once per level.
inline constexpr int kMaxValueNesting = 256;
/// Bytes of the rendered text, of a {% set %} block's text and of any one string value.
inline constexpr size_t kMaxTextBytes = size_t{16} << 20;
/// Bytes of text built in one rendering, counted as strings are made or copied into lists: a loop
/// that appends a 16 MiB string to a list 100,000 times stays under every other limit.
inline constexpr size_t kMaxTextWork = size_t{256} << 20;
/// Items of any one list value (a Value takes about 40 bytes: a million is 40 MB).
inline constexpr size_t kMaxListItems = size_t{1} << 20;
/// for-loop iterations over a whole rendering, nested loops included (two nested range(100000)
/// loops would otherwise run for minutes).
inline constexpr int64_t kMaxLoopIterations = 1'000'000;

} // namespace engine::tokenize::jinja
