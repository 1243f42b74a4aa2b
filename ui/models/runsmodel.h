#pragma once
// The runs of a run store as a table (one row per run) and the proxy that sorts and filters it.
//
// How to use:
//   auto *model = new RunsModel(this);
//   auto *proxy = new RunsFilterModel(this);
//   proxy->setSourceModel(model);
//   model->setSummaries(store.listRunSummaries());   // again at every refresh: rows merge in place,
//                                                   // so the view keeps its selection and sort
//   proxy->setFilterText("tag:baseline lora");         // every term must match
//
// Sorting and filtering use RawValueRole: steps and losses as numbers, durations as seconds, times as
// QDateTime (UTC), so "10" sorts after "9" and dates sort as dates whatever the display format.

#include "engine/store/runstore.h"

#include <QAbstractTableModel>
#include <QDateTime>
#include <QSortFilterProxyModel>
#include <QStringList>

#include <vector>

namespace ui {

class RunsModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column {
        IdColumn,
        NameColumn,
        ModelColumn,
        MethodColumn,
        StatusColumn,
        StepsColumn,
        BestEvalLossColumn,
        DurationColumn,
        CreatedColumn,
        ColumnCount
    };
    /// The value behind a cell, for sorting and filtering: qlonglong for the id, steps and duration
    /// (seconds), double for the eval loss, QDateTime (UTC) for created, the plain text otherwise;
    /// an invalid QVariant where a run has no value (no steps yet, never evaluated).
    static constexpr int RawValueRole = Qt::UserRole + 1;
    /// The run's id (qlonglong) in every column.
    static constexpr int RunIdRole = Qt::UserRole + 2;
    /// The run's tags (QStringList) in every column.
    static constexpr int TagsRole = Qt::UserRole + 3;

    explicit RunsModel(QObject *parent = nullptr);

    /// Shows `runs` without their figures (steps, losses, method): for callers that have records only.
    void setRuns(std::vector<engine::store::RunRecord> runs);
    /// Shows `summaries`: rows of runs already shown are updated in place, gone runs removed, new runs
    /// appended (never a model reset, so selection, current index and sort survive a refresh).
    void setSummaries(std::vector<engine::store::RunSummary> summaries);
    /// The time a running run's duration counts to; updates the duration cells of running rows.
    void setNow(const QDateTime &now);
    /// Whether the name cells can be edited (an edit asks for a rename through renameRequested).
    void setEditable(bool editable);
    /// Replaces one run's record (name, notes, tags, ...) and keeps its figures: after the page wrote
    /// to the store and read the run back.
    void updateRecord(const engine::store::RunRecord &record);

    const engine::store::RunSummary &summary(int row) const { return m_rows.at(static_cast<std::size_t>(row)); }
    const engine::store::RunRecord &run(int row) const { return summary(row).run; }
    /// The row of run `runId`, or -1.
    int rowOfRun(qint64 runId) const;
    /// True if any shown run is running.
    bool hasRunningRuns() const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    /// "45s", "2m 05s", "1h 30m", "3d 4h".
    static QString durationText(qint64 seconds);

Q_SIGNALS:
    /// The user edited a name cell to `name` (trimmed, not empty, different from the current name).
    /// The model does not change: the receiver renames the run in the store, then calls updateRecord.
    void renameRequested(qint64 runId, const QString &name);

private:
    qint64 durationOf(const engine::store::RunSummary &summary) const;
    QVariant rawValue(const engine::store::RunSummary &summary, int column) const;
    QVariant displayValue(const engine::store::RunSummary &summary, int column) const;

    std::vector<engine::store::RunSummary> m_rows;
    QDateTime m_now;
    bool m_editable = true;
};

/// Sorts on RunsModel::RawValueRole (runs without a value sort first in ascending order) and keeps
/// the rows that match every term of the filter text. A term matches a run when its name, model,
/// method, status, notes or one of its tags contains it (case-insensitive); "tag:x" needs the tag x,
/// "status:fail" a status that starts with "fail", "name:", "model:", "method:" and "notes:" look in that
/// field only; a leading '-' negates a term; "quoted terms" may hold spaces.
class RunsFilterModel : public QSortFilterProxyModel {
    Q_OBJECT

public:
    explicit RunsFilterModel(QObject *parent = nullptr);

    void setFilterText(const QString &text);
    QString filterText() const { return m_text; }

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex &sourceParent) const override;
    bool lessThan(const QModelIndex &left, const QModelIndex &right) const override;

private:
    struct Term {
        QString field; ///< empty: any field
        QString text;  ///< lower case
        bool negated = false;
    };
    bool matches(const engine::store::RunSummary &summary, const Term &term) const;

    QString m_text;
    std::vector<Term> m_terms;
};

} // namespace ui
