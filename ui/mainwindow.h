#pragma once
// The main window: a sidebar that switches between the four pages, and a status bar with the
// job's state, step and speed.

#include <QMainWindow>

class QLabel;
class QListWidget;
class QStackedWidget;

namespace app {
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

    /// storePath: the run database (a flag or environment override); empty = the user's setting,
    /// else the XDG default.
    explicit MainWindow(const QString &storePath = {}, QWidget *parent = nullptr);
    ~MainWindow() override;

    QString storePath() const { return m_storePath; }
    app::EngineBridge *bridge() const { return m_bridge; }
    TrainPage *trainPage() const { return m_trainPage; }
    PlanPage *planPage() const { return m_planPage; }
    InspectPage *inspectPage() const { return m_inspectPage; }
    RunsPage *runsPage() const { return m_runsPage; }

    void showPage(Page page);
    Page currentPage() const;

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void createMenus();
    void createStatusBar();
    void onProgress(qint64 step, qint64 totalSteps, double tokensPerSecond);
    void showAbout();

    QString m_storePath;
    app::EngineBridge *m_bridge = nullptr;
    QListWidget *m_navigation = nullptr;
    QStackedWidget *m_pages = nullptr;
    TrainPage *m_trainPage = nullptr;
    PlanPage *m_planPage = nullptr;
    InspectPage *m_inspectPage = nullptr;
    RunsPage *m_runsPage = nullptr;
    QLabel *m_stateLabel = nullptr;
    QLabel *m_stepLabel = nullptr;
    QLabel *m_speedLabel = nullptr;
};

} // namespace ui
