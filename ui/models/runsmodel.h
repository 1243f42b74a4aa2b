#pragma once
// The runs of a run store as a table: one row per run, newest first.

#include "engine/store/runstore.h"

#include <QAbstractTableModel>

#include <vector>

namespace ui {

class RunsModel : public QAbstractTableModel {
    Q_OBJECT

public:
    enum Column { IdColumn, NameColumn, StatusColumn, CreatedColumn, FinishedColumn, ModelColumn, ColumnCount };
    /// The value behind a cell (a number for the id, a QDateTime for times), for sorting proxies.
    static constexpr int RawValueRole = Qt::UserRole + 1;

    explicit RunsModel(QObject *parent = nullptr);

    void setRuns(std::vector<engine::store::RunRecord> runs);
    const engine::store::RunRecord &run(int row) const { return m_runs.at(static_cast<std::size_t>(row)); }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    std::vector<engine::store::RunRecord> m_runs;
};

} // namespace ui
