#pragma once
// The main window: a sidebar that switches between the four pages, menus with the standard
// shortcuts, a status bar with the current job's progress and time left, the preferences (threads,
// run folder, theme) and the window's geometry kept between sessions, and drops of a model folder.

#include "ui/preferencesdialog.h"

#include <QMainWindow>

class QAction;
class QActionGroup;
class QLabel;
class QListWidget;
class QMenu;
class QProgressBar;
class QStackedWidget;

namespace bridge {
class EngineBridge;
}

namespace ui {

class InspectPage;
class PlanPage;
class RunsPage;
class TrainPage;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    enum class Page { Plan, Train, Inspect, Runs };

    /// storePath: the run database (a flag or environment override); empty = the run folder of the
    /// preferences, else the user's setting, else the XDG default.
    explicit MainWindow(const QString &storePath = {}, QWidget *parent = nullptr);
    /// The same with a bridge of the caller's (tests give one with fake jobs); the window takes it over.
    MainWindow(const QString &storePath, bridge::EngineBridge *bridge, QWidget *parent = nullptr);
    ~MainWindow() override;

    QString storePath() const { return m_storePath; }
    bridge::EngineBridge *bridge() const { return m_bridge; }
    TrainPage *trainPage() const { return m_trainPage; }
    PlanPage *planPage() const { return m_planPage; }
    InspectPage *inspectPage() const { return m_inspectPage; }
    RunsPage *runsPage() const { return m_runsPage; }

    void showPage(Page page);
    Page currentPage() const;

    Preferences preferences() const { return m_preferences; }
    /// Applies and keeps new preferences (threads on the Train page, the run folder's database unless a
    /// flag overrides it, the theme).
    void setPreferences(const Preferences &preferences);
    /// Opens a model folder: on the Plan page when it is shown, else on the Train page.
    void openModel(const QString &folder);

public Q_SLOTS:
    /// The window-modal Preferences dialog (applied when accepted).
    void showPreferences();
    void showAbout();
    /// A folder dialog for the model (Ctrl+O).
    void chooseModel();

protected:
    void closeEvent(QCloseEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void createPages();
    void createMenus();
    void createStatusBar();
    void connectPages();
    void restoreSession();
    void onProgress(qint64 step, qint64 totalSteps, double tokensPerSecond, double etaSeconds);
    void onBusyChanged(bool busy);
    void updateRecentMenu();
    void applyStorePath();

    QString m_storeOverride; ///< from a flag: wins over the preferences
    QString m_storePath;
    QString m_settingsWarning;
    Preferences m_preferences;
    bridge::EngineBridge *m_bridge = nullptr;
    QListWidget *m_navigation = nullptr;
    QStackedWidget *m_pages = nullptr;
    TrainPage *m_trainPage = nullptr;
    PlanPage *m_planPage = nullptr;
    InspectPage *m_inspectPage = nullptr;
    RunsPage *m_runsPage = nullptr;
    QMenu *m_recentMenu = nullptr;
    QActionGroup *m_themeGroup = nullptr;
    QAction *m_startAction = nullptr;
    QAction *m_pauseAction = nullptr;
    QAction *m_stopAction = nullptr;
    QLabel *m_stateLabel = nullptr;
    QLabel *m_stepLabel = nullptr;
    QLabel *m_speedLabel = nullptr;
    QLabel *m_etaLabel = nullptr;
    QProgressBar *m_jobProgress = nullptr;
};

} // namespace ui
