#include "ui/models/runsmodel.h"

#include "engine/core/format.h"

#include <QLocale>
#include <QProcess>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

namespace ui {
namespace {

using engine::store::RunRecord;
using engine::store::RunStatus;
using engine::store::RunSummary;

QDateTime parseTime(const std::string &iso)
{
    if (iso.empty())
        return {};
    QDateTime time = QDateTime::fromString(QString::fromStdString(iso), Qt::ISODate);
    return time.isValid() ? time.toUTC() : time;
}

QString displayTime(const QDateTime &time)
{
    return time.isValid() ? time.toLocalTime().toString(QStringLiteral("yyyy-MM-dd hh:mm")) : QString();
}

QString statusText(RunStatus status)
{
    QString name = QString::fromLatin1(engine::store::runStatusName(status));
    if (!name.isEmpty())
        name[0] = name[0].toUpper();
    return name;
}

QString methodText(const std::string &method)
{
    if (method == "lora")
        return QStringLiteral("LoRA");
    if (method == "full")
        return QStringLiteral("Full");
    return QString::fromStdString(method);
}

QStringList tagList(const RunRecord &run)
{
    QStringList tags;
    for (const auto &tag : run.tags)
        tags << QString::fromStdString(tag);
    return tags;
}

bool sameRow(const RunSummary &a, const RunSummary &b)
{
    const RunRecord &x = a.run;
    const RunRecord &y = b.run;
    return x.name == y.name && x.created == y.created && x.finished == y.finished && x.status == y.status &&
           x.configJson == y.configJson && x.model == y.model && x.notes == y.notes && x.tags == y.tags &&
           a.steps == b.steps && a.bestEvalLoss == b.bestEvalLoss && a.durationSeconds == b.durationSeconds &&
           a.method == b.method;
}

} // namespace

RunsModel::RunsModel(QObject *parent) : QAbstractTableModel(parent), m_now(QDateTime::currentDateTimeUtc()) {}

void RunsModel::setRuns(std::vector<RunRecord> runs)
{
    std::vector<RunSummary> summaries;
    summaries.reserve(runs.size());
    for (auto &run : runs) {
        RunSummary summary;
        summary.run = std::move(run);
        const QDateTime created = parseTime(summary.run.created);
        const QDateTime finished = parseTime(summary.run.finished);
        if (created.isValid() && finished.isValid())
            summary.durationSeconds = std::max<qint64>(0, created.secsTo(finished));
        summaries.push_back(std::move(summary));
    }
    setSummaries(std::move(summaries));
}

void RunsModel::setSummaries(std::vector<RunSummary> summaries)
{
    m_now = QDateTime::currentDateTimeUtc();
    std::unordered_map<int64_t, std::size_t> incoming;
    for (std::size_t i = 0; i < summaries.size(); ++i)
        incoming.emplace(summaries[i].run.id, i);

    // Remove the rows of runs that are gone (from the bottom, so row numbers stay valid).
    for (int row = rowCount() - 1; row >= 0; --row) {
        if (incoming.count(m_rows[static_cast<std::size_t>(row)].run.id))
            continue;
        int first = row;
        while (first > 0 && !incoming.count(m_rows[static_cast<std::size_t>(first - 1)].run.id))
            --first;
        beginRemoveRows({}, first, row);
        m_rows.erase(m_rows.begin() + first, m_rows.begin() + row + 1);
        endRemoveRows();
        row = first;
    }
    // Update the rows that stay, in place.
    std::vector<bool> placed(summaries.size(), false);
    for (int row = 0; row < rowCount(); ++row) {
        RunSummary &current = m_rows[static_cast<std::size_t>(row)];
        const std::size_t from = incoming.at(current.run.id);
        placed[from] = true;
        if (sameRow(current, summaries[from]))
            continue;
        current = std::move(summaries[from]);
        Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
    }
    // Append the new runs.
    std::vector<RunSummary> added;
    for (std::size_t i = 0; i < summaries.size(); ++i) {
        if (!placed[i])
            added.push_back(std::move(summaries[i]));
    }
    if (!added.empty()) {
        beginInsertRows({}, rowCount(), rowCount() + static_cast<int>(added.size()) - 1);
        for (auto &summary : added)
            m_rows.push_back(std::move(summary));
        endInsertRows();
    }
}

void RunsModel::setNow(const QDateTime &now)
{
    m_now = now.toUTC();
    for (int row = 0; row < rowCount(); ++row) {
        const RunSummary &summary = m_rows[static_cast<std::size_t>(row)];
        if (summary.run.status == RunStatus::Running && summary.run.finished.empty())
            Q_EMIT dataChanged(index(row, DurationColumn), index(row, DurationColumn));
    }
}

void RunsModel::setEditable(bool editable)
{
    m_editable = editable;
}

void RunsModel::updateRecord(const RunRecord &record)
{
    const int row = rowOfRun(record.id);
    if (row < 0)
        return;
    m_rows[static_cast<std::size_t>(row)].run = record;
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

int RunsModel::rowOfRun(qint64 runId) const
{
    for (std::size_t row = 0; row < m_rows.size(); ++row) {
        if (m_rows[row].run.id == runId)
            return static_cast<int>(row);
    }
    return -1;
}

bool RunsModel::hasRunningRuns() const
{
    for (const auto &summary : m_rows) {
        if (summary.run.status == RunStatus::Running)
            return true;
    }
    return false;
}

int RunsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_rows.size());
}

int RunsModel::columnCount(const QModelIndex &parent) const { return parent.isValid() ? 0 : ColumnCount; }

qint64 RunsModel::durationOf(const RunSummary &summary) const
{
    // A run without a finish time counts to now (the model's now, moved on by setNow while it runs).
    if (summary.run.finished.empty()) {
        const QDateTime created = parseTime(summary.run.created);
        if (created.isValid())
            return std::max<qint64>(0, created.secsTo(m_now));
    }
    return summary.durationSeconds;
}

QString RunsModel::durationText(qint64 seconds)
{
    return QString::fromStdString(engine::formatDuration(static_cast<double>(seconds)));
}

QVariant RunsModel::rawValue(const RunSummary &summary, int column) const
{
    const RunRecord &r = summary.run;
    switch (column) {
    case IdColumn: return QVariant::fromValue<qlonglong>(r.id);
    case NameColumn: return QString::fromStdString(r.name);
    case ModelColumn: return QString::fromStdString(r.model);
    case MethodColumn: return QString::fromStdString(summary.method);
    case StatusColumn: return QString::fromLatin1(engine::store::runStatusName(r.status));
    case StepsColumn: return summary.steps ? QVariant::fromValue<qlonglong>(*summary.steps) : QVariant();
    case BestEvalLossColumn: return summary.bestEvalLoss ? QVariant(*summary.bestEvalLoss) : QVariant();
    case DurationColumn: return QVariant::fromValue<qlonglong>(durationOf(summary));
    case CreatedColumn: return parseTime(r.created);
    }
    return {};
}

QVariant RunsModel::displayValue(const RunSummary &summary, int column) const
{
    const RunRecord &r = summary.run;
    switch (column) {
    case IdColumn: return QString::number(r.id);
    case NameColumn: return QString::fromStdString(r.name);
    case ModelColumn: return QString::fromStdString(r.model);
    case MethodColumn: return methodText(summary.method);
    case StatusColumn: return statusText(r.status);
    case StepsColumn: return summary.steps ? QLocale().toString(static_cast<qlonglong>(*summary.steps)) : QString();
    case BestEvalLossColumn:
        return summary.bestEvalLoss ? QString::number(*summary.bestEvalLoss, 'f', 4) : QString();
    case DurationColumn: return durationText(durationOf(summary));
    case CreatedColumn: return displayTime(parseTime(r.created));
    }
    return {};
}

QVariant RunsModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount)
        return {};
    const RunSummary &summary = this->summary(index.row());
    const RunRecord &r = summary.run;
    switch (role) {
    case RawValueRole: return rawValue(summary, index.column());
    case RunIdRole: return QVariant::fromValue<qlonglong>(r.id);
    case TagsRole: return tagList(r);
    case Qt::DisplayRole: return displayValue(summary, index.column());
    case Qt::EditRole: return index.column() == NameColumn ? QString::fromStdString(r.name) : displayValue(summary, index.column());
    case Qt::ToolTipRole:
        switch (index.column()) {
        case NameColumn: {
            QString tip = QString::fromStdString(r.name);
            if (!r.tags.empty())
                tip += QLatin1Char('\n') + tr("Tags: %1").arg(tagList(r).join(QStringLiteral(", ")));
            if (!r.notes.empty())
                tip += QLatin1Char('\n') + QString::fromStdString(r.notes);
            return tip;
        }
        case BestEvalLossColumn:
            return summary.bestEvalLoss ? QString::number(*summary.bestEvalLoss, 'g', 17) : tr("Never evaluated");
        case CreatedColumn: return QString::fromStdString(r.created);
        case DurationColumn:
            return r.finished.empty() ? tr("%1 s so far").arg(durationOf(summary)) : tr("%1 s").arg(durationOf(summary));
        default: return displayValue(summary, index.column());
        }
    case Qt::TextAlignmentRole:
        switch (index.column()) {
        case IdColumn:
        case StepsColumn:
        case BestEvalLossColumn:
        case DurationColumn: return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        default: return {};
        }
    }
    return {};
}

bool RunsModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (!index.isValid() || index.column() != NameColumn || role != Qt::EditRole || !m_editable)
        return false;
    const QString name = value.toString().trimmed();
    const RunRecord &r = run(index.row());
    if (name.isEmpty() || name == QString::fromStdString(r.name))
        return false;
    Q_EMIT renameRequested(r.id, name);
    return true;
}

Qt::ItemFlags RunsModel::flags(const QModelIndex &index) const
{
    Qt::ItemFlags flags = QAbstractTableModel::flags(index);
    if (index.isValid() && index.column() == NameColumn && m_editable)
        flags |= Qt::ItemIsEditable;
    return flags;
}

QVariant RunsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case IdColumn: return tr("ID");
    case NameColumn: return tr("Name");
    case ModelColumn: return tr("Model");
    case MethodColumn: return tr("Method");
    case StatusColumn: return tr("Status");
    case StepsColumn: return tr("Steps");
    case BestEvalLossColumn: return tr("Best eval loss");
    case DurationColumn: return tr("Duration");
    case CreatedColumn: return tr("Created");
    }
    return {};
}

RunsFilterModel::RunsFilterModel(QObject *parent) : QSortFilterProxyModel(parent)
{
    setSortRole(RunsModel::RawValueRole);
    setSortCaseSensitivity(Qt::CaseInsensitive);
}

void RunsFilterModel::setFilterText(const QString &text)
{
    if (text == m_text)
        return;
    m_text = text;
    m_terms.clear();
    static const QStringList fields = {QStringLiteral("tag"), QStringLiteral("status"), QStringLiteral("name"),
                                       QStringLiteral("model"), QStringLiteral("method"), QStringLiteral("notes")};
    for (QString word : QProcess::splitCommand(text)) {
        Term term;
        if (word.size() > 1 && word.startsWith(QLatin1Char('-'))) {
            term.negated = true;
            word.remove(0, 1);
        }
        const qsizetype colon = word.indexOf(QLatin1Char(':'));
        if (colon > 0 && fields.contains(word.left(colon).toLower())) {
            term.field = word.left(colon).toLower();
            word.remove(0, colon + 1);
        }
        term.text = word.toLower();
        if (!term.text.isEmpty())
            m_terms.push_back(std::move(term));
    }
    invalidateFilter();
}

bool RunsFilterModel::matches(const RunSummary &summary, const Term &term) const
{
    const RunRecord &r = summary.run;
    const auto contains = [&](const std::string &value) {
        return QString::fromStdString(value).contains(term.text, Qt::CaseInsensitive);
    };
    const QString status = QString::fromLatin1(engine::store::runStatusName(r.status));
    const QString method = methodText(summary.method);
    if (term.field == QLatin1String("tag")) {
        for (const auto &tag : r.tags) {
            if (QString::fromStdString(tag).compare(term.text, Qt::CaseInsensitive) == 0)
                return true;
        }
        return false;
    }
    if (term.field == QLatin1String("status"))
        return status.startsWith(term.text, Qt::CaseInsensitive);
    if (term.field == QLatin1String("name"))
        return contains(r.name);
    if (term.field == QLatin1String("model"))
        return contains(r.model);
    if (term.field == QLatin1String("method"))
        return method.contains(term.text, Qt::CaseInsensitive);
    if (term.field == QLatin1String("notes"))
        return contains(r.notes);
    if (contains(r.name) || contains(r.model) || contains(r.notes) || status.contains(term.text, Qt::CaseInsensitive) ||
        method.contains(term.text, Qt::CaseInsensitive))
        return true;
    for (const auto &tag : r.tags) {
        if (contains(tag))
            return true;
    }
    return false;
}

bool RunsFilterModel::filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const
{
    const auto *runs = qobject_cast<const RunsModel *>(sourceModel());
    if (!runs || sourceParent.isValid() || m_terms.empty())
        return true;
    const RunSummary &summary = runs->summary(sourceRow);
    for (const Term &term : m_terms) {
        if (matches(summary, term) == term.negated)
            return false;
    }
    return true;
}

bool RunsFilterModel::lessThan(const QModelIndex &left, const QModelIndex &right) const
{
    const QVariant a = left.data(sortRole());
    const QVariant b = right.data(sortRole());
    if (!a.isValid() || !b.isValid())
        return !a.isValid() && b.isValid(); // no value sorts before any value
    const int type = a.metaType().id();
    if (type == QMetaType::QDateTime && b.metaType().id() == QMetaType::QDateTime)
        return a.toDateTime() < b.toDateTime();
    if (type == QMetaType::QString || b.metaType().id() == QMetaType::QString)
        return QString::localeAwareCompare(a.toString().toLower(), b.toString().toLower()) < 0;
    if (type == QMetaType::Double || b.metaType().id() == QMetaType::Double) {
        const double x = a.toDouble();
        const double y = b.toDouble();
        if (std::isnan(x) || std::isnan(y))
            return std::isnan(x) && !std::isnan(y);
        return x < y;
    }
    return a.toLongLong() < b.toLongLong();
}

} // namespace ui
