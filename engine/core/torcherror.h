#pragma once
// The readable part of a torch error, for messages that quote it.

#include <exception>
#include <string>

namespace engine {

/// A torch error's message without the C++ backtrace PyTorch appends (c10::Error's
/// what_without_backtrace, less a trailing "Exception raised from ..."); what() for other exceptions.
std::string torchErrorText(const std::exception &error);

} // namespace engine
