#pragma once
// Module trees: the modules and parameters of a Hugging Face causal LM, built from its config.json
// alone (no weights, no torch), for planning (sizes per module, Accelerate-style device maps) and
// for module paths. Children and parameters come in the order the transformers modeling class
// registers them. Buffers are kept too (the rotary tables' inv_freq, GPT-2's causal mask), because
// Accelerate's module sizes count them and its maps name a module that holds only buffers
// ("model.rotary_emb"); modules that hold neither (dropout, activations) are left out.
//
// How to use:
//   ModuleTree tree = moduleTreeFromFolder("/models/Llama-2-7b-hf");
//   tree.parameterCount();                          // 6'738'415'616, tied weights counted once
//   const ModuleNode *layer = tree.find("model.layers.3");
//   layer->parameterBytes();                        // in config.json's torch_dtype
//   tree.noSplitClasses;                            // {"LlamaDecoderLayer"}
//   tree.tiedParameters;                            // {{"lm_head.weight", "model.embed_tokens.weight"}} if tied
//
// Architectures: llama, mistral, qwen2, qwen3 (the engine's model runs these; names and shapes equal its
// named_parameters()), mixtral and qwen3_moe (engine/model/moetree.h), chatglm (ChatGLM-6B) and gpt2 (planning
// only).

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace engine::model {

struct LlamaConfig;

/// One parameter of a module: local name, shape, dtype, and the parameter it shares storage with.
struct ParameterInfo {
    std::string name;            ///< local name: "weight", "bias"
    std::vector<int64_t> shape;  ///< as stored in checkpoints (GPT-2's Conv1D weights are [in, out])
    std::string dtype;           ///< torch dtype name: "float32", "float16", "bfloat16" or "float64"
    std::string tiedTo;          ///< full name of the parameter whose storage this one is ("" = its own)

    /// Number of elements.
    int64_t numel() const;
    /// numel × the dtype's size in bytes.
    int64_t bytes() const;
    bool operator==(const ParameterInfo &) const = default;
};

/// A buffer of a module (register_buffer): memory on the module's device, never trained.
struct BufferInfo {
    std::string name;           ///< local name: "inv_freq", "bias"
    std::vector<int64_t> shape; ///< [] for a scalar
    std::string dtype;          ///< torch dtype name: "float32", "float16", "bool", ...
    bool persistent = true;     ///< in state_dict and checkpoints (false: computed at construction)
    bool operator==(const BufferInfo &) const = default;
};

/// A module: full path, transformers class name, direct parameters, child modules and buffers.
struct ModuleNode {
    std::string name;                      ///< full path ("model.layers.0.self_attn"); "" for the root
    std::string className;                 ///< "LlamaDecoderLayer", "Linear", "Conv1D", ...
    std::vector<ParameterInfo> parameters; ///< direct parameters, in registration order
    std::vector<ModuleNode> children;      ///< in registration order
    bool noSplit = false;                  ///< className is one of the architecture's no-split classes
    std::vector<BufferInfo> buffers = {};  ///< direct buffers, in registration order

    /// Elements of all parameters in this subtree. `includeTied` false leaves out parameters that share
    /// another's storage (tiedTo set), as Accelerate's module sizes do.
    int64_t parameterCount(bool includeTied = true) const;
    /// Bytes of all parameters in this subtree (see parameterCount for `includeTied`).
    int64_t parameterBytes(bool includeTied = true) const;
    /// The module at full path `path` in this subtree ("" = this root), or nullptr.
    const ModuleNode *find(std::string_view path) const;
    /// Whether this subtree holds buffers but no parameter ("model.rotary_emb"): a device map may name it,
    /// though no weight of a checkpoint lies under it.
    bool holdsOnlyBuffers() const;
    bool operator==(const ModuleNode &) const = default;
};

/// A parameter with its full name ("model.layers.0.self_attn.q_proj.weight").
struct NamedParameter {
    std::string name;
    ParameterInfo info;
};

/// The module tree of one model plus what a planner needs besides sizes.
struct ModuleTree {
    std::string modelType;                              ///< config.json's model_type
    std::string dtype;                                  ///< torch_dtype ("float32" when the config has none)
    ModuleNode root;                                    ///< name "", className the CausalLM class
    std::vector<std::string> noSplitClasses;            ///< transformers' _no_split_modules
    std::vector<std::vector<std::string>> tiedParameters; ///< full names sharing storage; each group sorted,
                                                          ///< as accelerate's find_tied_parameters

    /// Parameters of the whole model, tied ones counted once.
    int64_t parameterCount() const;
    /// Bytes of the whole model in `dtype`, tied ones counted once.
    int64_t parameterBytes() const;
    /// The module at full path `path` ("" = root), or nullptr.
    const ModuleNode *find(std::string_view path) const;
    /// All parameters in registration order; tied duplicates left out unless `includeTied` (as PyTorch's
    /// named_parameters()).
    std::vector<NamedParameter> namedParameters(bool includeTied = false) const;
    /// Full names of the modules that hold buffers but no parameter (holdsOnlyBuffers), outermost only.
    std::vector<std::string> bufferOnlyModules() const;
};

/// Number of elements of a tensor of `shape` (1 for a scalar []).
int64_t numelOf(const std::vector<int64_t> &shape);

/// Bytes per element of a torch dtype name ("bfloat16" -> 2); 0 when unknown.
int64_t dtypeSize(const std::string &dtype);

/// transformers' _no_split_modules for a model_type ({"LlamaDecoderLayer"}, {"GPT2Block"}, ...); empty when
/// unknown.
std::vector<std::string> noSplitModuleClasses(const std::string &modelType);

/// The tree of a llama, mistral, qwen2 or qwen3 model (the engine's LlamaForCausalLM registers the same
/// parameters in the same order), in transformers' layout since 4.45: one rotary embedding at
/// "model.rotary_emb" (a non-persistent float32 inv_freq of head_dim / 2), after "model.norm". The
/// engine's model computes its rotary tables where each layer runs, so that module has no device of
/// its own there. `dtype` is a torch dtype name.
ModuleTree llamaModuleTree(const LlamaConfig &config, const std::string &dtype);

/// Builds the tree of a config.json object, dispatching on model_type (llama, mistral, qwen2, qwen3,
/// mixtral, qwen3_moe, chatglm, gpt2). Throws Error(InvalidInput) naming `source` and the field for an unknown model_type, a bad
/// value or a feature that changes the parameters and is not supported.
ModuleTree moduleTreeFromConfig(const nlohmann::json &config, const std::string &source);

/// Reads `path`: a config.json file or a model folder that holds one.
ModuleTree moduleTreeFromFolder(const std::filesystem::path &path);

} // namespace engine::model
