#include "ui/preferencesdialog.h"

#include "engine/core/threads.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace ui {

Preferences Preferences::load(const Preferences &defaults)
{
    QSettings settings;
    settings.beginGroup(QStringLiteral("Preferences"));
    Preferences p;
    p.threads = settings.value(QStringLiteral("threads"), defaults.threads).toInt();
    p.runFolder = settings.value(QStringLiteral("runFolder"), defaults.runFolder).toString();
    p.theme = settings.contains(QStringLiteral("theme")) ? themeFromName(settings.value(QStringLiteral("theme")).toString())
                                                         : defaults.theme;
    return p;
}

Preferences Preferences::load() { return load(Preferences()); }

void Preferences::save() const
{
    QSettings settings;
    settings.beginGroup(QStringLiteral("Preferences"));
    settings.setValue(QStringLiteral("threads"), threads);
    settings.setValue(QStringLiteral("runFolder"), runFolder);
    settings.setValue(QStringLiteral("theme"), themeName(theme));
}

QString Preferences::storePath() const
{
    return runFolder.trimmed().isEmpty() ? QString() : QDir(runFolder.trimmed()).filePath(QStringLiteral("runs.sqlite3"));
}

PreferencesDialog::PreferencesDialog(const Preferences &preferences, QWidget *parent) : QDialog(parent)
{
    setObjectName(QStringLiteral("preferencesDialog"));
    setWindowTitle(tr("Preferences"));
    auto *form = new QFormLayout;

    const int cores = engine::hardwareThreads();
    m_threadsSpin = new QSpinBox(this);
    m_threadsSpin->setObjectName(QStringLiteral("prefThreadsSpin"));
    m_threadsSpin->setRange(0, cores);
    m_threadsSpin->setSpecialValueText(tr("all cores"));
    m_threadsSpin->setValue(std::min(preferences.threads, cores));
    m_threadsSpin->setToolTip(tr("CPU threads for training and generation (this machine has %1); the Train page "
                                 "starts with this").arg(cores));
    form->addRow(tr("&Threads:"), m_threadsSpin);

    m_runFolderEdit = new QLineEdit(preferences.runFolder, this);
    m_runFolderEdit->setObjectName(QStringLiteral("prefRunFolderEdit"));
    m_runFolderEdit->setPlaceholderText(tr("The default data folder"));
    m_runFolderEdit->setClearButtonEnabled(true);
    m_runFolderEdit->setToolTip(tr("The folder of the run database (runs.sqlite3) that training writes to and the "
                                   "Runs page lists, and of the runs' files (runs/<id>) when a run names no output "
                                   "folder"));
    auto *browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString folder = QFileDialog::getExistingDirectory(this, tr("Choose the Run Folder"),
                                                                 m_runFolderEdit->text().isEmpty() ? QDir::homePath()
                                                                                                   : m_runFolderEdit->text());
        if (!folder.isEmpty())
            m_runFolderEdit->setText(QDir::toNativeSeparators(folder));
    });
    auto *folderRow = new QHBoxLayout;
    folderRow->addWidget(m_runFolderEdit, 1);
    folderRow->addWidget(browse);
    auto *folderLabel = new QLabel(tr("&Run folder:"), this);
    folderLabel->setBuddy(m_runFolderEdit);
    form->addRow(folderLabel, folderRow);

    m_themeCombo = new QComboBox(this);
    m_themeCombo->setObjectName(QStringLiteral("prefThemeCombo"));
    m_themeCombo->addItem(tr("System"), themeName(Theme::System));
    m_themeCombo->addItem(tr("Light"), themeName(Theme::Light));
    m_themeCombo->addItem(tr("Dark"), themeName(Theme::Dark));
    m_themeCombo->setCurrentIndex(m_themeCombo->findData(themeName(preferences.theme)));
    m_themeCombo->setToolTip(tr("System follows the desktop's colours"));
    form->addRow(tr("T&heme:"), m_themeCombo);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->setObjectName(QStringLiteral("preferencesButtons"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(buttons);
    setMinimumWidth(480);
}

Preferences PreferencesDialog::preferences() const
{
    Preferences p;
    p.threads = m_threadsSpin->value();
    p.runFolder = m_runFolderEdit->text().trimmed();
    p.theme = themeFromName(m_themeCombo->currentData().toString());
    return p;
}

} // namespace ui
