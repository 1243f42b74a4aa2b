// Training memory per module.
//
// Persistent state per parameter (docs/memory-estimate.md; HF "model memory anatomy"):
//   weights    numel x bytes of the planned dtype (never upcast, as Accelerate sizes them); a module's
//              buffers (rotary inv_freq, GPT-2's causal mask) count here too, never trained
//   gradients  trainable numel x 4 when the weights are 16-bit (mixed precision keeps fp32 master
//              gradients) or x 4 in fp32
//   optimizer  AdamW: 8 B per trainable parameter (exp_avg, exp_avg_sq in fp32), plus a 4 B fp32 master
//              copy when full training runs over 16-bit weights (2 + 4 + 4 + 8 = 18 B/param, HF's figure)
//   LoRA       per adapted Linear [out, in]: A [r, in] + B [out, r] in fp32 (PEFT's autocast_adapter_dtype
//              keeps adapters fp32 over a 16-bit base): 4 B weights + 4 B grads + 8 B AdamW per element
//
// Saved activations of one LLaMA decoder layer as tunebench's engine computes it (engine/model/
// llamamodel.cpp, which follows Hugging Face's eager LlamaDecoderLayer except that it never materialises
// repeat_kv), on libtorch 1.13, for B = b*s tokens, hidden h, a heads of size d (a*d = h), kv heads g,
// intermediate f, element size e (2 for fp16/bf16, 4 for fp32), S = b*a*s*s attention scores. What
// autograd keeps, op by op (a mul keeps the operand the *other* input's gradient needs; a matmul keeps
// both operands when both require grad; a Linear keeps its input only when its weight is trained):
//   input_layernorm (RMSNorm in fp32): x.float() kept by pow and mul          4*B*h   (the input itself in fp32)
//       x^2, kept by mean (libtorch 1.13's MeanBackward1 saves its input;     4*B*h
//           measured: the norm alone keeps 3*4*B*h + 4*B besides its input in fp32 training)
//       normed (fp16 after .to()), kept by weight*normed for the weight grad  e*B*h   (full only)
//       rstd                                                                  4*B
//   q/k/v_proj: their shared input (the norm's output)                       e*B*h   (full only)
//   Qwen3's q_norm and k_norm (per head, over d, in fp32) keep as a norm does, over q's a*d and k's g*d
//       elements per token, with a and g rstd values                        (8+e)*B*a*d + 4*B*a, k alike
//   RoPE: q*cos + rotate_half(q)*sin keeps only cos/sin (no grad)             0
//   q@k^T (baddbmm over query heads grouped per kv head) keeps q and k:      e*B*h + e*B*g*d
//       k and v stay at g heads (the engine groups the query heads instead of repeating k/v; Hugging
//       Face's eager repeat_kv would keep 2*e*B*(h - g*d) more)
//   softmax in fp32 keeps its output; .to(e) copy kept by probs@v            4*S + e*S (e*S only when e != 4)
//   probs@v keeps v                                                           e*B*g*d
//   o_proj input (attention context, contiguous)                              e*B*h   (full only)
//   post_attention_layernorm                                                  as input_layernorm
//   gate_proj, up_proj input                                                  e*B*h   (full only)
//   silu keeps its input g; mul keeps silu(g) and up                          3*e*B*f
//   down_proj input silu(g)*up                                                e*B*f   (full only)
// Summed (llamaBlockSavedBytes), full fine-tuning: norms 2*(8+e)*B*h + 8*B, attention 3*e*B*h +
// 2*e*B*g*d + (4+e')*S, MLP e*B*h + 4*e*B*f, i.e. B*h*(16 + 6e) + 2*e*B*g*d + 8*B + (4 + e')*S + 4*e*B*f
// (e' = e when e != 4, else 0); without GQA (g*d = h) that is B*h*(16 + 8e): in fp16 32*B*h + 6*S + 8*B*f (+8B).
// Korthikanti et al. (2022) give 34*B*h + 5*S for a GPT layer with fp16 softmax and dropout masks; the
// LLaMA layer has no dropout, an fp32 softmax (6*S instead of 5*S), fp32 norms that keep their input
// and its square (16*B*h) and a SwiGLU MLP (8*B*f with f ~ 2.7h instead of GPT's 16*B*h + 2*B*h).
// LoRA (frozen base): the norms keep their fp32 input and its square (8*B*h), frozen Linears keep
// nothing, and each adapted Linear (PEFT's lora.Linear: x.to(fp32), dropout, A, B) keeps
//   without dropout: its input cast to fp32 (4*B*in; in fp32 the input itself, shared by q/k/v) + A's
//       output 4*B*r;
//   with dropout p > 0: the dropped input (4*B*in, kept by A) and the dropout noise (4*B*in: on the CPU
//       dropout is input * noise, and the mul keeps the noise; CUDA's fused kernel keeps a 1-byte mask,
//       so this is an upper bound there), each Linear its own, + A's output 4*B*r.
// Mixture-of-experts layers (mixtral, qwen3_moe; docs/memory-estimate.md), as transformers' eager experts loop
// runs them: the router (a bare [E, h] weight) keeps its input when trained, its fp32 softmax 4*B*E and the
// top-k indices 8*B*k; the experts together see k*B token rows (each token goes to k of them, whatever the
// balance) and keep per row the gathered input e*h (trained), the gate_up output and SiLU output 3*e*f, the
// down input e*f (trained), the down output e*h (kept by the product with a trained routing weight) and 16 B
// of int64 indices (moeRouterSavedBytes, moeExpertsSavedBytes).
// GPT-style blocks (gpt2, ChatGLM-6B): LayerNorm keeps its input e*B*h (+ 8*B mean/rstd), the fused
// qkv output 3*e*B*h, the softmax 4*S (+ e*S), GELU its input e*B*f, trained Linears their input.
// Generic blocks (a model planned from its tensor names, genericmodel.cpp): the leaves' roles are unknown, so each
// block is charged whole from the config's sizes as a pre-norm layer (genericBlockSavedBytes): norms
// 2*(e*B*h + 8*B); attention e*B*h (q) + 2*e*B*g*d (k, v) + (4 + e')*S (softmax); MLP e*B*f (the activation's
// input; 3*e*B*f when gated, as LLaMA's silu and mul keep); in full training also the inputs of the q/k/v,
// output, up and down projections (3*e*B*h + e*B*f). No fp32 norms, no dropout masks: 0.78-1.24x the llama, gpt2
// and ChatGLM formulas above on tiny models (test_planheaders.cpp). Without hidden size or head count the blocks
// count nothing, and the plan says which key is missing.
// Gradient checkpointing (per decoder layer, engine/model/checkpointedlayer.cpp): each layer keeps only
// its input e*B*h; during its backward the layer's full set is rebuilt (`recompute`) on top, less the
// input the norm would keep in fp32 (the kept input itself when e = 4).
// Loss: the head's logits in fp32 (4*B*V) and log_softmax's output (4*B*V) are kept through forward;
// backward starts with the gradient of the log-probabilities and of the logits (8*B*V); the caller still
// holds the logits (4*B*V) while the blocks run backward.
// Working set of one block's backward: the softmax gradients ((8 + e')*S: the gradient of the
// probabilities and of the scores in fp32, + the e-sized copy under mixed precision) or the MLP's
// (2*e*B*f), plus four hidden-sized gradients (4*e*B*h). AdamW's step makes two fp32 temporaries per
// parameter. How the planner combines these over time (the phases) is in planner.cpp.

#include "engine/plan/memorymodel.h"

#include "engine/core/error.h"

#include <algorithm>
#include <set>

namespace engine::plan {
namespace {

enum class Role { Other, Norm, Q, K, V, Qkv, FusedQkv, AttnOut, Gate, Up, GateUp, Down, MlpIn, MlpOut, Router, Experts,
                  FinalNorm, Head, Embedding };

Role roleOf(const FlatTree &t, int node, const ArchInfo &arch, bool insideBlock)
{
    const FlatNode &n = t.nodes[node];
    const std::string &local = n.localName;
    const std::string parent = n.parent >= 0 ? t.nodes[n.parent].localName : "";
    const std::string &family = arch.family;
    if (n.className == "Embedding")
        return Role::Embedding;
    if (!insideBlock) {
        if (local == "lm_head" || (family == "generic" && !n.isParam && n.name == arch.outputHead))
            return Role::Head;
        if (local == "norm" || local == "ln_f" || local == "final_layernorm")
            return Role::FinalNorm;
        return Role::Other;
    }
    if (n.className == "LayerNorm" || n.className.find("RMSNorm") != std::string::npos)
        return Role::Norm;
    if (family == "llama") {
        // A mixture-of-experts layer's mlp (mixtral, qwen3_moe): its router and its experts as one module.
        if (n.className.ends_with("TopKRouter")) return Role::Router;
        if (n.className.ends_with("Experts")) return Role::Experts;
        if (local == "q_proj") return Role::Q;
        if (local == "k_proj") return Role::K;
        if (local == "v_proj") return Role::V;
        if (local == "o_proj") return Role::AttnOut;
        if (local == "gate_proj") return Role::Gate;
        if (local == "up_proj") return Role::Up;
        if (local == "down_proj") return Role::Down;
        // Phi-3's fused projections: q, k and v in one Linear, gate and up in another.
        if (local == "qkv_proj") return Role::FusedQkv;
        if (local == "gate_up_proj") return Role::GateUp;
    } else if (family == "gpt") {
        if (local == "c_attn" || local == "query_key_value") return Role::Qkv;
        if ((local == "c_proj" && parent == "attn") || (local == "dense" && parent == "attention")) return Role::AttnOut;
        if (local == "c_fc" || local == "dense_h_to_4h") return Role::MlpIn;
        if ((local == "c_proj" && parent == "mlp") || local == "dense_4h_to_h") return Role::MlpOut;
    }
    return Role::Other;
}

// What an RMSNorm of a LLaMA-family block normalizes per token: the hidden state (one row of h), or for
// Qwen3's q_norm / k_norm every head of q (a rows of d) or of k (g rows of d).
struct NormWidth {
    int64_t elements;
    int64_t rows;
};

NormWidth normWidth(const std::string &localName, const ArchInfo &arch)
{
    if (localName == "q_norm")
        return {arch.heads * arch.headDim, arch.heads};
    if (localName == "k_norm")
        return {arch.kvHeads * arch.headDim, arch.kvHeads};
    return {arch.hidden, 1};
}

// [out, in] of a Linear/Conv1D-like module's weight (Conv1D stores [in, out]).
void linearShape(const FlatTree &t, int node, int64_t &out, int64_t &in)
{
    out = in = 0;
    for (const int item : t.nodes[node].items) {
        const FlatNode &p = t.nodes[item];
        if (p.isParam && p.localName == "weight" && p.shape.size() == 2) {
            const bool conv1d = t.nodes[node].className == "Conv1D";
            out = conv1d ? p.shape[1] : p.shape[0];
            in = conv1d ? p.shape[0] : p.shape[1];
        }
    }
}

// [experts, width] of an experts module (gate_up_proj [experts, 2 x width, hidden]).
void expertsShape(const FlatTree &t, int node, int64_t &experts, int64_t &width)
{
    experts = width = 0;
    for (const int item : t.nodes[node].items) {
        const FlatNode &p = t.nodes[item];
        if (p.isParam && p.localName == "gate_up_proj" && p.shape.size() == 3) {
            experts = p.shape[0];
            width = p.shape[1] / 2;
        }
    }
}

// Family "generic" (a model planned from its tensor names): the leaves' roles are unknown, so each block is
// charged as a whole (genericBlockSavedBytes); only LoRA's per-adapter inputs stay on the leaves.
bool genericBlocks(const ArchInfo &arch)
{
    return arch.family == "generic";
}

} // namespace

int64_t genericBlockSavedBytes(const ArchInfo &arch, int64_t b, int64_t s, int64_t e, bool full)
{
    if (arch.hidden <= 0 || arch.heads <= 0)
        return 0;
    const int64_t B = b * s, S = b * arch.heads * s * s;
    const int64_t h = arch.hidden, f = arch.intermediate, kv = arch.kvHeads * arch.headDim;
    const int64_t trainedInput = full ? e : 0; // a Linear keeps its input only when its weight is trained
    const int64_t norms = 2 * (e * B * h + 8 * B);
    const int64_t attention = trainedInput * B * h /*q/k/v input*/ + e * B * h /*q*/ + 2 * e * B * kv /*k, v*/
        + (4 + (e != 4 ? e : 0)) * S /*softmax*/ + trainedInput * B * h /*output projection input*/;
    const int64_t mlp = trainedInput * B * h /*up input*/ + (arch.gatedMlp ? 3 : 1) * e * B * f /*activation (x up)*/
        + trainedInput * B * f /*down input*/;
    return norms + attention + mlp;
}

std::vector<AttentionSpan> attentionSpans(const ArchInfo &arch, const PlanSettings &settings, int64_t e)
{
    std::vector<AttentionSpan> spans;
    if (arch.layers <= 0 || arch.heads <= 0 || arch.headDim <= 0)
        return spans;
    const int64_t b = settings.batchSize, T = settings.sequenceLength;
    const int64_t kvHeads = arch.kvHeads > 0 ? arch.kvHeads : arch.heads;
    for (int64_t layer = 0; layer < arch.layers; ++layer) {
        const int64_t window = layer < static_cast<int64_t>(arch.attentionWindows.size())
            ? arch.attentionWindows[static_cast<size_t>(layer)]
            : 0;
        if (!spans.empty() && spans.back().window == window) {
            spans.back().lastLayer = layer;
            continue;
        }
        AttentionSpan span;
        span.firstLayer = span.lastLayer = layer;
        span.window = window;
        // Eager attention: the window masks scores, it does not shrink them (computeCosts charges the same S).
        span.scoresBytes = (4 + (e != 4 ? e : 0)) * b * arch.heads * T * T;
        // The next query needs itself and the window - 1 keys before it: a window-bounded cache keeps min(T, W).
        span.kvCacheTokens = window > 0 ? std::min(T, window) : T;
        span.kvCacheBytes = 2 * b * span.kvCacheTokens * kvHeads * arch.headDim * e;
        spans.push_back(span);
    }
    return spans;
}

int64_t moeRouterSavedBytes(int64_t B, int64_t h, int64_t experts, int64_t k, int64_t e, bool full)
{
    return (full ? e * B * h : 0) /*the router's input*/ + 4 * B * experts /*softmax over the experts, fp32*/
        + 8 * B * k /*top-k indices*/;
}

int64_t moeExpertsSavedBytes(int64_t B, int64_t h, int64_t f, int64_t k, int64_t e, bool full)
{
    const int64_t routed = k * B; // token rows over all experts: each token goes to k of them
    return (full ? e * routed * h : 0) /*gate_up input*/ + 3 * e * routed * f /*gate_up output, silu output*/
        + (full ? e * routed * f : 0) /*down input*/ + (full ? e * routed * h : 0) /*down output, times the trained
        routing weight*/ + 16 * routed /*the token and slot indices of torch.where*/;
}

int64_t llamaBlockSavedBytes(int64_t b, int64_t s, int64_t h, int64_t a, int64_t g, int64_t f, int64_t e)
{
    const int64_t B = b * s, S = b * a * s * s;
    const int64_t kv = h / a * g; // k and v: g heads of size h / a
    const int64_t norms = 2 * (4 * B * h /*fp32 input*/ + 4 * B * h /*its square*/ + e * B * h + 4 * B);
    const int64_t attention = e * B * h /*qkv input*/ + e * B * h /*q*/ + 2 * e * B * kv /*k, v*/
        + (4 + (e != 4 ? e : 0)) * S + e * B * h /*o_proj input*/;
    const int64_t mlp = e * B * h + 3 * e * B * f + e * B * f;
    return norms + attention + mlp;
}

int64_t NodeCosts::ownCost(int node) const
{
    return weights[node] + lora[node] + gradients[node] + optimizer[node] + saved[node] + logitsForward[node]
        + logitsBackward[node];
}

std::vector<int64_t> NodeCosts::placementSizes(const FlatTree &tree) const
{
    std::vector<int64_t> sizes(tree.nodes.size(), 0);
    for (size_t i = tree.nodes.size(); i-- > 0;) {
        sizes[i] += ownCost(static_cast<int>(i));
        if (tree.nodes[i].parent >= 0)
            sizes[tree.nodes[i].parent] += sizes[i];
    }
    return sizes;
}

NodeCosts computeCosts(const FlatTree &t, const PlanModel &model, const PlanSettings &settings, int64_t weightBytes,
                       const std::vector<char> &noSplit)
{
    const size_t count = t.nodes.size();
    NodeCosts c;
    c.weights.assign(count, 0);
    c.lora.assign(count, 0);
    c.gradients.assign(count, 0);
    c.optimizer.assign(count, 0);
    c.saved.assign(count, 0);
    c.recompute.assign(count, 0);
    c.working.assign(count, 0);
    c.logitsForward.assign(count, 0);
    c.logitsBackward.assign(count, 0);
    c.optimizerTemp.assign(count, 0);
    c.trainable.assign(count, 0);
    c.loraTarget.assign(count, 0);
    c.block.assign(count, 0);
    c.weightBytes = weightBytes;
    const std::vector<int64_t> sizes = moduleSizes(t, weightBytes);

    // The compute dtype: the planned dtype, else the tree's.
    int64_t e = weightBytes > 0 ? weightBytes : model::dtypeSize(model.tree.dtype);
    if (e == 0)
        e = 4;
    c.activationBytes = e;
    const bool training = settings.train != TrainMode::None;
    const bool full = settings.train == TrainMode::Full;
    const bool lora = settings.train == TrainMode::Lora;
    const bool mixed = e != 4;
    const ArchInfo &arch = model.arch;
    const int64_t B = settings.batchSize * settings.sequenceLength;
    const int64_t S = settings.batchSize * std::max<int64_t>(arch.heads, 1) * settings.sequenceLength * settings.sequenceLength;

    // Blocks: the no-split modules (decoder layers); LoRA targets by last name component.
    std::vector<std::string> targets = settings.loraTargets.empty() ? defaultLoraTargets(model.tree.modelType)
                                                                    : settings.loraTargets;
    std::set<std::string> targetsSeen;
    std::vector<int> blockOf(count, -1);
    for (size_t i = 0; i < count; ++i) {
        const FlatNode &n = t.nodes[i];
        if (noSplit[i] && blockOf[i] < 0) {
            c.block[i] = 1;
            for (int j = static_cast<int>(i); j < n.end; ++j)
                blockOf[j] = static_cast<int>(i);
        }
        if (lora && !n.isParam && n.childModules.empty()
            && std::find(targets.begin(), targets.end(), n.localName) != targets.end()) {
            int64_t out = 0, in = 0;
            linearShape(t, static_cast<int>(i), out, in);
            // PEFT adapts Linear-like modules; a MoE router (a TopKRouter holding a bare weight) is not one.
            if (out > 0 && !n.className.ends_with("TopKRouter")) {
                c.loraTarget[i] = 1;
                targetsSeen.insert(n.localName);
            }
        }
    }
    if (lora) {
        for (const std::string &target : targets) {
            if (!targetsSeen.count(target))
                throw invalidInput("--lora-targets: \"" + target + "\" names no Linear module of this " + model.tree.modelType
                                   + " model (e.g. " + defaultLoraTargets(model.tree.modelType).front() + ")");
        }
    }

    // Parameters, and buffers (weights that are never trained).
    for (size_t i = 0; i < count; ++i) {
        const FlatNode &n = t.nodes[i];
        if (!n.isParam) {
            c.weights[i] = n.bufferBytes(weightBytes);
            continue;
        }
        c.weights[i] = sizes[i];
        const bool trained = full && !n.tiedDuplicate && n.isFloat;
        c.trainable[i] = full ? (n.isFloat ? 1 : 0) : (lora && c.loraTarget[n.parent] ? 1 : 0);
        if (trained) {
            c.gradients[i] = n.numel * (mixed ? 4 : 4);
            c.optimizer[i] = n.numel * (8 + (mixed ? 4 : 0));
            c.optimizerTemp[i] = n.numel * 8;
        }
    }
    // LoRA adapters on their Linear module.
    if (lora) {
        for (size_t i = 0; i < count; ++i) {
            if (!c.loraTarget[i])
                continue;
            int64_t out = 0, in = 0;
            linearShape(t, static_cast<int>(i), out, in);
            const int64_t elements = settings.loraRank * (in + out);
            c.lora[i] = 4 * elements;
            c.gradients[i] = 4 * elements;
            c.optimizer[i] = 8 * elements;
            c.optimizerTemp[i] = 8 * settings.loraRank * std::max(in, out);
        }
    }

    // Activations (training only).
    if (training) {
        const std::string &family = arch.family;
        const int64_t h = arch.hidden;
        const int64_t f = arch.intermediate;
        const int64_t ad = arch.heads * arch.headDim;
        // Gemma 2's soft-capped scores keep tanh's output (e*S) besides the softmax.
        const int64_t softmax = (4 + (e != 4 ? e : 0)) * S + (arch.attentionSoftcap ? e * S : 0);
        const auto trainedModule = [&](int node) { return full && node >= 0; };
        // Input groups already saved in fp32 by a LoRA sibling (fp32 models share one input).
        std::set<std::pair<int, int>> loraInputSaved;
        for (size_t i = 0; i < count; ++i) {
            const FlatNode &n = t.nodes[i];
            if (n.isParam || !n.childModules.empty())
                continue;
            const int node = static_cast<int>(i);
            const int blk = blockOf[i];
            const Role role = roleOf(t, node, arch, blk >= 0);
            int64_t out = 0, in = 0;
            linearShape(t, node, out, in);
            int64_t saved = 0;
            int group = 0;
            switch (role) {
            case Role::Norm:
            case Role::FinalNorm:
                if (family == "llama") { // fp32 input, its square (kept by mean), normed (weight grad), rstd
                    const NormWidth w = normWidth(n.localName, arch);
                    saved = 4 * B * w.elements + 4 * B * w.elements + (full ? e * B * w.elements : 0) + 4 * B * w.rows;
                } else
                    saved = e * B * h + 8 * B;
                if (role == Role::FinalNorm && full)
                    saved += e * B * h; // the head's input
                break;
            case Role::Q: saved = (trainedModule(node) ? e * B * h : 0) + e * B * ad; group = 1; break;
            case Role::K: saved = e * B * out; group = 1; break; // k at its g heads (no repeat_kv)
            case Role::V: saved = e * B * out + softmax; group = 1; break;
            case Role::Qkv: saved = (trainedModule(node) ? e * B * h : 0) + 3 * e * B * h + softmax; group = 1; break;
            // q, k and v as views of one output (a + 2g heads of d): what Q, K and V save between them.
            case Role::FusedQkv: saved = (trainedModule(node) ? e * B * h : 0) + e * B * out + softmax; group = 1; break;
            case Role::AttnOut: saved = trainedModule(node) ? e * B * in : 0; group = 2; break;
            // The MLP's width from its own Linear (qwen3_moe's dense layers are wider than its experts).
            case Role::Gate: saved = (trainedModule(node) ? e * B * h : 0) + 2 * e * B * out; group = 3; break;
            case Role::Up: saved = e * B * out; group = 3; break;
            // gate and up as halves of one output (2f), plus silu(gate): what Gate and Up save between them.
            case Role::GateUp: saved = (trainedModule(node) ? e * B * h : 0) + e * B * out + e * B * (out / 2); group = 3; break;
            case Role::Down: saved = trainedModule(node) ? e * B * in : 0; group = 4; break;
            case Role::Router: saved = moeRouterSavedBytes(B, h, out, arch.expertsPerToken, e, full); group = 3; break;
            case Role::Experts: {
                int64_t experts = 0, width = 0;
                expertsShape(t, node, experts, width);
                saved = moeExpertsSavedBytes(B, h, width, arch.expertsPerToken, e, full);
                group = 3;
                break;
            }
            case Role::MlpIn: saved = (trainedModule(node) ? e * B * h : 0) + e * B * f; group = 3; break;
            case Role::MlpOut: saved = trainedModule(node) ? e * B * in : 0; group = 4; break;
            case Role::Head:
                // Gemma's soft-capped logits keep tanh's output, in the logits' dtype, for backward.
                c.logitsForward[i] = 8 * B * out + (arch.logitSoftcap ? e * B * out : 0);
                c.logitsBackward[i] = 8 * B * out;
                break;
            case Role::Embedding: break;
            case Role::Other:
                if (genericBlocks(arch) && blk >= 0)
                    break; // charged on the block
                if (out > 0 && blk >= 0)
                    saved = (full ? e * B * in : 0) + e * B * out;
                else if (out == 0 && blk >= 0 && !t.nodes[i].items.empty())
                    saved = e * B * h; // a norm-like module
                break;
            }
            if (c.loraTarget[i] && in > 0) {
                if (settings.loraDropout > 0) { // its own dropped input and noise
                    saved += 8 * B * in + 4 * B * settings.loraRank;
                } else {
                    const bool shared = e == 4 && !loraInputSaved.insert({blk, group ? group : node + 100}).second;
                    saved += (shared ? 0 : 4 * B * in) + 4 * B * settings.loraRank;
                }
            }
            c.saved[i] = saved;
        }
        // Blocks: working set, and checkpointing moves the saved set into `recompute`.
        for (size_t i = 0; i < count; ++i) {
            if (!c.block[i])
                continue;
            int64_t full_set = 0;
            for (int j = static_cast<int>(i); j < t.nodes[i].end; ++j)
                full_set += c.saved[j];
            if (genericBlocks(arch)) {
                const int64_t whole = genericBlockSavedBytes(arch, settings.batchSize, settings.sequenceLength, e, full);
                c.saved[i] += whole;
                full_set += whole;
            }
            // Sizes unknown (a generic model without them): no working set either.
            const bool sized = h > 0;
            c.working[i] = sized ? std::max((8 + (e != 4 ? e : 0)) * S, 2 * e * B * f) + 4 * e * B * h : 0;
            if (settings.checkpointing) {
                for (int j = static_cast<int>(i); j < t.nodes[i].end; ++j)
                    c.saved[j] = 0;
                c.saved[i] = e * B * h;
                // In fp32 the first norm's "fp32 input" is the kept block input itself.
                c.recompute[i] = std::max<int64_t>(0, full_set - (family == "llama" && e == 4 ? 4 * B * h : 0));
            }
        }
    }

    return c;
}

} // namespace engine::plan
