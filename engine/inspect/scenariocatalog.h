#pragma once
// The built-in scenarios by name: what each shows and whether it has a fix to verify. Torch-free, so
// that the Inspect page lists them before libtorch is loaded; scenarios.cpp builds and runs them.
// scenarioNames() and scenarioDescription() (inspector.h) read this catalog.

#include <string>

namespace engine::inspect {

struct ScenarioInfo {
    std::string description; ///< one sentence on what the scenario shows
    bool hasFix = true;      ///< verifyFix reruns it fixed (false: it is itself a fixed version)
};

/// The scenario of that name. Throws Error(InvalidInput) naming the known ones for any other name.
const ScenarioInfo &scenarioInfo(const std::string &name);

} // namespace engine::inspect
