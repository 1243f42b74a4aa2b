#pragma once
// A small synthetic model whose sizes are round numbers of bytes, for maps derived by hand from
// Accelerate's published algorithm.

#include "engine/model/moduletree.h"
#include "engine/plan/planmodel.h"

#include <string>

namespace plan_fixtures {

/// float32, 4 bytes per element:
///   embed (Embedding)            100 B   [25]
///   layers (ModuleList)
///     layers.i (Block, no-split) 300 B = attn (Linear, 100 B [25]) + mlp (Linear, 200 B [50])
///   norm (Norm)                   20 B   [5]
///   lm_head (Linear)             100 B   [25], or 0 when tied to embed.weight
inline engine::plan::PlanModel tinyModel(int layers = 4, bool tied = false)
{
    using engine::model::ModuleNode;
    engine::model::ModuleTree tree;
    tree.modelType = "tiny";
    tree.dtype = "float32";
    tree.root = {"", "TinyForCausalLM", {}, {}, false};
    tree.root.children.push_back({"embed", "Embedding", {{"weight", {25}, "float32", {}}}, {}, false});
    ModuleNode list{"layers", "ModuleList", {}, {}, false};
    for (int i = 0; i < layers; ++i) {
        const std::string name = "layers." + std::to_string(i);
        ModuleNode block{name, "Block", {}, {}, true};
        block.children.push_back({name + ".attn", "Linear", {{"weight", {25}, "float32", {}}}, {}, false});
        block.children.push_back({name + ".mlp", "Linear", {{"weight", {50}, "float32", {}}}, {}, false});
        list.children.push_back(block);
    }
    tree.root.children.push_back(list);
    tree.root.children.push_back({"norm", "Norm", {{"weight", {5}, "float32", {}}}, {}, false});
    tree.root.children.push_back(
        {"lm_head", "Linear", {{"weight", {25}, "float32", tied ? std::string("embed.weight") : std::string()}}, {}, false});
    if (tied)
        tree.tiedParameters = {{"embed.weight", "lm_head.weight"}};
    tree.noSplitClasses = {"Block"};
    engine::plan::PlanModel model;
    model.tree = tree;
    model.arch.family = "generic";
    model.arch.hidden = 5;
    model.arch.heads = 1;
    model.arch.kvHeads = 1;
    model.arch.headDim = 5;
    model.arch.intermediate = 10;
    model.arch.vocab = 25;
    model.arch.layers = layers;
    return model;
}

} // namespace plan_fixtures
