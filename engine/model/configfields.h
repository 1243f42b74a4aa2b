#pragma once
// Readers for config.json fields shared by the model configs and module trees. Each throws
// Error(InvalidInput) whose message names the file (`source`) and the field. Engine-internal.

#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace engine {
class Error;
}

namespace engine::model::configfields {

// Upper bounds that no real model reaches: they catch typos and keep parameter counts in int64.
inline constexpr int64_t kMaxVocab = 10'000'000;
inline constexpr int64_t kMaxHidden = 1'000'000;
inline constexpr int64_t kMaxIntermediate = 10'000'000;
inline constexpr int64_t kMaxLayers = 10'000;
inline constexpr int64_t kMaxHeadDim = 65'536;
inline constexpr int64_t kMaxPositions = 1'000'000'000;

/// A short rendering of a JSON value with its type, for messages: `"64" (string)`.
std::string describe(const nlohmann::json &value);
/// "SOURCE: field 'FIELD' WHAT" as an invalid-input error.
Error fieldError(const std::string &source, const std::string &field, const std::string &what);

/// Reads an integer (an integral float is accepted); a missing key, or null when `nullAllowed`, leaves `out`.
void readInt(const nlohmann::json &object, const char *key, int64_t &out, const std::string &source,
             bool nullAllowed = false);
/// Reads a number; a missing key leaves `out`.
void readDouble(const nlohmann::json &object, const char *key, double &out, const std::string &source);
/// Reads true/false; a missing key leaves `out`.
void readBool(const nlohmann::json &object, const char *key, bool &out, const std::string &source);
/// Reads a string; a missing key leaves `out`.
void readString(const nlohmann::json &object, const char *key, std::string &out, const std::string &source);
/// The string at `key`, or "" when `object` is no object, the key is missing or holds another type (for
/// readers whose own check of the value says what is wrong; json::value() would throw type_error instead).
std::string stringOrEmpty(const nlohmann::json &object, const char *key);
/// Throws naming `field` and the limits unless low <= value <= high.
void checkRange(const std::string &source, const std::string &field, int64_t value, int64_t low, int64_t high);

/// Parses `path` (a config.json file, or a folder that holds one); `source` receives the file's path.
nlohmann::json readConfigFile(const std::filesystem::path &path, std::string &source);

} // namespace engine::model::configfields
