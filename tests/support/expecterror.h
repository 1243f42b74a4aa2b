#pragma once
// Test helper: expect a call to throw engine::Error of a given kind, with a given text in its message.

#include "engine/core/error.h"

#include <gtest/gtest.h>

#include <string>

namespace testing_support {

/// Expects `call` to throw engine::Error of `kind` whose message mentions `needle`.
template <typename Call>
void expectError(Call call, engine::ErrorKind kind, const std::string &needle)
{
    try {
        call();
        FAIL() << "no error thrown";
    } catch (const engine::Error &error) {
        EXPECT_EQ(error.kind(), kind) << error.what();
        EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
    }
}

} // namespace testing_support
