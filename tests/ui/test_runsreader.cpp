// The Runs page's store reader on its own: answers come on the caller's thread; stale ones (for a store
// path no longer used, or superseded by a later request of the same kind) are dropped; a write goes to
// the store it was sent for, and the destructor finishes the writes already sent.

#include "engine/store/runstore.h"
#include "ui/models/runsreader.h"

#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using engine::store::RunStatus;
using engine::store::RunStore;

class RunsReaderTest : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(m_dir.isValid()); }

    /// A store file `file` holding succeeded runs named `names` (created in that order).
    QString storeWith(const char *file, const std::vector<std::string> &names)
    {
        const QString path = m_dir.filePath(QString::fromLatin1(file));
        auto store = RunStore::open(path.toStdString());
        for (const std::string &name : names)
            store.finishRun(store.createRun(name, "{}", "demo"), RunStatus::Succeeded);
        return path;
    }

    static bool waitUntilAnswered(const ui::RunsReader &reader)
    {
        return QTest::qWaitFor([&] { return !reader.isBusy(); }, 10'000);
    }

    static std::vector<std::string> namesOf(const ui::RunsSnapshot &snapshot)
    {
        std::vector<std::string> names;
        for (const auto &summary : snapshot.summaries)
            names.push_back(summary.run.name);
        return names;
    }

    QTemporaryDir m_dir;
};

TEST_F(RunsReaderTest, AnswersComeOnTheCallersThreadAndOnlyTheLatestRefreshCounts)
{
    const QString path = storeWith("runs.sqlite3", {"one", "two"});
    ui::RunsReader reader;
    std::vector<ui::RunsSnapshot> snapshots;
    QList<QThread *> threads;
    QObject::connect(&reader, &ui::RunsReader::snapshotRead, [&](const ui::RunsSnapshot &snapshot) {
        snapshots.push_back(snapshot);
        threads << QThread::currentThread();
    });
    reader.setStorePath(path);
    reader.refresh();
    reader.refresh();
    reader.refresh();
    EXPECT_TRUE(reader.isRefreshing());
    ASSERT_TRUE(waitUntilAnswered(reader));
    ASSERT_EQ(snapshots.size(), 1u) << "a refresh superseded by a later one was answered";
    EXPECT_EQ(threads.first(), QThread::currentThread());
    EXPECT_EQ(snapshots[0].state, ui::RunsSnapshot::State::Open);
    EXPECT_FALSE(snapshots[0].readOnly);
    EXPECT_EQ(namesOf(snapshots[0]), (std::vector<std::string>{"two", "one"}));
}

TEST_F(RunsReaderTest, AnswersForAStorePathNoLongerUsedAreDropped)
{
    const QString a = storeWith("a.sqlite3", {"in a"});
    const QString b = storeWith("b.sqlite3", {"in b"});
    ui::RunsReader reader;
    std::vector<ui::RunsSnapshot> snapshots;
    int folders = 0;
    QObject::connect(&reader, &ui::RunsReader::snapshotRead, [&](const ui::RunsSnapshot &snapshot) { snapshots.push_back(snapshot); });
    QObject::connect(&reader, &ui::RunsReader::runFolderFound, [&] { ++folders; });
    reader.setStorePath(a);
    reader.refresh();
    reader.findRunFolder(1);
    reader.setStorePath(b);
    reader.refresh();
    ASSERT_TRUE(waitUntilAnswered(reader));
    ASSERT_EQ(snapshots.size(), 1u);
    EXPECT_EQ(namesOf(snapshots[0]), std::vector<std::string>{"in b"});
    EXPECT_EQ(folders, 0) << "a folder of the store before was shown";

    // No file (yet) is no runs, and nothing is created by looking.
    const QString missing = m_dir.filePath(QStringLiteral("later.sqlite3"));
    reader.setStorePath(missing);
    reader.refresh();
    ASSERT_TRUE(waitUntilAnswered(reader));
    ASSERT_EQ(snapshots.size(), 2u);
    EXPECT_EQ(snapshots[1].state, ui::RunsSnapshot::State::NoStore);
    EXPECT_FALSE(QFileInfo::exists(missing));
}

TEST_F(RunsReaderTest, AWriteTheStoreRefusesSaysWhyAndADoneOneReadsTheRunBack)
{
    const QString path = storeWith("runs.sqlite3", {"first"});
    ui::RunsReader reader;
    std::vector<ui::RunEdit> edits;
    QObject::connect(&reader, &ui::RunsReader::runEdited, [&](const ui::RunEdit &edit) { edits.push_back(edit); });
    reader.setStorePath(path);
    reader.setTags(1, {"ok", std::string(70, 'x')});
    reader.renameRun(1, QStringLiteral("renamed"));
    ASSERT_TRUE(waitUntilAnswered(reader));
    ASSERT_EQ(edits.size(), 2u);
    EXPECT_EQ(edits[0].kind, ui::RunEdit::Kind::Tags);
    EXPECT_FALSE(edits[0].done);
    EXPECT_FALSE(edits[0].problem.opening);
    EXPECT_TRUE(edits[0].problem.what.contains(QStringLiteral("at most 64 bytes"))) << edits[0].problem.what.toStdString();
    EXPECT_EQ(edits[1].kind, ui::RunEdit::Kind::Rename);
    ASSERT_TRUE(edits[1].done) << edits[1].problem.what.toStdString();
    ASSERT_TRUE(edits[1].record);
    EXPECT_EQ(edits[1].record->name, "renamed");
    EXPECT_TRUE(edits[1].record->tags.empty());
}

TEST_F(RunsReaderTest, AWriteGoesToTheStoreItWasSentForAndTheDestructorFinishesIt)
{
    const QString a = storeWith("a.sqlite3", {"in a"});
    const QString b = storeWith("b.sqlite3", {"in b"});
    {
        ui::RunsReader reader;
        reader.setStorePath(a);
        reader.refresh(); // a read still queued when the reader goes is skipped
        reader.setNotes(1, QStringLiteral("for a"));
        reader.setStorePath(b);
        reader.setNotes(1, QStringLiteral("for b"));
    } // destroyed at once, as a window closing just after the notes were typed
    EXPECT_EQ(RunStore::open(a.toStdString()).run(1)->notes, "for a");
    EXPECT_EQ(RunStore::open(b.toStdString()).run(1)->notes, "for b");
}

} // namespace
