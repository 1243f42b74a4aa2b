#include "ui/models/runsmodel.h"

#include <QSortFilterProxyModel>

#include <gtest/gtest.h>

namespace {

engine::store::RunRecord record(int64_t id, const std::string &created, engine::store::RunStatus status)
{
    engine::store::RunRecord r;
    r.id = id;
    r.name = "run " + std::to_string(id);
    r.created = created;
    r.status = status;
    r.model = "demo";
    return r;
}

TEST(RunsModel, SortsIdsAsNumbersAndTimesAsTimes)
{
    using engine::store::RunStatus;
    ui::RunsModel model;
    model.setRuns({record(9, "2026-11-29T16:25:53Z", RunStatus::Succeeded),
                   record(10, "2026-11-29T09:00:00Z", RunStatus::Cancelled),
                   record(2, "2026-11-30T08:00:00Z", RunStatus::Failed)});
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    proxy.setSortRole(ui::RunsModel::RawValueRole);

    proxy.sort(ui::RunsModel::IdColumn, Qt::AscendingOrder);
    QStringList ids;
    for (int row = 0; row < proxy.rowCount(); ++row)
        ids << proxy.index(row, ui::RunsModel::IdColumn).data().toString();
    EXPECT_EQ(ids, (QStringList{QStringLiteral("2"), QStringLiteral("9"), QStringLiteral("10")}));

    proxy.sort(ui::RunsModel::CreatedColumn, Qt::AscendingOrder);
    QStringList names;
    for (int row = 0; row < proxy.rowCount(); ++row)
        names << proxy.index(row, ui::RunsModel::NameColumn).data().toString();
    EXPECT_EQ(names, (QStringList{QStringLiteral("run 10"), QStringLiteral("run 9"), QStringLiteral("run 2")}));

    EXPECT_EQ(model.index(0, ui::RunsModel::StatusColumn).data().toString(), QStringLiteral("Succeeded"));
    EXPECT_EQ(model.index(0, ui::RunsModel::FinishedColumn).data().toString(), QString());
    EXPECT_EQ(model.headerData(ui::RunsModel::ModelColumn, Qt::Horizontal).toString(), QStringLiteral("Model"));
}

} // namespace
