#include "engine/model/checkpointedlayer.h"

#include "engine/core/autocast.h"

#include <ATen/Context.h>
#include <torch/torch.h>

#include <cstdint>

namespace engine::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
    // The layer travels as an address: it outlives the backward pass of its own forward.
    static torch::Tensor forward(AutogradContext *ctx, const torch::Tensor &x, const torch::Tensor &cos,
                                 const torch::Tensor &sin, const torch::Tensor &mask, int64_t layerAddress)
    {
        auto *layer = reinterpret_cast<LlamaDecoderLayerImpl *>(layerAddress);
        at::Generator generator = at::globalContext().defaultGenerator(x.device());
        ctx->saved_data["rng"] = generator.get_state();
        // The recomputation runs in backward, outside the forward's autocast: it re-enters it (as
        // torch.utils.checkpoint does), or a bf16 forward would be recomputed in float32.
        const AutocastState amp = AutocastState::current();
        ctx->saved_data["amp_cpu"] = amp.cpu;
        ctx->saved_data["amp_cpu_dtype"] = static_cast<int64_t>(amp.cpuDtype);
        ctx->saved_data["amp_cuda"] = amp.cuda;
        ctx->saved_data["amp_cuda_dtype"] = static_cast<int64_t>(amp.cudaDtype);
        ctx->saved_data["layer"] = layerAddress;
        ctx->saved_data["cos"] = cos;
        ctx->saved_data["sin"] = sin;
        ctx->saved_data["mask"] = mask;
        ctx->save_for_backward({x});
        return layer->forward(x, {cos, sin}, mask.numel() == 0 ? torch::Tensor() : mask);
    }

    static variable_list backward(AutogradContext *ctx, variable_list gradOutputs)
    {
        auto *layer = reinterpret_cast<LlamaDecoderLayerImpl *>(ctx->saved_data["layer"].toInt());
        const torch::Tensor saved = ctx->get_saved_variables()[0];
        const torch::Tensor mask = ctx->saved_data["mask"].toTensor();
        const RotaryTables rotary{ctx->saved_data["cos"].toTensor(), ctx->saved_data["sin"].toTensor()};

        // Recompute from the forward's random state, then put the current state back so that what
        // follows draws as it would have without checkpointing.
        at::Generator generator = at::globalContext().defaultGenerator(saved.device());
        const torch::Tensor current = generator.get_state();
        torch::Tensor x = saved.detach().requires_grad_(saved.requires_grad());
        AutocastState amp;
        amp.cpu = ctx->saved_data["amp_cpu"].toBool();
        amp.cpuDtype = static_cast<c10::ScalarType>(ctx->saved_data["amp_cpu_dtype"].toInt());
        amp.cuda = ctx->saved_data["amp_cuda"].toBool();
        amp.cudaDtype = static_cast<c10::ScalarType>(ctx->saved_data["amp_cuda_dtype"].toInt());
        torch::Tensor out;
        {
            torch::AutoGradMode enable(true);
            const AutocastScope autocast(amp);
            generator.set_state(ctx->saved_data["rng"].toTensor());
            out = layer->forward(x, rotary, mask.numel() == 0 ? torch::Tensor() : mask);
            generator.set_state(current);
        }
        if (out.requires_grad())
            torch::autograd::backward({out}, {gradOutputs[0]});
        const torch::Tensor gradX = x.requires_grad() ? x.grad() : torch::Tensor();
        return {gradX, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

} // namespace

torch::Tensor checkpointedLayerForward(LlamaDecoderLayerImpl &layer, const torch::Tensor &x, const RotaryTables &rotary,
                                       const torch::Tensor &mask)
{
    const torch::Tensor maskOrEmpty = mask.defined() ? mask : torch::empty({0}, x.options());
    // A frozen embedding (LoRA) gives an input without gradient, and a custom function over inputs that need
    // none records nothing: the layer's adapters would get no gradient (transformers' answer is
    // enable_input_require_grads()). A leaf that asks for a gradient keeps the recomputation in the graph.
    const torch::Tensor input = x.requires_grad() ? x : x.detach().requires_grad_(true);
    return CheckpointedLayer::apply(input, rotary.cos, rotary.sin, maskOrEmpty, reinterpret_cast<int64_t>(&layer));
}

} // namespace engine::model
