#pragma once
// The Train page: the settings form (every trainer setting, presets, validation as you type), run
// controls, "copy as CLI command", progress, the live loss curve, a log, and after a run a box that
// generates text with the trained model. A model folder dropped on the page becomes the model.

#include "bridge/joboutcome.h"
#include "bridge/steprate.h"
#include "engine/core/loglevel.h"
#include "engine/plan/plan.h"
#include "engine/train/stepmetrics.h"
#include "engine/train/trainingparams.h"

#include <QList>
#include <QWidget>

class QLabel;
class QLineEdit;
class QMimeData;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace bridge {
class EngineBridge;
}

namespace ui {

class MetricPlots;
class TrainSettingsForm;

class TrainPage : public QWidget {
    Q_OBJECT

public:
    /// bridge outlives the page. storePath: the run database jobs write to (never empty).
    TrainPage(bridge::EngineBridge &bridge, const QString &storePath, QWidget *parent = nullptr);
    ~TrainPage() override;

    /// The settings as the fields show them, with the page's run database.
    engine::train::TrainingParams params() const;
    void setStorePath(const QString &storePath) { m_storePath = storePath; }
    QString storePath() const { return m_storePath; }
    TrainSettingsForm *form() const { return m_form; }

    /// Points the corpus field back at the bundled demo corpus (the other settings are kept).
    void useDemoCorpus();
    /// The demo: LoRA of the bundled base model on the Jargon File slice, with a sample prompt.
    void useDemo();
    /// "Train with this plan" from the Plan page: the model folder, loaded onto the plan's devices.
    void usePlan(const QString &modelPath, const engine::plan::Plan &plan);
    /// "Clone settings" of a stored run: fills the form from the run's config JSON (what the trainer
    /// stored with createRun). The run name and output folder are left as they are. False, with the
    /// reason in the log and the status bar, when the JSON cannot be read.
    bool applyRunConfig(const QString &configJson);
    /// Sets the model folder (and the recent list), as a drop or the Open dialog does.
    void setModelPath(const QString &path);
    void setThreads(int threads);

    /// `tunebench train ...` with the current settings, as words ("tunebench" first) and as one
    /// shell line (the clipboard's text).
    QStringList commandLineWords() const;
    QString commandLine() const;

    /// The model folder a drag carries (a local folder, or a config.json's folder), else empty.
    static QString modelFolderOf(const QMimeData *mime);

    /// The current (or last) run's curves: loss with eval loss, learning rate, gradient norm, tokens/s,
    /// memory, live.
    MetricPlots *plots() const { return m_plot; }
    /// The run id the plots give the current run (the store's id is not known when it starts).
    static constexpr qint64 kLiveRun = 0;
    /// How many steps' losses the plots hold for the current run.
    int plottedSteps() const;
    /// The job's state in a word or two: "Idle", "Running", "Paused", "Stopping", "Succeeded"...
    QString stateText() const { return m_stateText; }
    /// Whether the form's settings are valid (Start is enabled when idle and valid).
    bool settingsValid() const;

public Q_SLOTS:
    /// Reads and tokenizes the data as a run with these settings would, on the engine thread, and shows
    /// the counts and first rows in the log. False (with the reason in the log) when it cannot start.
    bool previewData();
    /// Starts a job with the fields' settings. Returns false (and says why in the log and the
    /// status bar) when the settings are invalid or a job is running.
    bool start();
    /// Continues stored run `runId` of this page's run database from its newest checkpoint, with its
    /// stored settings (`tunebench train --resume`), on the engine thread like a new run; `totalSteps` > 0
    /// trains it to that many steps (Continue Training…). False (and why, in the log and the status bar)
    /// while a job runs.
    bool resume(qint64 runId, qint64 totalSteps = 0);
    void togglePause();
    void stop();
    /// Puts commandLine() on the clipboard.
    void copyCommandLine();
    /// Generates text after the prompt with the last run's model, on the engine thread. False (with
    /// the reason under the box) when there is no trained model, no prompt or a job runs.
    bool generate();
    /// Appends one line to the log panel.
    void appendLog(engine::LogLevel level, const QString &text);

Q_SIGNALS:
    void stateChanged(const QString &state);
    /// etaSeconds: the time left at the recent step rate; negative when not known yet.
    void progressChanged(qint64 step, qint64 totalSteps, double tokensPerSecond, double etaSeconds);
    void statusMessage(const QString &text, int timeoutMs);
    /// "Inspect step N" after a non-finite loss stopped a run: the step's folder (its weights) and batch.
    void inspectStepRequested(const QString &modelFolder, const QString &batchFile);

protected:
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    enum class Job { None, Training, Preview, Generation };

    QWidget *createProgressBox();
    QWidget *createGenerateBox();
    /// The progress, plot and log of a training job starting with `p` (a new run, or a resume's settings).
    void beginTrainingView(const engine::train::TrainingParams &p, const QString &what);
    void onStepMetrics(const QList<engine::train::StepMetrics> &batch);
    void onJobFinished(const bridge::JobOutcome &outcome);
    void onGenerationFinished(bool ok, const QString &textOrError, const QString &stopReason);
    void updateControls();
    void setState(const QString &state);
    void loadFields();
    void saveFields() const;

    bridge::EngineBridge &m_bridge;
    QString m_storePath;
    QString m_stateText;
    qint64 m_totalSteps = 0;
    Job m_job = Job::None;
    bridge::StepRateMeter m_rate;

    TrainSettingsForm *m_form = nullptr;
    QPushButton *m_previewButton = nullptr;
    QPushButton *m_copyCliButton = nullptr;
    QPushButton *m_inspectButton = nullptr;
    QString m_nonFiniteStep; ///< the failed run's kept step, for m_inspectButton
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
    MetricPlots *m_plot = nullptr;
    QPlainTextEdit *m_log = nullptr;

    // Generation with the last run's model.
    QString m_runBaseModel;   ///< the model the last run started from (the base of its adapter)
    QString m_trainedModel;   ///< the model folder to generate with
    QString m_trainedAdapter; ///< its adapter (LoRA), or empty
    QLabel *m_generateModelLabel = nullptr;
    QLineEdit *m_promptEdit = nullptr;
    QSpinBox *m_newTokensSpin = nullptr;
    QPushButton *m_generateButton = nullptr;
    QPlainTextEdit *m_generateOutput = nullptr;
};

} // namespace ui
