// The runs table model and its proxy: raw-value sorting (numbers as numbers, durations as seconds,
// dates as dates), the filter syntax, and refreshes that update rows in place.

#include "ui/models/runsmodel.h"

#include <QSignalSpy>

#include <gtest/gtest.h>

#include <optional>

namespace {

using engine::store::RunStatus;
using engine::store::RunSummary;

RunSummary summary(int64_t id, const std::string &created, RunStatus status, std::optional<int64_t> steps = {})
{
    RunSummary s;
    s.run.id = id;
    s.run.name = "run " + std::to_string(id);
    s.run.created = created;
    s.run.finished = status == RunStatus::Running ? "" : created;
    s.run.status = status;
    s.run.model = "demo";
    s.steps = steps;
    return s;
}

QStringList column(const QAbstractItemModel &model, int column)
{
    QStringList values;
    for (int row = 0; row < model.rowCount(); ++row)
        values << model.index(row, column).data().toString();
    return values;
}

TEST(RunsModel, SortsIdsAndStepsAsNumbersAndTimesAsTimes)
{
    ui::RunsModel model;
    model.setSummaries({summary(9, "2026-11-29T16:25:53Z", RunStatus::Succeeded, 900),
                        summary(10, "2026-11-29T09:00:00Z", RunStatus::Cancelled, 10000),
                        summary(2, "2026-11-30T08:00:00Z", RunStatus::Failed),
                        summary(3, "2025-12-01T08:00:00Z", RunStatus::Failed, 95)});
    ui::RunsFilterModel proxy;
    proxy.setSourceModel(&model);

    proxy.sort(ui::RunsModel::IdColumn, Qt::AscendingOrder);
    EXPECT_EQ(column(proxy, ui::RunsModel::IdColumn), (QStringList{"2", "3", "9", "10"}));

    // As text "10,000" < "900" < "95"; as numbers 95 < 900 < 10000, and no steps sorts first.
    proxy.sort(ui::RunsModel::StepsColumn, Qt::AscendingOrder);
    EXPECT_EQ(column(proxy, ui::RunsModel::IdColumn), (QStringList{"2", "3", "9", "10"}));
    proxy.sort(ui::RunsModel::StepsColumn, Qt::DescendingOrder);
    EXPECT_EQ(column(proxy, ui::RunsModel::IdColumn), (QStringList{"10", "9", "3", "2"}));

    // Dates as dates: 2025-12-01 < 2026-11-29 09:00 < 2026-11-29 16:25 < 2026-11-30.
    proxy.sort(ui::RunsModel::CreatedColumn, Qt::AscendingOrder);
    EXPECT_EQ(column(proxy, ui::RunsModel::NameColumn), (QStringList{"run 3", "run 10", "run 9", "run 2"}));
    EXPECT_EQ(model.index(0, ui::RunsModel::CreatedColumn).data(ui::RunsModel::RawValueRole).metaType().id(),
              QMetaType::QDateTime);

    EXPECT_EQ(model.index(0, ui::RunsModel::StatusColumn).data().toString(), QStringLiteral("Succeeded"));
    EXPECT_EQ(model.headerData(ui::RunsModel::ModelColumn, Qt::Horizontal).toString(), QStringLiteral("Model"));
    EXPECT_EQ(model.headerData(ui::RunsModel::BestEvalLossColumn, Qt::Horizontal).toString(), QStringLiteral("Best eval loss"));
}

TEST(RunsModel, SortsDurationsAsSecondsAndLossesAsNumbers)
{
    auto a = summary(1, "2026-01-01T00:00:00Z", RunStatus::Succeeded);
    a.durationSeconds = 59;       // "0:59"
    a.bestEvalLoss = 10.5;
    auto b = summary(2, "2026-01-01T00:00:00Z", RunStatus::Succeeded);
    b.durationSeconds = 3 * 3600; // "3:00:00"
    b.bestEvalLoss = 2.25;
    auto c = summary(3, "2026-01-01T00:00:00Z", RunStatus::Succeeded);
    c.durationSeconds = 125;      // "2:05"
    ui::RunsModel model;
    model.setSummaries({a, b, c});
    ui::RunsFilterModel proxy;
    proxy.setSourceModel(&model);
    proxy.sort(ui::RunsModel::DurationColumn, Qt::AscendingOrder);
    EXPECT_EQ(column(proxy, ui::RunsModel::DurationColumn), (QStringList{"0:59", "2:05", "3:00:00"}));
    proxy.sort(ui::RunsModel::BestEvalLossColumn, Qt::AscendingOrder);
    EXPECT_EQ(column(proxy, ui::RunsModel::BestEvalLossColumn), (QStringList{"", "2.2500", "10.5000"}));
    EXPECT_EQ(ui::RunsModel::durationText(2 * 86400 + 5 * 3600), QStringLiteral("53:00:00"));
}

TEST(RunsModel, FilterMatchesNameModelTagsNotesAndStatus)
{
    auto lora = summary(1, "2026-01-01T00:00:00Z", RunStatus::Succeeded);
    lora.run.name = "lora rank 8";
    lora.run.tags = {"baseline", "jargon"};
    lora.method = "lora";
    auto full = summary(2, "2026-01-02T00:00:00Z", RunStatus::Failed);
    full.run.name = "full fine-tune";
    full.run.model = "tinyllama";
    full.run.notes = "diverged at step 40";
    full.method = "full";
    auto other = summary(3, "2026-01-03T00:00:00Z", RunStatus::Succeeded);
    other.run.name = "sweep";
    other.run.tags = {"baselines"};
    ui::RunsModel model;
    model.setSummaries({lora, full, other});
    ui::RunsFilterModel proxy;
    proxy.setSourceModel(&model);
    proxy.sort(ui::RunsModel::IdColumn, Qt::AscendingOrder);

    const auto ids = [&](const QString &filter) {
        proxy.setFilterText(filter);
        return column(proxy, ui::RunsModel::IdColumn);
    };
    EXPECT_EQ(ids(QString()), (QStringList{"1", "2", "3"}));
    EXPECT_EQ(ids(QStringLiteral("LORA")), (QStringList{"1"}));           // name (and method), any case
    EXPECT_EQ(ids(QStringLiteral("tinyllama")), (QStringList{"2"}));      // model
    EXPECT_EQ(ids(QStringLiteral("diverged")), (QStringList{"2"}));       // notes
    EXPECT_EQ(ids(QStringLiteral("baseline")), (QStringList{"1", "3"}));  // tags contain it
    EXPECT_EQ(ids(QStringLiteral("tag:baseline")), (QStringList{"1"}));   // the exact tag
    EXPECT_EQ(ids(QStringLiteral("status:fail")), (QStringList{"2"}));
    EXPECT_EQ(ids(QStringLiteral("failed")), (QStringList{"2"}));         // status as a word
    EXPECT_EQ(ids(QStringLiteral("-tag:jargon")), (QStringList{"2", "3"}));
    EXPECT_EQ(ids(QStringLiteral("status:succeeded sweep")), (QStringList{"3"})); // every term
    EXPECT_EQ(ids(QStringLiteral("\"rank 8\"")), (QStringList{"1"}));
    EXPECT_EQ(ids(QStringLiteral("method:full")), (QStringList{"2"}));
    EXPECT_EQ(ids(QStringLiteral("nothing-matches")), QStringList{});
}

TEST(RunsModel, ARefreshUpdatesRowsInPlaceWithoutAReset)
{
    ui::RunsModel model;
    model.setSummaries({summary(1, "2026-01-01T00:00:00Z", RunStatus::Running, 5),
                        summary(2, "2026-01-02T00:00:00Z", RunStatus::Succeeded, 7),
                        summary(3, "2026-01-03T00:00:00Z", RunStatus::Succeeded, 9)});
    QSignalSpy resets(&model, &QAbstractItemModel::modelReset);
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    const QPersistentModelIndex kept = model.index(model.rowOfRun(3), ui::RunsModel::NameColumn);

    model.setSummaries({summary(1, "2026-01-01T00:00:00Z", RunStatus::Running, 6), // one more step
                        summary(3, "2026-01-03T00:00:00Z", RunStatus::Succeeded, 9),  // unchanged
                        summary(4, "2026-01-04T00:00:00Z", RunStatus::Running)});    // new; 2 deleted
    EXPECT_EQ(resets.count(), 0);
    EXPECT_EQ(removed.count(), 1);
    EXPECT_EQ(inserted.count(), 1);
    EXPECT_EQ(changed.count(), 1); // run 1 only
    ASSERT_TRUE(kept.isValid());
    EXPECT_EQ(kept.data().toString(), QStringLiteral("run 3"));
    EXPECT_EQ(model.rowCount(), 3);
    EXPECT_EQ(model.rowOfRun(2), -1);
    EXPECT_EQ(model.index(model.rowOfRun(1), ui::RunsModel::StepsColumn).data(ui::RunsModel::RawValueRole).toLongLong(), 6);
    EXPECT_TRUE(model.hasRunningRuns());
}

TEST(RunsModel, EditingANameAsksForARenameAndChangesNothingItself)
{
    ui::RunsModel model;
    model.setSummaries({summary(7, "2026-01-01T00:00:00Z", RunStatus::Succeeded)});
    QSignalSpy renames(&model, &ui::RunsModel::renameRequested);
    const QModelIndex name = model.index(0, ui::RunsModel::NameColumn);
    EXPECT_TRUE(model.flags(name) & Qt::ItemIsEditable);
    EXPECT_FALSE(model.flags(model.index(0, ui::RunsModel::StepsColumn)) & Qt::ItemIsEditable);
    EXPECT_TRUE(model.setData(name, QStringLiteral("  better name ")));
    ASSERT_EQ(renames.count(), 1);
    EXPECT_EQ(renames.at(0).at(0).toLongLong(), 7);
    EXPECT_EQ(renames.at(0).at(1).toString(), QStringLiteral("better name"));
    EXPECT_EQ(name.data().toString(), QStringLiteral("run 7"));
    EXPECT_FALSE(model.setData(name, QStringLiteral("   "))); // empty: no rename
    model.setEditable(false);
    EXPECT_FALSE(model.flags(name) & Qt::ItemIsEditable);
    EXPECT_EQ(renames.count(), 1);
}

} // namespace
