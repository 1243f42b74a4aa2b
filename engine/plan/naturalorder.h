#pragma once
// Natural order of names: digit runs compare as numbers, so "layers.2" comes before "layers.10" and
// "qwen2.5-3b" before "qwen2.5-14b". Used where tensor names and catalog names are listed in order.

#include <string>

namespace engine::plan {

/// `a` comes before `b` in natural order.
bool naturalLess(const std::string &a, const std::string &b);

} // namespace engine::plan
