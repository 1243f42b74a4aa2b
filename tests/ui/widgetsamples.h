#pragma once
// Realistic sample data for the Plan/Inspect widgets, shared by their tests and by the tool that
// renders them to docs/ (render_widgets).

#include "ui/widgets/autogradgraphview.h"
#include "ui/widgets/devicecolumns.h"
#include "ui/widgets/versiontimeline.h"

namespace uitest {

inline constexpr qint64 kGiB = qint64(1) << 30;
inline constexpr qint64 kMiB = qint64(1) << 20;

/// ChatGLM-6B in fp16 with LoRA r=32 on query_key_value, batch 3, on two T4s (15 GiB each), 13 GiB
/// of CPU and a disk: layers split 0..12 / 13..27, GPU 1 over its budget by its activations.
ui::DeviceColumnsData chatGlmOnTwoT4s();
/// A `layers`-layer model (Llama-2-70B-like sizes, fp16) with one block per layer, spread evenly over
/// `gpus` GPUs plus cpu: the drag-and-revalidate workload of the Plan page.
ui::DeviceColumnsData perLayerPlan(int layers, int gpus);

/// The `kv-cache-inplace` scenario's version timeline: one decoder layer's attention decoding two steps
/// into an in-place KV cache under autograd; the cache saved by the first step's bmm (v1) is
/// overwritten by the second step's copy_ (v2) before BmmBackward0 unpacks it.
ui::VersionTimelineData kvCacheTimeline();
/// The same scenario's backward graph (27 nodes), the failing BmmBackward0 and its saved k_cache.
ui::AutogradGraphData kvCacheGraph();
/// Id of the failing node in kvCacheGraph().
inline constexpr int kKvCacheFailingNode = 10;

} // namespace uitest
