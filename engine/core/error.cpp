#include "engine/core/error.h"
#include "engine/core/torcherror.h"

#include <exception>
#include <new>

namespace engine {

std::string_view errorKindName(ErrorKind kind)
{
    switch (kind) {
    case ErrorKind::InvalidInput: return "invalid input";
    case ErrorKind::Io: return "I/O error";
    case ErrorKind::OutOfMemory: return "out of memory";
    case ErrorKind::Internal: return "internal error";
    }
    return "internal error";
}

ErrorInfo currentExceptionInfo()
{
    try {
        throw;
    } catch (const Error &e) {
        return {e.kind(), e.what(), e.field()};
    } catch (const std::bad_alloc &) {
        return {ErrorKind::OutOfMemory, "out of host memory (std::bad_alloc)", {}};
    } catch (const std::exception &e) {
        // Torch's errors (c10::Error, c10::OutOfMemoryError) are std::exceptions; they are told by their
        // text, so that this stays torch-free: the GUI program, which links no libtorch, classifies the
        // errors of its engine module with it too.
        const std::string message = torchErrorText(e);
        const bool oom = message.find("out of memory") != std::string::npos
            || message.find("DefaultCPUAllocator") != std::string::npos; // "can't allocate memory", "not enough memory"
        return {oom ? ErrorKind::OutOfMemory : ErrorKind::Internal, message, {}};
    } catch (...) {
        return {ErrorKind::Internal, "unknown exception", {}};
    }
}

std::string torchErrorText(const std::exception &error)
{
    std::string text = error.what();
    // c10::Error's what() is its message, then "\nException raised from ..." and the C++ backtrace
    // (what_without_backtrace without them); keep the message itself.
    const size_t raised = text.find("\nException raised from");
    if (raised != std::string::npos)
        text.erase(raised);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

} // namespace engine
