#include "ui/mainwindow.h"

#include "bridge/enginebridge.h"
#include "bridge/steprate.h"
#include "engine/core/blascheck.h"
#include "engine/core/cpufeatures.h"
#include "engine/core/format.h"
#include "engine/core/paths.h"
#include "engine/core/settings.h"
#include "engine/core/threads.h"
#include "ui/pages/inspectpage.h"
#include "ui/pages/planpage.h"
#include "ui/pages/runspage.h"
#include "ui/pages/trainpage.h"
#include "ui/pages/trainsettingsform.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

namespace ui {
namespace {

/// The platform's key for a standard action, or `fallback` where the platform has none (offscreen, some
/// desktops), so that Ctrl+Q, Ctrl+O and F5 work everywhere.
QKeySequence standardKey(QKeySequence::StandardKey key, const QKeySequence &fallback)
{
    const QKeySequence sequence(key);
    return sequence.isEmpty() ? fallback : sequence;
}

/// The user's setting (settings.json) or the XDG default, and when the file could not be read, why.
QString settingsStorePath(QString *warning)
{
    try {
        return QString::fromStdString(engine::loadSettings().effectiveStorePath().string());
    } catch (const std::exception &e) {
        *warning = QString::fromStdString(e.what());
        return QString::fromStdString(engine::defaultStorePath().string());
    }
}

int settingsThreads()
{
    try {
        return std::min(engine::loadSettings().effectiveThreads(), engine::hardwareThreads());
    } catch (const std::exception &) {
        return engine::hardwareThreads();
    }
}

} // namespace

MainWindow::MainWindow(const QString &storePath, QWidget *parent) : MainWindow(storePath, nullptr, parent) {}

MainWindow::MainWindow(const QString &storePath, bridge::EngineBridge *bridge, QWidget *parent) : QMainWindow(parent)
{
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(QStringLiteral("tunebench"));
    setAcceptDrops(true);
    m_storeOverride = storePath;
    Preferences defaults;
    defaults.threads = settingsThreads();
    m_preferences = Preferences::load(defaults);
    applyTheme(m_preferences.theme);
    m_storePath = !m_storeOverride.isEmpty()          ? m_storeOverride
                  : !m_preferences.storePath().isEmpty() ? m_preferences.storePath()
                                                         : settingsStorePath(&m_settingsWarning);

    m_bridge = bridge ? bridge : new bridge::EngineBridge(this);
    m_bridge->setParent(this);

    createPages();
    createMenus();
    createStatusBar();
    connectPages();
    m_trainPage->setThreads(m_preferences.threads);
    restoreSession();

    if (!m_settingsWarning.isEmpty()) {
        m_trainPage->appendLog(engine::LogLevel::Warning, tr("Settings ignored: %1").arg(m_settingsWarning));
        statusBar()->showMessage(tr("Settings ignored: %1").arg(m_settingsWarning), 15000);
    }
}

MainWindow::~MainWindow() = default;

void MainWindow::createPages()
{
    m_navigation = new QListWidget(this);
    m_navigation->setObjectName(QStringLiteral("navigation"));
    m_navigation->setSelectionMode(QAbstractItemView::SingleSelection);
    m_navigation->setFrameShape(QFrame::NoFrame);
    m_navigation->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_navigation->setSpacing(2);
    QFont navFont = m_navigation->font();
    navFont.setPointSizeF(navFont.pointSizeF() * 1.1);
    m_navigation->setFont(navFont);
    const int itemHeight = QFontMetrics(navFont).height() * 2;
    for (const QString &name : {tr("Plan"), tr("Train"), tr("Inspect"), tr("Runs")}) {
        auto *item = new QListWidgetItem(name, m_navigation);
        item->setSizeHint(QSize(0, itemHeight));
    }
    m_navigation->setFixedWidth(QFontMetrics(navFont).horizontalAdvance(tr("Inspect")) + 64);
    // A side panel in the window's colour (like a file manager's places), not a white list.
    m_navigation->viewport()->setBackgroundRole(QPalette::Window);

    m_pages = new QStackedWidget(this);
    m_pages->setObjectName(QStringLiteral("pages"));
    m_planPage = new PlanPage(this);
    m_planPage->setObjectName(QStringLiteral("planPage"));
    m_trainPage = new TrainPage(*m_bridge, m_storePath, this);
    m_trainPage->setObjectName(QStringLiteral("trainPage"));
    m_inspectPage = new InspectPage(*m_bridge, this);
    m_inspectPage->setObjectName(QStringLiteral("inspectPage"));
    m_runsPage = new RunsPage(m_storePath, this);
    m_runsPage->setObjectName(QStringLiteral("runsPage"));
    m_pages->addWidget(m_planPage);
    m_pages->addWidget(m_trainPage);
    m_pages->addWidget(m_inspectPage);
    m_pages->addWidget(m_runsPage);
    connect(m_navigation, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);

    auto *central = new QWidget(this);
    auto *layout = new QHBoxLayout(central);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    auto *sidebar = new QWidget(central);
    auto *sidebarLayout = new QVBoxLayout(sidebar);
    sidebarLayout->setContentsMargins(6, 6, 6, 6);
    sidebarLayout->addWidget(m_navigation);
    layout->addWidget(sidebar);
    auto *separator = new QFrame(central);
    separator->setFrameShape(QFrame::VLine);
    separator->setFrameShadow(QFrame::Sunken);
    layout->addWidget(separator);
    layout->addWidget(m_pages, 1);
    setCentralWidget(central);
}

void MainWindow::createMenus()
{
    auto named = [](QAction *action, const char *name) {
        action->setObjectName(QString::fromLatin1(name));
        return action;
    };

    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *open = named(file->addAction(tr("&Open Model Folder…"), this, &MainWindow::chooseModel), "openModelAction");
    const QKeySequence openKey = standardKey(QKeySequence::Open, QKeySequence(Qt::CTRL | Qt::Key_O));
    open->setShortcut(openKey);
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::updateRecentMenu);
    updateRecentMenu();
    file->addSeparator();
    QAction *preferences = named(file->addAction(tr("&Preferences…"), this, &MainWindow::showPreferences), "preferencesAction");
    preferences->setShortcut(standardKey(QKeySequence::Preferences, QKeySequence(Qt::CTRL | Qt::Key_Comma)));
    preferences->setMenuRole(QAction::PreferencesRole);
    file->addSeparator();
    QAction *quit = named(file->addAction(tr("&Quit"), this, &QWidget::close), "quitAction");
    quit->setShortcut(standardKey(QKeySequence::Quit, QKeySequence(Qt::CTRL | Qt::Key_Q)));
    quit->setMenuRole(QAction::QuitRole);

    QMenu *view = menuBar()->addMenu(tr("&View"));
    const QStringList names = {tr("&Plan"), tr("&Train"), tr("&Inspect"), tr("&Runs")};
    for (int i = 0; i < names.size(); ++i) {
        QAction *action = view->addAction(names[i], this, [this, i] { showPage(static_cast<Page>(i)); });
        action->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    }
    view->addSeparator();
    QAction *refresh = named(view->addAction(tr("Re&fresh Runs"), m_runsPage, &RunsPage::refresh), "refreshAction");
    const QKeySequence refreshKey = standardKey(QKeySequence::Refresh, QKeySequence(Qt::Key_F5));
    refresh->setShortcut(refreshKey);
    QMenu *theme = view->addMenu(tr("T&heme"));
    m_themeGroup = new QActionGroup(this);
    for (const auto &[label, value] : {std::pair{tr("&System"), Theme::System}, std::pair{tr("&Light"), Theme::Light},
                                       std::pair{tr("&Dark"), Theme::Dark}}) {
        QAction *action = theme->addAction(label);
        action->setObjectName(QStringLiteral("theme%1Action").arg(themeName(value)));
        action->setCheckable(true);
        action->setChecked(value == m_preferences.theme);
        action->setActionGroup(m_themeGroup);
        connect(action, &QAction::triggered, this, [this, value = value] {
            Preferences p = m_preferences;
            p.theme = value;
            setPreferences(p);
        });
    }
    // The Plan page's Open button and the Runs page's Refresh button carry the same keys while they show:
    // the window's actions give way there, so that one key never means two things.
    connect(m_pages, &QStackedWidget::currentChanged, this, [open, openKey, refresh, refreshKey](int index) {
        open->setShortcut(index == static_cast<int>(Page::Plan) ? QKeySequence() : openKey);
        refresh->setShortcut(index == static_cast<int>(Page::Runs) ? QKeySequence() : refreshKey);
    });

    QMenu *train = menuBar()->addMenu(tr("&Train"));
    m_startAction = named(train->addAction(tr("&Start Training"), this, [this] {
        showPage(Page::Train);
        m_trainPage->start();
    }), "startAction");
    m_startAction->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
    m_pauseAction = named(train->addAction(tr("&Pause or Resume"), m_trainPage, &TrainPage::togglePause), "pauseAction");
    m_pauseAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
    m_stopAction = named(train->addAction(tr("S&top"), m_trainPage, &TrainPage::stop), "stopAction");
    m_stopAction->setShortcuts({QKeySequence(Qt::Key_Escape), QKeySequence(Qt::CTRL | Qt::Key_Period)});
    train->addSeparator();
    named(train->addAction(tr("Pre&view Data"), this, [this] {
        showPage(Page::Train);
        m_trainPage->previewData();
    }), "previewAction");
    QAction *copy = named(train->addAction(tr("&Copy as CLI Command"), m_trainPage, &TrainPage::copyCommandLine), "copyCliAction");
    copy->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    QAction *about = named(help->addAction(tr("&About tunebench"), this, &MainWindow::showAbout), "aboutAction");
    about->setMenuRole(QAction::AboutRole);
}

void MainWindow::createStatusBar()
{
    m_stateLabel = new QLabel(tr("Idle"), this);
    m_stateLabel->setObjectName(QStringLiteral("stateLabel"));
    m_stepLabel = new QLabel(this);
    m_stepLabel->setObjectName(QStringLiteral("stepLabel"));
    m_speedLabel = new QLabel(this);
    m_speedLabel->setObjectName(QStringLiteral("speedLabel"));
    m_etaLabel = new QLabel(this);
    m_etaLabel->setObjectName(QStringLiteral("etaLabel"));
    m_etaLabel->setToolTip(tr("Time left at the step rate of the last 20 seconds"));
    m_jobProgress = new QProgressBar(this);
    m_jobProgress->setObjectName(QStringLiteral("jobProgress"));
    m_jobProgress->setMaximumWidth(180);
    m_jobProgress->setMaximumHeight(QFontMetrics(font()).height() + 4);
    m_jobProgress->setTextVisible(false);
    m_jobProgress->hide();
    for (QLabel *label : {m_stepLabel, m_speedLabel, m_etaLabel, m_stateLabel})
        label->setContentsMargins(8, 0, 8, 0);
    statusBar()->addPermanentWidget(m_jobProgress);
    statusBar()->addPermanentWidget(m_stepLabel);
    statusBar()->addPermanentWidget(m_etaLabel);
    statusBar()->addPermanentWidget(m_speedLabel);
    statusBar()->addPermanentWidget(m_stateLabel);
    onBusyChanged(false);
}

void MainWindow::connectPages()
{
    connect(m_trainPage, &TrainPage::stateChanged, m_stateLabel, &QLabel::setText);
    connect(m_trainPage, &TrainPage::progressChanged, this, &MainWindow::onProgress);
    connect(m_trainPage, &TrainPage::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_bridge, &bridge::EngineBridge::busyChanged, this, &MainWindow::onBusyChanged);
    connect(m_bridge, &bridge::EngineBridge::pausedChanged, this, [this] { onBusyChanged(m_bridge->isBusy()); });
    connect(m_planPage, &PlanPage::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_inspectPage, &InspectPage::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_planPage, &PlanPage::trainWithPlanRequested, this,
            [this](const QString &modelPath, const engine::plan::Plan &plan) {
                m_trainPage->usePlan(modelPath, plan);
                showPage(Page::Train);
            });
    connect(m_trainPage, &TrainPage::inspectStepRequested, this, [this](const QString &folder, const QString &batch) {
        bridge::InspectRequest request;
        request.kind = bridge::InspectRequest::Kind::ModelFolder;
        request.path = folder;
        request.inputs = batch;
        showPage(Page::Inspect);
        m_inspectPage->inspect(request);
    });
    connect(m_runsPage, &RunsPage::statusMessage, this, [this](const QString &text) { statusBar()->showMessage(text, 15000); });
    connect(m_runsPage, &RunsPage::cloneSettingsRequested, this, [this](const QString &configJson) {
        if (m_bridge->isBusy()) {
            statusBar()->showMessage(tr("A job is running; clone the run's settings once it has finished"), 8000);
            return;
        }
        if (m_trainPage->applyRunConfig(configJson))
            showPage(Page::Train);
    });
    connect(m_runsPage, &RunsPage::resumeRequested, this, [this](qint64 runId, qint64 totalSteps) {
        if (m_trainPage->resume(runId, totalSteps))
            showPage(Page::Train);
    });
    connect(m_bridge, &bridge::EngineBridge::jobFinished, m_runsPage, &RunsPage::refresh);
    connect(m_bridge, &bridge::EngineBridge::runCreated, m_runsPage, &RunsPage::refresh);
}

void MainWindow::restoreSession()
{
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("MainWindow/geometry")).toByteArray()))
        resize(1200, 800);
    restoreState(settings.value(QStringLiteral("MainWindow/state")).toByteArray());
    const int page = settings.value(QStringLiteral("MainWindow/page"), static_cast<int>(Page::Train)).toInt();
    showPage(page >= 0 && page <= static_cast<int>(Page::Runs) ? static_cast<Page>(page) : Page::Train);
}

void MainWindow::onProgress(qint64 step, qint64 totalSteps, double tokensPerSecond, double etaSeconds)
{
    m_stepLabel->setText(tr("Step %1 / %2").arg(step).arg(totalSteps));
    m_speedLabel->setText(step > 0 ? tr("%1 tokens/s").arg(QLocale().toString(tokensPerSecond, 'f', 0)) : QString());
    m_etaLabel->setText(etaSeconds >= 0 ? tr("%1 left").arg(QString::fromStdString(engine::formatDuration(etaSeconds))) : QString());
    m_jobProgress->setRange(0, static_cast<int>(std::max<qint64>(totalSteps, 1)));
    m_jobProgress->setValue(static_cast<int>(std::clamp<qint64>(step, 0, std::max<qint64>(totalSteps, 1))));
    m_jobProgress->setToolTip(tr("Step %1 of %2").arg(step).arg(totalSteps));
}

void MainWindow::onBusyChanged(bool busy)
{
    m_stopAction->setEnabled(busy && !m_bridge->isCancelling());
    m_pauseAction->setEnabled(busy);
    if (busy) {
        if (!m_jobProgress->isVisible()) {
            m_jobProgress->setRange(0, 0); // busy until the job reports its first step
            m_etaLabel->clear();
        }
        m_jobProgress->show();
    } else {
        m_jobProgress->hide();
        m_etaLabel->clear();
    }
}

void MainWindow::updateRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = m_trainPage->form()->recentModels();
    for (const QString &path : recent)
        m_recentMenu->addAction(QDir::toNativeSeparators(path), this, [this, path] { openModel(path); });
    if (recent.isEmpty())
        m_recentMenu->addAction(tr("No model folders yet"))->setEnabled(false);
}

void MainWindow::chooseModel()
{
    QFileDialog dialog(this, tr("Open a Model Folder"), QDir::homePath());
    dialog.setObjectName(QStringLiteral("openModelDialog"));
    dialog.setFileMode(QFileDialog::Directory);
    dialog.setOption(QFileDialog::ShowDirsOnly);
    if (dialog.exec() == QDialog::Accepted && !dialog.selectedFiles().isEmpty())
        openModel(dialog.selectedFiles().constFirst());
}

void MainWindow::openModel(const QString &folder)
{
    if (currentPage() == Page::Plan) {
        m_planPage->openModel(folder);
        m_trainPage->form()->addRecentModel(folder);
        return;
    }
    if (m_bridge->isBusy()) {
        statusBar()->showMessage(tr("A job is running; open the model once it has finished"), 8000);
        return;
    }
    m_trainPage->setModelPath(folder);
    showPage(Page::Train);
}

void MainWindow::dragEnterEvent(QDragEnterEvent *event)
{
    if (!TrainPage::modelFolderOf(event->mimeData()).isEmpty())
        event->acceptProposedAction();
    else
        event->ignore();
}

void MainWindow::dropEvent(QDropEvent *event)
{
    // Drops the pages do not take themselves (on the sidebar, the status bar, the Runs page...).
    const QString folder = TrainPage::modelFolderOf(event->mimeData());
    if (folder.isEmpty())
        return;
    event->acceptProposedAction();
    openModel(folder);
}

void MainWindow::showPreferences()
{
    auto *dialog = new PreferencesDialog(m_preferences, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] { setPreferences(dialog->preferences()); });
    dialog->open();
}

void MainWindow::setPreferences(const Preferences &preferences)
{
    const Preferences before = m_preferences;
    m_preferences = preferences;
    m_preferences.save();
    if (preferences.threads != before.threads)
        m_trainPage->setThreads(preferences.threads);
    if (preferences.theme != before.theme || currentTheme() != preferences.theme)
        applyTheme(preferences.theme);
    for (QAction *action : m_themeGroup->actions())
        action->setChecked(action->objectName() == QStringLiteral("theme%1Action").arg(themeName(preferences.theme)));
    if (preferences.runFolder != before.runFolder)
        applyStorePath();
}

void MainWindow::applyStorePath()
{
    QString warning;
    const QString path = !m_storeOverride.isEmpty()          ? m_storeOverride
                         : !m_preferences.storePath().isEmpty() ? m_preferences.storePath()
                                                                : settingsStorePath(&warning);
    if (!m_storeOverride.isEmpty())
        statusBar()->showMessage(tr("The run database is given on the command line (%1); the run folder applies next "
                                    "time without it").arg(QDir::toNativeSeparators(m_storeOverride)), 15000);
    if (path == m_storePath)
        return;
    m_storePath = path;
    m_trainPage->setStorePath(path);
    m_runsPage->setStorePath(path);
    statusBar()->showMessage(tr("Runs are recorded in %1").arg(QDir::toNativeSeparators(path)), 8000);
}

void MainWindow::showPage(Page page)
{
    m_navigation->setCurrentRow(static_cast<int>(page));
}

MainWindow::Page MainWindow::currentPage() const { return static_cast<Page>(m_pages->currentIndex()); }

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_bridge->isBusy()) {
        const auto answer = QMessageBox::question(this, tr("Stop the Job?"),
                                                  tr("A job is running. Stop it and quit? A training run is kept as cancelled."),
                                                  QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) {
            event->ignore();
            return;
        }
        m_bridge->cancel();
    }
    QSettings settings;
    settings.setValue(QStringLiteral("MainWindow/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("MainWindow/state"), saveState());
    settings.setValue(QStringLiteral("MainWindow/page"), static_cast<int>(currentPage()));
    event->accept();
}

void MainWindow::showAbout()
{
    // The same facts as `tunebench doctor` (without the matmul measurement, which takes a second). The
    // libtorch and BLAS facts come from the engine module, loaded in the background after start-up.
    const engine::CpuFeatures cpu = engine::cpuFeatures();
    QString facts;
    if (m_bridge->engineReady())
        facts = QString::fromStdString(m_bridge->engineFacts().system);
    else if (!m_bridge->engineError().isEmpty())
        facts = tr("libtorch  not loaded: %1\n").arg(m_bridge->engineError());
    else
        facts = tr("libtorch  still loading (open this dialog again in a moment)\n");
    facts += tr("Qt        %1 (built with %2)\n").arg(QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR));
    facts += tr("cpu       %1 (%2)\n").arg(QString::fromStdString(cpu.model), QString::fromStdString(cpu.vector()));
    const engine::BlasInfo &blas = m_bridge->engineFacts().blas;
    if (blas.openblas) {
        facts += tr("openblas  kernels %1%2\n")
                     .arg(QString::fromStdString(blas.coreName),
                          blas.coreTypeEnv.empty() ? QString() : tr(" (OPENBLAS_CORETYPE=%1)").arg(QString::fromStdString(blas.coreTypeEnv)));
    }
    QString advice;
    if (!blas.suggestedCore.empty()) {
        advice = tr("<p><b>OpenBLAS runs its %1 kernels on this %2 CPU.</b> Its %3 kernels are made for it and are "
                    "usually several times faster. Measure and check them with <code>tunebench doctor --try-blas-core %3</code>; "
                    "keep them with <code>tunebench doctor --use-blas-core %3</code>.</p>")
                     .arg(QString::fromStdString(blas.coreName), QString::fromStdString(cpu.vector()),
                          QString::fromStdString(blas.suggestedCore));
    }
    auto *box = new QMessageBox(QMessageBox::Information, tr("About tunebench"),
                                tr("<h3>tunebench %1</h3><p>A workbench for fine-tuning and debugging transformer "
                                   "language models.</p><p>Runs are recorded in <code>%2</code>.</p><pre>%3</pre>%4")
                                    .arg(QStringLiteral(TUNEBENCH_VERSION), m_storePath.toHtmlEscaped(), facts.toHtmlEscaped(), advice),
                                QMessageBox::Ok, this);
    box->setObjectName(QStringLiteral("aboutDialog"));
    box->setTextFormat(Qt::RichText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

} // namespace ui
