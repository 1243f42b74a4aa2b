#pragma once
// Module paths for the autograd inspector: the engine's modules push their names while their
// forward runs, so a recorder can say that an op ran in "model.layers.0.self_attn". Costs one
// relaxed atomic load per scope when nothing is recording.
//
// How to use (in a module's forward):
//   engine::ModuleScope scope("self_attn");          // or ModuleScope("layers", i) for "layers.<i>"
// and in a recorder:
//   engine::ModuleScope::setTracking(true);          // counted: several recorders may nest
//   std::string_view path = engine::ModuleScope::currentPath();   // "" at the top
//   engine::ModuleScope::setTracking(false);

#include <cstdint>
#include <string_view>

namespace engine {

/// Pushes one segment of the current thread's module path for its lifetime (RAII).
class ModuleScope {
public:
    /// Pushes `name` ("self_attn"). `name` is copied; a no-op when no recorder tracks scopes.
    explicit ModuleScope(std::string_view name);
    /// Pushes "name.index" ("layers.0").
    ModuleScope(std::string_view name, int64_t index);
    ~ModuleScope();
    ModuleScope(const ModuleScope &) = delete;
    ModuleScope &operator=(const ModuleScope &) = delete;

    /// The current thread's dotted path ("model.layers.0.mlp"); empty when none or not tracking.
    static std::string_view currentPath();
    /// Turns tracking on (counted) or off; scopes entered while it is off stay invisible.
    static void setTracking(bool on);
    /// Whether some recorder tracks scopes now.
    static bool tracking();

private:
    int64_t m_restoreLength = -1; ///< path length to restore on exit; -1 = pushed nothing
};

} // namespace engine
