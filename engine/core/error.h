#pragma once
// Typed errors of the engine. User input that is wrong throws engine::Error with a kind and one
// clear message naming the file, the field and the limit; internal invariants are asserts.
// Errors never cross a thread: job boundaries catch them and return them as values.

#include <stdexcept>
#include <string>
#include <string_view>

namespace engine {

/// What went wrong, coarse enough for the UI to choose how to show it.
enum class ErrorKind {
    InvalidInput, ///< a file, config, flag or setting the user gave is wrong
    Io,           ///< reading or writing a file or database failed
    OutOfMemory,  ///< an allocation on a device failed
    Internal,     ///< a bug: an invariant did not hold
};

/// "invalid input", "I/O error", ...
std::string_view errorKindName(ErrorKind kind);

/// The one exception type the engine throws on purpose.
class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string &message, std::string field = {})
        : std::runtime_error(message), m_kind(kind), m_field(std::move(field))
    {
    }
    ErrorKind kind() const { return m_kind; }
    /// The training setting the error is about, by its key in engine/train/settingschema.h
    /// ("learning_rate", "lora.target_modules"); empty when it is about no one setting. The Train page
    /// marks that field.
    const std::string &field() const { return m_field; }

private:
    ErrorKind m_kind;
    std::string m_field;
};

/// Shorthands for the common kinds.
inline Error invalidInput(const std::string &message) { return Error(ErrorKind::InvalidInput, message); }
inline Error ioError(const std::string &message) { return Error(ErrorKind::Io, message); }
/// Bad input in one training setting: InvalidInput about `field` (a setting's key).
inline Error invalidSetting(std::string field, const std::string &message)
{
    return Error(ErrorKind::InvalidInput, message, std::move(field));
}

/// An error as a value, for crossing thread and job boundaries.
struct ErrorInfo {
    ErrorKind kind = ErrorKind::Internal;
    std::string message;
    std::string field; ///< Error::field(): the setting it is about, or empty
};

/// Converts whatever is in flight (call inside a catch block) into an ErrorInfo: engine::Error keeps
/// its kind, c10::Error and std::bad_alloc map to OutOfMemory where they say so, the rest is Internal.
ErrorInfo currentExceptionInfo();

} // namespace engine
