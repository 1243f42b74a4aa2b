#pragma once
// The Train page: the demo's settings, run controls, progress, the live loss curve and a log.

#include "app/bridge/joboutcome.h"
#include "engine/core/loglevel.h"
#include "engine/plan/plan.h"
#include "engine/train/stepmetrics.h"
#include "engine/train/trainingparams.h"

#include <QList>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace app {
class EngineBridge;
}

namespace ui {

class LossPlot;

class TrainPage : public QWidget {
    Q_OBJECT

public:
    /// bridge outlives the page. storePath: the run database jobs write to (never empty).
    TrainPage(app::EngineBridge &bridge, const QString &storePath, QWidget *parent = nullptr);
    ~TrainPage() override;

    /// The settings as the fields show them.
    engine::train::TrainingParams params() const;
    void setStorePath(const QString &storePath) { m_storePath = storePath; }

    /// Points the corpus field back at the bundled demo corpus (the other settings are kept).
    void useDemoCorpus();
    /// The demo: LoRA of the bundled base model on the Jargon File slice, with a sample prompt.
    void useDemo();
    /// "Train with this plan" from the Plan page: the model folder, loaded onto the plan's devices.
    void usePlan(const QString &modelPath, const engine::plan::Plan &plan);

    LossPlot *lossPlot() const { return m_plot; }
    /// The job's state in a word or two: "Idle", "Running", "Paused", "Stopping", "Succeeded"...
    QString stateText() const { return m_stateText; }

public Q_SLOTS:
    /// Reads and tokenizes the data as a run with these settings would, on the engine thread, and shows
    /// the counts and first rows in the log. False (with the reason in the log) when it cannot start.
    bool previewData();
    /// Starts a job with the fields' settings. Returns false (and says why in the log and the
    /// status bar) when the settings are invalid or a job is running.
    bool start();
    void togglePause();
    void stop();
    /// Appends one line to the log panel.
    void appendLog(engine::LogLevel level, const QString &text);

Q_SIGNALS:
    void stateChanged(const QString &state);
    void progressChanged(qint64 step, qint64 totalSteps, double tokensPerSecond);
    void statusMessage(const QString &text, int timeoutMs);
    /// "Inspect step N" after a non-finite loss stopped a run: the step's folder (its weights) and batch.
    void inspectStepRequested(const QString &modelFolder, const QString &batchFile);

private:
    QWidget *createSettingsBox();
    QWidget *createProgressBox();
    void browseCorpus();
    void onStepMetrics(const QList<engine::train::StepMetrics> &batch);
    void onJobFinished(const app::JobOutcome &outcome);
    void updateControls();
    void setState(const QString &state);
    void loadFields();
    void saveFields() const;

    app::EngineBridge &m_bridge;
    QString m_storePath;
    QString m_stateText;
    qint64 m_totalSteps = 0;

    QLineEdit *m_modelEdit = nullptr;
    QLabel *m_placementLabel = nullptr;
    std::vector<std::pair<std::string, std::string>> m_placement; ///< from the Plan page; empty = one device
    QString m_placementModel;                                    ///< the model folder the placement is for
    QLineEdit *m_corpusEdit = nullptr;
    QPushButton *m_browseButton = nullptr;
    QSpinBox *m_stepsSpin = nullptr;
    QDoubleSpinBox *m_lrSpin = nullptr;
    QSpinBox *m_batchSpin = nullptr;
    QSpinBox *m_seqLenSpin = nullptr;
    QSpinBox *m_threadsSpin = nullptr;
    QComboBox *m_methodCombo = nullptr;
    QSpinBox *m_loraRankSpin = nullptr;
    QLineEdit *m_loraTargetsEdit = nullptr;
    QDoubleSpinBox *m_valFractionSpin = nullptr;
    QSpinBox *m_saveEverySpin = nullptr;
    QLineEdit *m_sampleEdit = nullptr;
    QComboBox *m_precisionCombo = nullptr;
    QCheckBox *m_checkpointingCheck = nullptr;
    QPushButton *m_previewButton = nullptr;
    QPushButton *m_inspectButton = nullptr;
    QString m_nonFiniteStep; ///< the failed run's kept step, for m_inspectButton
    bool m_previewing = false;
    QPushButton *m_startButton = nullptr;
    QPushButton *m_pauseButton = nullptr;
    QPushButton *m_stopButton = nullptr;
    QProgressBar *m_progressBar = nullptr;
    QLabel *m_lossValue = nullptr;
    QLabel *m_smoothedValue = nullptr;
    QLabel *m_lrValue = nullptr;
    QLabel *m_gradNormValue = nullptr;
    QLabel *m_speedValue = nullptr;
    QLabel *m_elapsedValue = nullptr;
    QLabel *m_runValue = nullptr;
    QLabel *m_evalValue = nullptr;
    QLabel *m_memoryValue = nullptr;
    LossPlot *m_plot = nullptr;
    QPlainTextEdit *m_log = nullptr;
};

} // namespace ui
