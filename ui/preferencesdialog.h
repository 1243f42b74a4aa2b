#pragma once
// The application's preferences, kept between sessions in QSettings ("Preferences/..."): the threads
// jobs use, the folder of the run database, and the theme; and the dialog that edits them.

#include "ui/application.h"

#include <QDialog>
#include <QString>

class QComboBox;
class QLineEdit;
class QSpinBox;

namespace ui {

struct Preferences {
    int threads = 0;   ///< CPU threads for training and generation; 0 = all cores
    QString runFolder; ///< the folder of runs.sqlite3; empty = the setting, else the XDG default
    Theme theme = Theme::System;

    /// From QSettings; what is not there yet is `defaults`'.
    static Preferences load(const Preferences &defaults);
    static Preferences load();
    void save() const;
    /// runFolder/runs.sqlite3, or empty without a run folder.
    QString storePath() const;
    bool operator==(const Preferences &) const = default;
};

class PreferencesDialog : public QDialog {
    Q_OBJECT

public:
    PreferencesDialog(const Preferences &preferences, QWidget *parent = nullptr);

    /// The values the fields show.
    Preferences preferences() const;

private:
    QSpinBox *m_threadsSpin = nullptr;
    QLineEdit *m_runFolderEdit = nullptr;
    QComboBox *m_themeCombo = nullptr;
};

} // namespace ui
