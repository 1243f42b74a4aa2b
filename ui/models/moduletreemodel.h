#pragma once
// The module tree of a model as a Qt item model: one row per module (the root's children at the top
// level: "model", "lm_head"), columns name, class, parameters, bytes and device. The device column
// comes from a module → device map the page sets (Accelerate-style: a module inherits its nearest
// mapped ancestor's device; a module whose children are split shows all their devices).
//
// How to use:
//   ui::ModuleTreeModel model;
//   model.setTree(engine::model::moduleTreeFromFolder(dir));
//   model.setDeviceMap({{"model.embed_tokens", "0"}, {"model.layers.0", "0"}, {"lm_head", "cpu"}});
//   proxy.setSortRole(ui::ModuleTreeModel::RawValueRole);   // numbers sort as numbers

#include "engine/model/moduletree.h"

#include <QAbstractItemModel>
#include <QHash>
#include <QString>
#include <QVector>

namespace ui {

class ModuleTreeModel : public QAbstractItemModel {
    Q_OBJECT

public:
    enum Column { NameColumn, ClassColumn, ParametersColumn, BytesColumn, DeviceColumn, ColumnCount };
    /// The value behind a cell: qint64 for parameters and bytes, the device id for the device column,
    /// the text otherwise; for sorting proxies (same role number as RunsModel::RawValueRole).
    static constexpr int RawValueRole = Qt::UserRole + 1;
    /// The module's full path ("model.layers.3.mlp"), on every column.
    static constexpr int PathRole = Qt::UserRole + 2;

    explicit ModuleTreeModel(QObject *parent = nullptr);

    /// Replaces the tree (a model reset).
    void setTree(engine::model::ModuleTree tree);
    const engine::model::ModuleTree &tree() const { return m_tree; }

    /// Sets module path → device id ("0", "cuda:1", "cpu", "disk"; key "" = the whole model) and
    /// refreshes the device column only (expanded rows stay expanded).
    void setDeviceMap(const QHash<QString, QString> &map);
    const QHash<QString, QString> &deviceMap() const { return m_deviceMap; }
    /// The device column's raw value for module `path`: its device id, "a, b" when its children are
    /// split, "" when unmapped.
    QString deviceOf(const QString &path) const;
    /// "GPU 0" for "0" and "cuda:0", else the id as given.
    static QString deviceDisplayName(const QString &device);
    /// A mixture-of-experts layer's experts are one module of 3-D parameters ([experts, out, in]): the number
    /// of experts in `node`'s subtree (the first such module's), 0 when it holds none. The tree shows them as
    /// one row under their layer ("MixtralExperts × 8"), never a row per expert.
    static int64_t expertCount(const engine::model::ModuleNode &node);

    /// The index (column 0) of module `path`, or invalid.
    QModelIndex indexForPath(const QString &path) const;
    /// The module of an index, or nullptr.
    const engine::model::ModuleNode *node(const QModelIndex &index) const;

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    struct Item {
        const engine::model::ModuleNode *node = nullptr;
        int parent = -1;         ///< item index; -1 = top level
        int row = 0;             ///< row under its parent
        QVector<int> children;   ///< item indices
        QString path;
        QString name;            ///< last path component
        qint64 parameters = 0;   ///< tied parameters counted once (where they are owned)
        qint64 bytes = 0;
        QString device;          ///< resolved by resolveDevices()
        QStringList notes;       ///< "weight shares storage with model.embed_tokens.weight", buffers
    };

    void addItem(const engine::model::ModuleNode &node, int parent);
    void resolveDevices();

    engine::model::ModuleTree m_tree;
    QVector<Item> m_items;     ///< item 0 is the root (not shown)
    QHash<QString, int> m_byPath;
    QHash<QString, QString> m_deviceMap;
};

} // namespace ui
