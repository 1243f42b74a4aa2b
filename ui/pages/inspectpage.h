#pragma once
// The Inspect page: record one step (a built-in scenario, a TorchScript module with its inputs, or a
// model folder with a text file) on the engine thread and show the answer first: which write broke
// backward (op, module, versions) or where NaN began, and how to fix it; then, on demand, the version
// timeline of every saved or written storage, the autograd graph with the failing node, the op trace
// (filter: in-place only, module, tensor) and the gradient-flow table. "Verify fix" reruns a built-in
// scenario with its fix and shows backward succeeding.

#include "bridge/inspectrequest.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QTableWidget;

namespace bridge {
class EngineBridge;
}

namespace ui {

class AutogradGraphView;
class VersionTimelineWidget;

class InspectPage : public QWidget {
    Q_OBJECT

public:
    /// bridge outlives the page.
    explicit InspectPage(bridge::EngineBridge &bridge, QWidget *parent = nullptr);
    ~InspectPage() override;

    /// Starts an inspection on the engine thread; false (and a message) when a job is running.
    bool inspect(const bridge::InspectRequest &request);
    /// Inspects the built-in scenario `name`.
    bool inspectScenario(const QString &name);
    /// Reads a trace the Python recorder wrote (`tunebench record`) and shows its diagnosis.
    bool openTrace(const QString &path);
    /// Shows a report (also used by the training guard's hand-over).
    void showReport(const bridge::InspectionResult &report);

    const bridge::InspectionResult &report() const { return m_report; }
    QString diagnosisText() const;
    VersionTimelineWidget *timeline() const { return m_timeline; }
    AutogradGraphView *graphView() const { return m_graph; }
    QTableWidget *opTable() const { return m_ops; }
    QLabel *headline() const { return m_headline; }

Q_SIGNALS:
    void statusMessage(const QString &text, int timeoutMs);
    /// An inspection finished and its report is shown.
    void reportShown();

protected:
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    QWidget *createSourceBar();
    void runSelectedScenario();
    void verifyFix();
    void inspectTorchScriptDialog();
    void openTraceDialog();
    void fillOps();
    void fillGradients();
    void selectOp(int opIndex);
    void onInspectionFinished(const bridge::InspectionResult &report);

    bridge::EngineBridge &m_bridge;
    bridge::InspectionResult m_report;
    QString m_lastScenario;
    bool m_waiting = false;

    QComboBox *m_scenarioCombo = nullptr;
    QPushButton *m_runButton = nullptr;
    QPushButton *m_fixButton = nullptr;
    QPushButton *m_scriptButton = nullptr;
    QPushButton *m_traceButton = nullptr;
    QLabel *m_headline = nullptr;
    QLabel *m_detail = nullptr;
    QTabWidget *m_tabs = nullptr;
    VersionTimelineWidget *m_timeline = nullptr;
    AutogradGraphView *m_graph = nullptr;
    QTableWidget *m_ops = nullptr;
    QCheckBox *m_inplaceOnly = nullptr;
    QLineEdit *m_moduleFilter = nullptr;
    QLineEdit *m_tensorFilter = nullptr;
    QTableWidget *m_gradients = nullptr;
    QPlainTextEdit *m_pytorchError = nullptr;
};

} // namespace ui
