#pragma once
// The Train page's settings: a field for every trainer setting (tabs Basics, LoRA, Optimizer, Eval & Save,
// Hardware), presets, the model folder's recent list, and validation as you type. A field whose value is
// refused turns red and the message under the form names it; the page keeps Start disabled meanwhile.
// The rules are the engine's (TrainingParams::validate through EngineBridge::validationError) plus the
// checks of the paths that the CLI makes when it parses them.

#include "engine/train/trainingparams.h"

#include <QHash>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <utility>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLayout;
class QLineEdit;
class QMenu;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QToolButton;

namespace ui {

class TrainSettingsForm : public QWidget {
    Q_OBJECT

public:
    static constexpr int kRecentModels = 8;

    explicit TrainSettingsForm(QWidget *parent = nullptr);

    /// The settings as the fields show them (storePath is left empty: the page adds it).
    engine::train::TrainingParams params() const;
    /// Shows `params` in every field (the run name and output folder included; storePath ignored).
    void setParams(const engine::train::TrainingParams &params);

    /// The first problem of the settings ("Learning rate: setting learning rate = 0 must be greater than 0"),
    /// empty when they are valid.
    QString problem() const { return m_problem; }
    /// The field the problem is in (nullptr when valid).
    QWidget *problemField() const { return m_problemField; }
    bool isValid() const { return m_problem.isEmpty(); }

    /// A device map for `modelPath` (from the Plan page or a cloned run), described by `description`;
    /// editing the model folder drops it.
    void setPlacement(const QString &modelPath, const std::vector<std::pair<std::string, std::string>> &placement,
                      const QString &description);

    QString modelPath() const;
    /// Sets the model folder and puts it first in the recent list.
    void setModelPath(const QString &path);
    void setCorpusPath(const QString &path);
    void setThreads(int threads);
    /// Model folders used last, newest first (at most kRecentModels), kept in QSettings.
    QStringList recentModels() const { return m_recent; }
    void addRecentModel(const QString &path);
    void clearRecentModels();

    /// Preset names in the combo: the built-in ones, then the user's.
    QStringList presetNames() const;
    /// Fills the fields from the named preset (the paths, threads and device stay). False when unknown.
    bool applyPreset(const QString &name);
    /// Stores the current settings as a user preset (QSettings); replaces one of the same name. False
    /// (with the reason in *error) for an empty name, a built-in's name or invalid settings.
    bool savePreset(const QString &name, QString *error = nullptr);
    bool deletePreset(const QString &name);

    /// Disables every field while a job runs.
    void setLocked(bool locked);

public Q_SLOTS:
    /// Opens a folder dialog for the model.
    void browseModel();

Q_SIGNALS:
    /// Any field changed; problem() is up to date.
    void settingsChanged();
    void validityChanged(bool valid);
    void recentModelsChanged();
    void statusMessage(const QString &text, int timeoutMs);

protected:
    void changeEvent(QEvent *event) override;

private:
    QWidget *createPresetRow();
    QWidget *createBasicsTab();
    QWidget *createLoraTab();
    QWidget *createOptimizerTab();
    QWidget *createEvalTab();
    QWidget *createHardwareTab();
    /// Adds a labelled row and remembers the label for messages and the tab for marking.
    void addRow(QFormLayout *form, const QString &label, QWidget *field, QLayout *fieldLayout = nullptr);
    QLineEdit *pathEdit(const char *name, const QString &placeholder, const QString &tip);
    QPushButton *browseButton(const char *name, QLineEdit *edit, bool folder, const QString &title);
    void watch(QWidget *field);
    void revalidate();
    QString pathProblem(const engine::train::TrainingParams &params, QWidget **field) const;
    QWidget *fieldOfEngineMessage(const QString &message) const;
    void markInvalid(QWidget *field);
    void updateEnabled();
    void updateRecentMenu();
    void loadUserPresets();
    void rebuildPresetCombo(const QString &select = {});
    void setDeviceMapChoice(const QString &choice);
    QString fieldLabel(QWidget *field) const;

    QString m_problem;
    QWidget *m_problemField = nullptr;
    QWidget *m_marked = nullptr;
    bool m_locked = false;
    bool m_filling = false; ///< setParams is filling the fields: validate once at the end
    QHash<QWidget *, QString> m_labels;
    QHash<QWidget *, int> m_tabOf;
    QStringList m_recent;
    QList<std::pair<QString, QString>> m_userPresets; ///< (name, preset JSON)
    std::vector<std::pair<std::string, std::string>> m_placement;
    QString m_placementModel;

    QTabWidget *m_tabs = nullptr;
    QComboBox *m_presetCombo = nullptr;
    QPushButton *m_savePresetButton = nullptr;
    QPushButton *m_deletePresetButton = nullptr;
    QLabel *m_validationLabel = nullptr;

    QLineEdit *m_runNameEdit = nullptr;
    QLineEdit *m_modelEdit = nullptr;
    QPushButton *m_modelBrowseButton = nullptr;
    QToolButton *m_recentButton = nullptr;
    QMenu *m_recentMenu = nullptr;
    QLabel *m_placementLabel = nullptr;
    QLineEdit *m_corpusEdit = nullptr;
    QLineEdit *m_tokenizerEdit = nullptr;
    QComboBox *m_methodCombo = nullptr;
    QSpinBox *m_stepsSpin = nullptr;
    QDoubleSpinBox *m_lrSpin = nullptr;
    QSpinBox *m_batchSpin = nullptr;
    QSpinBox *m_seqLenSpin = nullptr;

    QSpinBox *m_loraRankSpin = nullptr;
    QDoubleSpinBox *m_loraAlphaSpin = nullptr;
    QDoubleSpinBox *m_loraDropoutSpin = nullptr;
    QLineEdit *m_loraTargetsEdit = nullptr;
    QCheckBox *m_rsloraCheck = nullptr;
    QLineEdit *m_modulesToSaveEdit = nullptr;

    QComboBox *m_optimizerCombo = nullptr;
    QComboBox *m_scheduleCombo = nullptr;
    QSpinBox *m_warmupSpin = nullptr;
    QDoubleSpinBox *m_minLrRatioSpin = nullptr;
    QDoubleSpinBox *m_weightDecaySpin = nullptr;
    QDoubleSpinBox *m_momentumSpin = nullptr;
    QDoubleSpinBox *m_gradClipSpin = nullptr;
    QSpinBox *m_epochsSpin = nullptr;
    QSpinBox *m_gradAccumSpin = nullptr;
    QLineEdit *m_seedEdit = nullptr;

    QLineEdit *m_evalDataEdit = nullptr;
    QDoubleSpinBox *m_valFractionSpin = nullptr;
    QSpinBox *m_evalEverySpin = nullptr;
    QSpinBox *m_evalBatchesSpin = nullptr;
    QLineEdit *m_sampleEdit = nullptr;
    QSpinBox *m_sampleTokensSpin = nullptr;
    QSpinBox *m_saveEverySpin = nullptr;
    QSpinBox *m_keepSpin = nullptr;
    QLineEdit *m_outputEdit = nullptr;
    QCheckBox *m_saveModelCheck = nullptr;
    QComboBox *m_badLinesCombo = nullptr;
    QComboBox *m_nonFiniteCombo = nullptr;
    QCheckBox *m_guardCheck = nullptr; ///< TrainingParams::inspectGuard

    QSpinBox *m_threadsSpin = nullptr;
    QComboBox *m_deviceCombo = nullptr;
    QComboBox *m_deviceMapCombo = nullptr;
    QComboBox *m_precisionCombo = nullptr;
    QCheckBox *m_checkpointingCheck = nullptr;

    QList<QWidget *> m_fields; ///< every input, for locking
};

} // namespace ui
