#pragma once
// A restricted pickle reader for the `data.pkl` of a torch.save state dict. It interprets the
// opcodes of pickle protocols 2-4 that torch.save emits, and resolves only the globals a state dict
// needs (collections.OrderedDict, torch._utils._rebuild_tensor[_v2], _rebuild_parameter[_with_state],
// torch.*Storage); any other global, and INST/OBJ/NEWOBJ, is refused before anything runs. Nothing
// is ever executed: "calls" of the allowed globals are implemented here in C++.
// Engine-internal (torch header).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace engine::io {

/// Tensors by name, in the order of the file.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// Reads one storage: the archive entry `data/<key>` as a 1-D tensor of `numel` elements of `dtype`.
using StorageReader = std::function<torch::Tensor(const std::string &key, c10::ScalarType dtype, int64_t numel)>;

/// Runs the pickle `bytes` and returns the state dict it describes: a dict (or OrderedDict) of name
/// to tensor. Tensors that share a storage in the file share memory here (views, tied weights);
/// each storage is read once. `source` names the file in errors (engine::Error, InvalidInput).
NamedTensors unpickleStateDict(const std::string &source, std::string_view bytes, const StorageReader &readStorage);

/// Runs a pickle whose root is a list or tuple of tensors (Python's `torch.save([t1, t2])`).
std::vector<torch::Tensor> unpickleTensorList(const std::string &source, std::string_view bytes,
                                              const StorageReader &readStorage);

} // namespace engine::io
