#pragma once
// The readable part of a torch error, for messages that quote it.

#include <exception>
#include <string>

namespace engine {

/// A torch error's message without the C++ backtrace PyTorch appends (what() up to "\nException raised
/// from ..."); what() for other exceptions. Torch-free.
std::string torchErrorText(const std::exception &error);

} // namespace engine
