// Settings kept between sessions: threads, run folder, theme, window geometry and page survive
// destroying and re-creating the main window. The test keeps its settings under an application name
// of its own and removes them afterwards.

#include "bridge/enginebridge.h"
#include "ui/application.h"
#include "ui/mainwindow.h"
#include "ui/pages/runspage.h"
#include "ui/pages/trainpage.h"
#include "ui/preferencesdialog.h"
#include "ui/widgets/metricplots.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLineEdit>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>

#include "ui/widgets/qcustomplotinclude.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <memory>

namespace {

class SettingsTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        ASSERT_TRUE(m_runFolder.isValid());
        m_applicationName = QCoreApplication::applicationName();
        QCoreApplication::setApplicationName(QStringLiteral("tunebench-settings-test"));
        QSettings().clear();
    }

    void TearDown() override
    {
        m_window.reset();
        ui::applyTheme(ui::Theme::System);
        QSettings().clear();
        QCoreApplication::setApplicationName(m_applicationName);
    }

    /// A main window as the application makes it: no run database given, so the preferences decide.
    void open()
    {
        m_window = std::make_unique<ui::MainWindow>();
        m_window->show();
        ASSERT_TRUE(QTest::qWaitForWindowExposed(m_window.get()));
    }

    void closeAndDestroy()
    {
        ASSERT_TRUE(m_window->close());
        m_window.reset();
    }

    QTemporaryDir m_runFolder;
    QString m_applicationName;
    std::unique_ptr<ui::MainWindow> m_window;
};

TEST_F(SettingsTest, PreferencesGeometryAndPageSurviveARestart)
{
    open();
    m_window->resize(m_window->size() + QSize(37, 23)); // not the default size (within its minimum)
    const QSize size = m_window->size();
    m_window->showPage(ui::MainWindow::Page::Runs);

    // The user sets threads, run folder and theme in the Preferences dialog.
    QAction *preferences = m_window->findChild<QAction *>(QStringLiteral("preferencesAction"));
    ASSERT_NE(preferences, nullptr);
    preferences->trigger();
    auto *dialog = m_window->findChild<ui::PreferencesDialog *>(QStringLiteral("preferencesDialog"));
    ASSERT_NE(dialog, nullptr);
    ASSERT_TRUE(QTest::qWaitForWindowExposed(dialog));
    auto *threads = dialog->findChild<QSpinBox *>(QStringLiteral("prefThreadsSpin"));
    auto *folder = dialog->findChild<QLineEdit *>(QStringLiteral("prefRunFolderEdit"));
    auto *theme = dialog->findChild<QComboBox *>(QStringLiteral("prefThemeCombo"));
    ASSERT_TRUE(threads && folder && theme);
    threads->setValue(1);
    folder->setText(m_runFolder.path());
    theme->setCurrentIndex(theme->findData(QStringLiteral("dark")));
    auto *buttons = dialog->findChild<QDialogButtonBox *>(QStringLiteral("preferencesButtons"));
    ASSERT_NE(buttons, nullptr);
    QTest::mouseClick(buttons->button(QDialogButtonBox::Ok), Qt::LeftButton);

    // Applied at once.
    EXPECT_LT(QApplication::palette().color(QPalette::Window).lightness(), 100) << "the dark theme is on";
    EXPECT_EQ(m_window->trainPage()->params().threads, 1);
    const QString store = QDir(m_runFolder.path()).filePath(QStringLiteral("runs.sqlite3"));
    EXPECT_EQ(m_window->storePath(), store);
    EXPECT_EQ(m_window->runsPage()->storePath(), store);
    EXPECT_EQ(m_window->trainPage()->params().storePath, store.toStdString());
    // The plot follows the palette (Qt delivers the change in the event loop).
    QCPAxis *axis = m_window->trainPage()->plots()->axisRect(0)->axis(QCPAxis::atBottom);
    EXPECT_TRUE(QTest::qWaitFor([&] { return axis->tickLabelColor().lightness() > 128; }, 5000))
        << "the loss plot's labels turn light on the dark theme";

    closeAndDestroy();
    ui::applyTheme(ui::Theme::System); // as a new process starts
    ASSERT_GT(QApplication::palette().color(QPalette::Window).lightness(), 100);

    open();
    const QSize screen = m_window->screen()->availableGeometry().size();
    if (size.width() <= screen.width() && size.height() <= screen.height()) {
        EXPECT_EQ(m_window->size(), size);
    } else if (m_window->size() != size) {
        // Qt 6.8 (not 6.4) fits a restored window into its screen (offscreen: 800x800, narrower than the
        // window's minimum): the saved height is kept as far as the screen allows, not the default's 800.
        EXPECT_LE(m_window->height(), std::max(screen.height(), m_window->minimumHeight()));
        EXPECT_NE(m_window->height(), 800) << "the default size, not the saved one";
        EXPECT_GE(m_window->width(), m_window->minimumSizeHint().width());
    }
    EXPECT_EQ(m_window->currentPage(), ui::MainWindow::Page::Runs);
    EXPECT_EQ(m_window->preferences().threads, 1);
    EXPECT_EQ(m_window->trainPage()->params().threads, 1);
    EXPECT_EQ(m_window->preferences().runFolder, m_runFolder.path());
    EXPECT_EQ(m_window->storePath(), store);
    EXPECT_EQ(m_window->preferences().theme, ui::Theme::Dark);
    EXPECT_LT(QApplication::palette().color(QPalette::Window).lightness(), 100);
    QAction *dark = m_window->findChild<QAction *>(QStringLiteral("themedarkAction"));
    ASSERT_NE(dark, nullptr);
    EXPECT_TRUE(dark->isChecked());

    // Back to the system's colours from the View menu.
    QAction *system = m_window->findChild<QAction *>(QStringLiteral("themesystemAction"));
    ASSERT_NE(system, nullptr);
    system->trigger();
    EXPECT_GT(QApplication::palette().color(QPalette::Window).lightness(), 100);
    closeAndDestroy();
    open();
    EXPECT_EQ(m_window->preferences().theme, ui::Theme::System);
}

TEST_F(SettingsTest, AFlagsRunDatabaseWinsOverTheRunFolder)
{
    ui::Preferences preferences;
    preferences.runFolder = m_runFolder.path();
    preferences.save();
    QTemporaryDir other;
    ASSERT_TRUE(other.isValid());
    const QString flag = other.filePath(QStringLiteral("flag.sqlite3"));
    m_window = std::make_unique<ui::MainWindow>(flag);
    EXPECT_EQ(m_window->storePath(), flag);
    EXPECT_EQ(m_window->trainPage()->params().storePath, flag.toStdString());
}

TEST_F(SettingsTest, TheTrainFormComesBackAsItWasLeft)
{
    open();
    auto *steps = m_window->findChild<QSpinBox *>(QStringLiteral("steps"));
    auto *method = m_window->findChild<QComboBox *>(QStringLiteral("method"));
    ASSERT_TRUE(steps && method);
    steps->setValue(321);
    method->setCurrentIndex(method->findData(QStringLiteral("lora")));
    closeAndDestroy();
    open();
    EXPECT_EQ(m_window->findChild<QSpinBox *>(QStringLiteral("steps"))->value(), 321);
    EXPECT_EQ(m_window->findChild<QComboBox *>(QStringLiteral("method"))->currentData().toString(), QStringLiteral("lora"));
}

} // namespace
