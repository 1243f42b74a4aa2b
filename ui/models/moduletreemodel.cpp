#include "ui/models/moduletreemodel.h"

#include "ui/widgets/widgetstyle.h"

#include <QLocale>
#include <QSet>

#include <algorithm>

namespace ui {

ModuleTreeModel::ModuleTreeModel(QObject *parent) : QAbstractItemModel(parent)
{
    setTree({});
}

void ModuleTreeModel::setTree(engine::model::ModuleTree tree)
{
    beginResetModel();
    m_tree = std::move(tree);
    m_items.clear();
    m_byPath.clear();
    addItem(m_tree.root, -1);
    resolveDevices();
    endResetModel();
}

void ModuleTreeModel::addItem(const engine::model::ModuleNode &node, int parent)
{
    const int self = int(m_items.size());
    Item item;
    item.node = &node;
    item.parent = parent;
    item.path = QString::fromStdString(node.name);
    item.name = item.path.section(QLatin1Char('.'), -1);
    item.parameters = node.parameterCount(false);
    item.bytes = node.parameterBytes(false);
    for (const engine::model::ParameterInfo &p : node.parameters)
        if (!p.tiedTo.empty())
            item.notes << tr("%1 shares storage with %2").arg(QString::fromStdString(p.name), QString::fromStdString(p.tiedTo));
    for (const engine::model::BufferInfo &b : node.buffers) {
        QStringList dims;
        for (const int64_t d : b.shape)
            dims << QString::number(d);
        item.notes << tr("buffer %1: %2 [%3]%4")
                          .arg(QString::fromStdString(b.name), QString::fromStdString(b.dtype), dims.join(QStringLiteral(", ")),
                               b.persistent ? QString() : tr(", not in checkpoints"));
    }
    if (const int64_t experts = expertCount(node); experts > 0 && node.children.empty()) {
        item.notes << tr("%n experts stored stacked: each parameter's first dimension is the expert, "
                         "%1 parameters per expert", nullptr, int(experts))
                          .arg(QLocale().toString(item.parameters / experts));
    }
    if (parent >= 0) // the root's children (parent item 0) are the top-level rows
        item.row = int(m_items[parent].children.size());
    m_items.append(item);
    if (parent >= 0)
        m_items[parent].children.append(self);
    m_byPath.insert(m_items[self].path, self);
    for (const engine::model::ModuleNode &child : node.children)
        addItem(child, self);
}

void ModuleTreeModel::setDeviceMap(const QHash<QString, QString> &map)
{
    m_deviceMap = map;
    resolveDevices();
    // Only the device column changed: one dataChanged per parent, so views keep their expansion.
    for (int i = 0; i < m_items.size(); ++i) {
        const Item &item = m_items[i];
        if (item.children.isEmpty())
            continue;
        const QModelIndex parentIndex = i == 0 ? QModelIndex() : createIndex(item.row, 0, quintptr(i));
        Q_EMIT dataChanged(index(0, DeviceColumn, parentIndex), index(int(item.children.size()) - 1, DeviceColumn, parentIndex),
                           {Qt::DisplayRole, RawValueRole, Qt::ToolTipRole});
    }
}

void ModuleTreeModel::resolveDevices()
{
    // Top-down: a mapped module's device, else the nearest mapped ancestor's (items are stored in
    // pre-order, so a parent is always resolved before its children).
    QVector<bool> inherited(m_items.size(), false);
    for (int i = 0; i < m_items.size(); ++i) {
        Item &item = m_items[i];
        const auto found = m_deviceMap.constFind(item.path);
        if (found != m_deviceMap.constEnd()) {
            item.device = found.value();
            inherited[i] = true;
        } else if (item.parent >= 0 && inherited[item.parent]) {
            item.device = m_items[item.parent].device;
            inherited[i] = true;
        } else {
            item.device.clear();
        }
    }
    // Bottom-up for modules above the mapped ones: the distinct devices of their children.
    for (int i = int(m_items.size()) - 1; i >= 0; --i) {
        Item &item = m_items[i];
        if (inherited[i] || item.children.isEmpty())
            continue;
        QStringList devices;
        for (int child : item.children)
            for (const QString &d : m_items[child].device.split(QStringLiteral(", "), Qt::SkipEmptyParts))
                if (!devices.contains(d))
                    devices << d;
        item.device = devices.join(QStringLiteral(", "));
    }
}

QString ModuleTreeModel::deviceOf(const QString &path) const
{
    const auto it = m_byPath.constFind(path);
    return it == m_byPath.constEnd() ? QString() : m_items[it.value()].device;
}

QString ModuleTreeModel::deviceDisplayName(const QString &device)
{
    bool numeric = false;
    const int n = device.toInt(&numeric);
    if (numeric)
        return tr("GPU %1").arg(n);
    if (device.startsWith(QLatin1String("cuda:")))
        return tr("GPU %1").arg(device.mid(5));
    return device;
}

int64_t ModuleTreeModel::expertCount(const engine::model::ModuleNode &node)
{
    if (node.className.ends_with("Experts")) {
        for (const engine::model::ParameterInfo &p : node.parameters) {
            if (p.shape.size() == 3)
                return p.shape[0];
        }
    }
    for (const engine::model::ModuleNode &child : node.children) {
        if (const int64_t experts = expertCount(child); experts > 0)
            return experts;
    }
    return 0;
}

QModelIndex ModuleTreeModel::indexForPath(const QString &path) const
{
    const auto it = m_byPath.constFind(path);
    if (it == m_byPath.constEnd() || it.value() == 0)
        return {};
    return createIndex(m_items[it.value()].row, 0, quintptr(it.value()));
}

const engine::model::ModuleNode *ModuleTreeModel::node(const QModelIndex &index) const
{
    if (!index.isValid())
        return nullptr;
    return m_items[int(index.internalId())].node;
}

QModelIndex ModuleTreeModel::index(int row, int column, const QModelIndex &parent) const
{
    if (column < 0 || column >= ColumnCount || row < 0)
        return {};
    const int parentItem = parent.isValid() ? int(parent.internalId()) : 0;
    if (parentItem >= m_items.size() || row >= m_items[parentItem].children.size())
        return {};
    return createIndex(row, column, quintptr(m_items[parentItem].children[row]));
}

QModelIndex ModuleTreeModel::parent(const QModelIndex &child) const
{
    if (!child.isValid())
        return {};
    const int parentItem = m_items[int(child.internalId())].parent;
    if (parentItem <= 0)
        return {};
    return createIndex(m_items[parentItem].row, 0, quintptr(parentItem));
}

int ModuleTreeModel::rowCount(const QModelIndex &parent) const
{
    if (parent.isValid() && parent.column() != 0)
        return 0;
    const int item = parent.isValid() ? int(parent.internalId()) : 0;
    return item < m_items.size() ? int(m_items[item].children.size()) : 0;
}

int ModuleTreeModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant ModuleTreeModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid())
        return {};
    const Item &item = m_items[int(index.internalId())];
    const int column = index.column();
    if (role == PathRole)
        return item.path;
    if (role == Qt::TextAlignmentRole)
        return column == ParametersColumn || column == BytesColumn ? QVariant(int(Qt::AlignRight | Qt::AlignVCenter)) : QVariant();
    if (role == RawValueRole) {
        switch (column) {
        case NameColumn: return item.name;
        case ClassColumn: return QString::fromStdString(item.node->className);
        case ParametersColumn: return item.parameters;
        case BytesColumn: return item.bytes;
        case DeviceColumn: return item.device;
        default: return {};
        }
    }
    if (role == Qt::DisplayRole) {
        switch (column) {
        case NameColumn: return item.name;
        case ClassColumn: {
            const QString className = QString::fromStdString(item.node->className);
            const int64_t experts = item.node->children.empty() ? expertCount(*item.node) : 0;
            return experts > 0 ? tr("%1 × %2").arg(className).arg(experts) : className;
        }
        case ParametersColumn: return QLocale().toString(item.parameters);
        case BytesColumn: return formatBytes(item.bytes);
        case DeviceColumn: {
            QStringList names;
            for (const QString &d : item.device.split(QStringLiteral(", "), Qt::SkipEmptyParts))
                names << deviceDisplayName(d);
            return names.join(QStringLiteral(", "));
        }
        default: return {};
        }
    }
    if (role == Qt::ToolTipRole) {
        QStringList lines{item.path, QString::fromStdString(item.node->className)};
        if (column == BytesColumn)
            lines << formatExactBytes(item.bytes);
        if (column == DeviceColumn && item.device.contains(QLatin1Char(',')))
            lines << tr("split over %1").arg(item.device);
        if (item.node->noSplit)
            lines << tr("kept whole on one device (no-split class)");
        lines << item.notes;
        return lines.join(QLatin1Char('\n'));
    }
    return {};
}

QVariant ModuleTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case NameColumn: return tr("Module");
    case ClassColumn: return tr("Class");
    case ParametersColumn: return tr("Parameters");
    case BytesColumn: return tr("Bytes");
    case DeviceColumn: return tr("Device");
    default: return {};
    }
}

} // namespace ui
