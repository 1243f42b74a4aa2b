#pragma once
// The Train page's settings: one field per training setting, built from the settings' declaration
// (engine/train/settingschema.h: its label, help, kind, range, choices and group), in tabs Basics,
// LoRA, Optimizer, Eval & Save and Hardware; presets, the model folder's recent list, and validation
// as you type. A field whose value is refused turns red and the message under the form names it; the
// page keeps Start disabled meanwhile. The rules are the engine's (validateSettings, whose errors name
// the setting) plus the checks of the paths that the CLI makes when it parses them. Each field's
// objectName is its setting's key ("learning_rate", "lora.r").

#include "engine/train/settingschema.h"

#include <QHash>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <utility>
#include <vector>

class QComboBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QMenu;
class QPushButton;
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
    /// The field of the setting `key` (nullptr for a setting the form does not show).
    QWidget *field(const QString &key) const { return m_fieldOf.value(key); }
    /// Marks the field of setting `key` with `message` (an engine error about it, e.g. a job's), as a
    /// refused value is marked; the next edit validates again. Unknown keys show the message alone.
    void showProblem(const QString &key, const QString &message);

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
    /// One setting's field: how it shows and reads its value.
    struct Binding {
        const engine::train::SettingSpec *spec = nullptr;
        QWidget *widget = nullptr; ///< the input (the line edit of a path row)
        int tab = 0;
    };

    QWidget *createPresetRow();
    QWidget *createTab(std::initializer_list<engine::train::SettingGroup> groups);
    void addField(QFormLayout *form, const engine::train::SettingSpec &spec, QString &mnemonics);
    QWidget *createInput(const engine::train::SettingSpec &spec, QWidget *parent);
    QWidget *createModelRow(QLineEdit *edit, QWidget *parent);
    QWidget *createPathRow(const engine::train::SettingSpec &spec, QLineEdit *edit, QWidget *parent);
    void readField(const Binding &binding, engine::train::TrainingParams &params) const;
    void writeField(const Binding &binding, const engine::train::TrainingParams &params);
    void watch(QWidget *field);
    void revalidate();
    QString pathProblem(const engine::train::TrainingParams &params, QWidget **field) const;
    void setProblem(const QString &message, QWidget *field);
    void markInvalid(QWidget *field);
    void updateEnabled();
    void updateRecentMenu();
    void loadUserPresets();
    void rebuildPresetCombo(const QString &select = {});
    QString fieldLabel(QWidget *field) const;

    QString m_problem;
    QWidget *m_problemField = nullptr;
    QWidget *m_marked = nullptr;
    bool m_locked = false;
    bool m_building = true; ///< the fields are being made: nothing to validate yet
    bool m_filling = false; ///< setParams is filling the fields: validate once at the end
    std::vector<Binding> m_bindings;
    QHash<QString, QWidget *> m_fieldOf; ///< setting key -> its field
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
    QLineEdit *m_modelEdit = nullptr;
    QToolButton *m_recentButton = nullptr;
    QMenu *m_recentMenu = nullptr;
    QLabel *m_placementLabel = nullptr;
    QComboBox *m_deviceMapCombo = nullptr;

    QList<QWidget *> m_buttons; ///< Browse, Open and Recent buttons, locked with the fields
};

} // namespace ui
