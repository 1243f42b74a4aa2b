#include "ui/mainwindow.h"

#include "app/bridge/enginebridge.h"
#include "engine/core/blascheck.h"
#include "engine/core/paths.h"
#include "engine/core/settings.h"
#include "engine/core/systeminfo.h"
#include "ui/pages/inspectpage.h"
#include "ui/pages/planpage.h"
#include "ui/pages/runspage.h"
#include "ui/pages/trainpage.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QScreen>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QVBoxLayout>

#include <exception>

namespace ui {
namespace {

/// The store path in effect and, when the settings file could not be read, why.
QString resolveStorePath(const QString &override, QString *warning)
{
    if (!override.isEmpty())
        return override;
    try {
        return QString::fromStdString(engine::loadSettings().effectiveStorePath().string());
    } catch (const std::exception &e) {
        *warning = QString::fromStdString(e.what());
        return QString::fromStdString(engine::defaultStorePath().string());
    }
}

} // namespace

MainWindow::MainWindow(const QString &storePath, QWidget *parent) : QMainWindow(parent)
{
    setObjectName(QStringLiteral("mainWindow"));
    setWindowTitle(QStringLiteral("tunebench"));
    QString settingsWarning;
    m_storePath = resolveStorePath(storePath, &settingsWarning);

    m_bridge = new app::EngineBridge(this);

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

    createMenus();
    createStatusBar();

    connect(m_trainPage, &TrainPage::stateChanged, m_stateLabel, &QLabel::setText);
    connect(m_trainPage, &TrainPage::progressChanged, this, &MainWindow::onProgress);
    connect(m_trainPage, &TrainPage::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_planPage, &PlanPage::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_inspectPage, &InspectPage::statusMessage, statusBar(), &QStatusBar::showMessage);
    connect(m_planPage, &PlanPage::trainWithPlanRequested, this,
            [this](const QString &modelPath, const engine::plan::Plan &plan) {
                m_trainPage->usePlan(modelPath, plan);
                showPage(Page::Train);
            });
    connect(m_trainPage, &TrainPage::inspectStepRequested, this, [this](const QString &folder, const QString &batch) {
        app::InspectRequest request;
        request.kind = app::InspectRequest::Kind::ModelFolder;
        request.path = folder;
        request.inputs = batch;
        showPage(Page::Inspect);
        m_inspectPage->inspect(request);
    });
    connect(m_runsPage, &RunsPage::statusMessage, this, [this](const QString &text) { statusBar()->showMessage(text, 15000); });
    connect(m_bridge, &app::EngineBridge::jobFinished, m_runsPage, &RunsPage::refresh);
    connect(m_bridge, &app::EngineBridge::runCreated, m_runsPage, &RunsPage::refresh);

    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("MainWindow/geometry")).toByteArray()))
        resize(1200, 800);
    restoreState(settings.value(QStringLiteral("MainWindow/state")).toByteArray());
    const int page = settings.value(QStringLiteral("MainWindow/page"), static_cast<int>(Page::Train)).toInt();
    showPage(page >= 0 && page <= static_cast<int>(Page::Runs) ? static_cast<Page>(page) : Page::Train);

    if (!settingsWarning.isEmpty()) {
        m_trainPage->appendLog(engine::LogLevel::Warning, tr("Settings ignored: %1").arg(settingsWarning));
        statusBar()->showMessage(tr("Settings ignored: %1").arg(settingsWarning), 15000);
    }
}

MainWindow::~MainWindow() = default;

void MainWindow::createMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);

    QMenu *view = menuBar()->addMenu(tr("&View"));
    const QStringList names = {tr("&Plan"), tr("&Train"), tr("&Inspect"), tr("&Runs")};
    for (int i = 0; i < names.size(); ++i) {
        QAction *action = view->addAction(names[i], this, [this, i] { showPage(static_cast<Page>(i)); });
        action->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    }

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    QAction *about = help->addAction(tr("&About tunebench"), this, &MainWindow::showAbout);
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
    for (QLabel *label : {m_stepLabel, m_speedLabel, m_stateLabel})
        label->setContentsMargins(8, 0, 8, 0);
    statusBar()->addPermanentWidget(m_stepLabel);
    statusBar()->addPermanentWidget(m_speedLabel);
    statusBar()->addPermanentWidget(m_stateLabel);
}

void MainWindow::onProgress(qint64 step, qint64 totalSteps, double tokensPerSecond)
{
    m_stepLabel->setText(tr("Step %1 / %2").arg(step).arg(totalSteps));
    m_speedLabel->setText(step > 0 ? tr("%1 tokens/s").arg(QLocale().toString(tokensPerSecond, 'f', 0)) : QString());
}

void MainWindow::showPage(Page page)
{
    m_navigation->setCurrentRow(static_cast<int>(page));
}

MainWindow::Page MainWindow::currentPage() const { return static_cast<Page>(m_pages->currentIndex()); }

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_bridge->isBusy()) {
        const auto answer = QMessageBox::question(this, tr("Stop Training?"),
                                                  tr("A training job is running. Stop it and quit? The run is kept as cancelled."),
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
    // The same facts as `tunebench doctor` (without the matmul measurement, which takes a second).
    const engine::CpuFeatures cpu = engine::cpuFeatures();
    const engine::BlasInfo blas = engine::blasInfo(cpu);
    QString facts = QString::fromStdString(engine::describeSystem(engine::systemInfo()));
    facts += tr("cpu       %1 (%2)\n").arg(QString::fromStdString(cpu.model), QString::fromStdString(cpu.vector()));
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
    QMessageBox::about(this, tr("About tunebench"),
                       tr("<h3>tunebench %1</h3><p>A workbench for fine-tuning and debugging transformer "
                          "language models.</p><p>Runs are recorded in <code>%2</code>.</p><pre>%3</pre>%4")
                           .arg(QStringLiteral(TUNEBENCH_VERSION), m_storePath.toHtmlEscaped(), facts.toHtmlEscaped(), advice));
}

} // namespace ui
