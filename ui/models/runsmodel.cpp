#include "ui/models/runsmodel.h"

#include <QDateTime>
#include <QLocale>

#include <utility>

namespace ui {
namespace {

QDateTime parseTime(const std::string &iso)
{
    if (iso.empty())
        return {};
    return QDateTime::fromString(QString::fromStdString(iso), Qt::ISODate);
}

QString displayTime(const QDateTime &time)
{
    return time.isValid() ? time.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm:ss")) : QString();
}

QString statusText(engine::store::RunStatus status)
{
    QString name = QString::fromLatin1(engine::store::runStatusName(status));
    if (!name.isEmpty())
        name[0] = name[0].toUpper();
    return name;
}

} // namespace

RunsModel::RunsModel(QObject *parent) : QAbstractTableModel(parent) {}

void RunsModel::setRuns(std::vector<engine::store::RunRecord> runs)
{
    beginResetModel();
    m_runs = std::move(runs);
    endResetModel();
}

int RunsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int RunsModel::columnCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunsModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const engine::store::RunRecord &r = run(index.row());
    const bool raw = role == RawValueRole;
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole && !raw) {
        if (role == Qt::TextAlignmentRole && index.column() == IdColumn)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    }
    switch (index.column()) {
    case IdColumn:
        return raw ? QVariant::fromValue<qlonglong>(r.id) : QVariant(QLocale().toString(static_cast<qlonglong>(r.id)));
    case NameColumn:
        return QString::fromStdString(r.name);
    case StatusColumn:
        return statusText(r.status);
    case CreatedColumn:
    case FinishedColumn: {
        const QDateTime time = parseTime(index.column() == CreatedColumn ? r.created : r.finished);
        if (raw)
            return time;
        if (role == Qt::ToolTipRole)
            return QString::fromStdString(index.column() == CreatedColumn ? r.created : r.finished);
        return displayTime(time);
    }
    case ModelColumn:
        return QString::fromStdString(r.model);
    }
    return {};
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case IdColumn: return tr("ID");
    case NameColumn: return tr("Name");
    case StatusColumn: return tr("Status");
    case CreatedColumn: return tr("Created");
    case FinishedColumn: return tr("Finished");
    case ModelColumn: return tr("Model");
    }
    return {};
}

} // namespace ui
