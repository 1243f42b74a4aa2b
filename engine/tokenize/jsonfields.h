#pragma once
// Internal helpers for reading tokenizer.json fields with errors that name the file and the field.

#include "engine/core/error.h"

#include <nlohmann/json.hpp>

#include <string>

namespace engine::tokenize::fields {

/// "FILE: field PATH" for error messages; `where` is the file, `field` a dotted path.
inline std::string at(const std::string &where, const std::string &field) { return where + ": field " + field; }

/// "path.key", or "key" at the top level.
inline std::string join(const std::string &path, const char *key) { return path.empty() ? std::string(key) : path + "." + key; }

/// A string field that must be present.
inline std::string requireString(const nlohmann::json &object, const char *key, const std::string &where,
                                 const std::string &path)
{
    const auto it = object.find(key);
    if (it == object.end() || !it->is_string())
        throw invalidInput(at(where, join(path, key)) + (it == object.end() ? " is missing" : " is not a string"));
    return it->get<std::string>();
}

/// A boolean field; null or absent gives `fallback`.
inline bool optionalBool(const nlohmann::json &object, const char *key, bool fallback, const std::string &where,
                         const std::string &path)
{
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return fallback;
    if (!it->is_boolean())
        throw invalidInput(at(where, join(path, key)) + " is not true or false");
    return it->get<bool>();
}

/// A string field; null or absent gives `fallback`.
inline std::string optionalString(const nlohmann::json &object, const char *key, const std::string &fallback,
                                  const std::string &where, const std::string &path)
{
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return fallback;
    if (!it->is_string())
        throw invalidInput(at(where, join(path, key)) + " is not a string");
    return it->get<std::string>();
}

/// The "type" of a component object.
inline std::string typeOf(const nlohmann::json &object, const std::string &where, const std::string &path)
{
    if (!object.is_object())
        throw invalidInput(at(where, path) + " is not an object");
    return requireString(object, "type", where, path);
}

} // namespace engine::tokenize::fields
