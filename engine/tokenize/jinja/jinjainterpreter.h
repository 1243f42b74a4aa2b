#pragma once
// Evaluator of the chat-template interpreter: walks the tree from jinjaparser.h with Jinja2's
// scoping (a for loop's body gets a fresh scope each iteration; `set` inside it does not leak out,
// which is why templates use namespace()). Internal to engine/tokenize.

#include "engine/tokenize/jinja/jinjalexer.h"
#include "engine/tokenize/jinja/jinjaparser.h"
#include "engine/tokenize/jinja/jinjavalue.h"

#include <string>
#include <utility>
#include <vector>

namespace engine::tokenize::jinja {

/// Renders `body` with `variables` on top of the global functions. Throws Error(InvalidInput)
/// naming line:column for runtime errors, and with the template's own message for raise_exception.
std::string render(const Body &body, const std::vector<std::pair<std::string, Value>> &variables,
                   const SourceLocator &locator);

} // namespace engine::tokenize::jinja
