// ModuleTreeModel over engine::model::ModuleTree: rows, sizes, the device column from a device map,
// sorting by the raw role.

#include "ui/models/moduletreemodel.h"

#include "engine/model/moduletree.h"

#include <QSignalSpy>
#include <QSortFilterProxyModel>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <limits>

namespace {

/// vocab 16, hidden 8, intermediate 12, 2 layers, 2 heads, 1 kv head, fp16, tied embeddings.
engine::model::ModuleTree tinyLlama()
{
    const nlohmann::json config = {{"model_type", "llama"},   {"vocab_size", 16},         {"hidden_size", 8},
                                   {"intermediate_size", 12}, {"num_hidden_layers", 2},   {"num_attention_heads", 2},
                                   {"num_key_value_heads", 1}, {"torch_dtype", "float16"}, {"tie_word_embeddings", true}};
    return engine::model::moduleTreeFromConfig(config, "cfg.json");
}

} // namespace

TEST(ModuleTreeModel, RowsFollowTheTree)
{
    ui::ModuleTreeModel model;
    model.setTree(tinyLlama());
    ASSERT_EQ(model.rowCount(), 2); // model, lm_head
    EXPECT_EQ(model.columnCount(), ui::ModuleTreeModel::ColumnCount);
    const QModelIndex top = model.index(0, 0);
    EXPECT_EQ(top.data().toString(), QStringLiteral("model"));
    EXPECT_EQ(model.index(0, ui::ModuleTreeModel::ClassColumn).data().toString(), QStringLiteral("LlamaModel"));
    EXPECT_EQ(model.rowCount(top), 4); // embed_tokens, layers, norm, rotary_emb
    const QModelIndex rotary = model.indexForPath(QStringLiteral("model.rotary_emb"));
    EXPECT_EQ(rotary.data(ui::ModuleTreeModel::PathRole).toString(), QStringLiteral("model.rotary_emb"));
    EXPECT_TRUE(rotary.data(Qt::ToolTipRole).toString().contains(QStringLiteral("buffer inv_freq: float32 [2], not in checkpoints")))
        << rotary.data(Qt::ToolTipRole).toString().toStdString();
    const QModelIndex layers = model.indexForPath(QStringLiteral("model.layers"));
    ASSERT_TRUE(layers.isValid());
    EXPECT_EQ(model.rowCount(layers), 2);
    const QModelIndex layer1 = model.index(1, 0, layers);
    EXPECT_EQ(layer1.data(ui::ModuleTreeModel::PathRole).toString(), QStringLiteral("model.layers.1"));
    EXPECT_EQ(model.parent(layer1), layers);
    EXPECT_EQ(model.parent(top), QModelIndex());
    EXPECT_EQ(model.indexForPath(QStringLiteral("model.layers.1")), layer1);
    EXPECT_EQ(model.node(layer1)->className, "LlamaDecoderLayer");

    // Sizes: a decoder layer of this config has q 64, k 32, v 32, o 64, mlp 3 × 96 and two norms of 8.
    const qint64 layerParams = 64 + 32 + 32 + 64 + 3 * 96 + 8 + 8;
    EXPECT_EQ(model.index(1, ui::ModuleTreeModel::ParametersColumn, layers).data(ui::ModuleTreeModel::RawValueRole).toLongLong(), layerParams);
    EXPECT_EQ(model.index(1, ui::ModuleTreeModel::BytesColumn, layers).data(ui::ModuleTreeModel::RawValueRole).toLongLong(), 2 * layerParams);
    // lm_head is tied to the embedding: its storage is counted where it is owned.
    const QModelIndex head = model.index(1, ui::ModuleTreeModel::BytesColumn);
    EXPECT_EQ(head.data(ui::ModuleTreeModel::RawValueRole).toLongLong(), 0);
    EXPECT_TRUE(model.index(1, 0).data(Qt::ToolTipRole).toString().contains(QStringLiteral("model.embed_tokens.weight")));
    EXPECT_EQ(model.index(0, ui::ModuleTreeModel::ParametersColumn).data(ui::ModuleTreeModel::RawValueRole).toLongLong(),
              model.tree().parameterCount());
}

TEST(ModuleTreeModel, DeviceColumnInheritsAndShowsSplits)
{
    ui::ModuleTreeModel model;
    model.setTree(tinyLlama());
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    model.setDeviceMap({{QStringLiteral("model.embed_tokens"), QStringLiteral("0")},
                        {QStringLiteral("model.layers.0"), QStringLiteral("0")},
                        {QStringLiteral("model.layers.1"), QStringLiteral("cpu")},
                        {QStringLiteral("model.norm"), QStringLiteral("cpu")},
                        {QStringLiteral("lm_head"), QStringLiteral("cpu")}});
    EXPECT_EQ(reset.count(), 0) << "views keep their expanded rows";
    EXPECT_GT(changed.count(), 0);
    for (const QList<QVariant> &args : changed)
        EXPECT_EQ(args[0].toModelIndex().column(), ui::ModuleTreeModel::DeviceColumn);

    EXPECT_EQ(model.deviceOf(QStringLiteral("model.layers.0.self_attn.q_proj")), QStringLiteral("0"));
    EXPECT_EQ(model.deviceOf(QStringLiteral("model.layers.1.mlp")), QStringLiteral("cpu"));
    EXPECT_EQ(model.deviceOf(QStringLiteral("model.layers")), QStringLiteral("0, cpu"));
    const QModelIndex layer0 = model.indexForPath(QStringLiteral("model.layers.0"));
    EXPECT_EQ(model.index(0, ui::ModuleTreeModel::DeviceColumn, layer0.parent()).data().toString(), QStringLiteral("GPU 0"));
    EXPECT_EQ(model.index(0, ui::ModuleTreeModel::DeviceColumn).data().toString(), QStringLiteral("GPU 0, cpu"));

    // The whole model on one device ("" key).
    model.setDeviceMap({{QString(), QStringLiteral("cuda:1")}});
    EXPECT_EQ(model.deviceOf(QStringLiteral("model.layers.1.mlp.up_proj")), QStringLiteral("cuda:1"));
    EXPECT_EQ(model.index(1, ui::ModuleTreeModel::DeviceColumn).data().toString(), QStringLiteral("GPU 1"));
}

TEST(ModuleTreeModel, ProxiesSortNumbersByTheRawRole)
{
    ui::ModuleTreeModel model;
    model.setTree(engine::model::moduleTreeFromFolder(TUNEBENCH_TEST_DATA "/model/configs/llama-2-7b.json"));
    const QModelIndex layer0 = model.indexForPath(QStringLiteral("model.layers.0"));
    ASSERT_TRUE(layer0.isValid());
    ASSERT_EQ(model.rowCount(layer0), 4); // self_attn, mlp, input_layernorm, post_attention_layernorm

    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    proxy.setSortRole(ui::ModuleTreeModel::RawValueRole);
    proxy.sort(ui::ModuleTreeModel::BytesColumn, Qt::DescendingOrder);
    const QModelIndex proxyLayer0 = proxy.mapFromSource(layer0);
    QStringList order;
    qint64 previous = std::numeric_limits<qint64>::max();
    for (int r = 0; r < proxy.rowCount(proxyLayer0); ++r) {
        const QModelIndex bytes = proxy.index(r, ui::ModuleTreeModel::BytesColumn, proxyLayer0);
        const qint64 value = bytes.data(ui::ModuleTreeModel::RawValueRole).toLongLong();
        EXPECT_LE(value, previous);
        previous = value;
        order << proxy.index(r, 0, proxyLayer0).data().toString();
    }
    // mlp (3 × 4096 × 11008 × 2 bytes) before self_attn (4 × 4096² × 2) before the norms (8 KiB each).
    EXPECT_EQ(order.mid(0, 2), (QStringList{QStringLiteral("mlp"), QStringLiteral("self_attn")}));
    // Sorted by the display text, "8.0 KiB" would come first ('8' > '2'): the raw role prevents it.
    EXPECT_EQ(proxy.index(0, ui::ModuleTreeModel::BytesColumn, proxyLayer0).data().toString(), QStringLiteral("258.0 MiB"));

    // Layers sort as numbers by parameters too (all equal here): 32 rows, none lost.
    EXPECT_EQ(model.rowCount(model.indexForPath(QStringLiteral("model.layers"))), 32);
}

// Issue 28: a mixture-of-experts layer's experts are one row under the layer's mlp (beside the router), whatever
// their number; the row says how many experts it stacks.
TEST(ModuleTreeModel, ExpertsAreOneRowUnderTheirLayer)
{
    const nlohmann::json config = {{"model_type", "mixtral"},  {"vocab_size", 16},        {"hidden_size", 8},
                                   {"intermediate_size", 12},  {"num_hidden_layers", 2},  {"num_attention_heads", 2},
                                   {"num_key_value_heads", 1}, {"num_local_experts", 8},  {"num_experts_per_tok", 2},
                                   {"torch_dtype", "bfloat16"}};
    ui::ModuleTreeModel model;
    model.setTree(engine::model::moduleTreeFromConfig(config, "cfg.json"));
    EXPECT_EQ(model.rowCount(model.indexForPath(QStringLiteral("model.layers"))), 2);
    const QModelIndex layer = model.indexForPath(QStringLiteral("model.layers.1"));
    const QModelIndex mlp = model.indexForPath(QStringLiteral("model.layers.1.mlp"));
    const QModelIndex experts = model.indexForPath(QStringLiteral("model.layers.1.mlp.experts"));
    ASSERT_TRUE(experts.isValid());
    EXPECT_EQ(model.parent(mlp), layer);
    EXPECT_EQ(model.parent(experts), mlp);
    EXPECT_EQ(model.rowCount(mlp), 2); // gate, experts
    EXPECT_EQ(model.index(0, 0, mlp).data().toString(), QStringLiteral("gate"));
    EXPECT_EQ(model.rowCount(experts), 0);
    const QModelIndex className = experts.siblingAtColumn(ui::ModuleTreeModel::ClassColumn);
    EXPECT_EQ(className.data().toString(), QStringLiteral("MixtralExperts × 8"));
    EXPECT_EQ(className.data(ui::ModuleTreeModel::RawValueRole).toString(), QStringLiteral("MixtralExperts"));
    // 8 experts x (gate_up 24 x 8 + down 8 x 12) = 8 x 288 parameters.
    EXPECT_EQ(experts.siblingAtColumn(ui::ModuleTreeModel::ParametersColumn).data(ui::ModuleTreeModel::RawValueRole).toLongLong(),
              8 * 288);
    const QString tip = experts.data(Qt::ToolTipRole).toString();
    EXPECT_TRUE(tip.contains(QStringLiteral("8 experts stored stacked"))) << tip.toStdString();
    EXPECT_EQ(ui::ModuleTreeModel::expertCount(*model.node(layer)), 8);
    EXPECT_EQ(layer.siblingAtColumn(ui::ModuleTreeModel::ClassColumn).data().toString(), QStringLiteral("MixtralDecoderLayer"));
}
