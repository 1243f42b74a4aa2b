#include "engine/plan/lint.h"

#include "engine/plan/planner.h"

#include <algorithm>
#include <set>

namespace engine::plan {
namespace {

std::string joinLabels(const std::vector<DeviceSpec> &devices, const std::set<int> &which)
{
    std::string out;
    size_t k = 0;
    for (const int d : which) {
        out += (k == 0 ? "" : (k + 1 == which.size() ? " and " : ", ")) + deviceLabel(devices[d]);
        ++k;
    }
    return out;
}

} // namespace

std::vector<LintFinding> lintPlan(const Plan &plan, const FlatTree &t, const NodeCosts &c,
                                  const std::vector<int> &deviceOfNode)
{
    std::vector<LintFinding> out;
    const PlanSettings &s = plan.settings;
    const bool training = s.train != TrainMode::None;
    const auto add = [&](const char *id, const char *severity, std::string message, std::string fix) {
        out.push_back({id, severity, std::move(message), std::move(fix)});
    };

    std::set<int> used, trainableOn, weightsOffGpu;
    std::string trainableOnDisk;
    int headDevice = -1, embedDevice = -1;
    for (size_t i = 0; i < t.nodes.size(); ++i) {
        const int d = deviceOfNode[i];
        if (d < 0)
            continue;
        const FlatNode &n = t.nodes[i];
        if (n.isParam && !n.tiedDuplicate) {
            used.insert(d);
            if (!plan.devices[d].isGpu())
                weightsOffGpu.insert(d);
        }
        const bool trains = (n.isParam && c.trainable[i] && s.train == TrainMode::Full) || c.lora[i] > 0;
        if (trains) {
            trainableOn.insert(d);
            if (plan.devices[d].kind == DeviceKind::Disk && trainableOnDisk.empty())
                trainableOnDisk = n.isParam ? n.name : n.name + " (its LoRA adapter)";
        }
        if (c.logitsForward[i] > 0 || (!n.isParam && n.localName == "lm_head"))
            headDevice = d;
        if (!n.isParam && n.className == "Embedding" && embedDevice < 0)
            embedDevice = d;
    }
    const bool dispatched = used.size() > 1;

    if (training && trainableOn.size() > 1) {
        add("clip_grad_norm_across_devices", "warning",
            "trainable parameters live on " + joinLabels(plan.devices, trainableOn)
                + ": torch.nn.utils.clip_grad_norm_ over them fails (\"Expected all tensors to be on the same device\") "
                  "or, with foreach off, sums norms on the wrong device",
            "compute each device's gradient norm there, move the per-device norms to one device and combine them "
            "(total = sqrt(sum of squares)), then scale every gradient on its own device; in Python call "
            "accelerate.Accelerator().clip_grad_norm_ (tunebench's trainer does this)");
    }
    if (s.train == TrainMode::Lora) {
        add("optimizer_trainable_only", "warning",
            "LoRA freezes the base model: an optimizer built over model.parameters() keeps AdamW state for nothing "
            "(or trains nothing when the frozen parameters are filtered later)",
            "build the optimizer over [p for p in model.parameters() if p.requires_grad] only");
    }
    if (training && dispatched) {
        add("no_redispatch", "warning",
            "the model is dispatched over " + joinLabels(plan.devices, used)
                + " with a device map: re-dispatching it, calling .to(device) / .cuda(), or passing it to "
                  "accelerator.prepare(model) moves or duplicates layers and breaks the hooks",
            "load once with device_map=..., then prepare only the optimizer, data loader and scheduler "
            "(accelerator.prepare(optimizer, dataloader)); never wrap the model");
    }
    if (s.dataParallel && dispatched) {
        add("data_parallel_dispatched", "error",
            "data parallel (DDP / accelerator.prepare) over a model split across devices is refused by Accelerate "
            "(\"You can't train a model that has been loaded with device_map='auto' in any distributed mode\")",
            "use one process per model copy with each copy on its own devices, or pipeline the layers without DDP");
    }
    std::set<int> noBf16;
    for (size_t d = 0; d < plan.devices.size(); ++d) {
        if (plan.devices[d].isGpu() && !plan.devices[d].bf16 && used.count(static_cast<int>(d)))
            noBf16.insert(static_cast<int>(d));
    }
    if (s.dtype == "bfloat16" && !noBf16.empty()) {
        add("bf16_unsupported", "error",
            joinLabels(plan.devices, noBf16) + " cannot compute in bfloat16 (T4 and V100 have no bf16 units): "
                                                "kernels fall back or fail",
            "plan with --dtype float16 and train with a gradient scaler (torch.cuda.amp.GradScaler), keeping "
            "trainable weights in fp32");
    }
    if (training && s.dtype == "float16") {
        add("fp16_training_loss_scaling", "warning",
            "training over float16 weights overflows without loss scaling, and fp16 gradients of trained weights "
            "lose small updates",
            "use a gradient scaler (GradScaler) and keep trainable weights (LoRA A/B or fp32 master weights) in "
            "float32; use bfloat16 on GPUs that have it");
    }
    if (s.train == TrainMode::Lora && (s.dtype == "float16" || s.dtype == "bfloat16")) {
        add("lora_adapters_fp32", "warning",
            "the LoRA weights are trainable over a " + s.dtype + " base: in 16-bit their small updates vanish; "
            "this plan counts them as fp32",
            "keep adapters in float32 over the 16-bit base (PEFT's autocast_adapter_dtype=True, its default; or "
            "model.lora_A/B.float())");
    }
    if (training && !s.quantization.empty() && !weightsOffGpu.empty()) {
        add("quantized_offload_training", "error",
            s.quantization + " weights offloaded to " + joinLabels(plan.devices, weightsOffGpu)
                + " cannot train: bitsandbytes' quantized layers run on the GPU only",
            "give the GPUs enough room for every quantized layer (fewer layers on cpu/disk), or train without "
            "quantization and offload instead");
    }
    if (training && s.strategy == Strategy::BalancedLow0) {
        add("balanced_low_0_training", "warning",
            "balanced_low_0 keeps GPU 0 nearly empty (it is meant for generate()); in training it wastes GPU 0",
            "use --strategy balanced (or auto) for training");
    }
    if (training && headDevice >= 0 && embedDevice >= 0 && headDevice != embedDevice) {
        add("labels_device", "warning",
            "the logits come out on " + deviceLabel(plan.devices[headDevice]) + " while the inputs and labels start on "
                + deviceLabel(plan.devices[embedDevice]) + ": the loss fails with tensors on different devices",
            "move the labels to logits.device before the loss (transformers' models do this inside forward when "
            "labels are passed; a hand-written loss must do it)");
    }
    if (training && !trainableOnDisk.empty()) {
        add("trainable_on_disk", "error",
            "trainable parameters are on disk (" + trainableOnDisk + "): disk-offloaded weights are read-only "
                                                                     "memory maps and never receive updates",
            "give the GPUs or the CPU more budget, train with LoRA, or enable gradient checkpointing so the "
            "trainable layers fit in memory");
    }
    for (const auto &group : t.tiedGroups) {
        std::set<int> devices;
        for (const std::string &name : group) {
            const int n = t.find(name);
            if (n >= 0 && deviceOfNode[n] >= 0)
                devices.insert(deviceOfNode[n]);
        }
        if (devices.size() > 1) {
            std::string names;
            for (const std::string &name : group)
                names += (names.empty() ? "" : ", ") + name;
            add("tied_parameters_split", "error",
                "tied parameters " + names + " are placed on " + joinLabels(plan.devices, devices)
                    + ": they share one storage, which cannot live on two devices",
                "put the modules that hold them on one device (Accelerate keeps them together)");
        }
    }
    if (!plan.fits) {
        std::string over;
        for (const DeviceUsage &u : plan.usage) {
            if (!u.fits)
                over += (over.empty() ? "" : "; ") + deviceLabel(u.device) + " " + u.verdict;
        }
        add("does_not_fit", "error", "the plan does not fit: " + over,
            training ? "lower --batch-size or --seq-len, enable --checkpointing, train with --train lora, or give "
                       "more budget (move layers to cpu)"
                     : "give more budget or let layers go to cpu / disk");
    }
    return out;
}

} // namespace engine::plan
