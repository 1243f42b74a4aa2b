#pragma once
// Where each part of a model lives: module-name prefixes mapped to devices, as Accelerate's
// device_map does. Torch-free; the dispatched loader (dispatch.h) follows a placement.
//
// How to use:
//   DevicePlacement p = DevicePlacement::fromJson(R"({"model.embed_tokens": 0, "model.layers.0": "cpu",
//                                                     "model.layers.1": "disk", "model.norm": "cpu",
//                                                     "lm_head": "cpu"})", "map.json");
//   p.deviceOf("model.layers.1.mlp.up_proj.weight");   // "disk"   (longest matching prefix)
//   p.deviceOf("model.embed_tokens.weight");           // "cuda:0" (Accelerate's integer 0)
//   std::vector<std::string> devices = resolvePlacement(p, parameterNames, cudaDeviceCount, "map.json");
//
// Devices are "cpu", "disk" (weights stay memory-mapped in their file) and "cuda:N". A prefix matches
// a parameter on module-name boundaries: "model.layers.1" matches "model.layers.1.mlp.up_proj.weight"
// but not "model.layers.10.mlp.up_proj.weight"; "" matches everything. When several entries match,
// the longest (most specific) wins.

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace engine::model {

/// Module-name prefixes and their devices, in the order given.
struct DevicePlacement {
    /// (module prefix, device): device normalized to "cpu", "disk" or "cuda:N".
    std::vector<std::pair<std::string, std::string>> entries;

    /// Everything on one device ({"" : device}); `device` as normalizeDevice accepts.
    static DevicePlacement everything(const std::string &device);
    /// Parses Accelerate's device_map JSON object ({"model.layers.0": 0, "lm_head": "cpu", ...});
    /// also accepts an object holding it under "device_map" (the planner's --json output).
    /// `label` names the source in errors. Throws Error(InvalidInput) for malformed JSON, a value that
    /// is not a device, or an empty map.
    static DevicePlacement fromJson(const std::string &text, const std::string &label);
    /// fromJson over a file's text. Throws Error(Io) when it cannot be read.
    static DevicePlacement fromFile(const std::filesystem::path &path);

    /// The device of the longest entry matching `parameterName`, or nullptr when none matches.
    const std::string *deviceOf(std::string_view parameterName) const;
    /// Accelerate's JSON format (GPU indices as integers), entries in order.
    std::string toJson() const;
};

/// Whether module prefix `prefix` covers parameter (or module) `name` on a module-name boundary.
bool prefixCovers(std::string_view prefix, std::string_view name);

/// "cpu", "disk", "cuda:N" for the device spellings Accelerate and torch use: "cpu", "disk", "cuda"
/// (= "cuda:0"), "cuda:N", and the integer-valued strings "N". Throws Error(InvalidInput) naming
/// `label` and listing the accepted forms.
std::string normalizeDevice(const std::string &device, const std::string &label);

/// The CUDA index of a normalized "cuda:N" device, or -1 for "cpu" and "disk".
int cudaIndex(const std::string &device);

/// Checks `placement` against a model's parameter names and returns each parameter's device, in
/// the order of `parameterNames`. `aliases` are names the map may use that share another
/// parameter's storage ({"lm_head.weight", "model.embed_tokens.weight"} for tied embeddings): an
/// entry covering an alias must put it on the device of the parameter it shares. One
/// Error(InvalidInput) per problem, naming `label` and the entries or parameters: entries covering
/// no parameter, parameters no entry covers, duplicate entries, a tied alias on another device,
/// "cuda:N" with no CUDA (`cudaDevices` == 0) or N out of range. `bufferModules` are modules of
/// buffers only (ModuleTree::bufferOnlyModules: "model.rotary_emb") that a map may name, as
/// Accelerate's maps for transformers >= 4.45 do; they place nothing here.
std::vector<std::string> resolvePlacement(const DevicePlacement &placement,
                                          const std::vector<std::string> &parameterNames, int cudaDevices,
                                          const std::string &label,
                                          const std::vector<std::pair<std::string, std::string>> &aliases = {},
                                          const std::vector<std::string> &bufferModules = {});

} // namespace engine::model
