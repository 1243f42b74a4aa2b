#include "widgetsamples.h"

namespace uitest {

namespace {

/// ChatGLM-6B sizes (fp16): hidden 4096, ffn 16384, vocab 130528, 28 layers.
constexpr qint64 kHidden = 4096;
constexpr qint64 kFfn = 16384;
constexpr qint64 kVocab = 130528;
constexpr qint64 kLayerParams = kHidden * 3 * kHidden + 3 * kHidden // query_key_value (+ bias)
                              + kHidden * kHidden + kHidden         // dense
                              + kHidden * kFfn + kFfn               // dense_h_to_4h
                              + kFfn * kHidden + kHidden            // dense_4h_to_h
                              + 4 * kHidden;                        // two layer norms
constexpr qint64 kLayerBytes = 2 * kLayerParams;
constexpr qint64 kEmbeddingBytes = 2 * kVocab * kHidden;
/// LoRA r=32 on query_key_value: A [32, 4096] and B [12288, 32], trained in fp32 with Adam.
constexpr qint64 kLoraParams = 32 * kHidden + 3 * kHidden * 32;

ui::DeviceColumn device(const QString &id, const QString &title, const QString &subtitle, qint64 budget)
{
    ui::DeviceColumn column;
    column.id = id;
    column.title = title;
    column.subtitle = subtitle;
    column.budget = budget;
    return column;
}

QString layerRange(int first, int last)
{
    if (first == last)
        return QStringLiteral("transformer.layers.%1").arg(first);
    return QStringLiteral("transformer.layers.%1..%2").arg(first).arg(last);
}

ui::DeviceModuleBlock layers(int first, int last)
{
    const int count = last - first + 1;
    return {.module = QStringLiteral("transformer.layers.%1").arg(first),
            .label = layerRange(first, last),
            .bytes = count * kLayerBytes,
            .detail = QStringLiteral("%1 GLMBlock layers").arg(count)};
}

} // namespace

ui::DeviceColumnsData chatGlmOnTwoT4s()
{
    ui::DeviceColumn gpu0 = device(QStringLiteral("0"), QStringLiteral("GPU 0"), QStringLiteral("Tesla T4"), 15 * kGiB);
    gpu0.modules = {{.module = QStringLiteral("transformer.word_embeddings"), .label = {}, .bytes = kEmbeddingBytes, .detail = QStringLiteral("Embedding 130528 × 4096")},
                    layers(0, 12)};
    gpu0.bytes[ui::MemoryKind::Weights] = kEmbeddingBytes + 13 * kLayerBytes;
    gpu0.bytes[ui::MemoryKind::Gradients] = 13 * 4 * kLoraParams;
    gpu0.bytes[ui::MemoryKind::Optimizer] = 13 * 8 * kLoraParams;
    gpu0.bytes[ui::MemoryKind::Activations] = 3 * kGiB + 310 * kMiB;
    gpu0.bytes[ui::MemoryKind::Overhead] = 700 * kMiB;

    ui::DeviceColumn gpu1 = device(QStringLiteral("1"), QStringLiteral("GPU 1"), QStringLiteral("Tesla T4"), 15 * kGiB);
    gpu1.modules = {layers(13, 27),
                    {.module = QStringLiteral("transformer.final_layernorm"), .label = {}, .bytes = 4 * kHidden, .detail = QStringLiteral("LayerNorm 4096")},
                    {.module = QStringLiteral("lm_head"), .label = {}, .bytes = kEmbeddingBytes, .detail = QStringLiteral("Linear 4096 → 130528")}};
    gpu1.bytes[ui::MemoryKind::Weights] = 15 * kLayerBytes + 4 * kHidden + kEmbeddingBytes;
    gpu1.bytes[ui::MemoryKind::Gradients] = 15 * 4 * kLoraParams;
    gpu1.bytes[ui::MemoryKind::Optimizer] = 15 * 8 * kLoraParams;
    gpu1.bytes[ui::MemoryKind::Activations] = 9 * kGiB; // batch 3 × 2048 tokens: fp32 logits and their gradient
    gpu1.bytes[ui::MemoryKind::Overhead] = 700 * kMiB;

    ui::DeviceColumn cpu = device(QStringLiteral("cpu"), QStringLiteral("CPU"), QStringLiteral("RAM"), 13 * kGiB);
    cpu.bytes[ui::MemoryKind::Overhead] = 1 * kGiB + 512 * kMiB;

    ui::DeviceColumn disk = device(QStringLiteral("disk"), QStringLiteral("Disk"), QStringLiteral("offload folder"), 0);

    return {.devices = {gpu0, gpu1, cpu, disk}};
}

ui::DeviceColumnsData perLayerPlan(int layers, int gpus)
{
    constexpr qint64 kLayer = 1712 * kMiB; // Llama-2-70B decoder layer in fp16
    ui::DeviceColumnsData data;
    const int columns = gpus + 1;
    for (int c = 0; c < columns; ++c) {
        ui::DeviceColumn device;
        device.id = c < gpus ? QString::number(c) : QStringLiteral("cpu");
        device.title = c < gpus ? QStringLiteral("GPU %1").arg(c) : QStringLiteral("CPU");
        device.subtitle = c < gpus ? QStringLiteral("H100 80GB") : QStringLiteral("RAM");
        device.budget = c < gpus ? 79 * kGiB : 256 * kGiB;
        data.devices.append(device);
    }
    for (int layer = 0; layer < layers; ++layer) {
        ui::DeviceColumn &device = data.devices[layer * columns / layers];
        device.modules.append({.module = QStringLiteral("model.layers.%1").arg(layer), .label = {}, .bytes = kLayer, .detail = {}});
        device.bytes[ui::MemoryKind::Weights] += kLayer;
        device.bytes[ui::MemoryKind::Activations] += 64 * kMiB;
    }
    for (ui::DeviceColumn &device : data.devices)
        device.bytes[ui::MemoryKind::Overhead] = 1 * kGiB;
    return data;
}

ui::VersionTimelineData kvCacheTimeline()
{
    using K = ui::VersionEventKind;
    const QString attn = QStringLiteral("model.layers.0.self_attn");
    ui::VersionTimelineData data{.opCount = 80, .backwardStart = 58, .tracks = {}};

    ui::VersionTrack kCache{.name = QStringLiteral("k_cache"), .shape = QStringLiteral("[1, 8, 32, 64]"), .dtype = QStringLiteral("float32"),
                            .producer = QStringLiteral("aten::zeros"), .producerOp = 3, .events = {}};
    kCache.events = {
        {K::InplaceWrite, 14, QStringLiteral("aten::copy_"), attn, 1, false, QStringLiteral("step 1 writes keys 0..3 into the cache")},
        {K::SavedForBackward, 18, QStringLiteral("aten::bmm"), attn, 1, true, QStringLiteral("q @ k_cache.transpose(-1, -2), saved as mat2")},
        {K::InplaceWrite, 41, QStringLiteral("aten::copy_"), attn, 2, true, QStringLiteral("step 2 writes key 4 into the same cache")},
        {K::SavedForBackward, 45, QStringLiteral("aten::bmm"), attn, 2, false, QStringLiteral("step 2: q @ k_cache.transpose(-1, -2)")},
        {K::UsedInBackward, 63, QStringLiteral("BmmBackward0"), attn, 2, false, {}},
        {K::UsedInBackward, 74, QStringLiteral("BmmBackward0"), attn, 1, true,
         QStringLiteral("one of the variables needed for gradient computation has been modified by an inplace operation")},
    };
    ui::VersionTrack query{.name = QStringLiteral("query_states"), .shape = QStringLiteral("[1, 8, 4, 64]"), .dtype = QStringLiteral("float32"),
                           .producer = QStringLiteral("aten::transpose"), .producerOp = 11, .events = {}};
    query.events = {{K::SavedForBackward, 18, QStringLiteral("aten::bmm"), attn, 0, false, QStringLiteral("saved as self")},
                    {K::UsedInBackward, 74, QStringLiteral("BmmBackward0"), attn, 0, false, {}}};
    ui::VersionTrack weights{.name = QStringLiteral("attn_weights"), .shape = QStringLiteral("[1, 8, 4, 4]"), .dtype = QStringLiteral("float32"),
                             .producer = QStringLiteral("aten::softmax"), .producerOp = 20, .events = {}};
    weights.events = {{K::SavedForBackward, 20, QStringLiteral("aten::softmax"), attn, 0, false, QStringLiteral("saved as result")},
                      {K::SavedForBackward, 22, QStringLiteral("aten::bmm"), attn, 0, false, QStringLiteral("saved as self")},
                      {K::UsedInBackward, 71, QStringLiteral("BmmBackward0"), attn, 0, false, {}},
                      {K::UsedInBackward, 73, QStringLiteral("SoftmaxBackward0"), attn, 0, false, {}}};
    ui::VersionTrack hidden{.name = QStringLiteral("hidden_states"), .shape = QStringLiteral("[1, 4, 512]"), .dtype = QStringLiteral("float32"),
                            .producer = QStringLiteral("aten::embedding"), .producerOp = 1, .events = {}};
    hidden.events = {{K::SavedForBackward, 6, QStringLiteral("aten::mul"), QStringLiteral("model.layers.0.input_layernorm"), 0, false, {}},
                     {K::InplaceWrite, 29, QStringLiteral("aten::add_"), QStringLiteral("model.layers.0"), 1, false, QStringLiteral("residual added in place (safe: the saved value is of another tensor)")},
                     {K::UsedInBackward, 78, QStringLiteral("MulBackward0"), QStringLiteral("model.layers.0.input_layernorm"), 0, false, {}}};
    ui::VersionTrack vCache{.name = QStringLiteral("v_cache"), .shape = QStringLiteral("[1, 8, 32, 64]"), .dtype = QStringLiteral("float32"),
                            .producer = QStringLiteral("aten::zeros"), .producerOp = 4, .events = {}};
    vCache.events = {{K::InplaceWrite, 15, QStringLiteral("aten::copy_"), attn, 1, false, {}},
                     {K::InplaceWrite, 42, QStringLiteral("aten::copy_"), attn, 2, false, {}},
                     {K::SavedForBackward, 47, QStringLiteral("aten::bmm"), attn, 2, false, {}},
                     {K::UsedInBackward, 61, QStringLiteral("BmmBackward0"), attn, 2, false, {}}};
    data.tracks = {kCache, vCache, query, weights, hidden};
    return data;
}

ui::AutogradGraphData kvCacheGraph()
{
    ui::AutogradGraphData g;
    const auto node = [&g](int id, const char *name, const char *detail, int op, QList<ui::AutogradSavedTensor> saved = {}, bool failing = false) {
        g.nodes.append({.id = id, .name = QString::fromLatin1(name), .detail = QString::fromUtf8(detail), .failing = failing, .saved = saved, .opIndex = op});
    };
    node(0, "SumBackward0", "aten::sum · loss", 56);
    node(1, "AddBackward0", "aten::add · model.layers.0", 54);
    node(2, "MmBackward0", "aten::mm · self_attn.o_proj", 52, {{.name = QStringLiteral("self"), .description = QStringLiteral("[4, 512] float32 v0"), .conflict = false}});
    node(3, "TBackward0", "aten::t · self_attn.o_proj", 51);
    node(4, "AccumulateGrad", "self_attn.o_proj.weight [512, 512]", -1);
    node(5, "ViewBackward0", "aten::view · self_attn", 50);
    node(6, "TransposeBackward0", "aten::transpose · self_attn", 49);
    node(7, "BmmBackward0", "aten::bmm · self_attn (weights @ v)", 47,
         {{.name = QStringLiteral("self"), .description = QStringLiteral("[8, 5, 5] float32 v0"), .conflict = false},
          {.name = QStringLiteral("mat2"), .description = QStringLiteral("v_cache [8, 5, 64] float32 v2"), .conflict = false}});
    node(8, "SoftmaxBackward0", "aten::softmax · self_attn", 46, {{.name = QStringLiteral("result"), .description = QStringLiteral("[1, 8, 5, 5] float32 v0"), .conflict = false}});
    node(9, "DivBackward0", "aten::div · self_attn", 45);
    node(10, "BmmBackward0", "aten::bmm · op 18 · self_attn (q @ kᵀ)", 18,
         {{.name = QStringLiteral("self"), .description = QStringLiteral("query_states [8, 4, 64] float32 v0"), .conflict = false},
          {.name = QStringLiteral("mat2"), .description = QStringLiteral("k_cache [8, 64, 32] saved v1, now v2"), .conflict = true}},
         true);
    node(11, "TransposeBackward0", "aten::transpose · self_attn (query)", 12);
    node(12, "CopySlices", "aten::copy_ · op 41 · k_cache[:, :, 4]", 41);
    node(13, "ViewBackward0", "aten::view · self_attn.k_proj", 9);
    node(14, "MmBackward0", "aten::mm · self_attn.k_proj", 8, {{.name = QStringLiteral("self"), .description = QStringLiteral("[4, 512] float32 v0"), .conflict = false}});
    node(15, "TBackward0", "aten::t · self_attn.k_proj", 7);
    node(16, "AccumulateGrad", "self_attn.k_proj.weight [512, 512]", -1);
    node(17, "ViewBackward0", "aten::view · self_attn.q_proj", 10);
    node(18, "MmBackward0", "aten::mm · self_attn.q_proj", 8, {{.name = QStringLiteral("self"), .description = QStringLiteral("[4, 512] float32 v0"), .conflict = false}});
    node(19, "TBackward0", "aten::t · self_attn.q_proj", 7);
    node(20, "AccumulateGrad", "self_attn.q_proj.weight [512, 512]", -1);
    node(21, "EmbeddingBackward0", "aten::embedding · model.embed_tokens", 1);
    node(22, "CopySlices", "aten::copy_ · op 42 · v_cache[:, :, 4]", 42);
    node(23, "ViewBackward0", "aten::view · self_attn.v_proj", 9);
    node(24, "MmBackward0", "aten::mm · self_attn.v_proj", 8, {{.name = QStringLiteral("self"), .description = QStringLiteral("[4, 512] float32 v0"), .conflict = false}});
    node(25, "TBackward0", "aten::t · self_attn.v_proj", 7);
    node(26, "AccumulateGrad", "self_attn.v_proj.weight [512, 512]", -1);
    g.edges = {{0, 1}, {1, 2}, {1, 21}, {2, 3}, {3, 4}, {2, 5}, {5, 6}, {6, 7}, {7, 8}, {7, 22}, {8, 9}, {9, 10},
               {10, 11}, {10, 12}, {12, 13}, {13, 14}, {14, 15}, {15, 16}, {11, 17}, {17, 18}, {18, 19}, {19, 20}, {14, 21}, {18, 21},
               {22, 23}, {23, 24}, {24, 25}, {25, 26}, {24, 21}};
    return g;
}

} // namespace uitest
