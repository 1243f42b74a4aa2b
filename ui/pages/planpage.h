#pragma once
// The Plan page: open a model folder (or a config.json; by dialog or drag and drop), state the
// devices and the training run, and see at once whether it fits: device columns with stacked memory
// bars, a verdict, where every module goes and why, and the lint of cross-device pitfalls. Dragging a
// module block to another device re-plans at once (Planner::move, well under a millisecond), with
// undo and redo. The map exports for Accelerate (JSON + a Python snippet) and imports back.
//
// Planning is a pure, torch-free function of small values (engine/plan), so the page calls it
// directly; reading a model folder touches only config.json and safetensors headers.

#include "engine/plan/plan.h"
#include "engine/plan/planner.h"

#include <QString>
#include <QWidget>

#include <memory>
#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QTabWidget;
class QTreeView;
class QUndoStack;

namespace ui {

class DeviceColumnsWidget;
class ModuleTreeModel;

class PlanPage : public QWidget {
    Q_OBJECT

public:
    explicit PlanPage(QWidget *parent = nullptr);
    ~PlanPage() override;

    /// Opens a model folder or config.json, or a catalog model by name ("llama-3.1-8b", as `plan --model`),
    /// and plans it with the current settings. Returns false (and shows why) when it cannot be read.
    bool openModel(const QString &path);
    /// Re-plans from scratch with the settings the fields show (drops the undo history).
    void replan();
    /// Moves `module` to device `device` (Accelerate key: "0", "cpu", "disk") as one undoable step.
    bool moveModule(const QString &module, const QString &device);

    /// The plan shown, if a model is open.
    const engine::plan::Plan *plan() const { return m_plan ? &*m_plan : nullptr; }
    /// The folder or config.json opened, or a catalog model's Hugging Face repo id.
    QString modelPath() const { return m_modelPath; }
    QUndoStack *undoStack() const { return m_undo; }
    DeviceColumnsWidget *deviceColumns() const { return m_columns; }

    /// Writes the Accelerate export ({"device_map", "max_memory"}) to `file`; false and a message on failure.
    bool exportMap(const QString &file);
    /// Reads a device map file and revalidates it against the open model.
    bool importMap(const QString &file);
    /// Writes the Python script that loads the model's folder with this plan and trains; false and a
    /// message on failure.
    bool exportPython(const QString &file);

Q_SIGNALS:
    /// "Train with this plan": the model folder and the plan's placements (module prefix → torch device).
    void trainWithPlanRequested(const QString &modelPath, const engine::plan::Plan &plan);
    void statusMessage(const QString &text, int timeoutMs);

protected:
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    friend class PlanMoveCommand;
    QWidget *createSettingsBar();
    QWidget *createDetailTabs();
    QWidget *createCatalogRow();
    engine::plan::PlanSettings settingsFromFields() const;
    void browseModel();
    void addGpuPreset();
    void exportMapDialog();
    void exportPythonDialog();
    void importMapDialog();
    /// Shows `plan` (columns, verdict, tree devices, explanations, lint) without touching the undo stack.
    void showPlan(const engine::plan::Plan &plan);
    /// "The weights fit: ..." / "LoRA training does not fit: ..." (the subject's own verb form).
    QString verdictText(const engine::plan::Plan &plan) const;
    /// The lint as a list: errors first, each item a severity icon, the message and its fix.
    void showPitfalls(const engine::plan::Plan &plan);
    void showError(const QString &text);
    /// Lists the advisor's suggestions for the settings just planned (hidden when there are none).
    void showAdvice(const std::vector<engine::plan::DeviceSpec> &devices, const engine::plan::PlanSettings &settings);
    /// Sets the fields to a suggestion's flags ("train", "lora-r", "checkpointing", "batch-size", "seq-len",
    /// "dtype") and re-plans.
    void applyAdvice(const QString &changesJson);

    QString m_modelPath;
    bool m_fromCatalog = false; ///< a catalog model has no weights here: nothing to train with
    std::unique_ptr<engine::plan::Planner> m_planner;
    std::optional<engine::plan::Plan> m_plan;

    QLineEdit *m_modelEdit = nullptr;
    QLineEdit *m_memoryEdit = nullptr;
    QComboBox *m_presetCombo = nullptr;
    QWidget *m_catalogRow = nullptr; ///< "Or plan a well-known model", shown while no model is open
    QComboBox *m_catalogCombo = nullptr;
    QDoubleSpinBox *m_overheadSpin = nullptr; ///< GiB of runtime overhead per GPU in training plans
    QComboBox *m_strategyCombo = nullptr;
    QComboBox *m_trainCombo = nullptr;
    QComboBox *m_dtypeCombo = nullptr;
    QSpinBox *m_rankSpin = nullptr;
    QLineEdit *m_targetsEdit = nullptr;
    QSpinBox *m_batchSpin = nullptr;
    QSpinBox *m_seqSpin = nullptr;
    QCheckBox *m_checkpointingCheck = nullptr;
    QLabel *m_verdictLabel = nullptr;
    DeviceColumnsWidget *m_columns = nullptr;
    QScrollArea *m_columnsScroll = nullptr; ///< holds m_columns: scrolls down, never sideways
    ModuleTreeModel *m_treeModel = nullptr;
    QTreeView *m_treeView = nullptr;
    QListWidget *m_advice = nullptr; ///< one-click suggestions: the nearest plans that fit, or the largest batch
    QListWidget *m_explanations = nullptr;
    QListWidget *m_lint = nullptr;
    QTabWidget *m_tabs = nullptr;
    QPushButton *m_exportButton = nullptr;
    QPushButton *m_pythonButton = nullptr;
    QPushButton *m_importButton = nullptr;
    QPushButton *m_trainButton = nullptr;
    bool m_trainable = false; ///< the engine trains the opened model (not a catalog config, a trained architecture)
    QUndoStack *m_undo = nullptr;
};

} // namespace ui
