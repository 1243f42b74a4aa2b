#include "engine/core/error.h"
#include "engine/core/torcherror.h"

#include <c10/util/Exception.h>

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
        return {e.kind(), e.what()};
    } catch (const c10::OutOfMemoryError &e) {
        return {ErrorKind::OutOfMemory, e.what_without_backtrace()};
    } catch (const c10::Error &e) {
        const std::string message = e.what_without_backtrace();
        const bool oom = message.find("out of memory") != std::string::npos
            || message.find("DefaultCPUAllocator") != std::string::npos; // "can't allocate memory", "not enough memory"
        return {oom ? ErrorKind::OutOfMemory : ErrorKind::Internal, message};
    } catch (const std::bad_alloc &) {
        return {ErrorKind::OutOfMemory, "out of host memory (std::bad_alloc)"};
    } catch (const std::exception &e) {
        return {ErrorKind::Internal, e.what()};
    } catch (...) {
        return {ErrorKind::Internal, "unknown exception"};
    }
}

std::string torchErrorText(const std::exception &error)
{
    std::string text;
    if (const auto *c10error = dynamic_cast<const c10::Error *>(&error))
        text = c10error->what_without_backtrace();
    else
        text = error.what();
    // c10 appends "\nException raised from ..." on some builds; keep the message itself.
    const size_t raised = text.find("\nException raised from");
    if (raised != std::string::npos)
        text.erase(raised);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    return text;
}

} // namespace engine
