#pragma once
// Filters, tests, attribute and item access, and global functions of the chat-template interpreter:
// the part of Jinja2's library (plus Python's str and dict methods) that chat templates use, with
// transformers' additions (raise_exception, strftime_now, its tojson). Internal to engine/tokenize.

#include "engine/tokenize/jinja/jinjavalue.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace engine::tokenize::jinja {

/// Whether the interpreter has a filter or test of this name (the parser refuses the others).
bool hasFilter(std::string_view name);
bool hasTest(std::string_view name);
/// Whether Jinja2 has it, to tell "not supported" from "no such filter" in errors.
bool isJinjaFilter(std::string_view name);
bool isJinjaTest(std::string_view name);

/// `input | name(args)`; throws RuntimeFailure for wrong arguments.
Value applyFilter(const std::string &name, const Value &input, CallArgs &args);
/// `input is name(args)`.
bool applyTest(const std::string &name, const Value &input, CallArgs &args);

/// `object.name` as Jinja resolves it: str and dict methods first, then dict keys and namespace
/// attributes; a miss is an Undefined that says what was missing.
Value getAttribute(const Value &object, const std::string &name);
/// `object[key]`: list, tuple and string indices (negative from the end), dict keys, then attributes.
Value getItem(const Value &object, const Value &key);
/// `object[start:stop:step]` on lists, tuples and strings; absent parts are None.
Value slice(const Value &object, const Value &start, const Value &stop, const Value &step);

/// The global functions: raise_exception, namespace, range, strftime_now. namespace() adds each
/// object it makes to `namespaces`, so that the renderer can break the cycles a template may make
/// (`{% set ns.self = ns %}`) when it is done; shared_ptr alone would leak them.
std::vector<std::pair<std::string, Value>> globalFunctions(std::vector<std::shared_ptr<NamespaceObject>> &namespaces);

} // namespace engine::tokenize::jinja
