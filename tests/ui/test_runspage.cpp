// The Runs page driven like a user, over a real run store that the test also writes to from another
// connection (as a training process would): sorting and filtering, rename, notes, tags, delete, the
// run folder, cloning settings, overlays, following the store live, and the stores it cannot use
// (newer schema, locked, read-only), each one message in the page with the file left as it was; a
// locked store never freezes the window; Resume and Continue Training... for the runs that can go on.
//
// The page reads and writes on a thread of its own: after an action, a test waits (waitForStore) for the
// store's answer before it looks.

#include "engine/store/runfolder.h"
#include "engine/store/runstore.h"
#include "engine/store/storetestutil.h"
#include "ui/models/runsmodel.h"
#include "ui/models/runsreader.h"
#include "ui/pages/runspage.h"

#include "ui/widgets/metricplots.h"
#include "ui/widgets/qcustomplotinclude.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QInputDialog>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QToolButton>
#include <QUrl>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

namespace {

using engine::store::MetricSample;
using engine::store::RunStatus;
using engine::store::RunStore;
using storetest::fileBytes;
using storetest::RawDb;

constexpr int kPollWaitMs = 4 * ui::RunsPage::kIdlePollMs; // what "within the poll" waits, at most

class RunsPageTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_TRUE(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite3"));
    }

    void TearDown() override { m_page.reset(); }

    std::filesystem::path storeFile() const { return m_path.toStdString(); }

    /// A finished run written by "another process" (a connection of the test's own).
    int64_t addRun(const std::string &name, std::optional<int64_t> steps = {}, const std::string &created = {},
                   const std::vector<std::string> &tags = {}, const std::string &config = R"({"training": {"method": "lora"}})")
    {
        auto store = RunStore::open(storeFile());
        const int64_t id = store.createRun(name, config, "demo");
        if (steps) {
            std::vector<MetricSample> samples;
            for (int64_t step = 1; step <= *steps; ++step)
                samples.push_back({"train/loss", step, double(step), 3.0 - double(step) / double(*steps)});
            store.appendMetrics(id, samples);
        }
        store.setTags(id, tags);
        store.finishRun(id, RunStatus::Succeeded);
        if (!created.empty()) {
            RawDb raw(storeFile());
            raw.exec("UPDATE runs SET created = '" + created + "', finished = '" + created + "' WHERE id = " + std::to_string(id));
        }
        return id;
    }

    /// A run that ended with `status` after `steps` steps, written by "another process".
    int64_t addEndedRun(const std::string &name, RunStatus status, int64_t steps, const std::string &config)
    {
        auto store = RunStore::open(storeFile());
        const int64_t id = store.createRun(name, config, "demo");
        std::vector<MetricSample> samples;
        for (int64_t step = 1; step <= steps; ++step)
            samples.push_back({"train/loss", step, double(step), 3.0 - double(step) / double(steps)});
        store.appendMetrics(id, samples);
        store.finishRun(id, status);
        return id;
    }

    /// Opens the page on the test's store and, unless told not to, waits until it shows the runs.
    ui::RunsPage &openPage(bool waitForRuns = true)
    {
        m_page = std::make_unique<ui::RunsPage>(QString());
        m_messages = std::make_unique<QSignalSpy>(m_page.get(), &ui::RunsPage::statusMessage);
        m_page->setStorePath(m_path);
        m_page->resize(1200, 800);
        m_page->show();
        EXPECT_TRUE(QTest::qWaitForWindowExposed(m_page.get()));
        m_page->activateWindow();
        EXPECT_TRUE(QTest::qWaitForWindowActive(m_page.get()));
        view()->setFocus();
        if (waitForRuns) {
            EXPECT_TRUE(waitForStore());
        }
        return *m_page;
    }

    /// Waits until the page has the store's answers to everything it asked so far.
    bool waitForStore(int timeoutMs = 10'000)
    {
        return QTest::qWaitFor([&] { return !m_page->isWaitingForStore(); }, timeoutMs);
    }

    /// Waits until the delete confirmation was answered, then for the store.
    void waitForDeleteConfirmation()
    {
        ASSERT_TRUE(QTest::qWaitFor([&] { return m_confirmationSeen; }, 10'000)) << "no delete confirmation";
        ASSERT_TRUE(waitForStore());
    }

    QTableView *view() const { return m_page->view(); }

    /// A key pressed in the table, with the page's window active again (a dialog just closed takes
    /// the activation with it).
    void pressInTable(Qt::Key key, Qt::KeyboardModifiers modifiers = {})
    {
        m_page->activateWindow();
        ASSERT_TRUE(QTest::qWaitForWindowActive(m_page.get()));
        view()->setFocus();
        QTest::keyClick(view(), key, modifiers);
    }
    QSortFilterProxyModel *proxy() const { return m_page->proxyModel(); }

    template <typename T>
    T *child(const char *name) const
    {
        T *widget = m_page->findChild<T *>(QString::fromLatin1(name));
        EXPECT_NE(widget, nullptr) << "no widget named " << name;
        return widget;
    }

    /// The values of one column in the view's order.
    QStringList shown(int column) const
    {
        QStringList values;
        for (int row = 0; row < proxy()->rowCount(); ++row)
            values << proxy()->index(row, column).data().toString();
        return values;
    }

    void clickHeader(int column)
    {
        QHeaderView *header = view()->horizontalHeader();
        const QPoint at(header->sectionViewportPosition(column) + header->sectionSize(column) / 2, header->height() / 2);
        QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, at);
    }

    /// Clicks the row of run `id` (with `modifiers`, e.g. Ctrl to add it to the selection).
    void clickRun(int64_t id, Qt::KeyboardModifiers modifiers = {})
    {
        const int sourceRow = m_page->model()->rowOfRun(id);
        ASSERT_GE(sourceRow, 0) << "run " << id << " is not shown";
        const QModelIndex index = proxy()->mapFromSource(m_page->model()->index(sourceRow, ui::RunsModel::StatusColumn));
        ASSERT_TRUE(index.isValid()) << "run " << id << " is filtered out";
        view()->scrollTo(index);
        QTest::mouseClick(view()->viewport(), Qt::LeftButton, modifiers, view()->visualRect(index).center());
    }

    /// Answers the delete confirmation when it appears.
    void answerDeleteConfirmation(QMessageBox::StandardButton answer, bool alsoDeleteFolder = false)
    {
        m_confirmationSeen = false;
        auto *timer = new QTimer(m_page.get());
        timer->setInterval(10);
        QObject::connect(timer, &QTimer::timeout, m_page.get(), [this, timer, answer, alsoDeleteFolder] {
            auto *box = m_page->findChild<QMessageBox *>(QStringLiteral("deleteConfirmation"));
            if (!box || !box->isVisible())
                return;
            m_confirmationSeen = true;
            m_confirmationHadFolderBox = box->checkBox() != nullptr;
            if (alsoDeleteFolder && box->checkBox())
                box->checkBox()->setChecked(true);
            timer->stop();
            timer->deleteLater();
            box->button(answer)->click();
        });
        timer->start();
    }

    /// Waits until the page's reader has answered `count` more polls (an unchanged store or a new
    /// snapshot; each answer schedules the next poll), so that what must not happen on a poll is checked
    /// after polls that did happen, not after a guessed time. The bound only ends a page that stopped
    /// polling.
    bool waitForPolls(int count)
    {
        auto *reader = m_page->findChild<ui::RunsReader *>();
        if (!reader)
            return false;
        QSignalSpy unchanged(reader, &ui::RunsReader::pollUnchanged);
        QSignalSpy snapshots(reader, &ui::RunsReader::snapshotRead);
        return QTest::qWaitFor([&] { return unchanged.count() + snapshots.count() >= count; },
                               10 * (count + 1) * ui::RunsPage::kIdlePollMs);
    }

    QStringList messages() const
    {
        QStringList texts;
        for (const auto &arguments : *m_messages)
            texts << arguments.at(0).toString();
        return texts;
    }

    /// No dialog is open anywhere (errors are shown in the page, not in message boxes).
    static bool noDialogOpen()
    {
        for (QWidget *widget : QApplication::topLevelWidgets()) {
            if (qobject_cast<QMessageBox *>(widget) && widget->isVisible())
                return false;
        }
        return true;
    }

    QTemporaryDir m_dir;
    QString m_path;
    std::unique_ptr<ui::RunsPage> m_page;
    std::unique_ptr<QSignalSpy> m_messages;
    bool m_confirmationSeen = false;
    bool m_confirmationHadFolderBox = false;
};

TEST_F(RunsPageTest, ClickingTheHeadersSortsStepsAsNumbersAndCreatedAsDates)
{
    const int64_t nine = addRun("nine", 9, "2026-03-01T08:00:00Z");
    const int64_t hundred = addRun("hundred", 100, "2025-12-31T23:00:00Z");
    const int64_t ten = addRun("ten", 10, "2026-02-15T12:00:00Z");
    openPage();
    ASSERT_EQ(proxy()->rowCount(), 3);

    clickHeader(ui::RunsModel::StepsColumn);
    const bool ascending = view()->horizontalHeader()->sortIndicatorOrder() == Qt::AscendingOrder;
    const QStringList bySteps = shown(ui::RunsModel::NameColumn);
    EXPECT_EQ(bySteps, ascending ? (QStringList{"nine", "ten", "hundred"}) : (QStringList{"hundred", "ten", "nine"}));
    clickHeader(ui::RunsModel::StepsColumn); // the other way round
    EXPECT_EQ(shown(ui::RunsModel::NameColumn), (QStringList{bySteps.rbegin(), bySteps.rend()}));

    clickHeader(ui::RunsModel::CreatedColumn);
    const bool oldestFirst = view()->horizontalHeader()->sortIndicatorOrder() == Qt::AscendingOrder;
    EXPECT_EQ(shown(ui::RunsModel::NameColumn),
              oldestFirst ? (QStringList{"hundred", "ten", "nine"}) : (QStringList{"nine", "ten", "hundred"}));
    EXPECT_EQ(shown(ui::RunsModel::MethodColumn), (QStringList{"LoRA", "LoRA", "LoRA"}));
    (void)nine;
    (void)hundred;
    (void)ten;
}

TEST_F(RunsPageTest, TheFilterNarrowsTheRowsByNameAndByTag)
{
    addRun("lora rank 8", 5, {}, {"baseline"});
    addRun("lora rank 16", 5, {}, {"sweep"});
    addRun("full", 5, {}, {"baseline", "big"}, R"({"training": {"method": "full"}})");
    openPage();
    auto *filter = child<QLineEdit>("runsFilter");
    ASSERT_EQ(proxy()->rowCount(), 3);

    QTest::keyClicks(filter, QStringLiteral("rank"));
    EXPECT_EQ(proxy()->rowCount(), 2);
    filter->clear();
    QTest::keyClicks(filter, QStringLiteral("tag:baseline"));
    QStringList names = shown(ui::RunsModel::NameColumn);
    names.sort();
    EXPECT_EQ(names, (QStringList{"full", "lora rank 8"}));
    QTest::keyClicks(filter, QStringLiteral(" lora"));
    EXPECT_EQ(shown(ui::RunsModel::NameColumn), QStringList{"lora rank 8"});
    EXPECT_TRUE(child<QLabel>("runsSummary")->text().startsWith(QStringLiteral("1 of 3 runs"))) << child<QLabel>("runsSummary")->text().toStdString();
    filter->clear();
    EXPECT_EQ(proxy()->rowCount(), 3);
}

TEST_F(RunsPageTest, RenamingWithF2IsSavedInTheStore)
{
    const int64_t id = addRun("first name", 3);
    openPage();
    clickRun(id);
    QTest::keyClick(view(), Qt::Key_F2);
    auto *editor = qobject_cast<QLineEdit *>(QApplication::focusWidget());
    ASSERT_NE(editor, nullptr) << "F2 opened no editor";
    editor->selectAll();
    QTest::keyClicks(editor, QStringLiteral("better name"));
    QTest::keyClick(editor, Qt::Key_Return); // the delegate commits from the event loop
    ASSERT_TRUE(QTest::qWaitFor([&] { return shown(ui::RunsModel::NameColumn) == QStringList{"better name"}; }, 5000))
        << shown(ui::RunsModel::NameColumn).join(QLatin1Char(',')).toStdString();
    EXPECT_EQ(RunStore::open(storeFile()).run(id)->name, "better name");
    EXPECT_TRUE(m_page->message().isEmpty()) << m_page->message().toStdString();
}

TEST_F(RunsPageTest, NotesAndTagsAreSavedInTheStore)
{
    const int64_t a = addRun("a", 3);
    const int64_t b = addRun("b", 3);
    openPage();
    clickRun(a);
    auto *notes = child<QPlainTextEdit>("notesEdit");
    auto *tags = child<QLineEdit>("tagsEdit");
    auto *save = child<QPushButton>("saveNotesButton");

    QTest::keyClick(view(), Qt::Key_E, Qt::ControlModifier); // Edit Notes
    EXPECT_TRUE(notes->hasFocus());
    QTest::keyClicks(notes, QStringLiteral("lr too high?"));
    ASSERT_TRUE(save->isEnabled());
    QTest::mouseClick(save, Qt::LeftButton);
    EXPECT_FALSE(save->isEnabled());

    tags->setFocus();
    QTest::keyClicks(tags, QStringLiteral("baseline, jargon"));
    QTest::keyClick(tags, Qt::Key_Return);

    // Notes typed for b are saved when another run is selected.
    clickRun(b);
    QTest::keyClick(view(), Qt::Key_E, Qt::ControlModifier);
    QTest::keyClicks(notes, QStringLiteral("the good one"));
    clickRun(a);
    ASSERT_TRUE(waitForStore());

    auto store = RunStore::open(storeFile());
    EXPECT_EQ(store.run(a)->notes, "lr too high?");
    EXPECT_EQ(store.run(a)->tags, (std::vector<std::string>{"baseline", "jargon"}));
    EXPECT_EQ(store.run(b)->notes, "the good one");
    EXPECT_EQ(notes->toPlainText(), QStringLiteral("lr too high?"));
    EXPECT_EQ(tags->text(), QStringLiteral("baseline, jargon"));

    // A tag the store refuses is one message, and nothing changes.
    tags->setFocus();
    tags->selectAll();
    QTest::keyClicks(tags, QStringLiteral("ok, ") + QString(70, QLatin1Char('x')));
    QTest::keyClick(tags, Qt::Key_Return);
    ASSERT_TRUE(waitForStore());
    EXPECT_TRUE(m_page->message().contains(QStringLiteral("at most 64 bytes"))) << m_page->message().toStdString();
    EXPECT_EQ(RunStore::open(storeFile()).run(a)->tags, (std::vector<std::string>{"baseline", "jargon"}));
}

TEST_F(RunsPageTest, DeleteAsksThenDeletesOnYesAndKeepsOnNo)
{
    const int64_t keep = addRun("keep me", 3);
    const int64_t drop = addRun("drop me", 3);
    openPage();
    clickRun(drop);

    answerDeleteConfirmation(QMessageBox::No);
    pressInTable(Qt::Key_Delete);
    waitForDeleteConfirmation();
    EXPECT_TRUE(m_confirmationSeen);
    EXPECT_TRUE(RunStore::open(storeFile()).run(drop)) << "deleted although the answer was no";
    EXPECT_EQ(proxy()->rowCount(), 2);

    answerDeleteConfirmation(QMessageBox::Yes);
    pressInTable(Qt::Key_Delete);
    waitForDeleteConfirmation();
    EXPECT_TRUE(m_confirmationSeen);
    auto store = RunStore::open(storeFile());
    EXPECT_FALSE(store.run(drop));
    EXPECT_TRUE(store.run(keep));
    EXPECT_TRUE(store.metric(drop, "train/loss").empty());
    EXPECT_EQ(shown(ui::RunsModel::NameColumn), QStringList{"keep me"});
}

TEST_F(RunsPageTest, DeleteOffersTheRunFolderOnlyForAFolderTunebenchMadeAndKeepsItUnlessTicked)
{
    const auto folderOf = [&](const char *name) { return std::filesystem::path(m_dir.filePath(QString::fromLatin1(name)).toStdString()); };
    const auto marked = [&](const std::filesystem::path &folder, int64_t id) {
        std::filesystem::create_directories(folder);
        std::ofstream(folder / engine::store::kRunMarker)
            << R"({"run_id": )" << id << R"(, "store": ")" << storeFile().string() << "\"}\n";
    };
    const auto config = [](const std::filesystem::path &folder) {
        return R"({"output_dir": ")" + folder.string() + R"(", "training": {"method": "full"}})";
    };
    const int64_t kept = addRun("kept folder", 2, {}, {}, config(folderOf("out-kept")));
    const int64_t removed = addRun("removed folder", 2, {}, {}, config(folderOf("out-removed")));
    const int64_t foreign = addRun("not ours", 2, {}, {}, config(folderOf("someone-elses")));
    marked(folderOf("out-kept"), kept);
    marked(folderOf("out-removed"), removed);
    std::filesystem::create_directories(folderOf("someone-elses"));
    openPage();

    clickRun(kept);
    answerDeleteConfirmation(QMessageBox::Yes);
    pressInTable(Qt::Key_Delete);
    waitForDeleteConfirmation();
    EXPECT_TRUE(m_confirmationHadFolderBox);
    EXPECT_TRUE(std::filesystem::exists(folderOf("out-kept") / engine::store::kRunMarker));

    clickRun(removed);
    answerDeleteConfirmation(QMessageBox::Yes, true);
    pressInTable(Qt::Key_Delete);
    waitForDeleteConfirmation();
    EXPECT_TRUE(m_confirmationHadFolderBox);
    EXPECT_FALSE(std::filesystem::exists(folderOf("out-removed")));

    clickRun(foreign);
    answerDeleteConfirmation(QMessageBox::Yes, true);
    pressInTable(Qt::Key_Delete);
    waitForDeleteConfirmation();
    EXPECT_TRUE(m_confirmationSeen);
    EXPECT_FALSE(m_confirmationHadFolderBox) << "offered to delete a folder tunebench did not make";
    EXPECT_TRUE(std::filesystem::exists(folderOf("someone-elses")));
    EXPECT_EQ(proxy()->rowCount(), 0);
}

TEST_F(RunsPageTest, OpenRunFolderOpensItAndADeletedFolderIsOneClearMessage)
{
    const std::filesystem::path folder = m_dir.filePath(QStringLiteral("run-out")).toStdString();
    std::filesystem::create_directories(folder);
    const int64_t id = addRun("r", 2, {}, {}, R"({"output_dir": ")" + folder.string() + R"("})");
    openPage();
    QList<QUrl> opened; // what the page asked the desktop to open (no file manager starts in a test)
    m_page->setUrlOpener([&](const QUrl &url) {
        opened << url;
        return true;
    });
    clickRun(id);

    QTest::keyClick(view(), Qt::Key_O, Qt::ControlModifier | Qt::ShiftModifier);
    ASSERT_TRUE(waitForStore());
    ASSERT_EQ(opened.size(), 1);
    EXPECT_EQ(opened.first(), QUrl::fromLocalFile(QString::fromStdString(folder.string())));
    EXPECT_TRUE(m_page->message().isEmpty());

    std::filesystem::remove_all(folder); // behind the app's back
    QTest::keyClick(view(), Qt::Key_O, Qt::ControlModifier | Qt::ShiftModifier);
    ASSERT_TRUE(waitForStore());
    EXPECT_EQ(opened.size(), 1);
    EXPECT_TRUE(m_page->message().contains(QStringLiteral("no longer exists"))) << m_page->message().toStdString();
    EXPECT_TRUE(m_page->message().contains(QDir::toNativeSeparators(QString::fromStdString(folder.string()))));
    EXPECT_TRUE(child<QLabel>("runsMessage")->isVisible());
    EXPECT_TRUE(noDialogOpen());
}

TEST_F(RunsPageTest, CloneSendsTheRunsConfigAndTheContextMenuHasEveryAction)
{
    const std::string config = R"({"training": {"method": "lora", "steps": 40, "learning_rate": 0.003}})";
    const int64_t id = addRun("to clone", 2, {}, {}, config);
    openPage();
    QSignalSpy clones(m_page.get(), &ui::RunsPage::cloneSettingsRequested);
    clickRun(id);
    QTest::keyClick(view(), Qt::Key_D, Qt::ControlModifier);
    ASSERT_EQ(clones.count(), 1);
    EXPECT_EQ(clones.at(0).at(0).toString().toStdString(), config);
    EXPECT_TRUE(child<QPlainTextEdit>("configView")->toPlainText().contains(QStringLiteral("learning_rate")));
    EXPECT_FALSE(child<QLabel>("runDetailsFacts")->text().contains(QStringLiteral("Ranks")));

    EXPECT_EQ(view()->contextMenuPolicy(), Qt::ActionsContextMenu);
    const QList<QAction *> actions = view()->actions();
    for (QAction *action : {m_page->renameAction(), m_page->editNotesAction(), m_page->editTagsAction(),
                            m_page->deleteAction(), m_page->openFolderAction(), m_page->cloneAction()}) {
        EXPECT_TRUE(actions.contains(action)) << action->text().toStdString();
        EXPECT_FALSE(action->shortcut().isEmpty()) << action->text().toStdString();
    }
}

TEST_F(RunsPageTest, TwoSelectedRunsAreOverlaid)
{
    const int64_t a = addRun("a", 20);
    const int64_t b = addRun("b", 30);
    addRun("c", 10);
    openPage();
    auto *plots = child<ui::MetricPlots>("runsPlots");
    ASSERT_NE(plots, nullptr);
    clickRun(a);
    clickRun(b, Qt::ControlModifier);
    ASSERT_TRUE(QTest::qWaitFor([&] { return m_page->overlaidRunIds().size() == 2; }, 5000));
    QList<qint64> overlaid = m_page->overlaidRunIds();
    std::sort(overlaid.begin(), overlaid.end());
    EXPECT_EQ(overlaid, (QList<qint64>{a, b}));
    for (int64_t id : {a, b}) {
        QCPGraph *graph = plots->rawGraph(id, QStringLiteral("train/loss"));
        ASSERT_NE(graph, nullptr) << "run " << id << " has no curve";
        EXPECT_TRUE(QTest::qWaitFor([&] { return graph->dataCount() > 0; }, 5000)) << "run " << id << " draws nothing"; // drawn at the next replot
    }
    EXPECT_NE(plots->runColor(a), plots->runColor(b));
}

TEST_F(RunsPageTest, ARunWrittenByAnotherConnectionAppearsWithoutARefresh)
{
    addRun("old", 2);
    openPage();
    ASSERT_EQ(proxy()->rowCount(), 1);

    // "Another process" starts a run and writes its first steps.
    auto writer = RunStore::open(storeFile());
    const int64_t live = writer.createRun("live", R"({"training": {"method": "full"}})", "demo");
    writer.appendMetrics(live, {{"train/loss", 1, 0.1, 2.0}, {"train/loss", 2, 0.2, 1.9}});
    ASSERT_TRUE(QTest::qWaitFor([&] { return proxy()->rowCount() == 2; }, kPollWaitMs)) << "the new run did not appear";
    clickRun(live);
    ASSERT_TRUE(QTest::qWaitFor([&] { return m_page->overlaidRunIds() == QList<qint64>{live}; }, 5000));
    const auto stepsOfLive = [&] {
        return m_page->model()->index(m_page->model()->rowOfRun(live), ui::RunsModel::StepsColumn).data(ui::RunsModel::RawValueRole);
    };
    EXPECT_EQ(stepsOfLive().toLongLong(), 2);

    // It goes on writing: the row follows, the selection and the overlay stay and grow.
    writer.appendMetrics(live, {{"train/loss", 3, 0.3, 1.8}, {"train/loss", 4, 0.4, 1.7}});
    ASSERT_TRUE(QTest::qWaitFor([&] { return stepsOfLive().toLongLong() == 4; }, kPollWaitMs));
    EXPECT_EQ(m_page->selectedRunIds(), QList<qint64>{live});
    auto *plots = child<ui::MetricPlots>("runsPlots");
    EXPECT_TRUE(QTest::qWaitFor([&] {
        QCPGraph *graph = plots->rawGraph(live, QStringLiteral("train/loss"));
        return graph && graph->dataCount() == 4;
    }, 5000));
    writer.finishRun(live, RunStatus::Succeeded);
    ASSERT_TRUE(QTest::qWaitFor([&] {
        return proxy()->index(0, ui::RunsModel::StatusColumn).data().toString() == QStringLiteral("Succeeded") &&
               proxy()->index(1, ui::RunsModel::StatusColumn).data().toString() == QStringLiteral("Succeeded");
    }, kPollWaitMs));
    EXPECT_TRUE(m_page->message().isEmpty()) << m_page->message().toStdString();
}

TEST_F(RunsPageTest, ANewerSchemaIsOneMessageAndTheFileIsNotTouched)
{
    addRun("from the future", 2);
    {
        RawDb raw(storeFile());
        ASSERT_EQ(raw.query("PRAGMA journal_mode = DELETE"), "delete");
        raw.exec("PRAGMA user_version = " + std::to_string(RunStore::kSchemaVersion + 1));
    }
    const std::string before = fileBytes(storeFile());
    openPage();
    EXPECT_TRUE(m_page->message().contains(QStringLiteral("newer tunebench"))) << m_page->message().toStdString();
    EXPECT_TRUE(child<QLabel>("runsMessage")->isVisible());
    EXPECT_EQ(proxy()->rowCount(), 0);
    QTest::mouseClick(child<QPushButton>("refreshButton"), Qt::LeftButton);
    EXPECT_TRUE(waitForPolls(2)) << "the page stopped polling";
    EXPECT_EQ(messages().size(), 1) << messages().join(QLatin1Char('\n')).toStdString();
    EXPECT_TRUE(noDialogOpen());
    EXPECT_FALSE(m_page->deleteAction()->isEnabled());
    EXPECT_EQ(fileBytes(storeFile()), before);
    EXPECT_FALSE(std::filesystem::exists(storeFile().string() + "-wal"));
}

TEST_F(RunsPageTest, ALockedStoreShowsTheRunsAndARenameIsOneMessageThatChangesNothing)
{
    const int64_t id = addRun("locked name", 2);
    RawDb other(storeFile());
    other.exec("BEGIN IMMEDIATE"); // another process is in the middle of a write
    other.exec("INSERT INTO events (run, time, level, text) VALUES (1, 'now', 'info', 'uncommitted')");
    const std::string before = fileBytes(storeFile());
    openPage();
    ASSERT_EQ(proxy()->rowCount(), 1) << m_page->message().toStdString(); // reading goes on
    EXPECT_TRUE(m_page->message().isEmpty());

    clickRun(id);
    QTest::keyClick(view(), Qt::Key_F2);
    auto *editor = qobject_cast<QLineEdit *>(QApplication::focusWidget());
    ASSERT_NE(editor, nullptr);
    editor->selectAll();
    QTest::keyClicks(editor, QStringLiteral("new name"));
    QTest::keyClick(editor, Qt::Key_Return); // the delegate commits from the event loop
    ASSERT_TRUE(QTest::qWaitFor([&] { return !m_page->message().isEmpty(); }, 10000));
    EXPECT_TRUE(m_page->message().contains(QStringLiteral("locked by another process"))) << m_page->message().toStdString();
    EXPECT_TRUE(m_page->message().contains(QStringLiteral("nothing was changed")));
    EXPECT_TRUE(waitForPolls(2)) << "the page stopped polling";
    EXPECT_EQ(messages().size(), 1) << messages().join(QLatin1Char('\n')).toStdString();
    EXPECT_TRUE(noDialogOpen());
    EXPECT_EQ(shown(ui::RunsModel::NameColumn), QStringList{"locked name"});
    EXPECT_EQ(fileBytes(storeFile()), before);
    other.exec("ROLLBACK");
    EXPECT_EQ(RunStore::open(storeFile()).run(id)->name, "locked name");
}

TEST_F(RunsPageTest, AReadOnlyStoreShowsTheRunsWithOneMessageAndWritesNothing)
{
    const int64_t id = addRun("read only", 4);
    std::filesystem::permissions(storeFile(), std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
                                                  std::filesystem::perms::others_read);
    const std::string before = fileBytes(storeFile());
    {
        storetest::ObeyFilePermissions asAUser; // also when the tests run as root
        ASSERT_TRUE(storetest::ObeyFilePermissions::cannotWrite(storeFile()));
        openPage();
        ASSERT_EQ(proxy()->rowCount(), 1) << m_page->message().toStdString();
        EXPECT_TRUE(m_page->message().contains(QStringLiteral("read-only"))) << m_page->message().toStdString();
        clickRun(id);
        EXPECT_FALSE(m_page->renameAction()->isEnabled());
        EXPECT_FALSE(m_page->deleteAction()->isEnabled());
        EXPECT_TRUE(m_page->cloneAction()->isEnabled());
        EXPECT_FALSE(m_page->continueAction()->isEnabled()) << "a continued run could not record its steps";
        EXPECT_TRUE(m_page->continueAction()->toolTip().contains(QStringLiteral("read-only")))
            << m_page->continueAction()->toolTip().toStdString();
        QTest::keyClick(view(), Qt::Key_F2);
        EXPECT_EQ(qobject_cast<QLineEdit *>(QApplication::focusWidget()), nullptr) << "F2 edits a read-only store";
        EXPECT_TRUE(child<QLineEdit>("tagsEdit")->isReadOnly());
        EXPECT_TRUE(waitForPolls(2)) << "the page stopped polling";
        EXPECT_EQ(messages().size(), 1) << messages().join(QLatin1Char('\n')).toStdString();
        EXPECT_TRUE(noDialogOpen());
        m_page.reset(); // closes its connection while the file is still read-only for it
    }
    EXPECT_EQ(fileBytes(storeFile()), before);
    std::filesystem::permissions(storeFile(), std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
}

// Bug: the page read the store on the UI thread, so a store locked by another process froze the window
// for the busy timeout at every read.
TEST_F(RunsPageTest, ALockedStoreNeverFreezesTheWindowAndItsRunsShowOnceItIsReleased)
{
    const int64_t finished = addRun("finished", 2);
    // A run whose process died: every read records it as interrupted, a write that waits for the lock
    // (up to RunsReader::kBusyTimeoutMs, at the opening and again at the listing) while it is held.
    const int64_t died = addRun("died", 2);
    RawDb(storeFile()).exec("UPDATE runs SET status = 'running', finished = '', owner_pid = 999999999, owner_start = 1 "
                            "WHERE id = " + std::to_string(died));
    auto other = std::make_unique<RawDb>(storeFile()); // another process, in the middle of a write
    other->exec("BEGIN EXCLUSIVE");
    other->exec("UPDATE runs SET name = 'renamed under the lock' WHERE id = " + std::to_string(finished));

    int ticks = 0;
    QTimer ticker;
    ticker.setInterval(10);
    QObject::connect(&ticker, &QTimer::timeout, [&] { ++ticks; });
    ticker.start();
    openPage(false);
    // The event loop goes on while the page waits for the store: the timer fires 30 times with the
    // read still on its way.
    ASSERT_TRUE(QTest::qWaitFor([&] { return ticks >= 30 || !m_page->isWaitingForStore(); }, 10'000));
    EXPECT_GE(ticks, 30);
    EXPECT_TRUE(m_page->isWaitingForStore()) << "the read did not wait for the lock";
    EXPECT_EQ(proxy()->rowCount(), 0);
    const int ticksWhileLocked = ticks;

    other->exec("COMMIT");
    other.reset();
    const auto nameOf = [&](int64_t id) {
        const int row = m_page->model()->rowOfRun(id);
        return row < 0 ? QString() : m_page->model()->index(row, ui::RunsModel::NameColumn).data().toString();
    };
    ASSERT_TRUE(QTest::qWaitFor([&] { return nameOf(finished) == QStringLiteral("renamed under the lock"); }, kPollWaitMs))
        << shown(ui::RunsModel::NameColumn).join(QLatin1Char(',')).toStdString();
    EXPECT_EQ(proxy()->rowCount(), 2);
    const int diedRow = m_page->model()->rowOfRun(died);
    ASSERT_GE(diedRow, 0);
    EXPECT_EQ(m_page->model()->index(diedRow, ui::RunsModel::StatusColumn).data().toString(), QStringLiteral("Interrupted"));
    EXPECT_TRUE(m_page->message().isEmpty()) << m_page->message().toStdString();
    EXPECT_GT(ticks, ticksWhileLocked);
}

TEST_F(RunsPageTest, ResumeAndContinueTrainingAreOfferedForTheRunsThatCanGoOn)
{
    const std::string config = R"({"training": {"method": "lora", "steps": 20}})";
    const int64_t interrupted = addEndedRun("interrupted", RunStatus::Interrupted, 7, config);
    const int64_t cancelled = addEndedRun("cancelled", RunStatus::Cancelled, 5, config);
    const int64_t succeeded = addEndedRun("succeeded", RunStatus::Succeeded, 30, R"({"training": {"method": "lora", "steps": 30}})");
    const int64_t failed = addEndedRun("failed", RunStatus::Failed, 3, config);
    const int64_t parallel = addEndedRun("two ranks", RunStatus::Interrupted, 4,
                                         R"({"training": {"method": "full", "steps": 20, "world_size": 2, "launcher": "torchrun"}})");
    openPage();
    QAction *resume = m_page->resumeAction();
    QAction *more = m_page->continueAction();
    auto *resumeButton = child<QToolButton>("resumeButton");
    auto *continueButton = child<QToolButton>("continueButton");
    ASSERT_NE(resumeButton, nullptr);
    ASSERT_NE(continueButton, nullptr);
    EXPECT_FALSE(resume->isEnabled()) << "nothing is selected";
    EXPECT_FALSE(more->isEnabled());

    const auto expectOffered = [&](int64_t id, bool resumable, bool continuable) {
        clickRun(id);
        EXPECT_EQ(resume->isEnabled(), resumable) << "run " << id << ": " << resume->toolTip().toStdString();
        EXPECT_EQ(more->isEnabled(), continuable) << "run " << id << ": " << more->toolTip().toStdString();
        EXPECT_EQ(resumeButton->isEnabled(), resumable);
        EXPECT_EQ(continueButton->isEnabled(), continuable);
    };
    expectOffered(interrupted, true, false);
    expectOffered(cancelled, true, false);
    expectOffered(succeeded, false, true);
    expectOffered(failed, false, false);
    expectOffered(parallel, false, false);
    // A data-parallel run goes on from a terminal, with as many ranks: the tooltip says how.
    for (QAction *action : {resume, more}) {
        EXPECT_TRUE(action->toolTip().contains(QStringLiteral("tunebench launch --nproc 2 -- train --resume %1").arg(parallel)))
            << action->toolTip().toStdString();
    }
    EXPECT_EQ(resumeButton->toolTip(), resume->toolTip());
    // One run at a time.
    clickRun(interrupted);
    clickRun(cancelled, Qt::ControlModifier);
    ASSERT_EQ(m_page->selectedRunIds().size(), 2);
    EXPECT_FALSE(resume->isEnabled());
    EXPECT_TRUE(resume->toolTip().contains(QStringLiteral("Select one"))) << resume->toolTip().toStdString();
    const QList<QAction *> contextMenu = view()->actions();
    EXPECT_TRUE(contextMenu.contains(resume));
    EXPECT_TRUE(contextMenu.contains(more));

    QSignalSpy requests(m_page.get(), &ui::RunsPage::resumeRequested);
    clickRun(interrupted);
    QTest::mouseClick(resumeButton, Qt::LeftButton);
    ASSERT_EQ(requests.count(), 1);
    EXPECT_EQ(requests.at(0).at(0).toLongLong(), interrupted);
    EXPECT_EQ(requests.at(0).at(1).toLongLong(), 0) << "Resume goes on to the steps the run was started with";

    // Continue Training... asks for the new total: at least one step more than the run did, twice its
    // steps at first.
    clickRun(succeeded);
    int minimum = -1;
    int suggested = -1;
    QTimer::singleShot(0, [&] {
        auto *dialog = qobject_cast<QInputDialog *>(QApplication::activeModalWidget());
        ASSERT_NE(dialog, nullptr);
        EXPECT_EQ(dialog->objectName(), QStringLiteral("continueStepsDialog"));
        minimum = dialog->intMinimum();
        suggested = dialog->intValue();
        dialog->setIntValue(45);
        dialog->accept();
    });
    QTest::mouseClick(continueButton, Qt::LeftButton);
    EXPECT_EQ(minimum, 31);
    EXPECT_EQ(suggested, 60);
    ASSERT_EQ(requests.count(), 2);
    EXPECT_EQ(requests.at(1).at(0).toLongLong(), succeeded);
    EXPECT_EQ(requests.at(1).at(1).toLongLong(), 45);

    // Cancelling the question asks for nothing.
    bool asked = false;
    QTimer::singleShot(0, [&] {
        auto *dialog = qobject_cast<QInputDialog *>(QApplication::activeModalWidget());
        ASSERT_NE(dialog, nullptr);
        asked = true;
        dialog->reject();
    });
    QTest::mouseClick(continueButton, Qt::LeftButton);
    EXPECT_TRUE(asked);
    EXPECT_EQ(requests.count(), 2);
    EXPECT_TRUE(noDialogOpen());
}

} // namespace

TEST_F(RunsPageTest, ADataParallelRunShowsItsRanks)
{
    const int64_t id = addRun("two ranks", 3, {}, {}, R"({"training": {"method": "full", "world_size": 2, "launcher": "torchrun"}})");
    openPage();
    clickRun(id);
    const QString facts = child<QLabel>("runDetailsFacts")->text();
    EXPECT_TRUE(facts.contains(QStringLiteral("Ranks"))) << facts.toStdString();
    EXPECT_TRUE(facts.contains(QStringLiteral("2 (data parallel, torchrun)"))) << facts.toStdString();
    EXPECT_TRUE(child<QPlainTextEdit>("configView")->toPlainText().contains(QStringLiteral("\"world_size\": 2")));
}
