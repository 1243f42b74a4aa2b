#pragma once
// Gradient checkpointing of one decoder layer (torch.utils.checkpoint, reentrant variant, in libtorch):
// the forward pass runs without recording the graph and keeps only the layer's input; backward runs
// the layer again with gradients on, from the same random state (dropout draws the same masks), and
// back-propagates through that recomputation. Parameter gradients accumulate as usual.
// Engine-internal; LlamaModelImpl::forward uses it when gradient checkpointing is on.

#include "engine/model/llamamodel.h"

namespace engine::model {

/// layer(x, rotary, mask) with its activations recomputed during backward. Same values as
/// layer.forward; no KV cache.
torch::Tensor checkpointedLayerForward(LlamaDecoderLayerImpl &layer, const torch::Tensor &x,
                                       const RotaryTables &rotary, const torch::Tensor &mask);

} // namespace engine::model
